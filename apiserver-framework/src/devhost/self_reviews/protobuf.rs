//! The self reviews' request bodies in Kubernetes' protobuf encoding, which kubectl 1.32 and
//! later sends for built-in kinds: `k8s\0`, then a `runtime.Unknown` naming the kind and
//! carrying the object's own message.
//!
//! The messages are declared with prost's derive from the fields of upstream's
//! `generated.proto` files (`k8s.io/apimachinery` `runtime` and `meta/v1`, `k8s.io/api`
//! `authentication/v1` and `authorization/v1`) that the reviews read; prost skips the others.
//! Each decoder turns a body into the JSON object it stands for, so both encodings go through the
//! same validation and answer.

use prost::Message;
use serde_json::{Map, Value, json};

use crate::error::ApiError;

/// The four bytes every protobuf-encoded Kubernetes object starts with.
const MAGIC: &[u8] = b"k8s\0";

#[derive(Clone, PartialEq, Message)]
struct Unknown {
    #[prost(message, optional, tag = "1")]
    type_meta: Option<TypeMeta>,
    #[prost(bytes = "vec", optional, tag = "2")]
    raw: Option<Vec<u8>>,
    #[prost(string, optional, tag = "3")]
    content_encoding: Option<String>,
}

#[derive(Clone, PartialEq, Message)]
struct TypeMeta {
    #[prost(string, optional, tag = "1")]
    api_version: Option<String>,
    #[prost(string, optional, tag = "2")]
    kind: Option<String>,
}

#[derive(Clone, PartialEq, Message)]
struct Time {
    #[prost(int64, optional, tag = "1")]
    seconds: Option<i64>,
    #[prost(int32, optional, tag = "2")]
    nanos: Option<i32>,
}

/// The `ObjectMeta` fields a client could set on a review (which must leave them empty).
#[derive(Clone, PartialEq, Message)]
struct ObjectMeta {
    #[prost(string, optional, tag = "1")]
    name: Option<String>,
    #[prost(string, optional, tag = "2")]
    generate_name: Option<String>,
    #[prost(string, optional, tag = "3")]
    namespace: Option<String>,
    #[prost(string, optional, tag = "5")]
    uid: Option<String>,
    #[prost(string, optional, tag = "6")]
    resource_version: Option<String>,
    #[prost(int64, optional, tag = "7")]
    generation: Option<i64>,
    #[prost(message, optional, tag = "8")]
    creation_timestamp: Option<Time>,
    #[prost(btree_map = "string, string", tag = "11")]
    labels: std::collections::BTreeMap<String, String>,
    #[prost(btree_map = "string, string", tag = "12")]
    annotations: std::collections::BTreeMap<String, String>,
    #[prost(string, repeated, tag = "14")]
    finalizers: Vec<String>,
}

#[derive(Clone, PartialEq, Message)]
struct SelfSubjectReview {
    #[prost(message, optional, tag = "1")]
    metadata: Option<ObjectMeta>,
}

#[derive(Clone, PartialEq, Message)]
struct SelfSubjectAccessReview {
    #[prost(message, optional, tag = "1")]
    metadata: Option<ObjectMeta>,
    #[prost(message, optional, tag = "2")]
    spec: Option<SelfSubjectAccessReviewSpec>,
}

#[derive(Clone, PartialEq, Message)]
struct SelfSubjectAccessReviewSpec {
    #[prost(message, optional, tag = "1")]
    resource_attributes: Option<ResourceAttributes>,
    #[prost(message, optional, tag = "2")]
    non_resource_attributes: Option<NonResourceAttributes>,
}

#[derive(Clone, PartialEq, Message)]
struct ResourceAttributes {
    #[prost(string, optional, tag = "1")]
    namespace: Option<String>,
    #[prost(string, optional, tag = "2")]
    verb: Option<String>,
    #[prost(string, optional, tag = "3")]
    group: Option<String>,
    #[prost(string, optional, tag = "4")]
    version: Option<String>,
    #[prost(string, optional, tag = "5")]
    resource: Option<String>,
    #[prost(string, optional, tag = "6")]
    subresource: Option<String>,
    #[prost(string, optional, tag = "7")]
    name: Option<String>,
    #[prost(message, optional, tag = "8")]
    field_selector: Option<SelectorAttributes>,
    #[prost(message, optional, tag = "9")]
    label_selector: Option<SelectorAttributes>,
}

/// `FieldSelectorAttributes` and `LabelSelectorAttributes` (the same fields).
#[derive(Clone, PartialEq, Message)]
struct SelectorAttributes {
    #[prost(string, optional, tag = "1")]
    raw_selector: Option<String>,
    #[prost(message, repeated, tag = "2")]
    requirements: Vec<SelectorRequirement>,
}

/// `FieldSelectorRequirement` and `LabelSelectorRequirement` (the same fields).
#[derive(Clone, PartialEq, Message)]
struct SelectorRequirement {
    #[prost(string, optional, tag = "1")]
    key: Option<String>,
    #[prost(string, optional, tag = "2")]
    operator: Option<String>,
    #[prost(string, repeated, tag = "3")]
    values: Vec<String>,
}

#[derive(Clone, PartialEq, Message)]
struct NonResourceAttributes {
    #[prost(string, optional, tag = "1")]
    path: Option<String>,
    #[prost(string, optional, tag = "2")]
    verb: Option<String>,
}

#[derive(Clone, PartialEq, Message)]
struct SelfSubjectRulesReview {
    #[prost(message, optional, tag = "1")]
    metadata: Option<ObjectMeta>,
    #[prost(message, optional, tag = "2")]
    spec: Option<SelfSubjectRulesReviewSpec>,
}

#[derive(Clone, PartialEq, Message)]
struct SelfSubjectRulesReviewSpec {
    #[prost(string, optional, tag = "1")]
    namespace: Option<String>,
}

fn bad(message: impl std::fmt::Display) -> ApiError {
    ApiError::bad_request(format!(
        "the protobuf request body does not decode: {message}"
    ))
}

/// The object message inside the envelope, after checking it names `kind` of `group`; returns
/// the message bytes and the envelope's `apiVersion`.
fn unwrap(body: &[u8], group: &str, kind: &str) -> Result<(Vec<u8>, String), ApiError> {
    let Some(rest) = body.strip_prefix(MAGIC) else {
        return Err(bad("it does not start with the k8s\\0 prefix"));
    };
    let unknown = Unknown::decode(rest).map_err(bad)?;
    let type_meta = unknown.type_meta.unwrap_or_default();
    let api_version = type_meta.api_version.unwrap_or_default();
    let found_kind = type_meta.kind.unwrap_or_default();
    let found_group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
    if found_kind != kind || found_group != group {
        return Err(ApiError::bad_request(format!(
            "the body holds {found_kind} {api_version:?}, not a {kind} of {group}"
        )));
    }
    if let Some(encoding) = unknown.content_encoding.filter(|e| !e.is_empty()) {
        return Err(bad(format!(
            "content encoding {encoding:?} is not supported"
        )));
    }
    Ok((unknown.raw.unwrap_or_default(), api_version))
}

fn put(map: &mut Map<String, Value>, key: &str, value: Option<String>) {
    if let Some(v) = value.filter(|v| !v.is_empty()) {
        map.insert(key.into(), Value::String(v));
    }
}

/// The metadata as JSON: the fields that are set (none: `{}`).
fn metadata(meta: Option<ObjectMeta>) -> Value {
    let Some(meta) = meta else {
        return json!({});
    };
    let mut out = Map::new();
    put(&mut out, "name", meta.name);
    put(&mut out, "generateName", meta.generate_name);
    put(&mut out, "namespace", meta.namespace);
    put(&mut out, "uid", meta.uid);
    put(&mut out, "resourceVersion", meta.resource_version);
    if let Some(g) = meta.generation.filter(|g| *g != 0) {
        out.insert("generation".into(), g.into());
    }
    if let Some(t) = meta.creation_timestamp
        && (t.seconds.unwrap_or(0) != 0 || t.nanos.unwrap_or(0) != 0)
    {
        let at = jiff::Timestamp::new(t.seconds.unwrap_or(0), t.nanos.unwrap_or(0))
            .map(|t| Value::String(t.to_string()))
            .unwrap_or_else(|_| json!(t.seconds));
        out.insert("creationTimestamp".into(), at);
    }
    if !meta.labels.is_empty() {
        out.insert("labels".into(), json!(meta.labels));
    }
    if !meta.annotations.is_empty() {
        out.insert("annotations".into(), json!(meta.annotations));
    }
    if !meta.finalizers.is_empty() {
        out.insert("finalizers".into(), json!(meta.finalizers));
    }
    Value::Object(out)
}

fn selector(s: Option<SelectorAttributes>) -> Option<Value> {
    let s = s?;
    let mut out = Map::new();
    put(&mut out, "rawSelector", s.raw_selector);
    if !s.requirements.is_empty() {
        let reqs: Vec<Value> = s
            .requirements
            .into_iter()
            .map(|r| {
                let mut m = Map::new();
                m.insert("key".into(), r.key.unwrap_or_default().into());
                m.insert("operator".into(), r.operator.unwrap_or_default().into());
                if !r.values.is_empty() {
                    m.insert("values".into(), json!(r.values));
                }
                Value::Object(m)
            })
            .collect();
        out.insert("requirements".into(), Value::Array(reqs));
    }
    Some(Value::Object(out))
}

fn object(api_version: String, kind: &str, metadata: Value) -> Map<String, Value> {
    let mut out = Map::new();
    out.insert("apiVersion".into(), api_version.into());
    out.insert("kind".into(), kind.into());
    out.insert("metadata".into(), metadata);
    out
}

/// A `SelfSubjectReview` of `authentication.k8s.io` (any version).
pub fn self_subject_review(body: &[u8]) -> Result<Value, ApiError> {
    let kind = "SelfSubjectReview";
    let (raw, api_version) = unwrap(body, super::AUTHENTICATION_GROUP, kind)?;
    let review = SelfSubjectReview::decode(raw.as_slice()).map_err(bad)?;
    Ok(Value::Object(object(
        api_version,
        kind,
        metadata(review.metadata),
    )))
}

/// A `SelfSubjectAccessReview` of `authorization.k8s.io`.
pub fn self_subject_access_review(body: &[u8]) -> Result<Value, ApiError> {
    let kind = "SelfSubjectAccessReview";
    let (raw, api_version) = unwrap(body, super::AUTHORIZATION_GROUP, kind)?;
    let review = SelfSubjectAccessReview::decode(raw.as_slice()).map_err(bad)?;
    let mut out = object(api_version, kind, metadata(review.metadata));
    let spec = review.spec.unwrap_or_default();
    let mut spec_json = Map::new();
    if let Some(r) = spec.resource_attributes {
        let mut m = Map::new();
        put(&mut m, "namespace", r.namespace);
        put(&mut m, "verb", r.verb);
        put(&mut m, "group", r.group);
        put(&mut m, "version", r.version);
        put(&mut m, "resource", r.resource);
        put(&mut m, "subresource", r.subresource);
        put(&mut m, "name", r.name);
        if let Some(s) = selector(r.field_selector) {
            m.insert("fieldSelector".into(), s);
        }
        if let Some(s) = selector(r.label_selector) {
            m.insert("labelSelector".into(), s);
        }
        spec_json.insert("resourceAttributes".into(), Value::Object(m));
    }
    if let Some(n) = spec.non_resource_attributes {
        let mut m = Map::new();
        put(&mut m, "path", n.path);
        put(&mut m, "verb", n.verb);
        spec_json.insert("nonResourceAttributes".into(), Value::Object(m));
    }
    out.insert("spec".into(), Value::Object(spec_json));
    Ok(Value::Object(out))
}

/// A `SelfSubjectRulesReview` of `authorization.k8s.io`.
pub fn self_subject_rules_review(body: &[u8]) -> Result<Value, ApiError> {
    let kind = "SelfSubjectRulesReview";
    let (raw, api_version) = unwrap(body, super::AUTHORIZATION_GROUP, kind)?;
    let review = SelfSubjectRulesReview::decode(raw.as_slice()).map_err(bad)?;
    let mut out = object(api_version, kind, metadata(review.metadata));
    let mut spec = Map::new();
    put(
        &mut spec,
        "namespace",
        review.spec.and_then(|s| s.namespace),
    );
    out.insert("spec".into(), Value::Object(spec));
    Ok(Value::Object(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What kubectl 1.33 sends for `kubectl auth whoami` (captured with `-v=9`).
    const WHOAMI: &[u8] = &[
        0x6b, 0x38, 0x73, 0x00, 0x0a, 0x2d, 0x0a, 0x18, 0x61, 0x75, 0x74, 0x68, 0x65, 0x6e, 0x74,
        0x69, 0x63, 0x61, 0x74, 0x69, 0x6f, 0x6e, 0x2e, 0x6b, 0x38, 0x73, 0x2e, 0x69, 0x6f, 0x2f,
        0x76, 0x31, 0x12, 0x11, 0x53, 0x65, 0x6c, 0x66, 0x53, 0x75, 0x62, 0x6a, 0x65, 0x63, 0x74,
        0x52, 0x65, 0x76, 0x69, 0x65, 0x77, 0x12, 0x1a, 0x0a, 0x10, 0x0a, 0x00, 0x12, 0x00, 0x1a,
        0x00, 0x22, 0x00, 0x2a, 0x00, 0x32, 0x00, 0x38, 0x00, 0x42, 0x00, 0x12, 0x06, 0x0a, 0x04,
        0x0a, 0x00, 0x12, 0x00, 0x1a, 0x00, 0x22, 0x00,
    ];

    fn envelope(api_version: &str, kind: &str, raw: Vec<u8>) -> Vec<u8> {
        let unknown = Unknown {
            type_meta: Some(TypeMeta {
                api_version: Some(api_version.into()),
                kind: Some(kind.into()),
            }),
            raw: Some(raw),
            content_encoding: Some(String::new()),
        };
        let mut out = MAGIC.to_vec();
        out.extend(unknown.encode_to_vec());
        out
    }

    #[test]
    fn kubectls_whoami_body_decodes() {
        let v = self_subject_review(WHOAMI).unwrap();
        assert_eq!(
            v,
            json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview", "metadata": {}})
        );
    }

    #[test]
    fn access_reviews_decode_to_their_json_form() {
        let review = SelfSubjectAccessReview {
            metadata: Some(ObjectMeta::default()),
            spec: Some(SelfSubjectAccessReviewSpec {
                resource_attributes: Some(ResourceAttributes {
                    namespace: Some("default".into()),
                    verb: Some("create".into()),
                    group: Some("wardle.example.com".into()),
                    resource: Some("flunders".into()),
                    field_selector: Some(SelectorAttributes {
                        raw_selector: None,
                        requirements: vec![SelectorRequirement {
                            key: Some("spec.reference".into()),
                            operator: Some("In".into()),
                            values: vec!["a".into()],
                        }],
                    }),
                    ..Default::default()
                }),
                non_resource_attributes: None,
            }),
        };
        let body = envelope(
            "authorization.k8s.io/v1",
            "SelfSubjectAccessReview",
            review.encode_to_vec(),
        );
        assert_eq!(
            self_subject_access_review(&body).unwrap(),
            json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
                   "metadata": {},
                   "spec": {"resourceAttributes": {"namespace": "default", "verb": "create",
                            "group": "wardle.example.com", "resource": "flunders",
                            "fieldSelector": {"requirements": [{"key": "spec.reference", "operator": "In", "values": ["a"]}]}}}})
        );
        let named = SelfSubjectRulesReview {
            metadata: Some(ObjectMeta {
                name: Some("x".into()),
                ..Default::default()
            }),
            spec: Some(SelfSubjectRulesReviewSpec {
                namespace: Some("ns".into()),
            }),
        };
        let body = envelope(
            "authorization.k8s.io/v1",
            "SelfSubjectRulesReview",
            named.encode_to_vec(),
        );
        assert_eq!(
            self_subject_rules_review(&body).unwrap(),
            json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectRulesReview",
                   "metadata": {"name": "x"}, "spec": {"namespace": "ns"}})
        );
    }

    #[test]
    fn wrong_bodies_are_bad_requests() {
        for body in [
            &b""[..],
            b"{\"kind\":\"SelfSubjectReview\"}",
            b"k8s\0\xff\xff\xff",
            &WHOAMI[..WHOAMI.len() - 3],
        ] {
            let e = self_subject_review(body).unwrap_err();
            assert_eq!(e.code, 400, "{body:?}: {}", e.message);
        }
        // The envelope names another kind.
        let e = self_subject_access_review(WHOAMI).unwrap_err();
        assert_eq!(e.code, 400);
        assert!(
            e.message.contains("not a SelfSubjectAccessReview"),
            "{}",
            e.message
        );
        let gz = {
            let mut u = Unknown::decode(&WHOAMI[4..]).unwrap();
            u.content_encoding = Some("gzip".into());
            let mut out = MAGIC.to_vec();
            out.extend(u.encode_to_vec());
            out
        };
        assert_eq!(self_subject_review(&gz).unwrap_err().code, 400);
    }
}
