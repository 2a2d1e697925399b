//! Panic recovery (upstream's `WithPanicRecovery`): a panic anywhere behind this filter (a
//! handler, an admission plugin, a strategy, a filter) answers `500` and is logged with the
//! request; the connection and the server go on serving.
//!
//! Hand-written rather than tower-http's `CatchPanicLayer`: that layer changes the response
//! body to its own boxed type, which the chain then boxes again into its body type, two
//! allocations on every response; this one leaves answers as they are. Its answer is the
//! framework's: a `metav1.Status` with reason `InternalError` and upstream's message (upstream
//! writes that message as plain text; a Status is what clients decode), and the panic is
//! logged with the request's method, URI and audit id.

use std::any::Any;
use std::convert::Infallible;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::Body;
use http::{Method, Request, Response, Uri};
use pin_project_lite::pin_project;
use tower::{Layer, Service};

use crate::audit::AuditId;
use crate::error::ApiError;

/// Upstream's answer to a request that panicked.
pub(crate) const PANIC_MESSAGE: &str =
    "This request caused apiserver to panic. Look in the logs for details.";

/// The panic-recovery layer.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct PanicRecoveryLayer;

/// The panic-recovery layer.
pub fn layer() -> PanicRecoveryLayer {
    PanicRecoveryLayer
}

impl<S> Layer<S> for PanicRecoveryLayer {
    type Service = PanicRecovery<S>;

    fn layer(&self, inner: S) -> Self::Service {
        PanicRecovery { inner }
    }
}

/// The service of the [`PanicRecoveryLayer`].
#[derive(Clone, Debug)]
pub struct PanicRecovery<S> {
    inner: S,
}

/// The request a panic is logged with.
pub(crate) struct Served {
    method: Method,
    uri: Uri,
    audit_id: Option<AuditId>,
}

impl Served {
    /// Logs `panic` and answers it.
    fn answer(&self, panic: Box<dyn Any + Send>) -> Response<Body> {
        let message = panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_default();
        tracing::error!(
            method = %self.method,
            uri = %self.uri,
            audit_id = self.audit_id.as_ref().map_or("", |a| a.0.as_str()),
            panic = %message,
            "apiserver panic'd"
        );
        axum::response::IntoResponse::into_response(ApiError::internal(PANIC_MESSAGE))
    }
}

impl<S> Service<Request<Body>> for PanicRecovery<S>
where
    S: Service<Request<Body>, Response = Response<Body>, Error = Infallible>,
{
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = PanicRecoveryFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<Body>) -> Self::Future {
        let served = Served {
            method: req.method().clone(),
            uri: req.uri().clone(),
            audit_id: req.extensions().get::<AuditId>().cloned(),
        };
        match catch_unwind(AssertUnwindSafe(|| self.inner.call(req))) {
            Ok(inner) => PanicRecoveryFuture::Serving {
                inner,
                served: Some(served),
            },
            Err(panic) => PanicRecoveryFuture::Answered {
                res: Some(served.answer(panic)),
            },
        }
    }
}

pin_project! {
    /// The future of a [`PanicRecovery`] service.
    #[project = PanicRecoveryProjection]
    pub enum PanicRecoveryFuture<F> {
        /// The rest of the chain is serving the request.
        Serving {
            #[pin]
            inner: F,
            served: Option<Served>,
        },
        /// The rest of the chain panicked when it was handed the request.
        Answered {
            res: Option<Response<Body>>,
        },
    }
}

impl<F> Future for PanicRecoveryFuture<F>
where
    F: Future<Output = Result<Response<Body>, Infallible>>,
{
    type Output = Result<Response<Body>, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project() {
            PanicRecoveryProjection::Serving { inner, served } => {
                match catch_unwind(AssertUnwindSafe(|| inner.poll(cx))) {
                    Ok(poll) => poll,
                    Err(panic) => {
                        let served = served.take().expect("polled after it ended");
                        Poll::Ready(Ok(served.answer(panic)))
                    }
                }
            }
            PanicRecoveryProjection::Answered { res } => {
                Poll::Ready(Ok(res.take().expect("polled after it ended")))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;
    use tower::{Layer, ServiceExt};

    #[tokio::test]
    async fn a_panic_is_a_500_status() {
        let panics = tower::service_fn(|_req: Request<Body>| async {
            if true {
                panic!("inner trouble");
            }
            Ok::<_, std::convert::Infallible>(Response::new(Body::empty()))
        });
        let status = answer_of(panics).await;
        assert_eq!(status["kind"], "Status");
        assert_eq!(status["reason"], "InternalError");
        assert_eq!(
            status["message"],
            format!("Internal error occurred: {PANIC_MESSAGE}")
        );
    }

    /// A service that panics when it is handed a request, before any future exists.
    #[derive(Clone)]
    struct PanicsOnCall;

    impl Service<Request<Body>> for PanicsOnCall {
        type Response = Response<Body>;
        type Error = Infallible;
        type Future = std::future::Ready<Result<Response<Body>, Infallible>>;

        fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
            Poll::Ready(Ok(()))
        }

        fn call(&mut self, _req: Request<Body>) -> Self::Future {
            panic!("trouble on call");
        }
    }

    #[tokio::test]
    async fn a_panic_on_call_is_a_500_status() {
        let status = answer_of(PanicsOnCall).await;
        assert_eq!(status["reason"], "InternalError");
    }

    /// The `500` Status `inner`, behind panic recovery, answers a request with.
    async fn answer_of<S>(inner: S) -> serde_json::Value
    where
        S: Service<Request<Body>, Response = Response<Body>, Error = Infallible>,
    {
        let res = layer()
            .layer(inner)
            .oneshot(Request::new(Body::empty()))
            .await
            .unwrap();
        assert_eq!(res.status(), 500);
        let body = res.into_body().collect().await.unwrap().to_bytes();
        serde_json::from_slice(&body).unwrap()
    }

    #[tokio::test]
    async fn answers_pass_through() {
        let ok = tower::service_fn(|_req: Request<Body>| async {
            Ok::<_, std::convert::Infallible>(Response::new(Body::from("fine")))
        });
        let res = layer()
            .layer(ok)
            .oneshot(Request::new(Body::empty()))
            .await
            .unwrap();
        assert_eq!(res.status(), 200);
        let body = res.into_body().collect().await.unwrap().to_bytes();
        assert_eq!(&body[..], b"fine");
    }
}
