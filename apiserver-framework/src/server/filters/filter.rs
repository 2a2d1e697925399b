//! [`FilterLayer`]: a tower [`Layer`] made of one async step that is given the request and
//! the rest of the chain ([`Next`]), as each of upstream's filters wraps the handler after it.
//!
//! Written here rather than taken from `axum::middleware::from_fn`, which would box the rest
//! of the chain once per request and filter. Each filter's service keeps the rest of the chain
//! behind an [`Arc`], so that handing a request on clones one level of the chain (the next
//! service's filter and an `Arc`), not every service behind it.

use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::body::Body;
use futures::future::BoxFuture;
use http::{Request, Response};
use tower::{Layer, Service, ServiceExt};

/// One step of the handler chain.
pub trait Filter: Clone + Send + Sync + 'static {
    /// Serves `req`, handing it on with `next` when it goes further.
    fn filter<S>(
        self,
        req: Request<Body>,
        next: Next<S>,
    ) -> impl Future<Output = Response<Body>> + Send + 'static
    where
        S: ChainInner;
}

/// What a filter hands requests on to: the rest of the chain.
pub trait ChainInner:
    Service<Request<Body>, Response = Response<Body>, Error = Infallible, Future: Send>
    + Clone
    + Send
    + Sync
    + 'static
{
}

impl<S> ChainInner for S where
    S: Service<Request<Body>, Response = Response<Body>, Error = Infallible, Future: Send>
        + Clone
        + Send
        + Sync
        + 'static
{
}

/// The rest of the chain behind a filter.
pub struct Next<S>(Arc<S>);

impl<S: ChainInner> Next<S> {
    /// Serves `req` with the rest of the chain.
    pub async fn run(self, req: Request<Body>) -> Response<Body> {
        // The service behind is cloned only here, where it is called: one level, since its
        // own rest of the chain sits behind an `Arc` too.
        let service = Arc::unwrap_or_clone(self.0);
        match service.oneshot(req).await {
            Ok(res) => res,
            Err(never) => match never {},
        }
    }
}

/// A [`Filter`] as a tower [`Layer`].
#[derive(Clone, Debug)]
pub struct FilterLayer<F>(pub F);

impl<F: Clone, S> Layer<S> for FilterLayer<F> {
    type Service = FilterService<F, S>;

    fn layer(&self, inner: S) -> Self::Service {
        FilterService {
            filter: self.0.clone(),
            inner: Arc::new(inner),
        }
    }
}

/// The service of a [`FilterLayer`].
#[derive(Clone, Debug)]
pub struct FilterService<F, S> {
    filter: F,
    inner: Arc<S>,
}

impl<F: Filter, S: ChainInner> Service<Request<Body>> for FilterService<F, S> {
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = BoxFuture<'static, Result<Response<Body>, Infallible>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        // The rest of the chain is made ready when the request reaches it ([`Next::run`]).
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request<Body>) -> Self::Future {
        let next = Next(self.inner.clone());
        let work = self.filter.clone().filter(req, next);
        Box::pin(async move { Ok(work.await) })
    }
}
