//! The connection layer under the handler chain, with the defaults of upstream's serving
//! (`k8s.io/apiserver`'s `SecureServingInfo` over Go's `net/http` and `x/net/http2`):
//!
//! - the TLS handshake, the first request's headers and each later request's headers must
//!   arrive in time, and a connection without a request in flight is closed once idle too
//!   long ([`ConnectionLimits`], `activity`);
//! - `accept` failures back off instead of spinning (`accept`); open connections stay below
//!   the open-files limit, the longest-idle one making room for a new one (`descriptors`,
//!   `activity::OpenConnections`);
//! - HTTP/2 with `--http2-max-streams-per-connection` streams and keep-alive pings, its
//!   frames written in batches (`batched_writes`), a connection reading no more while the
//!   requests it (or the listener) accepted wait to start (`backlog`);
//! - answers given before the request body was read reach the client intact: the rest of
//!   the body is read (within bounds, and bounded in number: `drains`), over HTTP/2 before
//!   the answer is sent, and only while the client is sending it (`unread_body`,
//!   `early_answer`);
//! - large responses are gzip-compressed as upstream does (`compression`);
//! - a connection upgraded by a `101 Switching Protocols` (WebSocket) stays counted, busy,
//!   among the open connections while its stream lives, and is closed once idle past the
//!   streaming idle timeout (`upgraded`).

pub(crate) mod accept;
pub(crate) mod activity;
pub(crate) mod backlog;
// The benchmark's baseline server writes HTTP/2 frames as the framework does.
internal_modules!(batched_writes);
pub(crate) mod compression;
pub(crate) mod connection;
pub(crate) mod descriptors;
pub(crate) mod drains;
pub(crate) mod early_answer;
pub(crate) mod limits;
pub(crate) mod listener;
pub(crate) mod tracked_io;
pub(crate) mod unread_body;
pub(crate) mod upgraded;

pub(crate) use connection::{ConnectionServer, ServeRequest};
pub use limits::ConnectionLimits;
