//! A test kit for servers built with the framework: start an [`App`](crate::App) in the test
//! process and drive it with real clients over HTTPS on loopback.
//!
//! Built with the crate's `testing` feature, which a server's tests turn on in its
//! `[dev-dependencies]` (`apiserver-framework = { …, features = ["testing"] }`).
//!
//! - [`TestServer::start`] serves the app as `local` mode does (self-signed TLS, a bearer token,
//!   every request allowed), on a free loopback port with the memory store, and hands out a ready
//!   `kube::Client`, the base URL, a kubeconfig file for `kubectl`, and the app's registry;
//! - [`TestServer::production`] serves it as `serve` does, behind a development host
//!   ([`crate::devhost`]): authentication and authorization delegated to the host, the host's
//!   admission plugins, and the host's users `admin`, `alice` (editor) and `bob` (viewer) as
//!   ready clients, so authorization rules and admission plugins run as in a cluster;
//! - [`serve_chain`] serves a handler chain the test assembled itself (its own authenticator,
//!   authorizer, audit or layers), for tests of the chain rather than of an app;
//! - [`tls`] builds TLS clients trusting a test server's CA (for reqwest, hyper, h2, raw
//!   streams);
//! - [`wait`] waits for objects and conditions, [`WatchEvents`] collects watch events, and
//!   [`expect_status`] checks a refusal's `Status` reason and code, [`item_names`] reads a list,
//!   [`serve_http`] serves a test double of a host API;
//! - [`conformance`] checks every resource the app registered against Kubernetes' semantics
//!   (CRUD, watch, paging, selectors, patches, server-side apply, discovery and OpenAPI).
//!
//! ```no_run
//! use apiserver_framework::prelude::*;
//! use apiserver_framework::testing::{TestServer, conformance::Conformance};
//!
//! # fn app() -> App { App::new("widget-server") }
//! // In a `#[tokio::test]`:
//! async fn my_server_conforms() {
//!     let server = TestServer::start(app()).await.expect("the server starts");
//!     Conformance::new(&server).run().await.assert_passed();
//! }
//! ```
//!
//! Storage backends have a conformance suite of their own: `storage::conformance` (the `testing`
//! feature).

mod chain;
pub mod conformance;
pub mod etcd;
mod fake_host;
mod lists;
mod server;
mod status;
pub mod tls;
pub mod wait;
mod watch_events;

pub use chain::{ServedChain, serve_chain, serve_chain_in};
pub use fake_host::serve_http;
/// The kube-rs crate the kit's clients come from (`Api`, `Client`, `Status`, `WatchEvent`), for
/// tests that do not depend on kube-rs themselves.
pub use kube;
pub use lists::item_names;
pub use server::{TestServer, TestServerError, free_port, users};
pub use status::{expect_status, status_message};
pub use watch_events::WatchEvents;
