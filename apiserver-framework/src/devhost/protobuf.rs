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
use k8s_pb::api::authentication::v1 as authentication;
use k8s_pb::api::authorization::v1 as authorization;
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

/// Whether `v` is a Kubernetes API version (`v1`, `v1beta1`, `v2alpha3`): an envelope naming
/// anything else names no registered type, which upstream's serializer refuses.
fn is_version(v: &str) -> bool {
    let Some(rest) = v.strip_prefix('v') else {
        return false;
    };
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    let (major, tail) = rest.split_at(digits);
    if major.is_empty() || major.starts_with('0') {
        return false;
    }
    let Some(level) = tail
        .strip_prefix("alpha")
        .or_else(|| tail.strip_prefix("beta"))
    else {
        return tail.is_empty();
    };
    !level.is_empty() && !level.starts_with('0') && level.bytes().all(|b| b.is_ascii_digit())
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
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", &api_version));
    if kind != T::KIND || group != T::GROUP || !is_version(version) {
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

/// `spec.resourceAttributes` of an access review.
fn resource_attributes(r: authorization::ResourceAttributes) -> Value {
    Fields::default()
        .string("namespace", r.namespace)
        .string("verb", r.verb)
        .string("group", r.group)
        .string("version", r.version)
        .string("resource", r.resource)
        .string("subresource", r.subresource)
        .string("name", r.name)
        .value(
            "fieldSelector",
            r.field_selector.map(|s| {
                selector(
                    s.raw_selector,
                    s.requirements
                        .into_iter()
                        .map(|r| (r.key, r.operator, r.values))
                        .collect(),
                )
            }),
        )
        .value(
            "labelSelector",
            r.label_selector.map(|s| {
                selector(
                    s.raw_selector,
                    s.requirements
                        .into_iter()
                        .map(|r| (r.key, r.operator, r.values))
                        .collect(),
                )
            }),
        )
        .done()
}

/// A field or label selector of resource attributes: its raw form and requirements
/// (`key`, `operator`, `values`).
#[allow(clippy::type_complexity)]
fn selector(
    raw: Option<String>,
    requirements: Vec<(Option<String>, Option<String>, Vec<String>)>,
) -> Value {
    Fields::default()
        .string("rawSelector", raw)
        .list("requirements", requirements, |(key, operator, values)| {
            Fields::default()
                .string("key", key)
                .string("operator", operator)
                .strings("values", values)
                .done()
        })
        .done()
}

/// `spec.nonResourceAttributes` of an access review.
fn non_resource_attributes(n: authorization::NonResourceAttributes) -> Value {
    Fields::default()
        .string("path", n.path)
        .string("verb", n.verb)
        .done()
}

/// A `TokenReview` of `authentication.k8s.io` (a Go extension server's delegated
/// authentication sends them through client-go).
pub fn token_review(body: &[u8]) -> Result<Value, ApiError> {
    let (review, api_version) = decode::<authentication::TokenReview>(body)?;
    let spec = review.spec.unwrap_or_default();
    Ok(root(api_version, "TokenReview", review.metadata)
        .value(
            "spec",
            Some(
                Fields::default()
                    .string("token", spec.token)
                    .strings("audiences", spec.audiences)
                    .done(),
            ),
        )
        .done())
}

/// A `SubjectAccessReview` of `authorization.k8s.io` (a Go extension server's delegated
/// authorization sends them through client-go).
pub fn subject_access_review(body: &[u8]) -> Result<Value, ApiError> {
    let (review, api_version) = decode::<authorization::SubjectAccessReview>(body)?;
    let spec = review.spec.unwrap_or_default();
    let extra: Map<String, Value> = spec
        .extra
        .into_iter()
        .map(|(k, v)| (k, v.items.into()))
        .collect();
    let spec = Fields::default()
        .value(
            "resourceAttributes",
            spec.resource_attributes.map(resource_attributes),
        )
        .value(
            "nonResourceAttributes",
            spec.non_resource_attributes.map(non_resource_attributes),
        )
        .string("user", spec.user)
        .strings("groups", spec.groups)
        .value("extra", (!extra.is_empty()).then_some(Value::Object(extra)))
        .string("uid", spec.uid);
    Ok(root(api_version, "SubjectAccessReview", review.metadata)
        .value("spec", Some(spec.done()))
        .done())
}

/// A `SelfSubjectReview` of `authentication.k8s.io` (`kubectl auth whoami`; the message is
/// the same in `v1` and `v1beta1`).
pub fn self_subject_review(body: &[u8]) -> Result<Value, ApiError> {
    let (review, api_version) = decode::<authentication::SelfSubjectReview>(body)?;
    Ok(root(api_version, "SelfSubjectReview", review.metadata).done())
}

/// A `SelfSubjectAccessReview` of `authorization.k8s.io` (`kubectl auth can-i`).
pub fn self_subject_access_review(body: &[u8]) -> Result<Value, ApiError> {
    let (review, api_version) = decode::<authorization::SelfSubjectAccessReview>(body)?;
    let spec = review.spec.unwrap_or_default();
    let spec = Fields::default()
        .value(
            "resourceAttributes",
            spec.resource_attributes.map(resource_attributes),
        )
        .value(
            "nonResourceAttributes",
            spec.non_resource_attributes.map(non_resource_attributes),
        );
    Ok(
        root(api_version, "SelfSubjectAccessReview", review.metadata)
            .value("spec", Some(spec.done()))
            .done(),
    )
}

/// A `SelfSubjectRulesReview` of `authorization.k8s.io` (`kubectl auth can-i --list`).
pub fn self_subject_rules_review(body: &[u8]) -> Result<Value, ApiError> {
    let (review, api_version) = decode::<authorization::SelfSubjectRulesReview>(body)?;
    let spec = Fields::default().string("namespace", review.spec.and_then(|s| s.namespace));
    Ok(root(api_version, "SelfSubjectRulesReview", review.metadata)
        .value("spec", Some(spec.done()))
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

    /// What kubectl 1.33 sends for `kubectl auth whoami` (captured with `-v=9`).
    const WHOAMI: &[u8] = &[
        0x6b, 0x38, 0x73, 0x00, 0x0a, 0x2d, 0x0a, 0x18, 0x61, 0x75, 0x74, 0x68, 0x65, 0x6e, 0x74,
        0x69, 0x63, 0x61, 0x74, 0x69, 0x6f, 0x6e, 0x2e, 0x6b, 0x38, 0x73, 0x2e, 0x69, 0x6f, 0x2f,
        0x76, 0x31, 0x12, 0x11, 0x53, 0x65, 0x6c, 0x66, 0x53, 0x75, 0x62, 0x6a, 0x65, 0x63, 0x74,
        0x52, 0x65, 0x76, 0x69, 0x65, 0x77, 0x12, 0x1a, 0x0a, 0x10, 0x0a, 0x00, 0x12, 0x00, 0x1a,
        0x00, 0x22, 0x00, 0x2a, 0x00, 0x32, 0x00, 0x38, 0x00, 0x42, 0x00, 0x12, 0x06, 0x0a, 0x04,
        0x0a, 0x00, 0x12, 0x00, 0x1a, 0x00, 0x22, 0x00,
    ];

    #[test]
    fn kubectls_whoami_body_decodes() {
        assert_eq!(
            self_subject_review(WHOAMI).unwrap(),
            json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview", "metadata": {}})
        );
        // The envelope names another kind.
        let e = self_subject_access_review(WHOAMI).unwrap_err();
        assert_eq!(e.code, 400);
        assert!(
            e.message.contains("not a SelfSubjectAccessReview"),
            "{}",
            e.message
        );
    }

    fn can_i() -> authorization::ResourceAttributes {
        authorization::ResourceAttributes {
            namespace: Some("default".into()),
            verb: Some("create".into()),
            group: Some("wardle.example.com".into()),
            version: Some(String::new()),
            resource: Some("flunders".into()),
            field_selector: Some(authorization::FieldSelectorAttributes {
                raw_selector: None,
                requirements: vec![meta::FieldSelectorRequirement {
                    key: Some("spec.reference".into()),
                    operator: Some("In".into()),
                    values: vec!["a".into()],
                }],
            }),
            ..Default::default()
        }
    }

    #[test]
    fn access_reviews_decode_to_their_json_form() {
        let review = authorization::SelfSubjectAccessReview {
            metadata: Some(Default::default()),
            spec: Some(authorization::SelfSubjectAccessReviewSpec {
                resource_attributes: Some(can_i()),
                non_resource_attributes: None,
            }),
            status: None,
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
        let rules = authorization::SelfSubjectRulesReview {
            metadata: named("x"),
            spec: Some(authorization::SelfSubjectRulesReviewSpec {
                namespace: Some("ns".into()),
            }),
            status: None,
        };
        let body = envelope(
            "authorization.k8s.io/v1",
            "SelfSubjectRulesReview",
            rules.encode_to_vec(),
        );
        assert_eq!(
            self_subject_rules_review(&body).unwrap(),
            json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectRulesReview",
                   "metadata": {"name": "x"}, "spec": {"namespace": "ns"}})
        );
        let review = authorization::SubjectAccessReview {
            metadata: None,
            spec: Some(authorization::SubjectAccessReviewSpec {
                resource_attributes: None,
                non_resource_attributes: Some(authorization::NonResourceAttributes {
                    path: Some("/healthz".into()),
                    verb: Some("get".into()),
                }),
                user: Some("alice".into()),
                groups: vec!["editors".into()],
                extra: BTreeMap::from([(
                    "scopes".to_string(),
                    authorization::ExtraValue {
                        items: vec!["a".into(), "b".into()],
                    },
                )]),
                uid: Some(String::new()),
            }),
            status: None,
        };
        let body = envelope(
            "authorization.k8s.io/v1",
            "SubjectAccessReview",
            review.encode_to_vec(),
        );
        assert_eq!(
            subject_access_review(&body).unwrap(),
            json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
                   "metadata": {},
                   "spec": {"nonResourceAttributes": {"path": "/healthz", "verb": "get"},
                            "user": "alice", "groups": ["editors"],
                            "extra": {"scopes": ["a", "b"]}}})
        );
        let review = authentication::TokenReview {
            metadata: named(""),
            spec: Some(authentication::TokenReviewSpec {
                token: Some("secret".into()),
                audiences: vec!["https://kubernetes.default.svc".into()],
            }),
            status: None,
        };
        let body = envelope(
            "authentication.k8s.io/v1",
            "TokenReview",
            review.encode_to_vec(),
        );
        assert_eq!(
            token_review(&body).unwrap(),
            json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
                   "metadata": {},
                   "spec": {"token": "secret", "audiences": ["https://kubernetes.default.svc"]}})
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
