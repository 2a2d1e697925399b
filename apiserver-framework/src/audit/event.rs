//! The `audit.k8s.io/v1` `Event`, shaped as upstream's (`k8s.io/apiserver/pkg/apis/audit/v1`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::user::UserInfo;

/// How much of a request is recorded (`audit.k8s.io/v1` `Level`), in increasing order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Level {
    /// Nothing is recorded.
    None,
    /// User, timestamps, resource, verb and so on, but no bodies.
    Metadata,
    /// Metadata and the request body.
    Request,
    /// Metadata, the request body and the response body.
    RequestResponse,
}

/// When in a request's life an event is recorded (`audit.k8s.io/v1` `Stage`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Stage {
    /// As soon as the request is received, before it is handled further.
    RequestReceived,
    /// Once the response headers are sent, before the body (long-running requests only).
    ResponseStarted,
    /// Once the response is complete.
    ResponseComplete,
    /// When a panic occurred.
    Panic,
}

/// A user as an audit event records it (`authentication.k8s.io/v1` `UserInfo`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EventUser {
    /// The user name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub username: String,
    /// The unique id.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uid: String,
    /// The groups.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<String>,
    /// Extra attributes.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub extra: BTreeMap<String, Vec<String>>,
}

impl From<&UserInfo> for EventUser {
    fn from(u: &UserInfo) -> Self {
        EventUser {
            username: u.username.clone(),
            uid: u.uid.clone(),
            groups: u.groups.clone(),
            extra: u.extra.clone(),
        }
    }
}

/// What a resource request was about (`audit.k8s.io/v1` `ObjectReference`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectReference {
    /// The plural resource name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub resource: String,
    /// The namespace.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// The object name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// The object uid.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uid: String,
    /// The API group (empty for the core group).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_group: String,
    /// The API version.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// The object's resourceVersion.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub resource_version: String,
    /// The subresource.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub subresource: String,
}

/// The outcome of a request as an event records it: the bounded fields of a `metav1.Status`
/// (`metadata` is always `{}`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ResponseStatus {
    /// Always empty (`{}`).
    #[serde(default)]
    pub metadata: serde_json::Map<String, serde_json::Value>,
    /// `Success` or `Failure` when the response was a Status.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub status: String,
    /// The Status message.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// The Status reason.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// The Status details.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<serde_json::Value>,
    /// The HTTP status code.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub code: u16,
}

fn is_zero(c: &u16) -> bool {
    *c == 0
}

/// One audit event (`audit.k8s.io/v1` `Event`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Event {
    /// Always `Event`.
    pub kind: String,
    /// Always `audit.k8s.io/v1`.
    pub api_version: String,
    /// The level the policy chose.
    pub level: Level,
    /// The request's audit id (its `Audit-Id` header).
    #[serde(rename = "auditID")]
    pub audit_id: String,
    /// The stage this event records.
    pub stage: Stage,
    /// The request path and query.
    #[serde(rename = "requestURI")]
    pub request_uri: String,
    /// The authorization verb (`get`, `list`, `watch`, `create`, …; the lower-cased method
    /// for non-resource requests).
    pub verb: String,
    /// The authenticated user.
    pub user: EventUser,
    /// The user the request impersonated, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub impersonated_user: Option<EventUser>,
    /// The client addresses (forwarding headers first, then the peer).
    #[serde(default, rename = "sourceIPs", skip_serializing_if = "Vec::is_empty")]
    pub source_ips: Vec<String>,
    /// The `User-Agent` header.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub user_agent: String,
    /// What a resource request was about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub object_ref: Option<ObjectReference>,
    /// The outcome, once known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_status: Option<ResponseStatus>,
    /// The request body (levels `Request` and `RequestResponse`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_object: Option<serde_json::Value>,
    /// The response body (level `RequestResponse`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_object: Option<serde_json::Value>,
    /// When the request arrived (microsecond RFC 3339).
    pub request_received_timestamp: String,
    /// When this stage was reached (microsecond RFC 3339).
    pub stage_timestamp: String,
    /// Annotations such as `authorization.k8s.io/decision`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

/// `t` as upstream's `metav1.MicroTime` writes it: RFC 3339 in UTC with six fractional digits.
pub fn micro_time(t: jiff::Timestamp) -> String {
    format!("{t:.6}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn micro_time_has_six_digits() {
        let t = jiff::Timestamp::from_microsecond(1_700_000_000_000_042).unwrap();
        assert_eq!(micro_time(t), "2023-11-14T22:13:20.000042Z");
        let t = jiff::Timestamp::from_second(1_700_000_000).unwrap();
        assert_eq!(micro_time(t), "2023-11-14T22:13:20.000000Z");
    }

    #[test]
    fn levels_are_ordered() {
        assert!(Level::None < Level::Metadata);
        assert!(Level::Metadata < Level::Request);
        assert!(Level::Request < Level::RequestResponse);
    }
}
