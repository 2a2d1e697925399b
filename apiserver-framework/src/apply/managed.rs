//! `metadata.managedFields`: who owns which fields (apimachinery `internal/managedfields.go`).

use std::collections::BTreeMap;

use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{FieldsV1, ManagedFieldsEntry, Time};
use serde_json::{Map, Value, json};

use super::fieldpath::Set;
use super::value::{metadata_field, push_json_string};

/// The kind of write that gave a manager its fields (upstream's `ManagedFieldsOperationType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ManagedFieldsOperation {
    /// Server-side apply.
    Apply,
    /// Any other write (create, update, patch).
    Update,
}

impl ManagedFieldsOperation {
    /// `Apply` or `Update`.
    pub fn as_str(self) -> &'static str {
        match self {
            ManagedFieldsOperation::Apply => "Apply",
            ManagedFieldsOperation::Update => "Update",
        }
    }
}

/// One `managedFields` entry.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// The field manager, e.g. `kubectl`.
    pub manager: String,
    /// Apply or Update.
    pub operation: ManagedFieldsOperation,
    /// The API version the fields were written with.
    pub api_version: String,
    /// When the entry last changed (whole seconds).
    pub time: Option<Timestamp>,
    /// The subresource written (`""` for the main resource).
    pub subresource: String,
    /// The owned fields.
    pub fields: Set,
}

impl Entry {
    /// Upstream's manager identifier: the entry as JSON without fields and time (and without the
    /// API version for appliers). Two entries with the same identifier are the same manager.
    pub fn identifier(&self) -> String {
        let mut out = String::with_capacity(64);
        out.push_str("{\"manager\":");
        push_json_string(&mut out, &self.manager);
        out.push_str(",\"operation\":\"");
        out.push_str(self.operation.as_str());
        out.push('"');
        if self.operation == ManagedFieldsOperation::Update && !self.api_version.is_empty() {
            out.push_str(",\"apiVersion\":");
            push_json_string(&mut out, &self.api_version);
        }
        if !self.subresource.is_empty() {
            out.push_str(",\"subresource\":");
            push_json_string(&mut out, &self.subresource);
        }
        out.push('}');
        out
    }

    /// The typed form of `metadata.managedFields`, equal to [`to_json`](Self::to_json) read
    /// back, without the trip through JSON.
    pub fn to_typed(&self) -> ManagedFieldsEntry {
        typed_entry(
            &self.manager,
            self.operation,
            &self.api_version,
            &self.subresource,
            self.time,
            self.fields.to_fields_v1(),
        )
    }

    /// The JSON form (keys omitted when empty, `fieldsType: FieldsV1`).
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        if !self.manager.is_empty() {
            m.insert("manager".into(), json!(self.manager));
        }
        m.insert("operation".into(), json!(self.operation.as_str()));
        if !self.api_version.is_empty() {
            m.insert("apiVersion".into(), json!(self.api_version));
        }
        if let Some(t) = self.time {
            m.insert("time".into(), json!(format_time(t)));
        }
        m.insert("fieldsType".into(), json!("FieldsV1"));
        m.insert("fieldsV1".into(), self.fields.to_fields_v1());
        if !self.subresource.is_empty() {
            m.insert("subresource".into(), json!(self.subresource));
        }
        Value::Object(m)
    }
}

/// [`Entry::to_typed`] of an entry with these fields, whose `FieldsV1` form is `fields_v1`.
pub(crate) fn typed_entry(
    manager: &str,
    operation: ManagedFieldsOperation,
    api_version: &str,
    subresource: &str,
    time: Option<Timestamp>,
    fields_v1: Value,
) -> ManagedFieldsEntry {
    let text = |s: &str| (!s.is_empty()).then(|| s.to_string());
    ManagedFieldsEntry {
        api_version: text(api_version),
        fields_type: Some("FieldsV1".into()),
        fields_v1: Some(FieldsV1(fields_v1)),
        manager: text(manager),
        operation: Some(operation.as_str().into()),
        subresource: text(subresource),
        // Whole seconds, as the JSON form carries them.
        time: time.map(|t| {
            Time(
                t.round(
                    jiff::TimestampRound::new()
                        .smallest(jiff::Unit::Second)
                        .mode(jiff::RoundMode::Trunc),
                )
                .unwrap_or(t),
            )
        }),
    }
}

/// RFC 3339 in UTC with whole seconds, as `metav1.Time` serializes.
pub fn format_time(t: Timestamp) -> String {
    t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// Why `metadata.managedFields` cannot be read (upstream's `DecodeManagedFields` messages).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ManagedFieldsError {
    /// `operation` is neither `Apply` nor `Update`.
    #[error("operation must be `Apply` or `Update`")]
    Operation,
    /// `apiVersion` is empty.
    #[error("apiVersion must not be empty")]
    ApiVersion,
    /// `fieldsType` is missing.
    #[error("missing fieldsType in managed fields entry {0}")]
    MissingFieldsType(usize),
    /// `fieldsType` is not `FieldsV1`.
    #[error("invalid fieldsType {0:?} in managed fields entry {1}")]
    InvalidFieldsType(String, usize),
    /// `fieldsV1` is not a valid field set.
    #[error("error decoding versioned set from entry {0}: error decoding set: {1}")]
    Fields(usize, String),
    /// The JSON does not have the shape of a list of entries.
    #[error("{0}")]
    Malformed(String),
}

/// All managers of an object, keyed by their identifier.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ManagedFields {
    entries: BTreeMap<String, Entry>,
}

impl ManagedFields {
    /// No managers.
    pub fn new() -> ManagedFields {
        ManagedFields::default()
    }

    /// Whether there is no manager.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The entries in upstream's order: operation (`Apply` first), time, manager, API version,
    /// subresource.
    pub fn entries(&self) -> Vec<&Entry> {
        let mut out: Vec<&Entry> = self.entries.values().collect();
        out.sort_by(|p, q| {
            p.operation
                .cmp(&q.operation)
                .then_with(|| secs(p.time).cmp(&secs(q.time)))
                .then_with(|| p.manager.cmp(&q.manager))
                .then_with(|| p.api_version.cmp(&q.api_version))
                .then_with(|| p.subresource.cmp(&q.subresource))
        });
        out
    }

    /// The entry of a manager identifier.
    pub(crate) fn get(&self, identifier: &str) -> Option<&Entry> {
        self.entries.get(identifier)
    }

    /// Adds or replaces an entry (by identifier).
    pub fn insert(&mut self, entry: Entry) {
        self.entries.insert(entry.identifier(), entry);
    }

    /// Adds or replaces the entry whose [`Entry::identifier`] the caller already made.
    pub(crate) fn insert_identified(&mut self, identifier: String, entry: Entry) {
        debug_assert_eq!(identifier, entry.identifier());
        self.entries.insert(identifier, entry);
    }

    pub(crate) fn map_mut(&mut self) -> &mut BTreeMap<String, Entry> {
        &mut self.entries
    }

    pub(crate) fn map(&self) -> &BTreeMap<String, Entry> {
        &self.entries
    }

    /// Reads `metadata.managedFields` (absent or `null`: no managers).
    pub fn decode(value: Option<&Value>) -> Result<ManagedFields, ManagedFieldsError> {
        let mut out = ManagedFields::new();
        let items = match value {
            None | Some(Value::Null) => return Ok(out),
            Some(Value::Array(items)) => items,
            Some(_) => {
                return Err(ManagedFieldsError::Malformed(
                    "metadata.managedFields must be a list".into(),
                ));
            }
        };
        for (i, item) in items.iter().enumerate() {
            let Value::Object(m) = item else {
                return Err(ManagedFieldsError::Malformed(format!(
                    "managed fields entry {i} must be an object"
                )));
            };
            let s = |k: &str| m.get(k).and_then(Value::as_str).unwrap_or("").to_string();
            let operation = match s("operation").as_str() {
                "Apply" => ManagedFieldsOperation::Apply,
                "Update" => ManagedFieldsOperation::Update,
                _ => return Err(ManagedFieldsError::Operation),
            };
            let api_version = s("apiVersion");
            if api_version.is_empty() {
                return Err(ManagedFieldsError::ApiVersion);
            }
            match s("fieldsType").as_str() {
                "FieldsV1" => {}
                "" => return Err(ManagedFieldsError::MissingFieldsType(i)),
                other => return Err(ManagedFieldsError::InvalidFieldsType(other.into(), i)),
            }
            let fields = match m.get("fieldsV1") {
                None | Some(Value::Null) => Set::new(),
                Some(v) => Set::from_fields_v1(v)
                    .map_err(|e| ManagedFieldsError::Fields(i, e.to_string()))?,
            };
            let time = match m.get("time") {
                None | Some(Value::Null) => None,
                Some(Value::String(t)) => Some(t.parse::<Timestamp>().map_err(|e| {
                    ManagedFieldsError::Malformed(format!("managed fields entry {i}: time: {e}"))
                })?),
                Some(_) => {
                    return Err(ManagedFieldsError::Malformed(format!(
                        "managed fields entry {i}: time must be a string"
                    )));
                }
            };
            out.insert(Entry {
                manager: s("manager"),
                operation,
                api_version,
                time,
                subresource: s("subresource"),
                fields,
            });
        }
        Ok(out)
    }

    /// Reads the managers of an object.
    pub fn from_object(obj: &Value) -> Result<ManagedFields, ManagedFieldsError> {
        ManagedFields::decode(metadata_field(obj, "managedFields"))
    }

    /// Upstream's `decodeLiveOrNew` for non-apply writes: the request's managedFields if they
    /// decode and are not empty (an empty list, or one empty entry, resets them), else the live
    /// object's (or none); subresource writes always keep the live object's.
    pub fn for_update(live: Option<&Value>, new: &Value, is_subresource: bool) -> ManagedFields {
        let from_live = || {
            live.map(|l| ManagedFields::from_object(l).unwrap_or_default())
                .unwrap_or_default()
        };
        if is_subresource {
            return from_live();
        }
        match metadata_field(new, "managedFields") {
            Some(Value::Array(items)) if items.is_empty() => return ManagedFields::new(),
            Some(Value::Array(items))
                if items.len() == 1 && items[0].as_object().is_some_and(Map::is_empty) =>
            {
                return ManagedFields::new();
            }
            _ => {}
        }
        match ManagedFields::from_object(new) {
            Ok(m) if !m.is_empty() => m,
            _ => from_live(),
        }
    }

    /// The entries in their typed form, in [`encode`](Self::encode)'s order; `None` when there
    /// are none.
    pub fn encode_typed(&self) -> Option<Vec<ManagedFieldsEntry>> {
        if self.entries.is_empty() {
            return None;
        }
        Some(self.entries().into_iter().map(Entry::to_typed).collect())
    }

    /// The JSON list for `metadata.managedFields`, or `None` when there is no manager (the
    /// field is then omitted).
    pub fn encode(&self) -> Option<Value> {
        if self.entries.is_empty() {
            return None;
        }
        Some(Value::Array(
            self.entries().into_iter().map(Entry::to_json).collect(),
        ))
    }

    /// Stores the managers into `obj.metadata.managedFields` (removing it when there are none).
    pub fn write_to(&self, obj: &mut Value) {
        let Some(root) = obj.as_object_mut() else {
            return;
        };
        let meta = root
            .entry("metadata")
            .or_insert_with(|| Value::Object(Map::new()));
        let Some(meta) = meta.as_object_mut() else {
            return;
        };
        match self.encode() {
            Some(v) => {
                meta.insert("managedFields".into(), v);
            }
            None => {
                meta.remove("managedFields");
            }
        }
    }
}

fn secs(t: Option<Timestamp>) -> i64 {
    t.map(|t| t.as_second()).unwrap_or(0)
}
