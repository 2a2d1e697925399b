//! The command line every server built with the framework gets.
//!
//! ```text
//! <server> local [--secure-port 8443] [--write-kubeconfig PATH] [--cert-dir DIR] ...
//! ```

pub(crate) mod app;
pub(crate) mod encryption_config;
pub(crate) mod encryption_reload;
pub mod local;
pub(crate) mod logging;
pub(crate) mod manifests;
pub(crate) mod serve;
pub(crate) mod serve_options;
pub(crate) mod server_run_options;
pub mod storage_options;

pub use app::App;
pub use local::{LocalOptions, LocalServer};
