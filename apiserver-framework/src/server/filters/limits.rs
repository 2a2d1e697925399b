//! [`RequestLimits`]: how many requests a server serves at once and for how long.

use std::time::Duration;

/// The bounds the handler chain puts on requests (`--max-requests-inflight`,
/// `--max-mutating-requests-inflight`, `--request-timeout`, `--min-request-timeout`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RequestLimits {
    /// Non-mutating requests served at once; 0 means no limit.
    pub max_requests_inflight: usize,
    /// Mutating requests served at once; 0 means no limit.
    pub max_mutating_requests_inflight: usize,
    /// How long a request other than a watch may take before it is answered `504`; a
    /// shorter `?timeout=` takes precedence.
    pub request_timeout: Duration,
    /// A watch without `timeoutSeconds` lasts a random time in `[min, 2*min)`.
    pub min_request_timeout: Duration,
}

impl Default for RequestLimits {
    /// Upstream's defaults: 400 and 200 requests, 60 s, 1800 s.
    fn default() -> Self {
        RequestLimits {
            max_requests_inflight: 400,
            max_mutating_requests_inflight: 200,
            request_timeout: Duration::from_secs(60),
            min_request_timeout: Duration::from_secs(1800),
        }
    }
}
