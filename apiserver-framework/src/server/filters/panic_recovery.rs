//! Panic recovery (upstream's `WithPanicRecovery`): a panic anywhere behind this filter (a
//! handler, an admission plugin, a strategy, a filter) answers `500` and is logged with the
//! request; the connection and the server go on serving.
//!
//! tower-http's `CatchPanicLayer` catches the panic; its answer is the framework's: a
//! `metav1.Status` with reason `InternalError` and upstream's message (upstream writes that
//! message as plain text; a Status is what clients decode). This module's filter, outside it,
//! logs the panic with the request's method, URI and audit id.

use std::any::Any;

use axum::body::Body;
use http::{Request, Response};
use tower::ServiceBuilder;
use tower::layer::util::{Identity, Stack};
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::map_response_body::MapResponseBodyLayer;

use super::filter::{ChainInner, Filter, FilterLayer, Next};
use crate::audit::AuditId;
use crate::error::ApiError;

/// Upstream's answer to a request that panicked.
pub(crate) const PANIC_MESSAGE: &str =
    "This request caused apiserver to panic. Look in the logs for details.";

/// The body type of tower-http's catch-panic layer.
type CaughtBody = tower_http::body::UnsyncBoxBody<bytes::Bytes, tower_http::BoxError>;

/// Marks the response of a request that panicked, with the panic's message.
#[derive(Clone, Debug)]
struct Panicked(String);

/// The panic-recovery layers: the logging filter, the conversion of the body back to the
/// chain's body type, and tower-http's catch-panic layer with the framework's answer.
pub(crate) type PanicRecoveryLayer = Stack<
    CatchPanicLayer<fn(Box<dyn Any + Send>) -> Response<Body>>,
    Stack<MapResponseBodyLayer<fn(CaughtBody) -> Body>, Stack<FilterLayer<LogPanics>, Identity>>,
>;

/// The panic-recovery layers, outermost first.
pub fn layer() -> PanicRecoveryLayer {
    ServiceBuilder::new()
        .layer(FilterLayer(LogPanics))
        .layer(MapResponseBodyLayer::new(
            Body::new as fn(CaughtBody) -> Body,
        ))
        .layer(CatchPanicLayer::custom(
            answer as fn(Box<dyn Any + Send>) -> Response<Body>,
        ))
        .into_inner()
}

/// The answer to a request that panicked with `panic`.
fn answer(panic: Box<dyn Any + Send>) -> Response<Body> {
    let message = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_default();
    let mut res = axum::response::IntoResponse::into_response(ApiError::internal(PANIC_MESSAGE));
    res.extensions_mut().insert(Panicked(message));
    res
}

/// Logs a panic caught behind it with the request it happened in.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct LogPanics;

impl Filter for LogPanics {
    fn filter<'a, S: ChainInner>(
        &'a self,
        req: Request<Body>,
        next: Next<'a, S>,
    ) -> impl Future<Output = Response<Body>> + Send + 'a {
        let method = req.method().clone();
        let uri = req.uri().clone();
        let audit_id = req.extensions().get::<AuditId>().cloned();
        async move {
            let res = next.run(req).await;
            if let Some(Panicked(message)) = res.extensions().get::<Panicked>() {
                tracing::error!(
                    %method,
                    %uri,
                    audit_id = audit_id.as_ref().map_or("", |a| a.0.as_str()),
                    panic = %message,
                    "apiserver panic'd"
                );
            }
            res
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
        let res = layer()
            .layer(panics)
            .oneshot(Request::new(Body::empty()))
            .await
            .unwrap();
        assert_eq!(res.status(), 500);
        let body = res.into_body().collect().await.unwrap().to_bytes();
        let status: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(status["kind"], "Status");
        assert_eq!(status["reason"], "InternalError");
        assert_eq!(
            status["message"],
            format!("Internal error occurred: {PANIC_MESSAGE}")
        );
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
        assert!(res.extensions().get::<Panicked>().is_none());
        let body = res.into_body().collect().await.unwrap().to_bytes();
        assert_eq!(&body[..], b"fine");
    }
}
