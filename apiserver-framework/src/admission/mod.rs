//! Admission: the interface the store runs — what a plugin sees of a write
//! ([`AdmissionAttributes`]), the plugin trait ([`AdmissionPlugin`]) and the chain the store
//! runs ([`AdmissionChain`]) — and the plugins the framework provides: the webhooks
//! (`MutatingAdmissionWebhook`, `ValidatingAdmissionWebhook`), `NamespaceLifecycle`, the
//! production set and its flags, and filters that narrow a plugin to some resources
//! ([`filter`]).
//!
//! As upstream's `k8s.io/apiserver/pkg/admission`, the interface sits below the registry: it
//! names nothing of it, and learns of the server's resources through [`ObjectInterfaces`],
//! which the registry implements.
//!
//! Mutating plugins run first, in registration order, before the store's defaulting and
//! validation; validating plugins run last, right before the object is stored. A plugin says
//! which phases it takes part in ([`AdmissionPlugin::phases`]), as upstream's plugins do by the
//! interfaces they implement (`MutationInterface`, `ValidationInterface`). A plugin that
//! refuses a request returns an [`ApiError`](crate::error::ApiError); [`AdmissionAttributes::forbidden`] builds the
//! upstream `403 Forbidden` shape (`<resource> "<name>" is forbidden: <reason>`).
//!
//! A plugin reads the objects typed ([`AdmissionAttributes::object`],
//! [`AdmissionAttributes::old_object`]) and picks its resources by type
//! ([`ResourceInfo::is`](crate::resource::ResourceInfo::is)):
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

mod attributes;
mod chain;
pub mod filter;
pub(crate) mod host;
pub(crate) mod lifecycle;
pub(crate) mod metrics;
mod notes;
pub(crate) mod options;
mod plugin;
pub(crate) mod policy;
pub(crate) mod production;
pub(crate) mod programs;
mod reinvocation;
pub(crate) mod webhook;

pub use attributes::{AdmissionAttributes, ObjectInterfaces, Operation};
pub use chain::AdmissionChain;
pub use notes::AdmissionNotes;
pub use plugin::{AdmissionPlugin, Phases};
pub use reinvocation::Reinvocation;
