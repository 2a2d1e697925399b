//! [`FilterLayer`]: a tower [`Layer`] made of one async step that is given the request and
//! the rest of the chain ([`Next`]), as each of upstream's filters wraps the handler after it.
//!
//! Written here rather than taken from `axum::middleware::from_fn`, which would box the rest
//! of the chain once per request and filter. A filter and the rest of the chain behind it are
//! kept together behind one [`Arc`]: serving a request takes one reference count per level
//! (and one more to hand the request on), where cloning a filter's own `Arc`s and the rest of
//! the chain at every level cost tens of atomic operations a request, on counters every core
//! shares.

use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::body::Body;
use futures::future::BoxFuture;
use http::{Request, Response};
use tower::{Layer, Service, ServiceExt};

/// One step of the handler chain.
pub trait Filter: Send + Sync + 'static {
    /// Serves `req`, handing it on with `next` when it goes further.
    fn filter<'a, S>(
        &'a self,
        req: Request<Body>,
        next: Next<'a, S>,
    ) -> impl Future<Output = Response<Body>> + Send + 'a
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
pub struct Next<'a, S>(&'a S);

impl<S: ChainInner> Next<'_, S> {
    /// Serves `req` with the rest of the chain.
    pub async fn run(self, req: Request<Body>) -> Response<Body> {
        // A service is called through a copy of its own (tower's `&mut self`): one reference
        // count, since a filter's service is its `Arc`.
        match self.0.clone().oneshot(req).await {
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
        FilterService(Arc::new(Level {
            filter: self.0.clone(),
            inner,
        }))
    }
}

/// A filter and the rest of the chain behind it.
#[derive(Debug)]
struct Level<F, S> {
    filter: F,
    inner: S,
}

/// The service of a [`FilterLayer`].
#[derive(Debug)]
pub struct FilterService<F, S>(Arc<Level<F, S>>);

impl<F, S> Clone for FilterService<F, S> {
    fn clone(&self) -> Self {
        FilterService(self.0.clone())
    }
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
        let level = self.0.clone();
        Box::pin(async move { Ok(level.filter.filter(req, Next(&level.inner)).await) })
    }
}
