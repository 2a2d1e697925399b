//! [`RequestLimits`]: how many requests a server serves at once and for how long, and the
//! bounds on the connections they arrive on.

use std::time::Duration;

use crate::server::connections::ConnectionLimits;

/// The bounds the handler chain puts on requests (`--max-requests-inflight`,
/// `--max-mutating-requests-inflight`, `--request-timeout`, `--min-request-timeout`) and the
/// listener on connections.
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
    /// Timeouts and bounds of connections (TLS handshake, headers, idle, HTTP/2 streams,
    /// open connections).
    pub connections: ConnectionLimits,
}

impl Default for RequestLimits {
    /// Upstream's defaults: 400 and 200 requests, 60 s, 1800 s; connections as
    /// [`ConnectionLimits::default`].
    fn default() -> Self {
        RequestLimits {
            max_requests_inflight: 400,
            max_mutating_requests_inflight: 200,
            request_timeout: Duration::from_secs(60),
            min_request_timeout: Duration::from_secs(1800),
            connections: ConnectionLimits::default(),
        }
    }
}
