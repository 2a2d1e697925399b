//! One kind in several versions: [`Kind`] declares them, with the hub they convert through and
//! the version objects are stored in; [`VersionedStorage`] serves each version from the one
//! store of the storage version, converting at the boundary.
//!
//! ```text
//! Group::new("wardle.example.com").kind(
//!     Kind::<hub::Flunder>::new()
//!         .version::<v1alpha1::Flunder>()
//!         .version::<v1beta1::Flunder>()
//!         .storage_version("v1alpha1")
//!         .deprecated("v1alpha1", Deprecation::since(1, 3).removed_in(1, 10))
//!         .strategy(FlunderStrategy),
//! )
//! ```
//!
//! Each version is a `#[derive(ApiResource)]` type; the hub is any Rust type holding the
//! object (often the newest version, or an internal type that is never served). A version is
//! accepted only if it converts both ways with the hub (`From` or `TryFrom`), so a version
//! without conversions does not compile. The conversions themselves, on JSON objects and on
//! the stored values, are in [`conversion`].

pub mod conversion;
mod deprecation;
mod hub_strategy;
mod kind;
mod serving;
mod storage;

use std::collections::BTreeMap;

pub use deprecation::Deprecation;
pub use kind::Kind;
pub use storage::VersionedStorage;

/// Storage versions chosen at run time (a flag), by `<plural>.<group>`.
pub(crate) type StorageVersions = BTreeMap<String, String>;
