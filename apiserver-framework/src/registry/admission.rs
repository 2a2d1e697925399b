//! The admission interface of the store: what a plugin sees of a write
//! ([`AdmissionAttributes`]), the plugin trait ([`AdmissionPlugin`]) and the chain the store
//! runs ([`AdmissionChain`]).
//!
//! Mutating plugins run first, in registration order, before the store's defaulting and
//! validation; validating plugins run last, right before the object is stored. A plugin says
//! which phases it takes part in ([`AdmissionPlugin::phases`]), as upstream's plugins do by the
//! interfaces they implement (`MutationInterface`, `ValidationInterface`). A plugin that
//! refuses a request returns an [`ApiError`]; [`AdmissionAttributes::forbidden`] builds the
//! upstream `403 Forbidden` shape (`<resource> "<name>" is forbidden: <reason>`). The plugins
//! the framework provides (webhooks, namespace lifecycle, filters) are in [`crate::admission`].
//!
//! A plugin reads the objects typed ([`AdmissionAttributes::object`],
//! [`AdmissionAttributes::old_object`]) and picks its resources by type
//! ([`ResourceInfo::is`]):
//!
//! ```
//! use apiserver_framework::prelude::*;
//! # #[derive(ApiResource, Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
//! # #[resource(group = "example.com", version = "v1", kind = "Widget", namespaced)]
//! # pub struct WidgetSpec { pub size: u32 }
//!
//! struct SmallWidgets;
//!
//! #[async_trait]
//! impl AdmissionPlugin for SmallWidgets {
//!     fn name(&self) -> &str {
//!         "SmallWidgets"
//!     }
//!
//!     fn phases(&self) -> Phases {
//!         Phases::Validate
//!     }
//!
//!     fn handles(&self, resource: &ResourceInfo, operation: Operation) -> bool {
//!         operation == Operation::Create && resource.is::<Widget>()
//!     }
//!
//!     async fn validate(&self, attrs: &AdmissionAttributes<'_>) -> Result<(), ApiError> {
//!         match attrs.object::<Widget>()? {
//!             Some(widget) if widget.spec.size > 10 => Err(attrs.forbidden("too big")),
//!             _ => Ok(()),
//!         }
//!     }
//! }
//! ```

use std::any::Any;
use std::borrow::Cow;
use std::sync::Arc;

use serde_json::Value;

use super::scheme::Registry;
use crate::error::ApiError;
use crate::resource::{ApiResource, ResourceInfo};
use crate::user::UserInfo;

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
    /// Every resource the server stores, to look up other objects.
    pub registry: &'a Registry,
    /// The typed form of `object`, when the store holds it and no plugin may have changed the
    /// JSON since (the validating phase).
    pub(crate) typed_object: Option<&'a (dyn Any + Send + Sync)>,
    /// The typed form of `old_object`, when the store holds it.
    pub(crate) typed_old_object: Option<&'a (dyn Any + Send + Sync)>,
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
        let converter = self.registry.converter_of(self.resource).ok_or_else(|| {
            ApiError::internal(format!(
                "admission asked for a {}, which the server does not convert {} to",
                type_name::<T>(),
                self.resource.api_version()
            ))
        })?;
        let converted = converter
            .convert(value.clone(), &T::api_version(&()))
            .map_err(|e| ApiError::internal(format!("converting for admission: {e}")))?;
        decode(&converted).map(|t| Some(Cow::Owned(t)))
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

/// The phases of admission a plugin takes part in: upstream's plugins say so by implementing
/// `MutationInterface`, `ValidationInterface` or both.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phases {
    /// Only the mutating phase ([`AdmissionPlugin::mutate`]).
    Mutate,
    /// Only the validating phase ([`AdmissionPlugin::validate`]).
    Validate,
    /// Both.
    Both,
}

impl Phases {
    /// Whether the plugin runs in the mutating phase.
    pub fn mutates(self) -> bool {
        matches!(self, Phases::Mutate | Phases::Both)
    }

    /// Whether the plugin runs in the validating phase.
    pub fn validates(self) -> bool {
        matches!(self, Phases::Validate | Phases::Both)
    }
}

/// An admission plugin. Override [`AdmissionPlugin::mutate`], [`AdmissionPlugin::validate`]
/// or both, and say which in [`AdmissionPlugin::phases`].
#[async_trait::async_trait]
pub trait AdmissionPlugin: Any + Send + Sync {
    /// The plugin's name (used to enable or disable it).
    fn name(&self) -> &str;

    /// Whether the plugin runs unless `--disable-admission-plugins` names it (upstream's
    /// default-on plugins); a default-off plugin runs only when `--enable-admission-plugins`
    /// names it.
    fn enabled_by_default(&self) -> bool {
        true
    }

    /// The phases the plugin takes part in; the chain calls `mutate` and `validate` only in
    /// those. Defaults to both. A plugin that only validates says [`Phases::Validate`]: it is
    /// skipped in the mutating phase, and a request whose plugins all only validate skips that
    /// phase and the copy of the object it would make as JSON.
    fn phases(&self) -> Phases {
        Phases::Both
    }

    /// Whether the plugin wants to see this request. Defaults to every request.
    fn handles(&self, _resource: &ResourceInfo, _operation: Operation) -> bool {
        true
    }

    /// May change the object; runs before every validating plugin. The default changes
    /// nothing.
    async fn mutate(&self, _attrs: &mut AdmissionAttributes<'_>) -> Result<(), ApiError> {
        Ok(())
    }

    /// May refuse the request; must not change anything.
    async fn validate(&self, _attrs: &AdmissionAttributes<'_>) -> Result<(), ApiError> {
        Ok(())
    }
}

/// The plugins of a server, run in order.
#[derive(Clone, Default)]
pub struct AdmissionChain {
    plugins: Vec<Arc<dyn AdmissionPlugin>>,
}

impl AdmissionChain {
    /// A chain of the given plugins.
    pub fn new(plugins: Vec<Arc<dyn AdmissionPlugin>>) -> Self {
        AdmissionChain { plugins }
    }

    /// Adds a plugin at the end.
    pub fn push(&mut self, plugin: Arc<dyn AdmissionPlugin>) {
        self.plugins.push(plugin);
    }

    /// The names of the plugins, in order.
    pub fn names(&self) -> Vec<String> {
        self.plugins.iter().map(|p| p.name().to_string()).collect()
    }

    /// Whether no plugin is registered.
    pub fn is_empty(&self) -> bool {
        self.plugins.is_empty()
    }

    /// Whether any plugin wants to see this request ([`AdmissionPlugin::handles`]).
    pub fn handles(&self, resource: &ResourceInfo, operation: Operation) -> bool {
        self.plugins.iter().any(|p| p.handles(resource, operation))
    }

    /// Whether a plugin may change the object of this request: one that mutates
    /// ([`AdmissionPlugin::phases`]) and handles it.
    pub fn may_mutate(&self, resource: &ResourceInfo, operation: Operation) -> bool {
        self.plugins
            .iter()
            .any(|p| p.phases().mutates() && p.handles(resource, operation))
    }

    /// Runs every mutating plugin (before the store's defaulting and validation, as upstream).
    pub async fn mutate(&self, attrs: &mut AdmissionAttributes<'_>) -> Result<(), ApiError> {
        for p in &self.plugins {
            if p.phases().mutates() && p.handles(attrs.resource, attrs.operation) {
                p.mutate(attrs).await?;
            }
        }
        Ok(())
    }

    /// Runs every validating plugin (after the store's validation, right before storage).
    pub async fn validate(&self, attrs: &AdmissionAttributes<'_>) -> Result<(), ApiError> {
        for p in &self.plugins {
            if p.phases().validates() && p.handles(attrs.resource, attrs.operation) {
                p.validate(attrs).await?;
            }
        }
        Ok(())
    }
}
