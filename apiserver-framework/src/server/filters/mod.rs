//! Filters of the handler chain: impersonation (upstream's `pkg/endpoints/filters`), and the
//! ones that bound requests, as `k8s.io/apiserver`'s `pkg/server/filters`: the in-flight limit
//! and the request timeout.

pub mod impersonation;
pub mod limits;
pub mod long_running;
pub mod max_inflight;
pub mod timeout;

pub use impersonation::impersonate;
pub use limits::RequestLimits;
pub use max_inflight::MaxInFlight;
