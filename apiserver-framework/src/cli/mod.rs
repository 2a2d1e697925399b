//! The command line every server built with the framework gets.
//!
//! ```text
//! <server> local [--secure-port 8443] [--write-kubeconfig PATH] [--cert-dir DIR] ...
//! ```

pub mod app;
pub mod local;
pub mod logging;
pub mod manifests;
pub mod serve;
pub mod serve_options;
pub mod server_run_options;
pub mod storage_options;

pub use app::App;
pub use local::{LocalOptions, LocalServer};
