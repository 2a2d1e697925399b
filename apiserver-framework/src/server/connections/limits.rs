//! [`ConnectionLimits`]: how long a connection may take over each step before it is closed,
//! how many streams an HTTP/2 connection may carry, and how many connections may be open.

use std::time::Duration;

/// The bounds the listener puts on connections. The defaults are upstream's
/// (`k8s.io/apiserver`'s `SecureServingInfo.Serve` over Go's `net/http` and `x/net/http2`
/// servers) where upstream has one; a zero duration means no limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// How long a client may take, from the accepted TCP connection, to complete its TLS
    /// handshake. Go derives it from the smallest of the read-header, read and write timeouts:
    /// 32 s for kube-apiserver.
    pub tls_handshake_timeout: Duration,
    /// How long a client may take to send a request's headers: for the first request of a
    /// connection, counted from the end of the TLS handshake; for a later HTTP/1.1 request,
    /// from its first byte. Upstream's `ReadHeaderTimeout`, 32 s.
    pub read_header_timeout: Duration,
    /// How long a connection may stay open without a request in flight, waiting for the next
    /// one (HTTP/1.1 keep-alive; HTTP/2 without open streams). Upstream's `IdleTimeout`, 90 s.
    pub idle_timeout: Duration,
    /// The HTTP/2 `SETTINGS_MAX_CONCURRENT_STREAMS` the server gives clients: requests one
    /// connection carries at once (`--http2-max-streams-per-connection`). 1000, the value
    /// upstream's recommended options use for servers behind the aggregator, which multiplexes
    /// many watches onto one connection.
    pub http2_max_streams_per_connection: u32,
    /// HTTP/2: after this long without a frame from the client the server sends a `PING`
    /// (x/net/http2's `ReadIdleTimeout`); zero sends none. 30 s, as client-go's transport
    /// does: Go's server sends none unless configured, but a vanished aggregator would
    /// otherwise leave its watches open here until they time out.
    pub http2_read_idle_timeout: Duration,
    /// HTTP/2: how long the answer to that `PING` may take before the connection is closed
    /// (x/net/http2's `PingTimeout`, 15 s).
    pub http2_ping_timeout: Duration,
    /// Serve HTTP/1.1 only: TLS offers no `h2` (`--disable-http2-serving`).
    pub disable_http2: bool,
    /// The bound on open connections. `None`: derived from the process's open-files limit
    /// (see `server::connections::descriptors`); `Some(0)`: no bound. At the bound, a
    /// new connection closes the connection that has been idle longest (no request in flight:
    /// idle keep-alive connections, and those still in the TLS handshake or sending headers);
    /// when every connection has a request in flight, the new one is closed instead.
    pub max_open_connections: Option<usize>,
    /// An answer given before the request body was read (401, 413, 429, …) leaves the rest
    /// of the body unread; it is read and discarded, up to this many bytes, so that the client
    /// finishes sending and reads the answer (see
    /// `crate::server::connections::unread_body`). Over HTTP/2 the answer is sent once that
    /// reading is done. A body announcing more is not read.
    pub unread_body_drain_bytes: u64,
    /// How long that reading may take (and so, over HTTP/2, how long such an answer may wait).
    pub unread_body_drain_timeout: Duration,
    /// Over HTTP/2, how long an early answer waits for the first bytes of the unread body
    /// (100 ms). A client that sends none is not waiting to finish an upload: the answer is
    /// sent at once and the stream reset (`RST_STREAM`, `NO_ERROR`), as Go's server does.
    pub unread_body_start_timeout: Duration,
    /// How many unread bodies one HTTP/2 connection may have read at once (16). Past it an
    /// early answer is sent at once and its stream reset.
    pub max_draining_bodies_per_connection: usize,
    /// How many unread bodies the listener may have read at once, over all its connections
    /// (1024). A body being read counts toward no bound that keeps its connection open.
    pub max_draining_bodies: usize,
    /// HTTP/2: requests one connection may have accepted whose tasks have not yet started;
    /// while it has this many the connection reads no more of its client's bytes (see
    /// `backlog`). 64: a connection whose requests start as they come never has as many.
    pub max_unstarted_requests_per_connection: usize,
    /// HTTP/2: requests all connections together may have accepted whose tasks have not yet
    /// started; while they have this many no connection reads more. 64 for each CPU the
    /// runtime runs on (128 at least): a stream read waits for at most about this many
    /// others to start, so a flood of streams is answered within moments of being read,
    /// and it costs the server about 1.8 KB per request it holds.
    pub max_unstarted_requests: usize,
    /// How long a response that is not long-running (not a watch, proxy or stream) may take
    /// to be sent once its handler has answered; a connection still holding such a response
    /// past it is closed. Upstream's request timeout covers writing the response and aborts
    /// it when it runs out; without this bound a client that stops reading, or grants no
    /// HTTP/2 flow-control window while answering PINGs, would hold its answers (up to a
    /// stream limit of lists per connection) in the server's memory for as long as it
    /// likes. The `--request-timeout` (60 s); zero for no limit.
    pub response_send_timeout: Duration,
    /// How long a connection upgraded by a `101 Switching Protocols` (a connect session's
    /// WebSocket, or one the aggregator splices to a backend) may go without a byte read or
    /// written before it is closed (`--streaming-connection-idle-timeout`, the kubelet's flag
    /// for its streams, whose default is 4 h). Zero, the default, for no limit: kube-apiserver
    /// sets none on the streams it serves or proxies. An upgraded connection is never closed
    /// for [`Self::idle_timeout`] or to make room: it stays counted against
    /// [`Self::max_open_connections`], busy, for as long as it lives.
    pub streaming_idle_timeout: Duration,
}

/// Upstream's `MaxConcurrentStreams` when `--http2-max-streams-per-connection` is 0.
pub(crate) const GO_DEFAULT_HTTP2_MAX_STREAMS: u32 = 100;

impl Default for ConnectionLimits {
    fn default() -> Self {
        ConnectionLimits {
            tls_handshake_timeout: Duration::from_secs(32),
            read_header_timeout: Duration::from_secs(32),
            idle_timeout: Duration::from_secs(90),
            http2_max_streams_per_connection: 1000,
            http2_read_idle_timeout: Duration::from_secs(30),
            http2_ping_timeout: Duration::from_secs(15),
            disable_http2: false,
            max_open_connections: None,
            unread_body_drain_bytes: 8 * 1024 * 1024,
            unread_body_drain_timeout: Duration::from_secs(10),
            unread_body_start_timeout: Duration::from_millis(100),
            max_draining_bodies_per_connection: 16,
            max_draining_bodies: 1024,
            max_unstarted_requests_per_connection: 64,
            max_unstarted_requests: std::thread::available_parallelism()
                .map_or(1, usize::from)
                .saturating_mul(64)
                .max(128),
            response_send_timeout: Duration::from_secs(60),
            streaming_idle_timeout: Duration::ZERO,
        }
    }
}

impl ConnectionLimits {
    /// The HTTP/2 streams per connection to advertise: the configured number, or upstream's
    /// 100 for 0.
    pub fn http2_streams(&self) -> u32 {
        match self.http2_max_streams_per_connection {
            0 => GO_DEFAULT_HTTP2_MAX_STREAMS,
            n => n,
        }
    }

    /// The bound on open connections in effect (`usize::MAX` for none).
    pub fn open_connections_bound(&self) -> usize {
        match self.max_open_connections {
            Some(0) => usize::MAX,
            Some(n) => n,
            None => super::descriptors::open_files_limit()
                .map_or(usize::MAX, super::descriptors::connections_within),
        }
    }
}
