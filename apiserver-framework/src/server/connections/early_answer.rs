//! [`EarlyAnswers`]: what an HTTP/2 connection does with an answer given before its request
//! body was read, and with that body's unread rest (see `unread_body`).
//!
//! The answer waits until the rest has been read (within bounds), so that the client has
//! finished sending before it sees any of it, but only while the client is sending: if none
//! of the body arrives within [`ConnectionLimits::unread_body_start_timeout`] (100 ms), the
//! answer is sent at once and the stream reset (`RST_STREAM`, `NO_ERROR`) once it is sent, as
//! Go's server does for every early answer. A stream that only announces a body (an anonymous
//! client opening 1,000 streams a connection, each announcing 8 MiB) so costs the server
//! nothing past its answer, while a client that is uploading (curl 7.88 among them) reads its
//! answer whole: had it read the answer's headers while still sending, it would stop short of
//! the `content-length` it announced, and `h2` resets such a stream with `PROTOCOL_ERROR`,
//! dropping what of the answer it has not sent yet.
//!
//! Bodies read so are bounded in number, per connection and in all (`drains`); past a bound
//! the answer is sent at once and the stream reset. While the rest is read, the request
//! counts as no longer in flight, so that it keeps its connection from neither the idle
//! timeout nor eviction.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use bytes::Bytes;
use http::Response;
use http_body_util::BodyExt;

use super::activity::{Activity, InFlight};
use super::drains::ConnectionDrains;
use super::limits::ConnectionLimits;
use super::unread_body::{ReadBounds, discard};

/// How one HTTP/2 connection settles its early answers.
#[derive(Debug)]
pub(crate) struct EarlyAnswers {
    drains: ConnectionDrains,
    bounds: ReadBounds,
    start_timeout: Duration,
}

impl EarlyAnswers {
    /// Early answers within `limits`, reading bodies within `drains`.
    pub fn new(limits: &ConnectionLimits, drains: ConnectionDrains) -> Self {
        EarlyAnswers {
            drains,
            bounds: ReadBounds {
                max_bytes: limits.unread_body_drain_bytes,
                timeout: limits.unread_body_drain_timeout,
            },
            start_timeout: limits.unread_body_start_timeout,
        }
    }

    /// Settles `res`, answered while `rest` of its request's body was unread: returns the
    /// answer to send and the request's place in flight (given up while the rest is read, and
    /// taken again on `activity` to send the answer).
    pub async fn settle<B>(
        &self,
        res: Response<Body>,
        mut rest: B,
        in_flight: InFlight,
        activity: &Arc<Activity>,
    ) -> (Response<Body>, InFlight)
    where
        B: http_body::Body<Data = Bytes> + Unpin + Send + 'static,
    {
        if !self.bounds.worth_reading(&rest) {
            return (res, in_flight);
        }
        let Some(permit) = self.drains.permit() else {
            return (res, in_flight);
        };
        drop(in_flight);
        if self.sending(&mut rest).await {
            discard(rest, self.bounds).await;
        }
        drop(permit);
        (res, activity.request_started())
    }

    /// Whether the client is sending `rest`: some of it arrives (and is read) within the
    /// start timeout.
    async fn sending<B: http_body::Body + Unpin>(&self, rest: &mut B) -> bool {
        matches!(
            tokio::time::timeout(self.start_timeout, rest.frame()).await,
            Ok(Some(Ok(_)))
        )
    }
}
