//! The admission interface of the store: what a plugin sees of a write
//! ([`AdmissionAttributes`]), the plugin trait ([`AdmissionPlugin`]) and the chain the store
//! runs ([`AdmissionChain`]).
//!
//! Mutating plugins run first, in registration order, before the store's defaulting and
//! validation; validating plugins run last, right before the object is stored. A plugin that
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

use std::any::{Any, TypeId};
use std::borrow::Cow;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

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
    /// Set by the trait's own [`AdmissionPlugin::mutate`]: which plugin kept it (and so does
    /// not mutate).
    pub(crate) default_mutate_of: Option<PluginIdentity>,
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

/// An admission plugin. Override [`AdmissionPlugin::mutate`], [`AdmissionPlugin::validate`]
/// or both.
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

    /// Whether the plugin wants to see this request. Defaults to every request.
    fn handles(&self, _resource: &ResourceInfo, _operation: Operation) -> bool {
        true
    }

    /// May change the object; runs before every validating plugin.
    ///
    /// A plugin that keeps this default only validates. The chain learns that the first time it
    /// runs it and skips it from then on; a request whose plugins all only validate then skips
    /// the mutating phase, and the copy of the object it would make as JSON.
    async fn mutate(&self, attrs: &mut AdmissionAttributes<'_>) -> Result<(), ApiError> {
        attrs.default_mutate_of = Some(PluginIdentity::of(self));
        Ok(())
    }

    /// May refuse the request; must not change anything.
    async fn validate(&self, _attrs: &AdmissionAttributes<'_>) -> Result<(), ApiError> {
        Ok(())
    }
}

/// The plugins of a server, run in order.
#[derive(Default)]
pub struct AdmissionChain {
    plugins: Vec<Registered>,
}

/// Which plugin value a `mutate` ran on: its address and its type. A plugin that wraps another
/// and calls its `mutate` is told apart from it, even when the other is its first field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PluginIdentity(usize, TypeId);

impl PluginIdentity {
    fn of<P: ?Sized + 'static>(plugin: &P) -> Self {
        PluginIdentity(plugin as *const P as *const () as usize, TypeId::of::<P>())
    }

    fn of_registered(plugin: &dyn AdmissionPlugin) -> Self {
        PluginIdentity(
            plugin as *const dyn AdmissionPlugin as *const () as usize,
            (plugin as &dyn Any).type_id(),
        )
    }
}

/// A plugin of a chain and what the chain has learned about it.
struct Registered {
    plugin: Arc<dyn AdmissionPlugin>,
    /// Whether the plugin's `mutate` has been seen to be the trait's default, which changes
    /// nothing. A plugin cannot call its own default from a `mutate` it overrides, so this is
    /// final.
    validates_only: AtomicBool,
}

impl Registered {
    fn new(plugin: Arc<dyn AdmissionPlugin>) -> Self {
        Registered {
            plugin,
            validates_only: AtomicBool::new(false),
        }
    }

    /// Whether the plugin may change the object of a request it handles.
    fn may_mutate(&self, resource: &ResourceInfo, operation: Operation) -> bool {
        !self.validates_only.load(Ordering::Relaxed) && self.plugin.handles(resource, operation)
    }
}

impl Clone for AdmissionChain {
    fn clone(&self) -> Self {
        AdmissionChain {
            plugins: self
                .plugins
                .iter()
                .map(|r| Registered {
                    plugin: r.plugin.clone(),
                    validates_only: AtomicBool::new(r.validates_only.load(Ordering::Relaxed)),
                })
                .collect(),
        }
    }
}

impl AdmissionChain {
    /// A chain of the given plugins.
    pub fn new(plugins: Vec<Arc<dyn AdmissionPlugin>>) -> Self {
        AdmissionChain {
            plugins: plugins.into_iter().map(Registered::new).collect(),
        }
    }

    /// Adds a plugin at the end.
    pub fn push(&mut self, plugin: Arc<dyn AdmissionPlugin>) {
        self.plugins.push(Registered::new(plugin));
    }

    /// The names of the plugins, in order.
    pub fn names(&self) -> Vec<String> {
        self.plugins
            .iter()
            .map(|r| r.plugin.name().to_string())
            .collect()
    }

    /// Whether no plugin is registered.
    pub fn is_empty(&self) -> bool {
        self.plugins.is_empty()
    }

    /// Whether any plugin wants to see this request ([`AdmissionPlugin::handles`]).
    pub fn handles(&self, resource: &ResourceInfo, operation: Operation) -> bool {
        self.plugins
            .iter()
            .any(|r| r.plugin.handles(resource, operation))
    }

    /// Whether a plugin may change the object of this request: one that handles it and has
    /// not been seen to keep [`AdmissionPlugin::mutate`]'s default.
    pub fn may_mutate(&self, resource: &ResourceInfo, operation: Operation) -> bool {
        self.plugins
            .iter()
            .any(|r| r.may_mutate(resource, operation))
    }

    /// Runs every mutating plugin (before the store's defaulting and validation, as upstream).
    pub async fn mutate(&self, attrs: &mut AdmissionAttributes<'_>) -> Result<(), ApiError> {
        for r in &self.plugins {
            if r.may_mutate(attrs.resource, attrs.operation) {
                attrs.default_mutate_of = None;
                r.plugin.mutate(attrs).await?;
                if attrs.default_mutate_of == Some(PluginIdentity::of_registered(&*r.plugin)) {
                    r.validates_only.store(true, Ordering::Relaxed);
                }
            }
        }
        attrs.default_mutate_of = None;
        Ok(())
    }

    /// Runs every validating plugin (after the store's validation, right before storage).
    pub async fn validate(&self, attrs: &AdmissionAttributes<'_>) -> Result<(), ApiError> {
        for r in &self.plugins {
            if r.plugin.handles(attrs.resource, attrs.operation) {
                r.plugin.validate(attrs).await?;
            }
        }
        Ok(())
    }
}
