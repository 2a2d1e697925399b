//! `meta.k8s.io/v1` `Table` and `PartialObjectMetadata` representations of objects.
//!
//! Tables are built the way the apiextensions-apiserver builds them for custom resources:
//! a `Name` column (format `name`), the resource's printer columns in order, then an `Age`
//! column (type `date`). Cells follow the CRD rules:
//!
//! * the first value the column's JSONPath selects is used; nothing selected gives `null`;
//! * `string` columns hold the value printed as text (non-scalar values as compact JSON);
//! * `integer`, `number` and `boolean` columns hold the JSON value when it has that type
//!   (an `integer` column truncates a fractional number), `null` otherwise;
//! * `date` columns hold the *age* of an RFC 3339 timestamp as kubectl prints it (`5m`,
//!   `3h12m`, `2d`, ...), `<invalid>` for an unparsable one and `<unknown>` for an empty one.
//!   kubectl shows cells verbatim, so this is what makes `AGE` read `5m`.

use serde_json::{Map, Value, json};

use crate::endpoints::jsonpath::{self, JsonPath};
use crate::endpoints::negotiation::IncludeObject;
use crate::resource::ResourceInfo;

/// `apiVersion` of `Table` and `PartialObjectMetadata` objects.
pub const META_V1: &str = "meta.k8s.io/v1";

/// Description of the `Name` column: the documentation of `ObjectMeta.name`.
pub const NAME_DESCRIPTION: &str = "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";

/// Description of the `Age` column: the documentation of `ObjectMeta.creationTimestamp`.
pub const CREATION_TIMESTAMP_DESCRIPTION: &str = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";

const AGE_PATH: &str = ".metadata.creationTimestamp";

/// One column of the table, with its path parsed.
struct Column {
    name: String,
    type_: String,
    format: String,
    description: String,
    priority: i32,
    /// `None` for the Name column, or for a printer column whose path does not parse (its
    /// cells are then all `null`).
    path: Option<JsonPath>,
}

impl Column {
    fn definition(&self) -> Value {
        json!({
            "name": self.name,
            "type": self.type_,
            "format": self.format,
            "description": self.description,
            "priority": self.priority,
        })
    }
}

/// Every column of a resource's table: Name, the printer columns, Age.
fn columns(info: &ResourceInfo) -> Vec<Column> {
    let mut cols = Vec::with_capacity(info.printer_columns.len() + 2);
    cols.push(Column {
        name: "Name".into(),
        type_: "string".into(),
        format: "name".into(),
        description: NAME_DESCRIPTION.into(),
        priority: 0,
        path: None,
    });
    for pc in &info.printer_columns {
        let description = if pc.description.is_empty() {
            format!(
                "Custom resource definition column (in JSONPath format): {}",
                pc.json_path
            )
        } else {
            pc.description.clone()
        };
        cols.push(Column {
            name: pc.name.clone(),
            type_: pc.type_.clone(),
            format: pc.format.clone(),
            description,
            priority: pc.priority,
            path: jsonpath::parse(&pc.json_path).ok(),
        });
    }
    // A resource that declares its own Age column does not get a second one.
    if !info
        .printer_columns
        .iter()
        .any(|c| c.name.eq_ignore_ascii_case("Age"))
    {
        cols.push(Column {
            name: "Age".into(),
            type_: "date".into(),
            format: String::new(),
            description: CREATION_TIMESTAMP_DESCRIPTION.into(),
            priority: 0,
            path: jsonpath::parse(AGE_PATH).ok(),
        });
    }
    cols
}

/// The `columnDefinitions` of a resource's tables: `Name` (`string`, format `name`), the
/// declared printer columns in order, then `Age` (`date`) unless a column named `Age` was
/// declared. Every definition has all of `name`, `type`, `format`, `description` and
/// `priority`.
#[cfg(test)]
pub fn column_definitions(info: &ResourceInfo) -> Vec<Value> {
    columns(info).iter().map(Column::definition).collect()
}

/// One table row for `object`: `cells` (one per column of [`column_definitions`]) and
/// `object` as `include` asks, ages computed against `now`.
///
/// `object` is: for [`IncludeObject::Metadata`] a `PartialObjectMetadata` (apiVersion
/// `meta.k8s.io/v1`) holding the object's metadata; for [`IncludeObject::Object`] the object
/// itself; for [`IncludeObject::None`] `null` (as upstream encodes an empty `RawExtension`).
#[cfg(test)]
pub fn row_at(
    info: &ResourceInfo,
    object: &Value,
    include: IncludeObject,
    now: jiff::Timestamp,
) -> Value {
    build_row(&columns(info), object, include, now)
}

fn build_row(
    cols: &[Column],
    object: &Value,
    include: IncludeObject,
    now: jiff::Timestamp,
) -> Value {
    let cells: Vec<Value> = cols
        .iter()
        .enumerate()
        .map(|(i, col)| {
            if i == 0 {
                let name = object
                    .pointer("/metadata/name")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                return Value::String(name.to_string());
            }
            match col.path.as_ref().and_then(|p| p.first(object)) {
                Some(value) => cell(&col.type_, value, now),
                None => Value::Null,
            }
        })
        .collect();
    let embedded = match include {
        IncludeObject::None => Value::Null,
        IncludeObject::Metadata => partial_object_metadata(object, META_V1),
        IncludeObject::Object => object.clone(),
    };
    json!({ "cells": cells, "object": embedded })
}

/// The cell for a value found by a column of the given type.
fn cell(type_: &str, value: &Value, now: jiff::Timestamp) -> Value {
    if value.is_null() {
        return Value::Null;
    }
    match type_ {
        "string" => Value::String(print_value(value)),
        "integer" => match value {
            Value::Number(n) => match n.as_i64() {
                Some(i) => Value::from(i),
                // Fractional (or huge) numbers are truncated, saturating like a float cast.
                None => n
                    .as_f64()
                    .map(|f| Value::from(f as i64))
                    .unwrap_or(Value::Null),
            },
            _ => Value::Null,
        },
        "number" => match value {
            Value::Number(_) => value.clone(),
            _ => Value::Null,
        },
        "boolean" => match value {
            Value::Bool(_) => value.clone(),
            _ => Value::Null,
        },
        "date" => match value {
            Value::String(s) => Value::String(age(s, now)),
            _ => Value::Null,
        },
        _ => Value::Null,
    }
}

/// The human-readable age of an RFC 3339 timestamp at `now`.
fn age(timestamp: &str, now: jiff::Timestamp) -> String {
    if timestamp.is_empty() || timestamp == "null" {
        return "<unknown>".into();
    }
    match timestamp.parse::<jiff::Timestamp>() {
        Ok(t) => human_duration(now.as_nanosecond() - t.as_nanosecond()),
        Err(_) => "<invalid>".into(),
    }
}

/// A succinct duration with 2–3 significant figures, as kubectl and the apiserver print ages
/// (`45s`, `3m20s`, `15m`, `5h3m`, `20h`, `3d4h`, `30d`, `2y45d`, `10y`). Up to a second in
/// the future reads `0s`; further in the future is `<invalid>`.
pub fn human_duration(nanos: i128) -> String {
    const SEC: i128 = 1_000_000_000;
    const MIN: i128 = 60 * SEC;
    const HOUR: i128 = 60 * MIN;
    let seconds = nanos / SEC; // truncates toward zero
    if seconds < -1 {
        return "<invalid>".into();
    }
    if seconds < 0 {
        return "0s".into();
    }
    if seconds < 120 {
        return format!("{seconds}s");
    }
    let minutes = nanos / MIN;
    if minutes < 10 {
        let s = seconds % 60;
        return if s == 0 {
            format!("{minutes}m")
        } else {
            format!("{minutes}m{s}s")
        };
    }
    if minutes < 180 {
        return format!("{minutes}m");
    }
    let hours = nanos / HOUR;
    if hours < 8 {
        let m = minutes % 60;
        return if m == 0 {
            format!("{hours}h")
        } else {
            format!("{hours}h{m}m")
        };
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    let days = hours / 24;
    if hours < 24 * 8 {
        let h = hours % 24;
        return if h == 0 {
            format!("{days}d")
        } else {
            format!("{days}d{h}h")
        };
    }
    if hours < 24 * 365 * 2 {
        return format!("{days}d");
    }
    let years = days / 365;
    if hours < 24 * 365 * 8 {
        let d = days % 365;
        return if d == 0 {
            format!("{years}y")
        } else {
            format!("{years}y{d}d")
        };
    }
    format!("{years}y")
}

/// A value as a JSONPath template prints it: strings raw, numbers and booleans as Go's `%v`
/// prints them, objects and arrays as compact JSON (with Go's HTML escaping).
fn print_value(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => i.to_string(),
            (None, Some(u), _) => u.to_string(),
            (None, None, Some(f)) => go_float(f),
            _ => n.to_string(),
        },
        Value::Null => "null".into(),
        Value::Array(_) | Value::Object(_) => {
            let text = serde_json::to_string(value).unwrap_or_default();
            text.replace('<', "\\u003c")
                .replace('>', "\\u003e")
                .replace('&', "\\u0026")
                .replace('\u{2028}', "\\u2028")
                .replace('\u{2029}', "\\u2029")
        }
    }
}

/// A float formatted like Go's `%v` (`%g` with the shortest precision): the shortest
/// round-trip digits, in exponent form (`1.2345675e+06`, `1e-05`) when the decimal exponent
/// is below -4 or at least 6.
fn go_float(f: f64) -> String {
    if f == 0.0 {
        return if f.is_sign_negative() {
            "-0".into()
        } else {
            "0".into()
        };
    }
    // Rust's `{:e}` gives the shortest round-trip digits: `-1.2345e6`.
    let sci = format!("{f:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if !(-4..6).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exp.abs())
    } else {
        format!("{f}")
    }
}

fn list_meta(
    resource_version: &str,
    continue_token: Option<&str>,
    remaining: Option<i64>,
) -> Value {
    let mut meta = Map::new();
    if !resource_version.is_empty() {
        meta.insert("resourceVersion".into(), resource_version.into());
    }
    if let Some(token) = continue_token.filter(|t| !t.is_empty()) {
        meta.insert("continue".into(), token.into());
    }
    if let Some(n) = remaining {
        meta.insert("remainingItemCount".into(), n.into());
    }
    Value::Object(meta)
}

/// A `meta.k8s.io/v1` `Table` of `objects` (one row each).
///
/// `metadata` carries `resourceVersion`, `continue` and `remainingItemCount` when given (for
/// a single object, pass its own resourceVersion and no continue/remaining).
/// `with_columns = false` (watch events after the first) encodes `columnDefinitions` as
/// `null`, as upstream does once headers have been sent. Ages are computed against the
/// current time.
pub fn table(
    info: &ResourceInfo,
    objects: &[Value],
    resource_version: &str,
    continue_token: Option<&str>,
    remaining: Option<i64>,
    include: IncludeObject,
    with_columns: bool,
) -> Value {
    table_at(
        info,
        objects,
        resource_version,
        continue_token,
        remaining,
        include,
        with_columns,
        jiff::Timestamp::now(),
    )
}

/// Like [`table`], computing ages against `now`.
#[allow(clippy::too_many_arguments)]
pub fn table_at(
    info: &ResourceInfo,
    objects: &[Value],
    resource_version: &str,
    continue_token: Option<&str>,
    remaining: Option<i64>,
    include: IncludeObject,
    with_columns: bool,
    now: jiff::Timestamp,
) -> Value {
    let cols = columns(info);
    let definitions = if with_columns {
        Value::Array(cols.iter().map(Column::definition).collect())
    } else {
        Value::Null
    };
    let rows: Vec<Value> = objects
        .iter()
        .map(|o| build_row(&cols, o, include, now))
        .collect();
    json!({
        "kind": "Table",
        "apiVersion": META_V1,
        "metadata": list_meta(resource_version, continue_token, remaining),
        "columnDefinitions": definitions,
        "rows": rows,
    })
}

/// A `PartialObjectMetadata` for `object`: `kind`, the given `apiVersion` (normally
/// [`META_V1`]) and the object's whole `metadata` (`{}` if it has none).
pub fn partial_object_metadata(object: &Value, api_version: &str) -> Value {
    let metadata = object
        .get("metadata")
        .filter(|m| m.is_object())
        .cloned()
        .unwrap_or_else(|| Value::Object(Map::new()));
    json!({
        "kind": "PartialObjectMetadata",
        "apiVersion": api_version,
        "metadata": metadata,
    })
}

/// A `meta.k8s.io/v1` `PartialObjectMetadataList` of `objects`, with list metadata
/// (`resourceVersion`, `continue`, `remainingItemCount` when given) and `items` (always
/// present, each a [`partial_object_metadata`]).
pub fn partial_object_metadata_list(
    objects: &[Value],
    resource_version: &str,
    continue_token: Option<&str>,
    remaining: Option<i64>,
) -> Value {
    let items: Vec<Value> = objects
        .iter()
        .map(|o| partial_object_metadata(o, META_V1))
        .collect();
    json!({
        "kind": "PartialObjectMetadataList",
        "apiVersion": META_V1,
        "metadata": list_meta(resource_version, continue_token, remaining),
        "items": items,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::{PrinterColumn, Scope};

    fn column(name: &str, type_: &str, path: &str, priority: i32) -> PrinterColumn {
        PrinterColumn {
            name: name.into(),
            type_: type_.into(),
            format: String::new(),
            description: String::new(),
            json_path: path.into(),
            priority,
        }
    }

    fn info(columns: Vec<PrinterColumn>) -> ResourceInfo {
        ResourceInfo {
            group: "wardle.example.com".into(),
            version: "v1alpha1".into(),
            kind: "Flunder".into(),
            plural: "flunders".into(),
            singular: "flunder".into(),
            scope: Scope::Namespaced,
            short_names: vec![],
            categories: vec![],
            status_subresource: false,
            printer_columns: columns,
            selectable_fields: Vec::new(),
            scale: None,
            schema: std::sync::Arc::new(json!({})),
        }
    }

    fn flunder_info() -> ResourceInfo {
        let mut reference = column("Reference", "string", ".spec.reference", 0);
        reference.description = "What it refers to".into();
        info(vec![
            reference,
            column("Replicas", "integer", ".spec.replicas", 0),
            column("Ratio", "number", ".spec.ratio", 1),
            column("Ready", "boolean", "{.status.ready}", 0),
            column("Since", "date", ".status.since", 1),
        ])
    }

    fn now() -> jiff::Timestamp {
        "2024-05-01T12:00:00Z".parse().unwrap()
    }

    fn flunder() -> Value {
        json!({
            "apiVersion": "wardle.example.com/v1alpha1",
            "kind": "Flunder",
            "metadata": {
                "name": "my-flunder",
                "namespace": "default",
                "uid": "1234",
                "resourceVersion": "17",
                "creationTimestamp": "2024-05-01T11:55:00Z",
                "labels": {"app": "x"}
            },
            "spec": {"reference": "other", "replicas": 3, "ratio": 0.5},
            "status": {"ready": true, "since": "2024-04-30T12:00:00Z"}
        })
    }

    #[test]
    fn definitions() {
        let defs = column_definitions(&flunder_info());
        let names: Vec<&str> = defs.iter().map(|d| d["name"].as_str().unwrap()).collect();
        assert_eq!(
            names,
            [
                "Name",
                "Reference",
                "Replicas",
                "Ratio",
                "Ready",
                "Since",
                "Age"
            ]
        );
        assert_eq!(
            defs[0],
            json!({"name": "Name", "type": "string", "format": "name",
                   "description": NAME_DESCRIPTION, "priority": 0})
        );
        assert_eq!(defs[1]["description"], "What it refers to");
        assert_eq!(
            defs[2]["description"],
            "Custom resource definition column (in JSONPath format): .spec.replicas"
        );
        assert_eq!(defs[3]["priority"], 1);
        assert_eq!(defs[2]["type"], "integer");
        assert_eq!(defs[2]["format"], "");
        assert_eq!(
            defs[6],
            json!({"name": "Age", "type": "date", "format": "",
                   "description": CREATION_TIMESTAMP_DESCRIPTION, "priority": 0})
        );
        for d in &defs {
            let keys: Vec<&String> = d.as_object().unwrap().keys().collect();
            assert_eq!(keys, ["description", "format", "name", "priority", "type"]);
        }
    }

    #[test]
    fn no_printer_columns_gives_name_and_age() {
        let defs = column_definitions(&info(vec![]));
        let names: Vec<&str> = defs.iter().map(|d| d["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["Name", "Age"]);
    }

    #[test]
    fn declared_age_is_not_duplicated() {
        let i = info(vec![column(
            "AGE",
            "date",
            ".metadata.creationTimestamp",
            0,
        )]);
        let defs = column_definitions(&i);
        assert_eq!(defs.len(), 2);
        assert_eq!(defs[1]["name"], "AGE");
    }

    #[test]
    fn row_cells() {
        let r = row_at(&flunder_info(), &flunder(), IncludeObject::None, now());
        assert_eq!(
            r["cells"],
            json!(["my-flunder", "other", 3, 0.5, true, "24h", "5m"])
        );
        assert!(r["object"].is_null());
    }

    #[test]
    fn missing_values_are_null() {
        let obj = json!({"metadata": {"name": "bare"}});
        let r = row_at(&flunder_info(), &obj, IncludeObject::None, now());
        assert_eq!(
            r["cells"],
            json!(["bare", null, null, null, null, null, null])
        );
        let nameless = row_at(&flunder_info(), &json!({}), IncludeObject::None, now());
        assert_eq!(nameless["cells"][0], "");
    }

    #[test]
    fn typed_cells() {
        let n = now();
        // string columns print any value.
        assert_eq!(cell("string", &json!("s"), n), json!("s"));
        assert_eq!(cell("string", &json!(12), n), json!("12"));
        assert_eq!(cell("string", &json!(-12), n), json!("-12"));
        assert_eq!(cell("string", &json!(1.5), n), json!("1.5"));
        assert_eq!(cell("string", &json!(1234567.5), n), json!("1.2345675e+06"));
        assert_eq!(cell("string", &json!(0.00001), n), json!("1e-05"));
        assert_eq!(cell("string", &json!(0.0001), n), json!("0.0001"));
        assert_eq!(cell("string", &json!(true), n), json!("true"));
        assert_eq!(
            cell("string", &json!({"b": 1, "a": [1, 2]}), n),
            json!(r#"{"a":[1,2],"b":1}"#)
        );
        assert_eq!(
            cell("string", &json!(["<x>&"]), n),
            json!(r#"["\u003cx\u003e\u0026"]"#)
        );
        assert_eq!(cell("string", &Value::Null, n), Value::Null);
        // integer
        assert_eq!(cell("integer", &json!(7), n), json!(7));
        assert_eq!(cell("integer", &json!(7.9), n), json!(7));
        assert_eq!(cell("integer", &json!(-7.9), n), json!(-7));
        assert_eq!(cell("integer", &json!("7"), n), Value::Null);
        // number
        assert_eq!(cell("number", &json!(7), n), json!(7));
        assert_eq!(cell("number", &json!(7.25), n), json!(7.25));
        assert_eq!(cell("number", &json!(false), n), Value::Null);
        // boolean
        assert_eq!(cell("boolean", &json!(false), n), json!(false));
        assert_eq!(cell("boolean", &json!("true"), n), Value::Null);
        // date
        assert_eq!(
            cell("date", &json!("2024-05-01T11:59:30Z"), n),
            json!("30s")
        );
        assert_eq!(
            cell("date", &json!("2024-05-01T11:59:30.5+00:00"), n),
            json!("29s")
        );
        assert_eq!(cell("date", &json!("yesterday"), n), json!("<invalid>"));
        assert_eq!(cell("date", &json!(""), n), json!("<unknown>"));
        assert_eq!(cell("date", &json!("2024-05-01T12:00:01Z"), n), json!("0s"));
        assert_eq!(
            cell("date", &json!("2024-05-01T12:00:05Z"), n),
            json!("<invalid>")
        );
        assert_eq!(cell("date", &json!(5), n), Value::Null);
        // unknown types
        assert_eq!(cell("object", &json!({"a": 1}), n), Value::Null);
    }

    #[test]
    fn ages() {
        let s = |secs: i128| human_duration(secs * 1_000_000_000);
        assert_eq!(s(0), "0s");
        assert_eq!(s(-1), "0s");
        assert_eq!(s(-2), "<invalid>");
        assert_eq!(s(59), "59s");
        assert_eq!(s(119), "119s");
        assert_eq!(s(120), "2m");
        assert_eq!(s(125), "2m5s");
        assert_eq!(s(9 * 60 + 59), "9m59s");
        assert_eq!(s(10 * 60 + 30), "10m");
        assert_eq!(s(179 * 60), "179m");
        assert_eq!(s(3 * 3600), "3h");
        assert_eq!(s(3 * 3600 + 5 * 60), "3h5m");
        assert_eq!(s(8 * 3600 + 5 * 60), "8h");
        assert_eq!(s(47 * 3600), "47h");
        assert_eq!(s(48 * 3600), "2d");
        assert_eq!(s(50 * 3600), "2d2h");
        assert_eq!(s(8 * 86400), "8d");
        assert_eq!(s(729 * 86400), "729d");
        assert_eq!(s(730 * 86400), "2y");
        assert_eq!(s(800 * 86400), "2y70d");
        assert_eq!(s(8 * 365 * 86400 + 86400), "8y");
        assert_eq!(human_duration(-1_500_000_000), "0s");
    }

    #[test]
    fn go_floats() {
        assert_eq!(go_float(0.5), "0.5");
        assert_eq!(go_float(123456.5), "123456.5");
        assert_eq!(go_float(1e6), "1e+06");
        assert_eq!(go_float(-2.5e-7), "-2.5e-07");
        assert_eq!(go_float(1e100), "1e+100");
        assert_eq!(go_float(0.0), "0");
    }

    #[test]
    fn first_match_of_wildcards() {
        let i = info(vec![column("First", "string", ".spec.items[*].name", 0)]);
        let obj =
            json!({"metadata": {"name": "a"}, "spec": {"items": [{"name": "x"}, {"name": "y"}]}});
        assert_eq!(
            row_at(&i, &obj, IncludeObject::None, now())["cells"][1],
            "x"
        );
    }

    #[test]
    fn invalid_paths_give_null_cells() {
        let i = info(vec![column("Broken", "string", "spec[", 0)]);
        let obj = json!({"metadata": {"name": "a"}, "spec": {}});
        let r = row_at(&i, &obj, IncludeObject::None, now());
        assert_eq!(r["cells"][1], Value::Null);
    }

    #[test]
    fn row_objects() {
        let obj = flunder();
        let meta = row_at(&flunder_info(), &obj, IncludeObject::Metadata, now());
        assert_eq!(
            meta["object"],
            json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                   "metadata": obj["metadata"].clone()})
        );
        let full = row_at(&flunder_info(), &obj, IncludeObject::Object, now());
        assert_eq!(full["object"], obj);
        // Against the current time.
        let live = row_at(
            &flunder_info(),
            &obj,
            IncludeObject::None,
            jiff::Timestamp::now(),
        );
        assert_eq!(live["cells"].as_array().unwrap().len(), 7);
    }

    #[test]
    fn whole_table() {
        let objs = vec![
            flunder(),
            json!({"metadata": {"name": "b", "creationTimestamp": "2024-05-01T09:00:00Z"}}),
        ];
        let t = table_at(
            &flunder_info(),
            &objs,
            "42",
            Some("tok"),
            Some(3),
            IncludeObject::Metadata,
            true,
            now(),
        );
        assert_eq!(t["kind"], "Table");
        assert_eq!(t["apiVersion"], "meta.k8s.io/v1");
        assert_eq!(
            t["metadata"],
            json!({"resourceVersion": "42", "continue": "tok", "remainingItemCount": 3})
        );
        assert_eq!(t["columnDefinitions"].as_array().unwrap().len(), 7);
        let rows = t["rows"].as_array().unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[1]["cells"][0], "b");
        assert_eq!(rows[1]["cells"][6], "3h");
        assert_eq!(rows[1]["object"]["metadata"]["name"], "b");
        assert!(rows[0].get("conditions").is_none());
    }

    #[test]
    fn empty_and_headerless_tables() {
        let t = table(
            &flunder_info(),
            &[],
            "",
            None,
            None,
            IncludeObject::None,
            true,
        );
        assert_eq!(t["metadata"], json!({}));
        assert_eq!(t["rows"], json!([]));
        assert!(t["columnDefinitions"].is_array());
        let t = table(
            &flunder_info(),
            &[flunder()],
            "18",
            Some(""),
            None,
            IncludeObject::None,
            false,
        );
        let obj = t.as_object().unwrap();
        assert!(obj.contains_key("columnDefinitions"));
        assert!(obj["columnDefinitions"].is_null());
        assert_eq!(t["metadata"], json!({"resourceVersion": "18"}));
        assert_eq!(t["rows"].as_array().unwrap().len(), 1);
    }

    #[test]
    fn partial_metadata() {
        let obj = flunder();
        assert_eq!(
            partial_object_metadata(&obj, META_V1),
            json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                   "metadata": obj["metadata"].clone()})
        );
        assert_eq!(
            partial_object_metadata(&json!({"spec": {}}), "meta.k8s.io/v1beta1"),
            json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1beta1", "metadata": {}})
        );
        let list = partial_object_metadata_list(std::slice::from_ref(&obj), "9", None, None);
        assert_eq!(
            list,
            json!({
                "kind": "PartialObjectMetadataList",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": {"resourceVersion": "9"},
                "items": [{"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                           "metadata": obj["metadata"].clone()}]
            })
        );
        let empty = partial_object_metadata_list(&[], "", Some("c"), Some(0));
        assert_eq!(empty["items"], json!([]));
        assert_eq!(
            empty["metadata"],
            json!({"continue": "c", "remainingItemCount": 0})
        );
    }
}
