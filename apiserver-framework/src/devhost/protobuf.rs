//! Request bodies of built-in kinds in Kubernetes' protobuf encoding
//! (`application/vnd.kubernetes.protobuf`), which client-go's typed clients send: kubectl 1.32
//! and later for `create namespace`, `create configmap`, `auth whoami`, `auth can-i`, and a Go
//! extension server for its TokenReviews and SubjectAccessReviews. A real kube-apiserver accepts
//! them for every built-in kind, so the development host and local mode accept them for the
//! built-in kinds they serve.
//!
//! A body is `k8s\0`, then a `runtime.Unknown` naming the kind and carrying the object's own
//! message (upstream's `k8s.io/apimachinery/pkg/runtime/serializer/protobuf`). The messages
//! are those of the `k8s-pb` crate (prost code generated from upstream's `generated.proto`
//! files, shipped in the crate: nothing to generate at build time). Each decoder turns a body
//! into the JSON object it stands for, leaving out what Go's JSON encoding leaves out
//! (`omitempty`), so both encodings go through the same defaulting, validation and answer.
//! A body that does not decode is a 400 `BadRequest`, as upstream's.

use std::collections::BTreeMap;

use base64::Engine;
use k8s_pb::api::core::v1 as core;
use k8s_pb::apimachinery::pkg::apis::meta::v1 as meta;
use k8s_pb::apimachinery::pkg::runtime::Unknown;
use prost::Message;
use serde_json::{Map, Value};

use crate::error::ApiError;

/// The four bytes every protobuf-encoded Kubernetes object starts with.
const MAGIC: &[u8] = b"k8s\0";

fn bad(message: impl std::fmt::Display) -> ApiError {
    ApiError::bad_request(format!(
        "the protobuf request body does not decode: {message}"
    ))
}

/// The object of kind `T` in `body`, and the `apiVersion` its envelope names (any version of
/// `T`'s group: the kinds decoded here have the same message in each of their versions).
fn decode<T>(body: &[u8]) -> Result<(T, String), ApiError>
where
    T: k8s_pb::Resource + Message + Default,
{
    let Some(rest) = body.strip_prefix(MAGIC) else {
        // Upstream's words (the protobuf serializer's `RecognizesData`).
        return Err(ApiError::bad_request(
            "provided data does not appear to be a protobuf message, expected prefix [107 56 115 0]",
        ));
    };
    let unknown = Unknown::decode(rest).map_err(bad)?;
    let type_meta = unknown.type_meta.unwrap_or_default();
    let api_version = type_meta.api_version.unwrap_or_default();
    let kind = type_meta.kind.unwrap_or_default();
    let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
    if kind != T::KIND || group != T::GROUP {
        let expected = if T::GROUP.is_empty() {
            T::VERSION.to_string()
        } else {
            format!("{}/{}", T::GROUP, T::VERSION)
        };
        return Err(ApiError::bad_request(format!(
            "the body holds a {kind:?} of {api_version:?}, not a {} of {expected:?}",
            T::KIND
        )));
    }
    if let Some(encoding) = unknown.content_encoding.filter(|e| !e.is_empty()) {
        return Err(bad(format!(
            "content encoding {encoding:?} is not supported"
        )));
    }
    let object = T::decode(unknown.raw.unwrap_or_default().as_slice()).map_err(bad)?;
    Ok((object, api_version))
}

/// A JSON object built from protobuf fields, leaving out what Go's JSON encoding of the same
/// object leaves out: empty strings, lists and maps, zero counters, and absent messages.
#[derive(Default)]
struct Fields(Map<String, Value>);

impl Fields {
    /// A string field (`omitempty`).
    fn string(mut self, key: &str, value: Option<String>) -> Self {
        if let Some(v) = value.filter(|v| !v.is_empty()) {
            self.0.insert(key.into(), Value::String(v));
        }
        self
    }

    /// A list of strings (`omitempty`).
    fn strings(mut self, key: &str, value: Vec<String>) -> Self {
        if !value.is_empty() {
            self.0.insert(key.into(), value.into());
        }
        self
    }

    /// A map of strings (`omitempty`).
    fn string_map(mut self, key: &str, value: BTreeMap<String, String>) -> Self {
        if !value.is_empty() {
            self.0.insert(
                key.into(),
                Value::Object(Map::from_iter(
                    value.into_iter().map(|(k, v)| (k, v.into())),
                )),
            );
        }
        self
    }

    /// A pointer field (`*bool`, `*int64`): kept whenever it was sent, even as false or 0.
    fn set(mut self, key: &str, value: Option<impl Into<Value>>) -> Self {
        if let Some(v) = value {
            self.0.insert(key.into(), v.into());
        }
        self
    }

    /// A number that is left out when zero (`int64` with `omitempty`).
    fn nonzero(mut self, key: &str, value: Option<i64>) -> Self {
        if let Some(v) = value.filter(|v| *v != 0) {
            self.0.insert(key.into(), v.into());
        }
        self
    }

    /// A nested object, or a list of them, when there is one.
    fn value(mut self, key: &str, value: Option<Value>) -> Self {
        if let Some(v) = value {
            self.0.insert(key.into(), v);
        }
        self
    }

    /// A list of nested objects (`omitempty`).
    fn list<T>(mut self, key: &str, items: Vec<T>, each: impl Fn(T) -> Value) -> Self {
        if !items.is_empty() {
            self.0.insert(
                key.into(),
                Value::Array(items.into_iter().map(each).collect()),
            );
        }
        self
    }

    fn done(self) -> Value {
        Value::Object(self.0)
    }
}

/// The root of an object: its `apiVersion`, `kind` and `metadata`.
fn root(api_version: String, kind: &str, metadata: Option<meta::ObjectMeta>) -> Fields {
    Fields::default()
        .string("apiVersion", Some(api_version))
        .string("kind", Some(kind.to_string()))
        .value(
            "metadata",
            Some(metadata.map_or_else(|| Value::Object(Map::new()), object_meta)),
        )
}

/// A `metav1.Time`, as JSON writes it (RFC 3339, whole seconds); the zero time is absent.
fn time(t: Option<meta::Time>) -> Option<Value> {
    let t = t?;
    let (seconds, nanos) = (t.seconds.unwrap_or(0), t.nanos.unwrap_or(0));
    if seconds == 0 && nanos == 0 {
        return None;
    }
    let at = jiff::Timestamp::from_second(seconds).ok()?;
    Some(Value::String(at.to_string()))
}

fn object_meta(m: meta::ObjectMeta) -> Value {
    Fields::default()
        .string("name", m.name)
        .string("generateName", m.generate_name)
        .string("namespace", m.namespace)
        .string("selfLink", m.self_link)
        .string("uid", m.uid)
        .string("resourceVersion", m.resource_version)
        .nonzero("generation", m.generation)
        .value("creationTimestamp", time(m.creation_timestamp))
        .value("deletionTimestamp", time(m.deletion_timestamp))
        .set(
            "deletionGracePeriodSeconds",
            m.deletion_grace_period_seconds,
        )
        .string_map("labels", m.labels)
        .string_map("annotations", m.annotations)
        .list("ownerReferences", m.owner_references, |r| {
            Fields::default()
                .string("apiVersion", r.api_version)
                .string("kind", r.kind)
                .string("name", r.name)
                .string("uid", r.uid)
                .set("controller", r.controller)
                .set("blockOwnerDeletion", r.block_owner_deletion)
                .done()
        })
        .strings("finalizers", m.finalizers)
        .list("managedFields", m.managed_fields, |f| {
            // `fieldsV1` holds the field set as JSON text; text that is not JSON is kept as
            // a string, which validation then refuses as upstream's decoder would.
            let fields = f.fields_v1.and_then(|f| f.raw).map(|raw| {
                serde_json::from_slice(&raw)
                    .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&raw).into_owned()))
            });
            Fields::default()
                .string("manager", f.manager)
                .string("operation", f.operation)
                .string("apiVersion", f.api_version)
                .value("time", time(f.time))
                .string("fieldsType", f.fields_type)
                .value("fieldsV1", fields)
                .string("subresource", f.subresource)
                .done()
        })
        .done()
}

/// A `Namespace` (`v1`).
pub fn namespace(body: &[u8]) -> Result<Value, ApiError> {
    let (ns, api_version) = decode::<core::Namespace>(body)?;
    let spec = ns
        .spec
        .map(|s| Fields::default().strings("finalizers", s.finalizers).done());
    let status = ns.status.map(|s| {
        Fields::default()
            .string("phase", s.phase)
            .list("conditions", s.conditions, |c| {
                Fields::default()
                    .string("type", c.r#type)
                    .string("status", c.status)
                    .value("lastTransitionTime", time(c.last_transition_time))
                    .string("reason", c.reason)
                    .string("message", c.message)
                    .done()
            })
            .done()
    });
    Ok(root(api_version, "Namespace", ns.metadata)
        .value("spec", spec)
        .value("status", status)
        .done())
}

/// A `ConfigMap` (`v1`): `binaryData` in base64, as JSON carries bytes.
pub fn config_map(body: &[u8]) -> Result<Value, ApiError> {
    let (cm, api_version) = decode::<core::ConfigMap>(body)?;
    let binary: BTreeMap<String, String> = cm
        .binary_data
        .into_iter()
        .map(|(k, v)| (k, base64::engine::general_purpose::STANDARD.encode(v)))
        .collect();
    Ok(root(api_version, "ConfigMap", cm.metadata)
        .set("immutable", cm.immutable)
        .string_map("data", cm.data)
        .string_map("binaryData", binary)
        .done())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// `k8s\0` and the envelope around `object`, as client-go writes it.
    fn envelope(api_version: &str, kind: &str, object: Vec<u8>) -> Vec<u8> {
        let unknown = Unknown {
            type_meta: Some(k8s_pb::apimachinery::pkg::runtime::TypeMeta {
                api_version: Some(api_version.into()),
                kind: Some(kind.into()),
            }),
            raw: Some(object),
            content_encoding: Some(String::new()),
            content_type: Some(String::new()),
        };
        let mut out = MAGIC.to_vec();
        out.extend(unknown.encode_to_vec());
        out
    }

    fn named(name: &str) -> Option<meta::ObjectMeta> {
        Some(meta::ObjectMeta {
            name: Some(name.into()),
            // Go writes every non-pointer string, empty or not.
            generate_name: Some(String::new()),
            namespace: Some(String::new()),
            generation: Some(0),
            ..Default::default()
        })
    }

    #[test]
    fn namespaces_decode_to_their_json_form() {
        // What `kubectl create namespace x` sends: empty spec and status.
        let ns = core::Namespace {
            metadata: named("x"),
            spec: Some(Default::default()),
            status: Some(core::NamespaceStatus {
                phase: Some(String::new()),
                conditions: Vec::new(),
            }),
        };
        let body = envelope("v1", "Namespace", ns.encode_to_vec());
        assert_eq!(
            namespace(&body).unwrap(),
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x"},
                   "spec": {}, "status": {}})
        );
    }

    #[test]
    fn config_maps_decode_with_every_field() {
        let cm = core::ConfigMap {
            metadata: Some(meta::ObjectMeta {
                name: Some("c".into()),
                namespace: Some("default".into()),
                labels: BTreeMap::from([("app".into(), "a".into())]),
                creation_timestamp: Some(meta::Time {
                    seconds: Some(1_700_000_000),
                    nanos: Some(0),
                }),
                owner_references: vec![meta::OwnerReference {
                    api_version: Some("v1".into()),
                    kind: Some("Namespace".into()),
                    name: Some("default".into()),
                    uid: Some("u".into()),
                    controller: Some(false),
                    block_owner_deletion: None,
                }],
                ..Default::default()
            }),
            immutable: Some(false),
            data: BTreeMap::from([("k".into(), "v".into())]),
            binary_data: BTreeMap::from([("b".into(), vec![0, 255])]),
        };
        let body = envelope("v1", "ConfigMap", cm.encode_to_vec());
        assert_eq!(
            config_map(&body).unwrap(),
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": "c", "namespace": "default", "labels": {"app": "a"},
                                "creationTimestamp": "2023-11-14T22:13:20Z",
                                "ownerReferences": [{"apiVersion": "v1", "kind": "Namespace",
                                                     "name": "default", "uid": "u",
                                                     "controller": false}]},
                   "immutable": false, "data": {"k": "v"}, "binaryData": {"b": "AP8="}})
        );
    }

    #[test]
    fn bodies_that_do_not_decode_are_bad_requests() {
        let good = envelope(
            "v1",
            "ConfigMap",
            core::ConfigMap {
                metadata: named("c"),
                ..Default::default()
            }
            .encode_to_vec(),
        );
        for body in [
            &b""[..],
            b"{\"kind\":\"ConfigMap\"}",
            b"k8s\0\xff\xff\xff",
            &good[..good.len() - 3],
        ] {
            let e = config_map(body).unwrap_err();
            assert_eq!(
                (e.code, e.reason.as_str()),
                (400, "BadRequest"),
                "{body:?}: {}",
                e.message
            );
        }
        assert_eq!(
            config_map(b"{}").unwrap_err().message,
            "provided data does not appear to be a protobuf message, expected prefix [107 56 115 0]"
        );
        // A ConfigMap sent where a Namespace is expected.
        let e = namespace(&good).unwrap_err();
        assert_eq!(e.code, 400);
        assert_eq!(
            e.message,
            "the body holds a \"ConfigMap\" of \"v1\", not a Namespace of \"v1\""
        );
        // A compressed object inside the envelope.
        let mut unknown = Unknown::decode(&good[4..]).unwrap();
        unknown.content_encoding = Some("gzip".into());
        let mut gz = MAGIC.to_vec();
        gz.extend(unknown.encode_to_vec());
        assert_eq!(config_map(&gz).unwrap_err().code, 400);
    }
}
