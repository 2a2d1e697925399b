//! What a plugin sees of a write ([`AdmissionAttributes`]), and of the server's other
//! resources ([`ObjectInterfaces`]).

use std::any::Any;
use std::borrow::Cow;

use serde_json::Value;

use super::{AdmissionNotes, Reinvocation};
use crate::cel::authorizer::{Authorize, Checks, ResourceTarget};
use crate::error::ApiError;
use crate::resource::{ApiResource, ResourceInfo};
use crate::user::UserInfo;

/// What admission may learn of the server's resources, as upstream's `ObjectInterfaces`: the
/// versions a resource is served in and the conversion between them. The registry's
/// `Registry` implements it (admission sits below the registry and names none of it); a
/// plugin reaches the registry's typed stores through the methods the registry adds to
/// `dyn ObjectInterfaces` (`attrs.registry.store::<T>()`).
pub trait ObjectInterfaces: Any + Send + Sync {
    /// Every served version of `resource` (the resources of its group and plural), the
    /// preferred version first (upstream's `EquivalentResourceMapper`).
    fn versions_of(&self, resource: &ResourceInfo) -> Vec<&ResourceInfo>;

    /// `object`, of `resource`'s kind, converted to `api_version` (`<group>/<version>`)
    /// through the kind's hub; `None` when the kind is served in one version only (the server
    /// has no conversion for it).
    fn convert(
        &self,
        resource: &ResourceInfo,
        object: Value,
        api_version: &str,
    ) -> Option<Result<Value, Box<dyn std::error::Error + Send + Sync>>>;
}

/// The kind of write being admitted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operation {
    /// A create.
    Create,
    /// An update (PUT or PATCH).
    Update,
    /// A delete.
    Delete,
}

impl Operation {
    /// The operation's wire name (`CREATE`, `UPDATE`, `DELETE`), as an `AdmissionRequest`
    /// and the admission metrics spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Create => "CREATE",
            Operation::Update => "UPDATE",
            Operation::Delete => "DELETE",
        }
    }
}

/// Everything a plugin may look at.
pub struct AdmissionAttributes<'a> {
    /// The write.
    pub operation: Operation,
    /// The resource written to, in the version the store holds it in: the version of
    /// `object` and `old_object`.
    pub resource: &'a ResourceInfo,
    /// The resource in the version the request named (upstream's `requestResource`). It
    /// differs from `resource` in version only, when a multi-version kind's write came in
    /// through a version other than its storage version.
    pub request_resource: &'a ResourceInfo,
    /// The subresource (`status`), if any.
    pub subresource: Option<&'a str>,
    /// The namespace (namespaced resources).
    pub namespace: Option<&'a str>,
    /// The object's name (may be empty for a create with `generateName`).
    pub name: &'a str,
    /// The object as it will be stored, as JSON (absent on delete). Mutating plugins may
    /// change it. [`AdmissionAttributes::object`] reads it typed.
    pub object: Option<&'a mut Value>,
    /// The stored object, as JSON (updates and deletes). [`AdmissionAttributes::old_object`]
    /// reads it typed.
    pub old_object: Option<&'a Value>,
    /// The caller.
    pub user: &'a UserInfo,
    /// Whether the request is a dry run (a plugin must not have side effects then).
    pub dry_run: bool,
    /// Where a plugin adds warnings for the response and annotations for the audit event.
    pub notes: &'a AdmissionNotes,
    /// Whether the mutating plugins are running a second time (see [`Reinvocation`]).
    pub reinvocation: Reinvocation,
    /// Every resource the server stores, to look up other objects: the registry's
    /// `Registry`, whose typed stores a plugin reaches with `attrs.registry.store::<T>()` (see
    /// [`ObjectInterfaces`]).
    pub registry: &'a dyn ObjectInterfaces,
    /// The typed form of `object`, when the store holds it and no plugin may have changed the
    /// JSON since (the validating phase).
    pub(crate) typed_object: Option<&'a (dyn Any + Send + Sync)>,
    /// The typed form of `old_object`, when the store holds it.
    pub(crate) typed_old_object: Option<&'a (dyn Any + Send + Sync)>,
    /// The server's authorizer, which admission's CEL expressions ask (`authorizer`), as
    /// upstream's `WantsAuthorizer` plugins get it; `None` where the server has none.
    pub(crate) authorizer: Option<&'a dyn Authorize>,
}

impl<'a> AdmissionAttributes<'a> {
    /// Whether the request is for `T`'s resource, in any of its versions (see
    /// [`ResourceInfo::is`]).
    pub fn is<T: ApiResource>(&self) -> bool {
        self.resource.is::<T>()
    }

    /// The object as it will be stored, as a `T` (absent on delete).
    ///
    /// `T` is the request's resource in any version: the store's own typed object when it
    /// holds one (validating plugins), else decoded from [`AdmissionAttributes::object`]
    /// (converted first when `T` is another version of a multi-version kind). A `T` of another
    /// resource is an internal error naming both.
    pub fn object<T: ApiResource>(&self) -> Result<Option<Cow<'_, T>>, ApiError> {
        self.typed(self.typed_object, self.object.as_deref())
    }

    /// The stored object, as a `T` (updates and deletes); see
    /// [`AdmissionAttributes::object`].
    pub fn old_object<T: ApiResource>(&self) -> Result<Option<Cow<'_, T>>, ApiError> {
        self.typed(self.typed_old_object, self.old_object)
    }

    fn typed<T: ApiResource>(
        &self,
        typed: Option<&'a (dyn Any + Send + Sync)>,
        value: Option<&Value>,
    ) -> Result<Option<Cow<'_, T>>, ApiError> {
        if !self.is::<T>() {
            return Err(ApiError::internal(format!(
                "admission asked for a {}, but the request is for {}",
                type_name::<T>(),
                self.resource.group_resource()
            )));
        }
        if let Some(t) = typed.and_then(|t| t.downcast_ref::<T>()) {
            return Ok(Some(Cow::Borrowed(t)));
        }
        let Some(value) = value else {
            return Ok(None);
        };
        let decode = |v: &Value| {
            T::deserialize(v).map_err(|e| {
                ApiError::internal(format!("decoding {} for admission: {e}", type_name::<T>()))
            })
        };
        if T::version(&()) == self.resource.version.as_str() {
            return decode(value).map(|t| Some(Cow::Owned(t)));
        }
        // Another version of a multi-version kind: convert as its storage does.
        let converted = self
            .registry
            .convert(self.resource, value.clone(), &T::api_version(&()))
            .ok_or_else(|| {
                ApiError::internal(format!(
                    "admission asked for a {}, which the server does not convert {} to",
                    type_name::<T>(),
                    self.resource.api_version()
                ))
            })?
            .map_err(|e| ApiError::internal(format!("converting for admission: {e}")))?;
        decode(&converted).map(|t| Some(Cow::Owned(t)))
    }

    /// Fresh authorization checks for admission's CEL expressions on this request, with
    /// `authorizer.requestResource` naming the request's resource, subresource, namespace and
    /// name.
    pub(crate) fn checks(&self) -> Checks {
        Checks::new(Some(ResourceTarget {
            group: self.request_resource.group.clone(),
            resource: self.request_resource.plural.clone(),
            subresource: self.subresource.unwrap_or_default().to_string(),
            namespace: self.namespace.unwrap_or_default().to_string(),
            name: self.name.to_string(),
            ..ResourceTarget::default()
        }))
    }

    /// The upstream `403 Forbidden` for this request, with `reason` as the explanation.
    pub fn forbidden(&self, reason: &str) -> ApiError {
        let name = if self.name.is_empty() {
            self.object
                .as_ref()
                .and_then(|o| o.pointer("/metadata/generateName"))
                .and_then(Value::as_str)
                .unwrap_or("Unknown")
        } else {
            self.name
        };
        ApiError::forbidden(self.resource, name, reason)
    }
}

/// `<Kind>.<group>/<version>` of `T`, for messages.
fn type_name<T: ApiResource>() -> String {
    format!("{}.{}/{}", T::kind(&()), T::group(&()), T::version(&()))
}
