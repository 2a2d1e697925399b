//! [`EarlyAnswers`]: what an HTTP/2 connection does with an answer given before its request
//! body was read, and with that body's unread rest (see `unread_body`).
//!
//! - A refusal given before the handler (401, 403, 413, 429: the filters' answers to whom
//!   and what they refuse) is sent at once and whole, its headers and body together, and the
//!   stream is reset (`RST_STREAM`, `NO_ERROR`) as soon as it is sent, as Go's server does:
//!   such a stream costs the server nothing after its answer. Meanwhile the rest is read for
//!   a moment only ([`ConnectionLimits::refused_body_linger`]), so that a client still
//!   sending reads the answer before the reset. Whole, because `h2` resets a stream whose
//!   body ends short of its `content-length` with `PROTOCOL_ERROR` and drops what it has not
//!   sent yet: a client that stops sending once it reads the answer's headers (curl 7.88
//!   does) must find the body already sent with them.
//! - Any other answer waits until the rest has been read (within bounds): the client has
//!   finished sending before it sees any of it. Bodies read so are bounded in number, per
//!   connection and in all (`drains`); past a bound the answer is sent at once and the
//!   stream reset. While the rest is read, the request counts as no longer in flight, so that
//!   it keeps its connection from neither the idle timeout nor eviction.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use bytes::Bytes;
use http::{Response, StatusCode};
use http_body_util::BodyExt;

use super::activity::{Activity, InFlight};
use super::drains::ConnectionDrains;
use super::limits::ConnectionLimits;
use super::unread_body::{ReadBounds, discard};

/// The largest answer sent whole at once (a refusal's `Status` is a few hundred bytes).
const WHOLE_ANSWER_BYTES: u64 = 64 * 1024;

/// How one HTTP/2 connection settles its early answers.
#[derive(Debug)]
pub(crate) struct EarlyAnswers {
    drains: ConnectionDrains,
    bounds: ReadBounds,
    linger: Duration,
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
            linger: limits.refused_body_linger,
        }
    }

    /// Settles `res`, answered while `rest` of its request's body was unread: returns the
    /// answer to send and the request's place in flight (given up while the rest is read, and
    /// taken again on `activity` to send the answer).
    pub async fn settle<B>(
        &self,
        res: Response<Body>,
        rest: B,
        in_flight: InFlight,
        activity: &Arc<Activity>,
    ) -> (Response<Body>, InFlight)
    where
        B: http_body::Body<Data = Bytes> + Unpin + Send + 'static,
    {
        if refused_before_the_handler(res.status()) {
            let linger = ReadBounds {
                timeout: self.linger.min(self.bounds.timeout),
                ..self.bounds
            };
            if linger.worth_reading(&rest)
                && let Some(permit) = self.drains.permit()
            {
                tokio::spawn(async move {
                    discard(rest, linger).await;
                    drop(permit);
                });
            }
            return (whole(res).await, in_flight);
        }
        if !self.bounds.worth_reading(&rest) {
            return (res, in_flight);
        }
        let Some(permit) = self.drains.permit() else {
            return (res, in_flight);
        };
        drop(in_flight);
        discard(rest, self.bounds).await;
        drop(permit);
        (res, activity.request_started())
    }
}

/// Whether `status` is one the filters refuse a request with before any handler runs.
fn refused_before_the_handler(status: StatusCode) -> bool {
    matches!(
        status,
        StatusCode::UNAUTHORIZED
            | StatusCode::FORBIDDEN
            | StatusCode::PAYLOAD_TOO_LARGE
            | StatusCode::TOO_MANY_REQUESTS
    )
}

/// `res` with its body read, so that hyper sends it with the headers, if it is small and of
/// a known length; as it is otherwise.
async fn whole(res: Response<Body>) -> Response<Body> {
    let small = http_body::Body::size_hint(res.body())
        .exact()
        .is_some_and(|n| n <= WHOLE_ANSWER_BYTES);
    if !small {
        return res;
    }
    let (mut parts, body) = res.into_parts();
    match body.collect().await {
        Ok(collected) => Response::from_parts(parts, Body::from(collected.to_bytes())),
        Err(e) => {
            tracing::debug!(error = %e, "an early answer's body broke off");
            parts.headers.remove(http::header::CONTENT_LENGTH);
            Response::from_parts(parts, Body::empty())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::convert::Infallible;

    #[test]
    fn the_filters_refusals() {
        for code in [401, 403, 413, 429] {
            assert!(refused_before_the_handler(
                StatusCode::from_u16(code).unwrap()
            ));
        }
        for code in [200, 201, 400, 404, 405, 415, 422, 500, 504] {
            assert!(!refused_before_the_handler(
                StatusCode::from_u16(code).unwrap()
            ));
        }
    }

    #[tokio::test]
    async fn a_small_answer_is_read_whole_and_one_of_unknown_length_left_as_is() {
        let res = Response::builder()
            .status(401)
            .body(Body::from("{\"kind\":\"Status\"}"))
            .unwrap();
        let res = whole(res).await;
        assert_eq!(res.status(), 401);
        let body = res.into_body().collect().await.unwrap().to_bytes();
        assert_eq!(&body[..], b"{\"kind\":\"Status\"}");

        // Of no known length (a stream that never ends): left as is, at once.
        let endless = Body::from_stream(futures::stream::pending::<Result<Bytes, Infallible>>());
        let res = futures::FutureExt::now_or_never(whole(Response::new(endless)));
        assert!(res.is_some(), "a body of unknown length is not waited for");
    }
}
