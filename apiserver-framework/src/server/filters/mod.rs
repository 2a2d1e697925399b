//! Filters of the handler chain: impersonation (upstream's `pkg/endpoints/filters`), and the
//! ones that bound requests, as `k8s.io/apiserver`'s `pkg/server/filters`: the in-flight limit,
//! the request timeout and the lifetime of watches.

pub mod impersonation;
pub mod limits;
pub mod long_running;
pub mod max_inflight;
pub mod timeout;
pub mod watch_timeout;

pub use impersonation::impersonate;
pub use limits::RequestLimits;
pub use max_inflight::MaxInFlight;
pub use watch_timeout::MinRequestTimeout;
