//! Users' own layers in the handler chain, at named positions: the counterpart of upstream's
//! `BuildHandlerChainFunc`, without rebuilding the chain.
//!
//! A layer is any tower [`Layer`] over [`ChainService`] whose service answers every request
//! (`Error = Infallible`): `axum::middleware::from_fn`, tower-http's layers, or a hand-written
//! one. Behind authentication the request's extensions hold the [`crate::user::UserInfo`] of
//! its user; from the start they hold its reading ([`crate::authz::ParsedRequest`]) and its
//! decoded query ([`crate::endpoints::query::Query`]).

use std::convert::Infallible;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::body::Body;
use http::{Request, Response};
use tower::util::BoxCloneSyncService;
use tower::{Layer, Service};

use super::filter::ChainInner;

/// The service a user's layer wraps: the rest of the handler chain.
pub type ChainService = BoxCloneSyncService<Request<Body>, Response<Body>, Infallible>;

/// Where a user's layer runs in the handler chain. The built-in filters run, outermost
/// first: audit id, panic recovery, request info, metrics, timeout, authentication, in-flight
/// limit, audit, impersonation, authorization; then the server.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ChainPosition {
    /// After request info, before metrics: every request, read but not yet authenticated,
    /// timed or counted.
    AfterRequestInfo,
    /// After the timeout, before authentication: within the request's deadline, no user yet.
    BeforeAuthentication,
    /// After authentication, before the in-flight limit, the audit, impersonation and
    /// authorization: the authenticated user is known (credentials are removed), and the
    /// request may still be refused.
    AfterAuthentication,
    /// After impersonation, before authorization: the user is the one the request acts as.
    BeforeAuthorization,
    /// After authorization, before the server: only authorized requests.
    AfterAuthorization,
}

type BoxedLayer = Arc<dyn Fn(ChainService) -> ChainService + Send + Sync>;

/// Users' layers and their positions.
#[derive(Clone, Default)]
pub struct ChainLayers {
    layers: Vec<(ChainPosition, BoxedLayer)>,
}

impl std::fmt::Debug for ChainLayers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.layers.iter().map(|(p, _)| p))
            .finish()
    }
}

impl ChainLayers {
    /// Adds `layer` at `position`; of several layers at one position, the one added first
    /// runs first.
    pub fn add<L>(&mut self, position: ChainPosition, layer: L)
    where
        L: Layer<ChainService> + Send + Sync + 'static,
        L::Service: ChainInner,
    {
        let layer: BoxedLayer = Arc::new(move |inner| ChainService::new(layer.layer(inner)));
        self.layers.push((position, layer));
    }

    /// Adds all of `other`'s layers after these.
    pub fn extend(&mut self, other: &ChainLayers) {
        self.layers.extend(other.layers.iter().cloned());
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.layers.is_empty()
    }

    /// The layers at `position`, as one layer.
    pub(crate) fn at(&self, position: ChainPosition) -> UserLayers {
        UserLayers(
            self.layers
                .iter()
                .filter(|(p, _)| *p == position)
                .map(|(_, l)| l.clone())
                .collect(),
        )
    }
}

/// The users' layers of one position, as one layer (nothing when there are none).
#[derive(Clone)]
pub struct UserLayers(Vec<BoxedLayer>);

impl<S: ChainInner> Layer<S> for UserLayers {
    type Service = UserLayersService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        if self.0.is_empty() {
            return UserLayersService::None(inner);
        }
        let mut service = ChainService::new(inner);
        for layer in self.0.iter().rev() {
            service = layer(service);
        }
        UserLayersService::Some(service)
    }
}

/// The service of [`UserLayers`]: the inner one itself when there are no layers.
#[derive(Clone)]
pub enum UserLayersService<S> {
    /// No user layer at this position.
    None(S),
    /// The users' layers around the inner service.
    Some(ChainService),
}

impl<S: ChainInner> Service<Request<Body>> for UserLayersService<S> {
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = futures::future::Either<
        <S as Service<Request<Body>>>::Future,
        <ChainService as Service<Request<Body>>>::Future,
    >;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        match self {
            UserLayersService::None(s) => s.poll_ready(cx),
            UserLayersService::Some(s) => s.poll_ready(cx),
        }
    }

    fn call(&mut self, req: Request<Body>) -> Self::Future {
        match self {
            UserLayersService::None(s) => futures::future::Either::Left(s.call(req)),
            UserLayersService::Some(s) => futures::future::Either::Right(s.call(req)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::filter::{Filter, FilterLayer, Next};
    use super::*;
    use std::sync::Mutex;
    use tower::ServiceExt;

    /// A filter that notes `name` when a request passes.
    #[derive(Clone)]
    struct Note(&'static str, Arc<Mutex<Vec<&'static str>>>);

    impl Filter for Note {
        async fn filter<'a, S: ChainInner>(
            &'a self,
            req: Request<Body>,
            next: Next<'a, S>,
        ) -> Response<Body> {
            self.1.lock().unwrap().push(self.0);
            next.run(req).await
        }
    }

    #[tokio::test]
    async fn layers_of_a_position_run_in_the_order_added() {
        let log = Arc::new(Mutex::new(Vec::new()));
        let mut layers = ChainLayers::default();
        layers.add(
            ChainPosition::AfterAuthentication,
            FilterLayer(Note("first", log.clone())),
        );
        layers.add(
            ChainPosition::AfterAuthorization,
            FilterLayer(Note("elsewhere", log.clone())),
        );
        layers.add(
            ChainPosition::AfterAuthentication,
            FilterLayer(Note("second", log.clone())),
        );
        let end = tower::service_fn(|_req: Request<Body>| async {
            Ok::<_, Infallible>(Response::new(Body::empty()))
        });
        let service = layers.at(ChainPosition::AfterAuthentication).layer(end);
        service.oneshot(Request::new(Body::empty())).await.unwrap();
        assert_eq!(*log.lock().unwrap(), ["first", "second"]);
        assert!(matches!(
            layers.at(ChainPosition::BeforeAuthentication).layer(end),
            UserLayersService::None(_)
        ));
    }
}
