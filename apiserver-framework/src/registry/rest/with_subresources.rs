//! A storage with custom subresources: any [`RestStorage`] plus the
//! [`CustomSubresource`]s registered for its resource.

use std::sync::Arc;

use crate::registry::rest::RestStorage;
use crate::registry::rest::delegating::DelegatingStorage;
use crate::registry::rest::subresource::CustomSubresource;

/// `inner` serving `subresources` besides its own operations, which it forwards unchanged.
pub struct WithSubresources {
    inner: Arc<dyn RestStorage>,
    subresources: Vec<Arc<dyn CustomSubresource>>,
}

impl WithSubresources {
    /// `inner` with `subresources`.
    pub fn new(inner: Arc<dyn RestStorage>, subresources: Vec<Arc<dyn CustomSubresource>>) -> Self {
        WithSubresources {
            inner,
            subresources,
        }
    }
}

impl DelegatingStorage for WithSubresources {
    fn inner(&self) -> &dyn RestStorage {
        self.inner.as_ref()
    }

    /// The inner storage, so that typed access (`Registry::store`) finds it.
    fn wrapped(&self) -> Option<&dyn RestStorage> {
        Some(self.inner.as_ref())
    }

    fn custom_subresources(&self) -> &[Arc<dyn CustomSubresource>] {
        &self.subresources
    }
}
