//! When the aggregator sends a request again, to the next endpoint, after it failed on a
//! backend before any byte of a response; and when it must not.
//!
//! The rules are those of Go's HTTP clients, which client-go and kube-aggregator use:
//!
//! * **Not sent**: connecting failed, or the pooled connection had closed before the request
//!   went out (hyper hands the request back). Any request goes again: nothing reached a backend.
//! * **Refused**: the backend refused the HTTP/2 stream, with `RST_STREAM` `REFUSED_STREAM` or
//!   with a `GOAWAY` whose last stream id is below the request's. Any request goes again: HTTP/2
//!   (RFC 9113 section 8.7) promises that the backend did not process it. This is the rule of
//!   golang.org/x/net/http2's transport (`canRetryError`).
//! * **Broken**: the request went out, at least in part, and the connection broke before any
//!   response byte. Only a replayable request goes again, as Go's `Request.isReplayable` says
//!   (GET, HEAD, OPTIONS, TRACE, or any method carrying `Idempotency-Key` or
//!   `X-Idempotency-Key`), and only when the connection had carried requests before, as
//!   net/http's `persistConn.shouldRetryRequest` (a fresh connection that breaks at once may be
//!   a request that kills backends, which should not go to every replica). A create, update,
//!   patch or delete that may have reached a live backend is never sent twice: its client gets
//!   the 503 and decides.
//! * Anything else (a stream reset by a live backend, a protocol error): never sent again.
//!
//! In every case the body must be whole again: none of it read yet, or every byte read so far
//! still kept ([`super::replay`]: only small bodies of short requests, within a budget), as Go
//! requires a `GetBody`. Each endpoint is tried once, and the last one once more on a fresh
//! connection when its failure was on a reused one.

use http::{HeaderMap, Method};

/// What a failure tells about whether a backend may have acted on the request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Fate {
    /// No connection could be opened to the endpoint (refused, TLS or HTTP/2 handshake failed).
    Unreachable,
    /// The pooled connection had closed before the request went out.
    Unsent,
    /// The backend refused the stream: it promises it did not process the request.
    Refused,
    /// Sent, at least in part; the connection broke before any response byte.
    Broken,
    /// Any other failure.
    Failed,
}

impl Fate {
    /// The fate told by an error of an HTTP/2 request that hyper did not hand back.
    pub(crate) fn of_http2(error: &hyper::Error) -> Fate {
        let mut current: Option<&(dyn std::error::Error + 'static)> = Some(error);
        while let Some(e) = current {
            if let Some(h2) = e.downcast_ref::<h2::Error>() {
                let refused = h2.is_remote()
                    && (h2.is_go_away()
                        || (h2.is_reset() && h2.reason() == Some(h2::Reason::REFUSED_STREAM)));
                return if refused {
                    Fate::Refused
                } else if h2.is_io() {
                    Fate::Broken
                } else {
                    Fate::Failed
                };
            }
            if e.downcast_ref::<std::io::Error>().is_some() {
                // hyper reports an HTTP/2 I/O failure as the I/O error itself: the connection
                // broke (reset, closed, or ended in the middle of a TLS record).
                return Fate::Broken;
            }
            current = e.source();
        }
        Fate::Failed
    }

    /// Whether a request that failed so may go to the next endpoint: its `method` and
    /// `headers`, whether its body can be sent whole again, and whether it went on a connection
    /// that had carried requests before.
    pub(crate) fn may_retry(
        self,
        method: &Method,
        headers: &HeaderMap,
        body_replayable: bool,
        reused: bool,
    ) -> bool {
        if !body_replayable {
            return false;
        }
        match self {
            Fate::Unreachable | Fate::Unsent | Fate::Refused => true,
            Fate::Broken => reused && replayable(method, headers),
            Fate::Failed => false,
        }
    }

    /// Whether the endpoint is taken out at once: it could not be reached, or its connection
    /// broke. (A connection that closed is the pool's to report; a refusal comes from a
    /// backend that is alive.)
    pub(crate) fn marks_down(self) -> bool {
        matches!(self, Fate::Unreachable | Fate::Broken)
    }
}

/// Whether a request may be sent twice, as Go's `Request.isReplayable`: a safe method, or a
/// request its client marked idempotent.
pub(crate) fn replayable(method: &Method, headers: &HeaderMap) -> bool {
    matches!(
        *method,
        Method::GET | Method::HEAD | Method::OPTIONS | Method::TRACE
    ) || headers.contains_key("idempotency-key")
        || headers.contains_key("x-idempotency-key")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_that_went_out_are_never_sent_twice() {
        let none = HeaderMap::new();
        for method in [Method::POST, Method::PUT, Method::PATCH, Method::DELETE] {
            assert!(
                !Fate::Broken.may_retry(&method, &none, true, true),
                "{method}"
            );
            for fate in [Fate::Unreachable, Fate::Unsent, Fate::Refused] {
                assert!(
                    fate.may_retry(&method, &none, true, true),
                    "{method} {fate:?}"
                );
            }
            assert!(!Fate::Failed.may_retry(&method, &none, true, true));
        }
        let mut keyed = HeaderMap::new();
        keyed.insert("idempotency-key", "k1".parse().unwrap());
        assert!(Fate::Broken.may_retry(&Method::POST, &keyed, true, true));
        let mut keyed = HeaderMap::new();
        keyed.insert("x-idempotency-key", "k1".parse().unwrap());
        assert!(Fate::Broken.may_retry(&Method::DELETE, &keyed, true, true));
    }

    #[test]
    fn reads_go_again_on_a_reused_connection_with_a_whole_body() {
        let none = HeaderMap::new();
        for method in [Method::GET, Method::HEAD, Method::OPTIONS, Method::TRACE] {
            assert!(Fate::Broken.may_retry(&method, &none, true, true));
            assert!(!Fate::Broken.may_retry(&method, &none, true, false));
            assert!(!Fate::Broken.may_retry(&method, &none, false, true));
        }
        assert!(!Fate::Refused.may_retry(&Method::POST, &none, false, true));
    }

    #[test]
    fn only_unreachable_endpoints_and_broken_connections_take_an_endpoint_out() {
        assert!(Fate::Broken.marks_down());
        assert!(Fate::Unreachable.marks_down());
        assert!(!Fate::Refused.marks_down());
        assert!(!Fate::Unsent.marks_down());
        assert!(!Fate::Failed.marks_down());
    }
}
