//! The request timeout (upstream's `WithRequestDeadline` and
//! `WithTimeoutForNonLongRunningRequests`): a request other than a watch that is not answered
//! within `--request-timeout` (or a shorter `?timeout=`) is answered `504`.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use axum::body::Body;
use http::{HeaderValue, Request, Response, StatusCode, header};
use pin_project_lite::pin_project;
use tower::{Layer, Service};

use crate::authz::ParsedRequest;
use crate::duration;
use crate::endpoints::query::Query;
use crate::endpoints::watch_timeout::MinRequestTimeout;
use crate::error::ApiError;

/// The request timeout as a filter; also tells the watch handlers the shortest watch
/// (`--min-request-timeout`, `MinRequestTimeout`).
///
/// Hand-written rather than tower-http's timeout layer, which answers `408` with an empty
/// body and one fixed duration: upstream answers `504` with its Status text, honours a
/// shorter `?timeout=` per request, refuses a malformed one with `400`, and exempts watches.
#[derive(Clone, Copy, Debug)]
pub struct TimeoutFilter {
    /// `--request-timeout`.
    pub request_timeout: Duration,
    /// `--min-request-timeout`.
    pub min_request_timeout: Duration,
}

/// The timeout filter as a layer.
pub fn layer(request_timeout: Duration, min_request_timeout: Duration) -> TimeoutFilter {
    TimeoutFilter {
        request_timeout,
        min_request_timeout,
    }
}

impl<S> Layer<S> for TimeoutFilter {
    type Service = TimeoutService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        TimeoutService {
            filter: *self,
            inner,
        }
    }
}

/// The service of the [`TimeoutFilter`].
#[derive(Clone, Debug)]
pub struct TimeoutService<S> {
    filter: TimeoutFilter,
    inner: S,
}

impl<S> Service<Request<Body>> for TimeoutService<S>
where
    S: Service<Request<Body>, Response = Response<Body>, Error = Infallible>,
{
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = TimeoutFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut req: Request<Body>) -> Self::Future {
        let long_running = req
            .extensions()
            .get::<ParsedRequest>()
            .is_some_and(super::long_running::is_long_running);
        if long_running {
            // Watches are long-running: theirs is the shortest watch's length.
            req.extensions_mut()
                .insert(MinRequestTimeout(self.filter.min_request_timeout));
            return TimeoutFuture::Unbounded {
                inner: self.inner.call(req),
            };
        }
        let deadline = match req.extensions().get::<Query>() {
            Some(query) => deadline_of(query, self.filter.request_timeout),
            None => deadline(req.uri().query(), self.filter.request_timeout),
        };
        match deadline {
            Ok(d) => TimeoutFuture::Bounded {
                inner: tokio::time::timeout(d, self.inner.call(req)),
            },
            Err(e) => TimeoutFuture::Refused {
                res: Some(axum::response::IntoResponse::into_response(e)),
            },
        }
    }
}

pin_project! {
    /// The future of a [`TimeoutService`].
    // The variants' fields: the rest of the chain's future (with the deadline), or the
    // answer until it is given.
    #[allow(missing_docs)]
    #[project = TimeoutFutureProjection]
    pub enum TimeoutFuture<F> {
        /// A long-running request: no deadline.
        Unbounded {
            #[pin]
            inner: F,
        },
        /// Answered `504` when the deadline passes first.
        Bounded {
            #[pin]
            inner: tokio::time::Timeout<F>,
        },
        /// A malformed `?timeout=`.
        Refused {
            res: Option<Response<Body>>,
        },
    }
}

impl<F> Future for TimeoutFuture<F>
where
    F: Future<Output = Result<Response<Body>, Infallible>>,
{
    type Output = Result<Response<Body>, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project() {
            TimeoutFutureProjection::Unbounded { inner } => inner.poll(cx),
            TimeoutFutureProjection::Bounded { inner } => match ready!(inner.poll(cx)) {
                Ok(res) => Poll::Ready(res),
                Err(_) => Poll::Ready(Ok(timed_out())),
            },
            TimeoutFutureProjection::Refused { res } => {
                Poll::Ready(Ok(res.take().expect("polled after it ended")))
            }
        }
    }
}

/// Upstream's `invalidTimeoutInURL`.
const INVALID_TIMEOUT: &str = "invalid timeout specified in the request URL";

/// How long a request with this raw query may take: `?timeout=` when it is positive and
/// shorter than `default`, else `default`. An unparsable `?timeout=` is a `400`.
pub fn deadline(query: Option<&str>, default: Duration) -> Result<Duration, ApiError> {
    deadline_of(&Query::parse(query), default)
}

/// Like [`deadline`], for a decoded query.
pub(crate) fn deadline_of(query: &Query, default: Duration) -> Result<Duration, ApiError> {
    let Some(value) = query.get("timeout") else {
        return Ok(default);
    };
    // Go accepts negative durations; upstream then keeps the default.
    let (negative, magnitude) = match value.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, value),
    };
    let parsed = duration::parse(magnitude).map_err(|e| {
        let e = e.replace(&format!("{magnitude:?}"), &format!("{value:?}"));
        ApiError::bad_request(format!("{INVALID_TIMEOUT} - {e}"))
    })?;
    if negative || parsed.is_zero() || parsed >= default {
        Ok(default)
    } else {
        Ok(parsed)
    }
}

/// The answer to a request that ran out of time: as upstream's timeout filter writes it, the
/// Status encoded without `kind` and `apiVersion`, then a newline.
pub(crate) fn timed_out() -> Response<Body> {
    let body = "{\"metadata\":{},\"status\":\"Failure\",\"message\":\"Timeout: request did not complete within the allotted timeout\",\"reason\":\"Timeout\",\"details\":{},\"code\":504}\n";
    let mut res = Response::new(Body::from(body));
    *res.status_mut() = StatusCode::GATEWAY_TIMEOUT;
    res.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    res
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINUTE: Duration = Duration::from_secs(60);

    #[test]
    fn timeout_parameter() {
        assert_eq!(deadline(None, MINUTE).unwrap(), MINUTE);
        assert_eq!(deadline(Some("limit=1"), MINUTE).unwrap(), MINUTE);
        assert_eq!(
            deadline(Some("timeout=5s"), MINUTE).unwrap(),
            Duration::from_secs(5)
        );
        assert_eq!(
            deadline(Some("timeout=1m30s"), MINUTE).unwrap(),
            MINUTE,
            "longer than the default"
        );
        assert_eq!(deadline(Some("timeout=0s"), MINUTE).unwrap(), MINUTE);
        assert_eq!(deadline(Some("timeout=-5s"), MINUTE).unwrap(), MINUTE);
        let err = deadline(Some("timeout=soon"), MINUTE).unwrap_err();
        assert_eq!(err.code, 400);
        assert_eq!(
            err.message,
            "invalid timeout specified in the request URL - time: invalid duration \"soon\""
        );
        let err = deadline(Some("timeout=-x"), MINUTE).unwrap_err();
        assert!(err.message.ends_with("\"-x\""), "{}", err.message);
    }

    #[tokio::test]
    async fn timed_out_body() {
        use http_body_util::BodyExt;
        let res = timed_out();
        assert_eq!(res.status(), StatusCode::GATEWAY_TIMEOUT);
        let body = res.into_body().collect().await.unwrap().to_bytes();
        let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(v["reason"], "Timeout");
        assert_eq!(v["code"], 504);
        assert!(v.get("kind").is_none());
    }
}
