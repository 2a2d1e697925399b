//! # apiserver-framework
//!
//! Build Kubernetes-style aggregated (extension) API servers from plain Rust structs.
//!
//! Put `#[derive(ApiResource)]` on a spec struct, register the generated type with
//! [`App::resource`], and [`App`] gives you a server with Kubernetes REST semantics, discovery, OpenAPI, health
//! checks and a command line with a `local` development mode that `kubectl` can talk to.
#![deny(missing_docs)]

/// Declares internal modules: public with the `testing` feature, for the fuzz targets, the
/// benchmark's baseline and the tests that drive a module directly, and crate-private without
/// it, so a server's build exposes none of them.
macro_rules! internal_modules {
    ($($name:ident),+ $(,)?) => {$(
        #[cfg(feature = "testing")]
        pub mod $name;
        #[cfg(not(feature = "testing"))]
        pub(crate) mod $name;
    )+};
}

// The modules in layer order, bottom first. A module may import modules of its own layer or
// of lower ones, never of a higher one, and no two top-level modules import each other (within a
// layer, imports go one way). `tests/layers.rs` reads the `// Layer N: name` lines below as its
// table and checks every `crate::` path outside test modules against it.

// Layer 1: ground floor
// Errors and Status, field errors, durations, quoting, name and label validation, selectors,
// resource info, schemas, the caller's identity, file and certificate utilities (fs, tls),
// the W3C trace context of HTTP headers (trace_context), Kubernetes' CEL (cel): nothing here
// serves HTTP. `fs` is the crate `apiserver-files`, shared with storage.
pub(crate) mod cel;
pub mod duration;
pub mod error;
pub(crate) use apiserver_files as fs;
pub mod quote;
pub mod resource;
pub mod schema;
pub mod selector;
pub mod tls;
pub(crate) mod trace_context;
pub mod user;
pub mod validation;
pub mod yaml_body;

// Layer 2: storage and the host cluster
// The key-value seam with revisions and watch, and its backends (the crate `apiserver-storage`,
// beneath the framework); the host cluster's clients.
pub mod host_cluster;
pub use apiserver_storage as storage;

// Layer 3: registry, admission, apply
// REST storage per resource: the generic store and its strategy; admission, its interface (below
// the store, which runs it) and its plugins; field sets.
pub mod admission;
pub mod apply;
pub mod registry;

// Layer 4: endpoints, discovery, openapi
// HTTP <-> objects: negotiation, handlers, patches, tables; discovery and OpenAPI documents.
pub mod discovery;
pub mod endpoints;
pub mod openapi;

// Layer 5: authn, authz, audit, metrics
// What the filters decide and record, knowing requests, not servers.
pub mod audit;
pub mod authn;
pub mod authz;
pub mod metrics;

// Layer 6: server
// The generic API server: its handler chain and filters, listener, health, lifecycle.
pub mod server;

// Layer 7: aggregator
// APIServices and the proxy to their backends.
pub mod aggregator;

// Layer 8: command line, dev host and test kit
// Wiring only: the App and its commands, the stand-in host cluster of local development, and
// the kit that serves an App in a test with clients for it (the `testing` feature).
pub mod cli;
pub mod devhost;
#[cfg(feature = "testing")]
pub mod testing;

pub use apiserver_derive::ApiResource;
pub use cli::App;
pub use error::{ApiError, Result};
pub use registry::group::{Group, RegistrationError};
pub use resource::{ApiResource, PrinterColumn, ResourceInfo, ScaleSubresource, Scope};

/// Everything a typical server needs, in one import: `use apiserver_framework::prelude::*;`.
///
/// The derive and the resource traits, [`App`] and its [`Kind`](crate::registry::versions::Kind)s,
/// strategies, admission plugins (with `#[async_trait]`, so a server needs no `async-trait`
/// dependency of its own), custom and computed subresources, errors, and the serde and schemars
/// derives the resource types use.
pub mod prelude {
    #[doc(no_inline)]
    pub use crate::ApiResource;
    #[doc(no_inline)]
    pub use crate::admission::{AdmissionAttributes, AdmissionPlugin, Operation, Phases};
    #[doc(no_inline)]
    pub use crate::cli::App;
    #[doc(no_inline)]
    pub use crate::error::{ApiError, FieldError, Result};
    #[doc(no_inline)]
    pub use crate::registry::group::Group;
    #[doc(no_inline)]
    pub use crate::registry::rest::RequestContext;
    #[doc(no_inline)]
    pub use crate::registry::rest::computed::ResourceProvider;
    #[doc(no_inline)]
    pub use crate::registry::rest::options::WriteOptions;
    #[doc(no_inline)]
    pub use crate::registry::rest::subresource::{
        Action, Connecter, CustomSubresource, GetterWithOptions, Session, Subresource,
        SubresourceNames,
    };
    #[doc(no_inline)]
    pub use crate::registry::store::strategy::Strategy;
    #[doc(no_inline)]
    pub use crate::registry::versions::{Deprecation, Kind};
    #[doc(no_inline)]
    pub use crate::resource::{ResourceInfo, Scope};
    #[doc(no_inline)]
    pub use crate::schema::{Reason, Rule};
    #[doc(no_inline)]
    pub use async_trait::async_trait;
    #[doc(no_inline)]
    pub use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    #[doc(no_inline)]
    pub use kube_core::{Resource, ResourceExt};
    #[doc(no_inline)]
    pub use schemars::JsonSchema;
    #[doc(no_inline)]
    pub use serde::{Deserialize, Serialize};
}

/// Re-exports used by the code that `#[derive(ApiResource)]` generates. Not a public API.
#[doc(hidden)]
pub mod __private {
    pub use k8s_openapi;
    pub use kube_core;
    pub use schemars;
    pub use serde;
    pub use serde_json;
}
