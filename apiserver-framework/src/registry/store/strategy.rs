//! Per-resource hooks for defaulting, validation and preparing writes.

use crate::error::FieldError;

/// Hooks the generic store calls on every write, with defaults that do nothing.
///
/// Metadata rules (uid, timestamps, generation, resourceVersion, name checks) and the status
/// subresource rules are applied by the store itself; a strategy adds what is specific to the
/// resource.
pub trait Strategy<T>: Send + Sync + 'static {
    /// Fills in default values. Called on create and update, before validation.
    fn default(&self, _obj: &mut T) {}

    /// Adjusts a new object before it is validated (e.g. clears fields clients may not set).
    fn prepare_for_create(&self, _obj: &mut T) {}

    /// Adjusts an updated object before it is validated, given the stored one.
    fn prepare_for_update(&self, _new: &mut T, _old: &T) {}

    /// Validates a new object; every returned error becomes a cause of a 422 `Invalid`.
    fn validate(&self, _obj: &T) -> Vec<FieldError> {
        Vec::new()
    }

    /// Validates an update; by default the same rules as [`Strategy::validate`].
    fn validate_update(&self, new: &T, _old: &T) -> Vec<FieldError> {
        self.validate(new)
    }
}

/// The strategy that adds nothing to the store's own rules.
#[derive(Clone, Copy, Debug, Default)]
pub struct DefaultStrategy;

impl<T> Strategy<T> for DefaultStrategy {}
