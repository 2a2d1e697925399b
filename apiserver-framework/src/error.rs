//! Errors as Kubernetes `metav1.Status` objects.
//!
//! Every failure the server reports to a client is an [`ApiError`], rendered as a `Status`
//! with upstream's `reason`, `code`, message shape and `details`; a validation's
//! [`FieldError`]s become the causes of a 422 `Invalid` ([`field`]).

pub mod field;

use serde::{Deserialize, Serialize};

pub use field::{FieldError, FieldErrorKind};

use crate::resource::ResourceInfo;

/// A result whose error is an [`ApiError`].
pub type Result<T, E = ApiError> = std::result::Result<T, E>;

/// The `reason`s of the errors this module builds, as `metav1.StatusReason` names them: match
/// an error by its reason with [`ApiError::is`] rather than by comparing strings, as
/// upstream's `apierrors.IsNotFound` and `IsAlreadyExists` do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum StatusReason {
    /// 404: the object or route does not exist.
    NotFound,
    /// 409: a create found an object of that name.
    AlreadyExists,
    /// 409: the write found another revision, or a precondition failed.
    Conflict,
    /// 422: the object failed validation.
    Invalid,
    /// 403: the request is not allowed.
    Forbidden,
    /// 400: the request is malformed.
    BadRequest,
    /// 401: the caller is not authenticated.
    Unauthorized,
    /// 405: the verb is not served here.
    MethodNotAllowed,
    /// 406: no acceptable media type.
    NotAcceptable,
    /// 415: the body's media type is not accepted.
    UnsupportedMediaType,
    /// 413: the body is too large.
    RequestEntityTooLarge,
    /// 410: the resource version or continue token is too old.
    Expired,
    /// 500: the server failed.
    InternalError,
}

impl StatusReason {
    /// The reason as it stands in a `Status`.
    pub const fn as_str(self) -> &'static str {
        match self {
            StatusReason::NotFound => "NotFound",
            StatusReason::AlreadyExists => "AlreadyExists",
            StatusReason::Conflict => "Conflict",
            StatusReason::Invalid => "Invalid",
            StatusReason::Forbidden => "Forbidden",
            StatusReason::BadRequest => "BadRequest",
            StatusReason::Unauthorized => "Unauthorized",
            StatusReason::MethodNotAllowed => "MethodNotAllowed",
            StatusReason::NotAcceptable => "NotAcceptable",
            StatusReason::UnsupportedMediaType => "UnsupportedMediaType",
            StatusReason::RequestEntityTooLarge => "RequestEntityTooLarge",
            StatusReason::Expired => "Expired",
            StatusReason::InternalError => "InternalError",
        }
    }
}

/// One cause of an error, as `details.causes[]` of a Status.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatusCause {
    /// Machine-readable cause, e.g. `FieldValueRequired`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// Human-readable text.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// The field the cause is about, e.g. `spec.reference`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub field: String,
}

/// `details` of a Status.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StatusDetails {
    /// Name of the object the error is about.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// API group of the object.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub group: String,
    /// Kind (or, for most errors, plural resource name) of the object.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// UID of the object.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uid: String,
    /// Individual causes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub causes: Vec<StatusCause>,
    /// Seconds a client should wait before retrying.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub retry_after_seconds: i32,
}

fn is_zero(v: &i32) -> bool {
    *v == 0
}

/// `metadata` of a Status (a ListMeta; normally empty).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatusMeta {
    /// A continue token, set only by the expired-continue error.
    #[serde(default, rename = "continue", skip_serializing_if = "Option::is_none")]
    pub continue_: Option<String>,
}

/// A `metav1.Status` object, serialized with upstream's key order
/// (`kind`, `apiVersion`, `metadata`, `status`, `message`, `reason`, `details`, `code`).
///
/// Written here rather than taken from k8s-openapi because that type serializes its keys in
/// another order and always needs a version feature; the wire shape is the same.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Status {
    /// Always `Status`.
    pub kind: String,
    /// Always `v1`.
    #[serde(rename = "apiVersion")]
    pub api_version: String,
    /// List metadata; normally empty.
    pub metadata: StatusMeta,
    /// `Success` or `Failure`.
    pub status: String,
    /// Human-readable description.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// Machine-readable reason, e.g. `NotFound`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// Extended data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<StatusDetails>,
    /// Suggested HTTP status code; left out when 0, as upstream's `omitempty` does (a delete's
    /// `Success` Status has none).
    #[serde(default, skip_serializing_if = "is_zero_code")]
    pub code: u16,
}

fn is_zero_code(code: &u16) -> bool {
    *code == 0
}

/// A failure reported to a client as a Kubernetes `Status`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ApiError {
    /// HTTP status code.
    pub code: u16,
    /// Status `reason` (empty for a bare internal error).
    pub reason: String,
    /// Status `message`.
    pub message: String,
    /// Status `details`, if any (boxed to keep results small).
    pub details: Option<Box<StatusDetails>>,
    /// A continue token for the Status' `metadata.continue` (only the expired-continue error
    /// of a paged list carries one).
    pub continue_token: Option<String>,
}

impl ApiError {
    /// An error with the given code, reason and message and no details.
    pub fn new(code: u16, reason: impl Into<String>, message: impl Into<String>) -> Self {
        ApiError {
            code,
            reason: reason.into(),
            message: message.into(),
            details: None,
            continue_token: None,
        }
    }

    /// Whether the error has `reason`.
    pub fn is(&self, reason: StatusReason) -> bool {
        self.reason == reason.as_str()
    }

    /// The same error with `details` set.
    pub fn with_details(mut self, details: StatusDetails) -> Self {
        self.details = Some(Box::new(details));
        self
    }

    fn resource_details(info: &ResourceInfo, name: &str) -> StatusDetails {
        StatusDetails {
            name: name.to_string(),
            group: info.group.clone(),
            kind: info.plural.clone(),
            ..Default::default()
        }
    }

    /// 404 `NotFound`: `<plural>.<group> "<name>" not found`.
    pub fn not_found(info: &ResourceInfo, name: &str) -> Self {
        ApiError::new(
            404,
            StatusReason::NotFound.as_str(),
            format!("{} {:?} not found", info.group_resource(), name),
        )
        .with_details(Self::resource_details(info, name))
    }

    /// 409 `AlreadyExists`: `<plural>.<group> "<name>" already exists`.
    pub fn already_exists(info: &ResourceInfo, name: &str) -> Self {
        ApiError::new(
            409,
            StatusReason::AlreadyExists.as_str(),
            format!("{} {:?} already exists", info.group_resource(), name),
        )
        .with_details(Self::resource_details(info, name))
    }

    /// 409 `Conflict`: `Operation cannot be fulfilled on <gr> "<name>": <why>`.
    pub fn conflict(info: &ResourceInfo, name: &str, why: &str) -> Self {
        ApiError::new(
            409,
            StatusReason::Conflict.as_str(),
            format!(
                "Operation cannot be fulfilled on {} {:?}: {}",
                info.group_resource(),
                name,
                why
            ),
        )
        .with_details(Self::resource_details(info, name))
    }

    /// The Conflict a stale `resourceVersion` gets on update.
    pub fn stale(info: &ResourceInfo, name: &str) -> Self {
        Self::conflict(
            info,
            name,
            "the object has been modified; please apply your changes to the latest version and try again",
        )
    }

    /// 422 `Invalid` with one cause per field error:
    /// `<Kind>.<group> "<name>" is invalid: <errors>`.
    pub fn invalid(info: &ResourceInfo, name: &str, errors: &[FieldError]) -> Self {
        Self::invalid_with(&info.group_kind(), &info.group, &info.kind, name, errors)
    }

    /// 422 `Invalid` for an arbitrary qualified kind (`qualified`) with details `group`/`kind`.
    pub fn invalid_with(
        qualified: &str,
        group: &str,
        kind: &str,
        name: &str,
        errors: &[FieldError],
    ) -> Self {
        let mut texts: Vec<String> = Vec::new();
        for e in errors {
            let t = e.to_string();
            if !texts.contains(&t) {
                texts.push(t);
            }
        }
        let message = match texts.len() {
            0 => format!("{qualified} {name:?} is invalid"),
            1 => format!("{qualified} {name:?} is invalid: {}", texts[0]),
            _ => format!("{qualified} {name:?} is invalid: [{}]", texts.join(", ")),
        };
        ApiError::new(422, StatusReason::Invalid.as_str(), message).with_details(StatusDetails {
            name: name.to_string(),
            group: group.to_string(),
            kind: kind.to_string(),
            causes: errors.iter().map(FieldError::to_cause).collect(),
            ..Default::default()
        })
    }

    /// 403 `Forbidden` from admission: `<gr> "<name>" is forbidden: <why>`.
    pub fn forbidden(info: &ResourceInfo, name: &str, why: &str) -> Self {
        let message = if name.is_empty() {
            format!("{} is forbidden: {}", info.group_resource(), why)
        } else {
            format!("{} {:?} is forbidden: {}", info.group_resource(), name, why)
        };
        ApiError::new(403, StatusReason::Forbidden.as_str(), message)
            .with_details(Self::resource_details(info, name))
    }

    /// 400 `BadRequest` with the given message.
    pub fn bad_request(message: impl Into<String>) -> Self {
        ApiError::new(400, StatusReason::BadRequest.as_str(), message)
    }

    /// 401 `Unauthorized`.
    pub fn unauthorized() -> Self {
        ApiError::new(401, StatusReason::Unauthorized.as_str(), "Unauthorized")
    }

    /// 405 `MethodNotAllowed`: `<action> is not supported on resources of kind "<gr>"`.
    pub fn method_not_supported(info: &ResourceInfo, action: &str) -> Self {
        ApiError::new(
            405,
            StatusReason::MethodNotAllowed.as_str(),
            format!(
                "{action} is not supported on resources of kind {:?}",
                info.group_resource()
            ),
        )
        .with_details(StatusDetails {
            group: info.group.clone(),
            kind: info.plural.clone(),
            ..Default::default()
        })
    }

    /// 404 for a path inside a served group-version that matches no route.
    pub fn route_not_found() -> Self {
        ApiError::new(
            404,
            StatusReason::NotFound.as_str(),
            "the server could not find the requested resource",
        )
        .with_details(StatusDetails::default())
    }

    /// 405 for a method that a matched route does not allow.
    pub fn method_not_allowed() -> Self {
        ApiError::new(
            405,
            StatusReason::MethodNotAllowed.as_str(),
            "the server does not allow this method on the requested resource",
        )
        .with_details(StatusDetails::default())
    }

    /// 406 `NotAcceptable`.
    pub fn not_acceptable(accepted: &[&str]) -> Self {
        ApiError::new(
            406,
            StatusReason::NotAcceptable.as_str(),
            format!(
                "only the following media types are accepted: {}",
                accepted.join(", ")
            ),
        )
    }

    /// 415 `UnsupportedMediaType`.
    pub fn unsupported_media_type(accepted: &[&str]) -> Self {
        ApiError::new(
            415,
            StatusReason::UnsupportedMediaType.as_str(),
            format!(
                "the body of the request was in an unknown format - accepted media types include: {}",
                accepted.join(", ")
            ),
        )
    }

    /// 413 `RequestEntityTooLarge`.
    pub fn too_large(message: &str) -> Self {
        ApiError::new(
            413,
            StatusReason::RequestEntityTooLarge.as_str(),
            format!("Request entity too large: {message}"),
        )
    }

    /// 410 `Expired`.
    pub fn expired(message: impl Into<String>) -> Self {
        ApiError::new(410, StatusReason::Expired.as_str(), message)
    }

    /// 500 `InternalError`: `Internal error occurred: <err>`.
    pub fn internal(err: impl std::fmt::Display) -> Self {
        let err = err.to_string();
        ApiError::new(
            500,
            StatusReason::InternalError.as_str(),
            format!("Internal error occurred: {err}"),
        )
        .with_details(StatusDetails {
            causes: vec![StatusCause {
                message: err,
                ..Default::default()
            }],
            ..Default::default()
        })
    }

    /// 503 `ServiceUnavailable`.
    pub fn service_unavailable(message: impl Into<String>) -> Self {
        ApiError::new(503, "ServiceUnavailable", message)
    }

    /// The `Status` object for this error.
    pub fn status(&self) -> Status {
        Status {
            kind: "Status".into(),
            api_version: "v1".into(),
            metadata: StatusMeta {
                continue_: self.continue_token.clone(),
            },
            status: "Failure".into(),
            message: self.message.clone(),
            reason: self.reason.clone(),
            details: self.details.as_deref().cloned(),
            code: self.code,
        }
    }

    /// The Status serialized as JSON.
    pub fn to_json(&self) -> Vec<u8> {
        serde_json::to_vec(&self.status()).unwrap_or_default()
    }
}

impl Status {
    /// A `Success` Status carrying the details of a deleted object, without a code (upstream's
    /// store answers `metav1.Status{Status: Success, Details: …}`).
    pub fn success(details: StatusDetails) -> Self {
        Status {
            kind: "Status".into(),
            api_version: "v1".into(),
            metadata: StatusMeta::default(),
            status: "Success".into(),
            message: String::new(),
            reason: String::new(),
            details: Some(details),
            code: 0,
        }
    }
}
