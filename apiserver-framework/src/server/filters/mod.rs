//! The handler chain's filters, each a tower layer in its own module, in upstream's order
//! (`k8s.io/apiserver`'s `DefaultBuildHandlerChain`), outermost first:
//!
//! 1. `audit_id`: the request's audit id, echoed on every response;
//! 2. `panic_recovery`: a panic answers `500` and the server goes on;
//! 3. `request_info`: the request is read once (its attributes and its query);
//! 4. `metrics`: counted in flight and recorded;
//! 5. `timeout`: the request deadline (not for watches);
//! 6. `authentication`: who the caller is;
//!    then, with `--tracing-config-file` only, `request_span`: the request's OpenTelemetry span;
//! 7. `max_inflight`: the in-flight limit;
//! 8. `audit`: the audit event;
//! 9. `impersonation`: acting as another user;
//! 10. `authorization`: whether the user may do what the request asks.
//!
//! Users add their own layers at a [`ChainPosition`] (`position`). A filter that never waits
//! is a `step::StepLayer` or its own service, with a named future: it calls the rest of the
//! chain directly; one that awaits (authentication, authorization, audit, impersonation when
//! asked) is a `filter::FilterLayer`, whose future is boxed.

pub(crate) mod audit;
pub(crate) mod audit_id;
pub(crate) mod authentication;
pub(crate) mod authorization;
pub(crate) mod filter;
pub(crate) mod impersonation;
pub(crate) mod limits;
pub(crate) mod long_running;
pub(crate) mod max_inflight;
pub(crate) mod metrics;
pub(crate) mod panic_recovery;
pub(crate) mod position;
pub(crate) mod request_info;
pub(crate) mod request_span;
pub(crate) mod step;
pub(crate) mod timeout;

pub use filter::ChainInner;
pub use limits::RequestLimits;
pub(crate) use max_inflight::MaxInFlight;
pub use position::{ChainLayers, ChainPosition, ChainService};
/// For the workspace's tests of client input.
#[cfg(feature = "testing")]
pub use timeout::deadline;
