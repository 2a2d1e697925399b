//! Servers: the generic API server and its delegation chain, health, version, certificate
//! reloading and the HTTPS listener.

pub(crate) mod cert_reload;
pub mod connections;
pub mod debug_flags;
pub mod filters;
pub(crate) mod front;
pub mod generic;
pub(crate) mod health;
pub mod lifecycle;
pub(crate) mod profiling;
pub mod serve;
pub mod tracing;
pub(crate) mod until_stopped;
pub(crate) mod version;

pub use generic::{GenericApiServer, GenericApiServerBuilder};
