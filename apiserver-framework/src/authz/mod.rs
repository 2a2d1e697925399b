//! Authorization: may this user do this to that?
//!
//! The request filter builds [`Attributes`] from every authenticated request and asks the
//! server's [`Authorizer`]; a denial answers upstream's `403 Forbidden`, a failure to decide a
//! plain-text `500`.
//!
//! Authorizers: [`AllowAll`] (the `local` mode), [`PathAuthorizer`] (always-allowed paths),
//! `PrivilegedGroups` (`system:masters`), [`WebhookAuthorizer`] (SubjectAccessReview, cached),
//! `UnionAuthorizer` (the first decision wins), and [`DelegatingAuthorizerConfig`] putting the
//! delegated ones together.

pub(crate) mod admission_checks;
pub(crate) mod allow_all;
pub mod attributes;
pub(crate) mod cache;
pub(crate) mod delegating;
pub(crate) mod forbidden;
pub(crate) mod internal_error;
pub(crate) mod options;
pub mod path;
pub(crate) mod privileged;
pub(crate) mod union;
pub(crate) mod upgrade;
pub(crate) mod webhook;

pub use allow_all::AllowAll;
pub use attributes::{ParsedRequest, request_of};
pub use delegating::DelegatingAuthorizerConfig;
pub use forbidden::forbidden;
pub(crate) use forbidden::forbidden_response;
pub(crate) use internal_error::internal_error_response;
pub(crate) use path::PathAuthorizer;
pub use webhook::{ReviewStatus, SubjectAccessReviewer, WebhookAuthorizer};

use crate::user::UserInfo;

/// What a resource request does, as upstream's `authorizer.Attributes` for resource requests
/// (the `resourceAttributes` of a SubjectAccessReview).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct ResourceAttributes {
    /// `get`, `list`, `watch`, `create`, `update`, `patch`, `delete` or `deletecollection`.
    pub verb: String,
    /// The API group (`""` for the core group).
    pub group: String,
    /// The API version.
    pub version: String,
    /// The plural resource name.
    pub resource: String,
    /// The subresource (`""` for none).
    pub subresource: String,
    /// The namespace (`""` for cluster-scoped requests and lists across namespaces).
    pub namespace: String,
    /// The object name (`""` for collections).
    pub name: String,
    /// The requirements of the `fieldSelector` of a list, watch or deletecollection (empty
    /// when there is none or it does not parse).
    pub field_selector: Vec<SelectorRequirement>,
    /// The requirements of the `labelSelector` of a list, watch or deletecollection (empty
    /// when there is none or it does not parse).
    pub label_selector: Vec<SelectorRequirement>,
}

/// One requirement of a request's field or label selector, as a SubjectAccessReview carries
/// it (`metav1.FieldSelectorRequirement`, `metav1.LabelSelectorRequirement`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct SelectorRequirement {
    /// The field path or label key.
    pub key: String,
    /// `In`, `NotIn`, `Exists` or `DoesNotExist`.
    pub operator: String,
    /// The values (none for `Exists` and `DoesNotExist`).
    pub values: Vec<String>,
}

/// What a non-resource request does (the `nonResourceAttributes` of a SubjectAccessReview).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct NonResourceAttributes {
    /// The request path.
    pub path: String,
    /// The lower-cased HTTP method (`get`, `post`, …).
    pub verb: String,
}

/// What a request asks to do.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Request {
    /// A request for a resource or a collection.
    Resource(ResourceAttributes),
    /// Any other request.
    NonResource(NonResourceAttributes),
}

/// Who asks to do what.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Attributes {
    /// The authenticated caller.
    pub user: UserInfo,
    /// What they ask to do.
    pub request: Request,
}

/// An authorizer's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// The request is allowed.
    Allow,
    /// The request is denied, with the authorizer's reason (may be empty); later authorizers
    /// are not asked.
    Deny(String),
    /// This authorizer has no opinion (with a reason, may be empty); the next one is asked.
    NoOpinion(String),
}

/// An authorizer could not decide (e.g. the host did not answer).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct AuthorizationError(pub String);

/// Decides whether requests are allowed.
#[async_trait::async_trait]
pub trait Authorizer: Send + Sync + 'static {
    /// Decides one request.
    async fn authorize(&self, attrs: &Attributes) -> Result<Decision, AuthorizationError>;
}
