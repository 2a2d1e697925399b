//! # apiserver-framework
//!
//! Build Kubernetes-style aggregated (extension) API servers from plain Rust structs.
//!
//! Put `#[derive(ApiResource)]` on a spec struct, register the generated type in a [`Group`],
//! and [`App`] gives you a server with Kubernetes REST semantics, discovery, OpenAPI, health
//! checks and a command line with a `local` development mode that `kubectl` can talk to.
#![warn(missing_docs)]

pub mod admission;
pub mod aggregator;
pub mod apply;
pub mod audit;
pub mod auth;
pub mod authz;
pub mod cli;
pub mod devhost;
pub mod discovery;
pub mod endpoints;
pub mod error;
pub mod fs;
pub mod metrics;
pub mod openapi;
pub mod quote;
pub mod registry;
pub mod resource;
pub mod schema;
pub mod server;
pub mod storage;

pub use apiserver_derive::ApiResource;
pub use cli::App;
pub use error::{ApiError, Result};
pub use registry::group::Group;
pub use resource::{ApiResource, PrinterColumn, ResourceInfo, ScaleSubresource, Scope};

/// Everything a typical server needs, in one import.
pub mod prelude {
    pub use crate::ApiResource;
    pub use crate::admission::{AdmissionAttributes, AdmissionPlugin, Operation};
    pub use crate::cli::App;
    pub use crate::error::{ApiError, Result};
    pub use crate::registry::group::Group;
    pub use crate::registry::strategy::{FieldError, Strategy};
    pub use crate::resource::{ResourceInfo, Scope};
    pub use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    pub use schemars::JsonSchema;
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
