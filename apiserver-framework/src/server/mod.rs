//! Servers: the generic API server and its delegation chain, health, version, TLS and the
//! HTTPS listener.

pub mod cert_reload;
pub mod generic;
pub mod health;
pub mod serve;
pub mod tls;
pub mod version;

pub use generic::{GenericApiServer, GenericApiServerBuilder};
