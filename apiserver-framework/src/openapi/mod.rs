//! OpenAPI documents: Swagger 2.0 for `/openapi/v2` and OpenAPI 3.0 for `/openapi/v3`.
//!
//! The functions here are pure: they turn the description of what a server serves
//! ([`ServedGroup`](crate::discovery::ServedGroup)) into the JSON documents that `kubectl`
//! (validation, `explain`, `apply`) and the aggregator read.
//!
//! Each resource gets the paths `k8s.io/apiserver` registers for it and a definition for its
//! kind and its list; meta types (`ObjectMeta`, `ListMeta`, `Status`, `DeleteOptions`,
//! `WatchEvent`, `Patch`, ...) are generated with schemars from k8s-openapi. See [`names`] for
//! how definitions, operation ids and tags are named.

mod definitions;
mod dialect;
mod meta;
pub mod names;
mod params;
mod protobuf;
mod routes;
mod v2;
mod v3;

pub(crate) use protobuf::{V2_PROTOBUF, v2_protobuf, wants_v2_protobuf};
pub use v2::v2_document;
pub(crate) use v3::v3_key;
pub use v3::{v3_group_version, v3_root};

use sha2::{Digest, Sha512};

/// The hash of an OpenAPI v3 group-version document: the upper-case hex SHA-512 of its bytes,
/// as used in `?hash=` and (quoted) in its `ETag`.
pub fn spec_hash(body: &[u8]) -> String {
    Sha512::digest(body)
        .iter()
        .map(|b| format!("{b:02X}"))
        .collect()
}
