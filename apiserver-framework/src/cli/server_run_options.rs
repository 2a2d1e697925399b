//! The flags bounding requests and shutdown, with upstream's names and defaults
//! (`k8s.io/apiserver`'s `ServerRunOptions`).

use std::time::Duration;

use crate::cli::duration::GoDuration;
use crate::server::filters::RequestLimits;
use crate::server::lifecycle::ShutdownOptions;

/// Limits of requests and the shutdown delay, shared by `serve` and `local`.
#[derive(Clone, Debug, clap::Args)]
pub struct ServerRunOptions {
    /// The maximum number of non-mutating requests in flight at a given time. When the
    /// server exceeds this, it rejects requests. Zero for no limit.
    #[arg(long, default_value_t = 400)]
    pub max_requests_inflight: usize,
    /// The maximum number of mutating requests in flight at a given time. When the server
    /// exceeds this, it rejects requests. Zero for no limit.
    #[arg(long, default_value_t = 200)]
    pub max_mutating_requests_inflight: usize,
    /// An optional field indicating the duration a handler must keep a request open before
    /// timing it out. This is the default request timeout for requests but may be
    /// overridden by a shorter ?timeout= on the request.
    #[arg(long, default_value = "1m0s")]
    pub request_timeout: GoDuration,
    /// An optional field indicating the minimum number of seconds a handler must keep a
    /// request open before timing it out. Currently only honored by the watch request
    /// handler, which picks a randomized value above this number as the connection timeout,
    /// to spread out load.
    #[arg(long, default_value_t = 1800)]
    pub min_request_timeout: u64,
    /// Time to delay the termination. During that time the server keeps serving requests
    /// normally. The endpoints /healthz and /livez will return success, but /readyz
    /// immediately returns failure. Graceful termination starts after this delay has
    /// elapsed. This can be used to allow load balancer to stop sending traffic to this
    /// server.
    #[arg(long, default_value = "0s")]
    pub shutdown_delay_duration: GoDuration,
}

impl Default for ServerRunOptions {
    fn default() -> Self {
        ServerRunOptions {
            max_requests_inflight: 400,
            max_mutating_requests_inflight: 200,
            request_timeout: GoDuration(Duration::from_secs(60)),
            min_request_timeout: 1800,
            shutdown_delay_duration: GoDuration(Duration::ZERO),
        }
    }
}

impl ServerRunOptions {
    /// The request limits these flags set.
    pub fn limits(&self) -> RequestLimits {
        RequestLimits {
            max_requests_inflight: self.max_requests_inflight,
            max_mutating_requests_inflight: self.max_mutating_requests_inflight,
            request_timeout: self.request_timeout.0,
            min_request_timeout: Duration::from_secs(self.min_request_timeout),
        }
    }

    /// How the server stops: after `--shutdown-delay-duration`, requests in flight get
    /// `--request-timeout` to finish, as upstream bounds draining.
    pub fn shutdown(&self) -> ShutdownOptions {
        ShutdownOptions {
            delay: self.shutdown_delay_duration.0,
            drain_timeout: self.request_timeout.0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        run: ServerRunOptions,
    }

    #[test]
    fn upstream_names_and_defaults() {
        let d = Cli::try_parse_from(["x"]).unwrap().run;
        assert_eq!(d.limits(), RequestLimits::default());
        assert_eq!(d.shutdown(), ShutdownOptions::default());
        assert_eq!(
            ServerRunOptions::default().limits(),
            RequestLimits::default()
        );
        let o = Cli::try_parse_from([
            "x",
            "--max-requests-inflight=2",
            "--max-mutating-requests-inflight=0",
            "--request-timeout=5s",
            "--min-request-timeout=30",
            "--shutdown-delay-duration=2s",
        ])
        .unwrap()
        .run;
        let l = o.limits();
        assert_eq!(
            (l.max_requests_inflight, l.max_mutating_requests_inflight),
            (2, 0)
        );
        assert_eq!(l.request_timeout, Duration::from_secs(5));
        assert_eq!(l.min_request_timeout, Duration::from_secs(30));
        assert_eq!(o.shutdown().delay, Duration::from_secs(2));
        assert_eq!(o.shutdown().drain_timeout, Duration::from_secs(5));
        assert!(Cli::try_parse_from(["x", "--max-requests-inflight=-1"]).is_err());
        assert!(Cli::try_parse_from(["x", "--request-timeout=-1s"]).is_err());
    }
}
