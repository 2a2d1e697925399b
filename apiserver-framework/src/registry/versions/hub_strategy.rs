//! The kind's strategy, written once against the hub, run on each version by converting.

use std::fmt::Display;
use std::marker::PhantomData;
use std::sync::Arc;

use crate::error::FieldError;
use crate::registry::store::strategy::Strategy;
use crate::resource::ApiResource;

/// A strategy written against the hub, run on a version by converting.
pub(super) struct HubStrategy<V, H> {
    pub(super) hub: Arc<dyn Strategy<H>>,
    pub(super) _marker: PhantomData<fn() -> V>,
}

impl<V, H> HubStrategy<V, H>
where
    V: ApiResource,
    H: TryFrom<V>,
    V: TryFrom<H>,
    <H as TryFrom<V>>::Error: Display,
    <V as TryFrom<H>>::Error: Display,
{
    fn to_hub(obj: &V) -> Result<H, FieldError> {
        H::try_from(obj.clone()).map_err(|e| FieldError::invalid("spec", "", e.to_string()))
    }

    /// Runs `f` on the hub form of `obj` and takes the result back (metadata stays `obj`'s).
    fn mutate(obj: &mut V, f: impl FnOnce(&mut H)) {
        let Ok(mut hub) = Self::to_hub(obj) else {
            return;
        };
        f(&mut hub);
        if let Ok(mut back) = V::try_from(hub) {
            // `obj`'s metadata moves into the result (not copied); the hub's is dropped.
            std::mem::swap(back.meta_mut(), obj.meta_mut());
            *obj = back;
        }
    }
}

impl<V, H> Strategy<V> for HubStrategy<V, H>
where
    V: ApiResource,
    H: TryFrom<V> + Send + Sync + 'static,
    V: TryFrom<H>,
    <H as TryFrom<V>>::Error: Display,
    <V as TryFrom<H>>::Error: Display,
{
    fn default(&self, obj: &mut V) {
        Self::mutate(obj, |h| self.hub.default(h));
    }

    fn prepare_for_create(&self, obj: &mut V) {
        Self::mutate(obj, |h| self.hub.prepare_for_create(h));
    }

    fn prepare_for_update(&self, new: &mut V, old: &V) {
        let Ok(old) = Self::to_hub(old) else {
            return;
        };
        Self::mutate(new, |h| self.hub.prepare_for_update(h, &old));
    }

    fn validate(&self, obj: &V) -> Vec<FieldError> {
        match Self::to_hub(obj) {
            Ok(h) => self.hub.validate(&h),
            Err(e) => vec![e],
        }
    }

    fn validate_update(&self, new: &V, old: &V) -> Vec<FieldError> {
        match (Self::to_hub(new), Self::to_hub(old)) {
            (Ok(n), Ok(o)) => self.hub.validate_update(&n, &o),
            (Err(e), _) | (_, Err(e)) => vec![e],
        }
    }
}
