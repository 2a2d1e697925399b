//! Serving a chain over HTTPS: the handler chain in front of the first server (its filters as
//! tower layers, see [`crate::server::filters`]), the listener (see
//! [`crate::server::connections`]) and graceful stop.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll, Waker};

use axum::body::Body;
use futures::future::BoxFuture;
use http::{Request, Response};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio_rustls::TlsAcceptor;
use tower::{Layer, Service, ServiceBuilder, ServiceExt};
use tower_http::sensitive_headers::SetSensitiveRequestHeadersLayer;

use crate::audit::Auditor;
use crate::authn::{Authenticator, DelegatedAuthConfig};
use crate::authz::{Authorizer, PathAuthorizer};
use crate::server::connections::activity::OpenConnections;
use crate::server::connections::{ConnectionServer, ServeRequest, listener};
use crate::server::filters::authentication::AuthenticationFilter;
use crate::server::filters::{
    self, ChainLayers, ChainPosition, ChainService, MaxInFlight, RequestLimits,
};
use crate::server::generic::GenericApiServer;
use crate::server::lifecycle::ShutdownOptions;
use crate::server::profiling;
use crate::user::UserInfo;

/// The filters in front of the first server of a chain, and the users' layers among them.
pub struct HandlerChain {
    server: Arc<GenericApiServer>,
    authenticator: Arc<dyn Authenticator>,
    authorizer: Arc<dyn Authorizer>,
    anonymous_paths: PathAuthorizer,
    credentials: Option<Arc<DelegatedAuthConfig>>,
    auditor: Option<Arc<Auditor>>,
    limits: RequestLimits,
    shutdown: ShutdownOptions,
    profiling: bool,
    tracing: bool,
    layers: ChainLayers,
    /// The assembled chain, built on the first request.
    service: OnceLock<Arc<dyn Assembled>>,
}

impl HandlerChain {
    /// Requests are authenticated by `authenticator`, authorized by `authorizer`, then served
    /// by `server`. Unauthenticated callers may reach the default always-allowed paths
    /// (`/healthz`, `/readyz`, `/livez`) as `system:anonymous`. The layers the server was
    /// built with ([`crate::server::GenericApiServerBuilder::layer`]) run at their positions.
    pub fn new(
        server: Arc<GenericApiServer>,
        authenticator: Arc<dyn Authenticator>,
        authorizer: Arc<dyn Authorizer>,
    ) -> Self {
        let layers = server.chain_layers().clone();
        server.authorize_admission_with(&authorizer);
        HandlerChain {
            server,
            authenticator,
            authorizer,
            anonymous_paths: PathAuthorizer::default_paths(),
            credentials: None,
            auditor: None,
            limits: RequestLimits::default(),
            shutdown: ShutdownOptions::default(),
            profiling: false,
            tracing: false,
            layers,
            service: OnceLock::new(),
        }
    }

    /// Bounds requests as `limits` say (default: [`RequestLimits::default`]).
    pub fn with_limits(mut self, limits: RequestLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Serves CPU profiles at `/debug/pprof/` to callers authorized for them (`--profiling`;
    /// off unless set).
    pub fn with_profiling(mut self, enabled: bool) -> Self {
        self.profiling = enabled;
        self
    }

    /// Gives each request an OpenTelemetry span, after authentication (`--tracing-config-file`;
    /// off unless set, and then not in the chain at all). The spans reach an exporter only
    /// when the process's subscriber has the layer of a [`crate::server::tracing::Tracing`].
    pub fn with_tracing(mut self, enabled: bool) -> Self {
        self.tracing = enabled;
        self
    }

    /// Stops as `shutdown` says (default: [`ShutdownOptions::default`]).
    pub fn with_shutdown(mut self, shutdown: ShutdownOptions) -> Self {
        self.shutdown = shutdown;
        self
    }

    /// Also removes the front-proxy headers `config` names (besides the default
    /// `X-Remote-*` ones, always removed) from every request once it is authenticated.
    pub fn with_request_header_config(mut self, config: Arc<DelegatedAuthConfig>) -> Self {
        self.credentials = Some(config);
        self
    }

    /// Records requests with `auditor` (after authentication, before impersonation and
    /// authorization, as upstream).
    pub fn with_audit(mut self, auditor: Arc<Auditor>) -> Self {
        self.auditor = Some(auditor);
        self
    }

    /// The paths unauthenticated callers may reach as `system:anonymous` (still subject to
    /// the authorizer); all other unauthenticated requests answer `401`.
    pub fn with_anonymous_paths(mut self, paths: PathAuthorizer) -> Self {
        self.anonymous_paths = paths;
        self
    }

    /// Runs `layer` at `position` of the chain, after the layers added before (upstream's
    /// `BuildHandlerChainFunc`, at a named place). See [`ChainPosition`] for what a layer
    /// sees at each.
    pub fn with_layer<L>(mut self, position: ChainPosition, layer: L) -> Self
    where
        L: Layer<ChainService> + Send + Sync + 'static,
        L::Service: filters::filter::ChainInner,
    {
        self.layers.add(position, layer);
        self
    }

    /// The chain as one service: the filters in upstream's order, outermost first, with the
    /// users' layers at their positions, then the server.
    pub fn service(&self) -> ChainService {
        self.assembled().service()
    }

    fn assembled(&self) -> &Arc<dyn Assembled> {
        self.service.get_or_init(|| self.build())
    }

    fn build(&self) -> Arc<dyn Assembled> {
        let at = |position| self.layers.at(position);
        let authentication = AuthenticationFilter {
            authenticator: self.authenticator.clone(),
            anonymous_paths: Arc::new(self.anonymous_paths.clone()),
            credentials: self.credentials.clone(),
            auditor: self.auditor.clone(),
        };
        let in_flight = MaxInFlight::new(
            self.limits.max_requests_inflight,
            self.limits.max_mutating_requests_inflight,
        );
        let service = ServiceBuilder::new()
            .layer(filters::audit_id::layer())
            .layer(filters::panic_recovery::layer())
            .layer(SetSensitiveRequestHeadersLayer::new([
                http::header::AUTHORIZATION,
                http::header::PROXY_AUTHORIZATION,
                http::header::COOKIE,
            ]))
            .layer(filters::request_info::layer())
            .layer(at(ChainPosition::AfterRequestInfo))
            .layer(filters::metrics::layer(self.server.clone()))
            .layer(filters::timeout::layer(
                self.limits.request_timeout,
                self.limits.min_request_timeout,
            ))
            .layer(at(ChainPosition::BeforeAuthentication))
            .layer(authentication.layer())
            .option_layer(self.tracing.then(filters::request_span::layer))
            .layer(at(ChainPosition::AfterAuthentication))
            .layer(filters::max_inflight::layer(in_flight))
            .layer(filters::audit::layer(self.auditor.clone()))
            .layer(filters::impersonation::layer(self.authorizer.clone()))
            .layer(at(ChainPosition::BeforeAuthorization))
            .layer(filters::authorization::layer(self.authorizer.clone()))
            .layer(at(ChainPosition::AfterAuthorization))
            .service(ServerService {
                server: self.server.clone(),
                profiling: self.profiling,
            });
        Arc::new(service)
    }

    /// Serves one request through the chain: audit id, panic recovery (a 500 Status),
    /// request info, metrics, timeout, authentication (401 on failure, except for the
    /// anonymous paths), in-flight limit, audit, impersonation, authorization (403 Status
    /// when not allowed, plain-text 500 when the authorizer fails), then the server.
    pub async fn call(&self, req: Request<Body>) -> Response<Body> {
        match self.assembled().serve(req).await {
            Ok(res) => res,
            Err(never) => match never {},
        }
    }
}

/// The assembled chain, served by reference.
trait Assembled: Send + Sync {
    /// Serves `req` with a copy of the chain.
    fn serve(&self, req: Request<Body>) -> BoxFuture<'static, Result<Response<Body>, Infallible>>;

    /// The chain as one service.
    fn service(&self) -> ChainService;
}

impl<S: filters::filter::ChainInner> Assembled for S {
    fn serve(&self, req: Request<Body>) -> BoxFuture<'static, Result<Response<Body>, Infallible>> {
        let mut chain = self.clone();
        // The built-in filters are always ready: the request is handed on at once. A user's
        // layer may not be (a concurrency limit): then the request waits until it is.
        match chain.poll_ready(&mut Context::from_waker(Waker::noop())) {
            Poll::Ready(Ok(())) => Box::pin(chain.call(req)),
            Poll::Ready(Err(never)) => match never {},
            Poll::Pending => Box::pin(self.clone().oneshot(req)),
        }
    }

    fn service(&self) -> ChainService {
        ChainService::new(self.clone())
    }
}

/// The end of the chain: the profiles when enabled, else the first server, serving the
/// request as the user the filters left in its extensions.
#[derive(Clone)]
struct ServerService {
    server: Arc<GenericApiServer>,
    profiling: bool,
}

impl Service<Request<Body>> for ServerService {
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = BoxFuture<'static, Result<Response<Body>, Infallible>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request<Body>) -> Self::Future {
        let server = self.server.clone();
        if self.profiling && profiling::serves(req.uri().path()) {
            return Box::pin(async move { Ok(profiling::respond(req).await) });
        }
        Box::pin(async move {
            // Moved to the request's context, not copied: a handler that asks its further
            // authorization (`AlsoAuthorize`) hands the context's user back.
            let mut req = req;
            let user = req
                .extensions_mut()
                .remove::<UserInfo>()
                .unwrap_or_default();
            Ok(server.handle(req, user).await)
        })
    }
}

/// `https://<address>:<port>` of a listener's address (IPv6 addresses in brackets).
pub(crate) fn https_url(addr: SocketAddr) -> String {
    match addr.ip() {
        std::net::IpAddr::V6(ip) => format!("https://[{ip}]:{}", addr.port()),
        std::net::IpAddr::V4(ip) => format!("https://{ip}:{}", addr.port()),
    }
}

/// A chain being served; dropping it does not stop it, [`RunningServer::shutdown`] does.
pub struct RunningServer {
    /// The address the listener is bound to.
    pub addr: SocketAddr,
    stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
    chain: Arc<HandlerChain>,
}

impl RunningServer {
    /// Serves `chain` on `listener` with TLS `tls` in a background task, within the connection
    /// limits of the chain's [`RequestLimits`] (HTTP/2 is
    /// not offered when they disable it).
    pub fn start(
        listener: TcpListener,
        tls: Arc<rustls::ServerConfig>,
        chain: Arc<HandlerChain>,
    ) -> std::io::Result<Self> {
        let addr = listener.local_addr()?;
        let limits = chain.limits.connections;
        let tls = match limits.disable_http2 {
            true => crate::tls::without_http2(tls),
            false => tls,
        };
        let (stop, stopped) = watch::channel(false);
        let server = Arc::new(ConnectionServer::new(
            TlsAcceptor::from(tls),
            chain.clone(),
            limits,
            chain.shutdown.drain_timeout,
        ));
        // The chain is assembled before the first request.
        let _ = chain.service();
        let open = OpenConnections::new(limits.open_connections_bound());
        let task = tokio::spawn(listener::run(listener, server, open, stopped));
        chain.server.start_post_start_hooks();
        Ok(RunningServer {
            addr,
            stop,
            task,
            chain,
        })
    }

    /// `https://<address>:<port>` of the listener (IPv6 addresses in brackets).
    pub fn url(&self) -> String {
        https_url(self.addr)
    }

    /// Stops as upstream's graceful termination does: `/readyz` fails at once (its
    /// `shutdown` check) and the pre-shutdown hooks run; once they are done and the shutdown
    /// delay has passed, the listener stops accepting, watches end, and requests in flight
    /// finish (within the drain timeout). Returns when all is done.
    pub async fn shutdown(self) {
        let lifecycle = self.chain.server.lifecycle();
        lifecycle.begin_shutdown();
        tracing::info!(delay = ?self.chain.shutdown.delay, "shutdown initiated; /readyz fails from now on");
        tokio::join!(
            tokio::time::sleep(self.chain.shutdown.delay),
            lifecycle.run_pre_shutdown_hooks()
        );
        tracing::info!("no longer accepting connections; draining requests in flight");
        let _ = self.stop.send(true);
        let _ = self.task.await;
    }

    /// Waits until the server stops (it runs until shut down).
    pub async fn wait(self) {
        let _ = self.task.await;
    }
}

impl ServeRequest for HandlerChain {
    async fn serve(self: Arc<Self>, req: Request<Body>) -> Response<Body> {
        self.call(req).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Answers `200`, but is not ready the first time each copy is asked (as a user's
    /// concurrency limit may not be), and counts the requests it was handed.
    #[derive(Clone)]
    struct ReadyOnSecondAsk {
        asked: bool,
        served: Arc<AtomicUsize>,
    }

    impl Service<Request<Body>> for ReadyOnSecondAsk {
        type Response = Response<Body>;
        type Error = Infallible;
        type Future = std::future::Ready<Result<Response<Body>, Infallible>>;

        fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
            if self.asked {
                return Poll::Ready(Ok(()));
            }
            self.asked = true;
            cx.waker().wake_by_ref();
            Poll::Pending
        }

        fn call(&mut self, _req: Request<Body>) -> Self::Future {
            assert!(self.asked, "called before it was ready");
            self.served.fetch_add(1, Ordering::SeqCst);
            std::future::ready(Ok(Response::new(Body::empty())))
        }
    }

    #[tokio::test]
    async fn a_chain_not_ready_at_once_is_waited_for() {
        let served = Arc::new(AtomicUsize::new(0));
        let chain: Arc<dyn Assembled> = Arc::new(ReadyOnSecondAsk {
            asked: false,
            served: served.clone(),
        });
        for _ in 0..2 {
            let res = chain.serve(Request::new(Body::empty())).await.unwrap();
            assert_eq!(res.status(), 200);
        }
        assert_eq!(served.load(Ordering::SeqCst), 2);
    }
}
