//! The plugin trait ([`AdmissionPlugin`]) and the phases a plugin takes part in
//! ([`Phases`]).

use std::any::Any;

use super::attributes::{AdmissionAttributes, Operation};
use crate::error::ApiError;
use crate::resource::ResourceInfo;

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
