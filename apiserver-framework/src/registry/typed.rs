//! [`TypedResource`]: a served resource read and written as its Rust type, for code of the
//! server's own (custom subresources, admission plugins) that works on other objects.
//!
//! ```text
//! let flunders = ctx.registry.resource::<Flunder>()?;
//! let flunder = flunders.get(ctx, name).await?;
//! let updated = flunders
//!     .update(ctx, name, |f| { f.spec.replicas = Some(3); Ok(()) }, &WriteOptions::default())
//!     .await?;
//! ```

use std::marker::PhantomData;
use std::sync::Arc;

use serde_json::Value;

use crate::error::ApiError;
use crate::registry::rest::options::WriteOptions;
use crate::registry::rest::{RequestContext, RestStorage};
use crate::resource::ApiResource;

/// The storage of `T`'s resource in `T`'s version (see [`crate::registry::scheme::Registry::resource`]),
/// whose objects are read and written as `T`. A version of a multi-version kind is converted
/// from and to the storage version as for any request.
pub struct TypedResource<'a, T> {
    storage: &'a Arc<dyn RestStorage>,
    _type: PhantomData<fn() -> T>,
}

impl<'a, T: ApiResource> TypedResource<'a, T> {
    /// `T`'s storage.
    pub(crate) fn new(storage: &'a Arc<dyn RestStorage>) -> Self {
        TypedResource {
            storage,
            _type: PhantomData,
        }
    }

    /// The untyped storage (every verb a request can use).
    pub fn storage(&self) -> &'a Arc<dyn RestStorage> {
        self.storage
    }

    /// The object `name` in `ctx`'s namespace (404 when there is none).
    pub async fn get(&self, ctx: &RequestContext, name: &str) -> Result<T, ApiError> {
        let bytes = self.storage.get(ctx, name).await?;
        decode(&bytes)
    }

    /// Changes the object `name` in `ctx`'s namespace with `change` and stores it as an
    /// update would (admission, validation, managed fields for `opts.field_manager`); answers
    /// the stored object. `change` runs again on a newer object when a concurrent write came
    /// first.
    pub async fn update(
        &self,
        ctx: &RequestContext,
        name: &str,
        change: impl Fn(&mut T) -> Result<(), ApiError> + Send + Sync,
        opts: &WriteOptions,
    ) -> Result<T, ApiError> {
        let patch = |current: Value| -> Result<Value, ApiError> {
            let mut obj: T = serde_json::from_value(current).map_err(ApiError::internal)?;
            change(&mut obj)?;
            serde_json::to_value(&obj).map_err(ApiError::internal)
        };
        let bytes = self.storage.patch(ctx, name, None, &patch, opts).await?;
        decode(&bytes)
    }
}

fn decode<T: ApiResource>(bytes: &[u8]) -> Result<T, ApiError> {
    serde_json::from_slice(bytes).map_err(ApiError::internal)
}
