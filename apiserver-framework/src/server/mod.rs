//! Servers: the generic API server and its delegation chain, health, version, certificate
//! reloading and the HTTPS listener.

pub mod cert_reload;
pub mod connections;
pub mod filters;
pub mod front;
pub mod generic;
pub mod health;
pub mod lifecycle;
pub mod serve;
pub mod version;

pub use generic::{GenericApiServer, GenericApiServerBuilder};
