//! The flags bounding requests, connections and shutdown, with upstream's names and defaults
//! (`k8s.io/apiserver`'s `ServerRunOptions` and `SecureServingOptions`) where upstream has
//! them.

use std::time::Duration;

use crate::duration::GoDuration;
use crate::server::connections::ConnectionLimits;
use crate::server::filters::RequestLimits;
use crate::server::lifecycle::ShutdownOptions;

/// Limits of requests and connections and the shutdown delay, shared by `serve` and `local`.
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
    /// The limit that the server gives to clients for the maximum number of streams in an
    /// HTTP/2 connection. Zero means upstream's default of 100.
    #[arg(long, default_value_t = 1000)]
    pub http2_max_streams_per_connection: u32,
    /// If true, HTTP2 serving will be disabled.
    #[arg(long)]
    pub disable_http2_serving: bool,
    /// Enable profiling via web interface host:port/debug/pprof/ (CPU profiles, for callers
    /// authorized to get the path).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub profiling: bool,
    /// How long a client may take to complete the TLS handshake ("0" for no limit).
    #[arg(long, default_value = "32s")]
    pub tls_handshake_timeout: GoDuration,
    /// How long a client may take to send a request's headers, from the TLS handshake for
    /// the first request of a connection and from its first byte for later ones ("0" for no
    /// limit).
    #[arg(long, default_value = "32s")]
    pub read_header_timeout: GoDuration,
    /// How long a connection without a request in flight stays open waiting for the next
    /// request ("0" for no limit).
    #[arg(long, default_value = "1m30s")]
    pub idle_connection_timeout: GoDuration,
    /// How long an HTTP/2 connection may go without a frame from the client before the
    /// server sends a PING ("0" sends none).
    #[arg(long, default_value = "30s")]
    pub http2_read_idle_timeout: GoDuration,
    /// How long the answer to that PING may take before the connection is closed.
    #[arg(long, default_value = "15s")]
    pub http2_ping_timeout: GoDuration,
    /// The most connections open at once; beyond, the connection idle longest is closed to
    /// make room. Default: the open-files limit less a reserve for the server's own files
    /// and connections (an eighth, 64 to 4096). Zero for no limit.
    #[arg(long)]
    pub max_open_connections: Option<usize>,
    /// Maximum time a streaming connection (a connection upgraded for a connect
    /// subresource, such as a WebSocket) can be idle, nothing read or written, before the
    /// connection is automatically closed. 0 indicates no timeout. Example: '5m'.
    #[arg(long, default_value = "0s")]
    pub streaming_connection_idle_timeout: GoDuration,
}

impl Default for ServerRunOptions {
    fn default() -> Self {
        ServerRunOptions {
            max_requests_inflight: 400,
            max_mutating_requests_inflight: 200,
            request_timeout: GoDuration(Duration::from_secs(60)),
            min_request_timeout: 1800,
            shutdown_delay_duration: GoDuration(Duration::ZERO),
            http2_max_streams_per_connection: 1000,
            disable_http2_serving: false,
            profiling: true,
            tls_handshake_timeout: GoDuration(Duration::from_secs(32)),
            read_header_timeout: GoDuration(Duration::from_secs(32)),
            idle_connection_timeout: GoDuration(Duration::from_secs(90)),
            http2_read_idle_timeout: GoDuration(Duration::from_secs(30)),
            http2_ping_timeout: GoDuration(Duration::from_secs(15)),
            max_open_connections: None,
            streaming_connection_idle_timeout: GoDuration(Duration::ZERO),
        }
    }
}

impl ServerRunOptions {
    /// The request and connection limits these flags set.
    pub fn limits(&self) -> RequestLimits {
        RequestLimits {
            max_requests_inflight: self.max_requests_inflight,
            max_mutating_requests_inflight: self.max_mutating_requests_inflight,
            request_timeout: self.request_timeout.0,
            min_request_timeout: Duration::from_secs(self.min_request_timeout),
            connections: self.connections(),
        }
    }

    /// The connection limits these flags set.
    pub fn connections(&self) -> ConnectionLimits {
        ConnectionLimits {
            tls_handshake_timeout: self.tls_handshake_timeout.0,
            read_header_timeout: self.read_header_timeout.0,
            idle_timeout: self.idle_connection_timeout.0,
            http2_max_streams_per_connection: self.http2_max_streams_per_connection,
            http2_read_idle_timeout: self.http2_read_idle_timeout.0,
            http2_ping_timeout: self.http2_ping_timeout.0,
            disable_http2: self.disable_http2_serving,
            max_open_connections: self.max_open_connections,
            response_send_timeout: self.request_timeout.0,
            streaming_idle_timeout: self.streaming_connection_idle_timeout.0,
            ..ConnectionLimits::default()
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
        // The request timeout also bounds sending a response.
        assert_eq!(
            o.connections(),
            ConnectionLimits {
                response_send_timeout: Duration::from_secs(5),
                ..ConnectionLimits::default()
            }
        );
        assert!(Cli::try_parse_from(["x", "--max-requests-inflight=-1"]).is_err());
        assert!(Cli::try_parse_from(["x", "--request-timeout=-1s"]).is_err());
    }

    #[test]
    fn connection_flags() {
        let c = Cli::try_parse_from([
            "x",
            "--http2-max-streams-per-connection=0",
            "--disable-http2-serving",
            "--tls-handshake-timeout=1s",
            "--read-header-timeout=2s",
            "--idle-connection-timeout=3s",
            "--http2-read-idle-timeout=0",
            "--http2-ping-timeout=5s",
            "--max-open-connections=7",
            "--streaming-connection-idle-timeout=4h",
        ])
        .unwrap()
        .run
        .limits()
        .connections;
        assert_eq!(c.http2_streams(), 100);
        assert!(c.disable_http2);
        assert_eq!(c.tls_handshake_timeout, Duration::from_secs(1));
        assert_eq!(c.read_header_timeout, Duration::from_secs(2));
        assert_eq!(c.idle_timeout, Duration::from_secs(3));
        assert_eq!(c.http2_read_idle_timeout, Duration::ZERO);
        assert_eq!(c.http2_ping_timeout, Duration::from_secs(5));
        assert_eq!(c.open_connections_bound(), 7);
        assert_eq!(c.streaming_idle_timeout, Duration::from_secs(4 * 3600));
        let d = Cli::try_parse_from(["x", "--max-open-connections=0"])
            .unwrap()
            .run
            .connections();
        assert_eq!(d.http2_streams(), 1000);
        assert_eq!(d.open_connections_bound(), usize::MAX);
        // Streams never time out unless asked to.
        assert_eq!(d.streaming_idle_timeout, Duration::ZERO);
    }
}
