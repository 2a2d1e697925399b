//! A development host: a local stand-in for the host cluster an extension server is
//! aggregated into, built with the framework.
//!
//! It serves the aggregator (`apiregistration.k8s.io/v1` APIServices proxied over TLS with a
//! front-proxy client certificate), `TokenReview` and `SubjectAccessReview` backed by a static
//! token file and a rules file, and the `kube-system/extension-apiserver-authentication`
//! ConfigMap, so an extension server in production mode can be driven with kubectl through
//! the real delegated path on one machine. Its users' self reviews (`kubectl auth whoami`,
//! `kubectl auth can-i`) are answered as a cluster answers them.
//!
//! `local_host` is the smaller stand-in `local` mode puts behind an app's server: the core
//! group's `/api` and the self reviews.

pub(crate) mod core;
pub mod files;
pub mod host;
pub(crate) mod kubeconfig;
pub(crate) mod local_host;
pub mod node;
pub(crate) mod options;
pub mod pki;
pub(crate) mod policies;
pub(crate) mod policy_checks;
// Public with the `testing` feature, for the fuzz targets of client input.
internal_modules!(protobuf);
pub(crate) mod reviews;
pub mod rules;
pub(crate) mod self_reviews;
pub mod tokens;
pub(crate) mod webhooks;

pub use host::{DevHost, DevHostError, Extension};
pub use options::DevHostOptions;
