//! Protobuf from the wire: the etcd v3 API's responses, as the etcd backend decodes them, and
//! the request bodies of built-in kinds the development host and local mode decode.

use apiserver_framework::devhost::protobuf;
use apiserver_framework::error::ApiError;
use apiserver_framework::storage::etcd::proto::{
    RangeResponse, StatusResponse, TxnResponse, WatchResponse,
};
use prost::Message;

/// Decodes `data` as `M`; a decoded message encodes to bytes that decode to the same message.
fn round_trip<M: Message + Default + PartialEq + std::fmt::Debug>(data: &[u8]) {
    if let Ok(message) = M::decode(data) {
        let encoded = message.encode_to_vec();
        let again = M::decode(encoded.as_slice()).expect("an encoded message decodes");
        assert_eq!(again, message);
    }
}

/// Range, transaction, watch and status responses from arbitrary bytes.
pub fn etcd_wire(data: &[u8]) {
    round_trip::<RangeResponse>(data);
    round_trip::<TxnResponse>(data);
    round_trip::<WatchResponse>(data);
    round_trip::<StatusResponse>(data);
}

/// The protobuf decoders of built-in kinds, with the `apiVersion` and kind each expects.
#[allow(clippy::type_complexity)]
const DECODERS: &[(&str, &str, fn(&[u8]) -> Result<serde_json::Value, ApiError>)] = &[
    ("v1", "Namespace", protobuf::namespace),
    ("v1", "ConfigMap", protobuf::config_map),
    (
        "authentication.k8s.io/v1",
        "TokenReview",
        protobuf::token_review,
    ),
    (
        "authentication.k8s.io/v1",
        "SelfSubjectReview",
        protobuf::self_subject_review,
    ),
    (
        "authorization.k8s.io/v1",
        "SubjectAccessReview",
        protobuf::subject_access_review,
    ),
    (
        "authorization.k8s.io/v1",
        "SelfSubjectAccessReview",
        protobuf::self_subject_access_review,
    ),
    (
        "authorization.k8s.io/v1",
        "SelfSubjectRulesReview",
        protobuf::self_subject_rules_review,
    ),
];

/// `k8s\0` and a `runtime.Unknown` naming `kind` of `api_version` around `raw`, as client-go
/// sends a built-in object.
fn envelope(api_version: &str, kind: &str, raw: &[u8]) -> Vec<u8> {
    let mut type_meta = Vec::new();
    prost::encoding::string::encode(1, &api_version.to_string(), &mut type_meta);
    prost::encoding::string::encode(2, &kind.to_string(), &mut type_meta);
    let mut out = b"k8s\0".to_vec();
    prost::encoding::bytes::encode(1, &type_meta, &mut out);
    prost::encoding::bytes::encode(2, &raw.to_vec(), &mut out);
    out
}

/// The request bodies of built-in kinds in protobuf: `data` as a whole body, and as the
/// object inside an envelope naming each kind. Each decoder answers a JSON object of its kind
/// or a 400, never anything else.
pub fn protobuf_body(data: &[u8]) {
    for (api_version, kind, decode) in DECODERS {
        for body in [data.to_vec(), envelope(api_version, kind, data)] {
            match decode(&body) {
                Ok(object) => {
                    assert_eq!(object["kind"], *kind, "{object}");
                    assert_eq!(object["apiVersion"], *api_version, "{object}");
                    assert!(object["metadata"].is_object(), "{object}");
                }
                Err(e) => assert_eq!(e.code, 400, "{kind}: {}", e.message),
            }
        }
    }
}
