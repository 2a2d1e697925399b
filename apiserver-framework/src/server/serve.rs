//! Serving a chain over HTTPS: the handler chain in front of the first server (panic
//! recovery, authentication, authorization), the listener (see [`crate::server::connections`])
//! and graceful stop.

use std::net::SocketAddr;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use axum::body::Body;
use futures::FutureExt;
use http::{Request, Response};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio_rustls::TlsAcceptor;

use crate::audit::{self, AuditId, Auditor};
use crate::auth::{self, Authenticated, Authenticator, DelegatedAuthConfig};
use crate::authz::{self, Attributes, Authorizer, Decision, ParsedRequest, PathAuthorizer};
use crate::endpoints::watch_timeout::MinRequestTimeout;
use crate::error::ApiError;
use crate::server::connections::activity::OpenConnections;
use crate::server::connections::{ConnectionServer, ServeRequest, listener};
use crate::server::filters::{self, MaxInFlight, RequestLimits};
use crate::server::generic::GenericApiServer;
use crate::server::lifecycle::ShutdownOptions;
use crate::user::UserInfo;

/// The filters in front of the first server of a chain.
pub struct HandlerChain {
    server: Arc<GenericApiServer>,
    authenticator: Arc<dyn Authenticator>,
    authorizer: Arc<dyn Authorizer>,
    anonymous_paths: PathAuthorizer,
    credentials: Option<Arc<DelegatedAuthConfig>>,
    auditor: Option<Arc<Auditor>>,
    limits: RequestLimits,
    in_flight: MaxInFlight,
    shutdown: ShutdownOptions,
}

impl HandlerChain {
    /// Requests are authenticated by `authenticator`, authorized by `authorizer`, then served
    /// by `server`. Unauthenticated callers may reach the default always-allowed paths
    /// (`/healthz`, `/readyz`, `/livez`) as `system:anonymous`.
    pub fn new(
        server: Arc<GenericApiServer>,
        authenticator: Arc<dyn Authenticator>,
        authorizer: Arc<dyn Authorizer>,
    ) -> Self {
        HandlerChain {
            server,
            authenticator,
            authorizer,
            anonymous_paths: PathAuthorizer::default_paths(),
            credentials: None,
            auditor: None,
            limits: RequestLimits::default(),
            in_flight: MaxInFlight::new(400, 200),
            shutdown: ShutdownOptions::default(),
        }
    }

    /// Bounds requests as `limits` say (default: [`RequestLimits::default`]).
    pub fn with_limits(mut self, limits: RequestLimits) -> Self {
        self.in_flight = MaxInFlight::new(
            limits.max_requests_inflight,
            limits.max_mutating_requests_inflight,
        );
        self.limits = limits;
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

    /// Serves one request: recovers panics as 500 Status, authenticates (401 on failure,
    /// except for the anonymous paths), authorizes (403 Status when not allowed, plain-text
    /// 500 when the authorizer fails), then hands it to the server.
    pub async fn call(&self, mut req: Request<Body>) -> Response<Body> {
        // Every response carries the request's audit id (upstream's `WithAuditInit`).
        let audit_id = AuditId::of(req.headers());
        req.extensions_mut().insert(audit_id.clone());
        if req.extensions().get::<ParsedRequest>().is_none() {
            let parsed = ParsedRequest::of(req.method(), req.uri().path(), req.uri().query());
            req.extensions_mut().insert(parsed);
        }
        let work = AssertUnwindSafe(self.serve(req)).catch_unwind();
        let mut res = match work.await {
            Ok(res) => res,
            Err(_) => {
                tracing::error!("handler panicked");
                axum::response::IntoResponse::into_response(ApiError::internal(
                    "the server panicked while handling the request",
                ))
            }
        };
        if let Ok(v) = http::HeaderValue::from_str(&audit_id.0) {
            res.headers_mut().insert(audit::AUDIT_ID_HEADER, v);
        }
        res
    }

    /// Records the request's metrics around everything else.
    async fn serve(&self, req: Request<Body>) -> Response<Body> {
        let (parts, body) = req.into_parts();
        let recorder = crate::metrics::RequestRecorder::start(&parts);
        let res = self.limited(Request::from_parts(parts, body)).await;
        recorder.finish(&self.server, res)
    }

    /// The request timeout (long-running requests have none), then the rest.
    async fn limited(&self, mut req: Request<Body>) -> Response<Body> {
        let long_running = req
            .extensions()
            .get::<ParsedRequest>()
            .is_some_and(filters::long_running::is_long_running);
        req.extensions_mut()
            .insert(MinRequestTimeout(self.limits.min_request_timeout));
        if long_running {
            return self.authenticated(req, true).await;
        }
        let deadline =
            match filters::timeout::deadline(req.uri().query(), self.limits.request_timeout) {
                Ok(d) => d,
                Err(e) => return axum::response::IntoResponse::into_response(e),
            };
        match tokio::time::timeout(deadline, self.authenticated(req, false)).await {
            Ok(res) => res,
            Err(_) => filters::timeout::timed_out(),
        }
    }

    async fn authenticated(&self, req: Request<Body>, long_running: bool) -> Response<Body> {
        let (mut parts, body) = req.into_parts();
        let user = match self.authenticator.authenticate(&parts).await {
            Authenticated::User(u) => u,
            // As upstream: invalid credentials are refused everywhere; a caller without any
            // may reach the anonymous paths.
            Authenticated::NoCredentials if self.anonymous_paths.allows(parts.uri.path()) => {
                anonymous()
            }
            _ => {
                if let Some(auditor) = &self.auditor {
                    auditor.failed_authentication(&parts, 401);
                }
                return axum::response::IntoResponse::into_response(ApiError::unauthorized());
            }
        };
        let _in_flight = match long_running {
            true => None,
            false => match self
                .in_flight
                .admit(&user, &ParsedRequest::of_parts(&parts).0)
            {
                Some(place) => Some(place),
                None => return filters::max_inflight::too_many_requests(),
            },
        };
        // Credentials are consumed here; nothing behind this point sees them.
        match &self.credentials {
            Some(config) => auth::strip_credentials(&mut parts.headers, &config.current()),
            None => auth::strip_default_credentials(&mut parts.headers),
        }
        match &self.auditor {
            Some(auditor) => {
                let next = |parts, body| self.authorize_and_handle(parts, body, user.clone());
                auditor.serve(parts, body, &user, next).await
            }
            None => self.authorize_and_handle(parts, body, user).await,
        }
    }

    /// Impersonation, then authorization, then the server.
    async fn authorize_and_handle(
        &self,
        mut parts: http::request::Parts,
        body: Body,
        user: UserInfo,
    ) -> Response<Body> {
        let user = match filters::impersonate(self.authorizer.as_ref(), &mut parts, user).await {
            Ok(user) => user,
            Err(res) => return res,
        };
        let attrs = Attributes {
            user,
            request: ParsedRequest::of_parts(&parts).0.as_ref().clone(),
        };
        let decision = self.authorizer.authorize(&attrs).await;
        audit::annotate_authorization(&parts.extensions, &decision);
        match decision {
            Ok(Decision::Allow) => {}
            Ok(Decision::Deny(reason) | Decision::NoOpinion(reason)) => {
                tracing::debug!(uri = %parts.uri, %reason, "forbidden");
                let accept = parts
                    .headers
                    .get(http::header::ACCEPT)
                    .and_then(|v| v.to_str().ok());
                return authz::forbidden_response(&attrs, &reason, accept);
            }
            Err(e) => {
                tracing::error!(uri = %parts.uri, error = %e, "authorization failed");
                let uri = parts
                    .uri
                    .path_and_query()
                    .map_or_else(|| parts.uri.path(), |p| p.as_str());
                return authz::internal_error_response(uri, &e.0);
            }
        }
        self.server
            .handle(Request::from_parts(parts, body), attrs.user)
            .await
    }
}

fn anonymous() -> UserInfo {
    UserInfo::new("system:anonymous", &["system:unauthenticated"])
}

/// `https://<address>:<port>` of a listener's address (IPv6 addresses in brackets).
pub fn https_url(addr: SocketAddr) -> String {
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

/// Serves `chain` on `listener` with TLS `tls` in a background task, within the connection
/// limits of the chain's [`RequestLimits`] (HTTP/2 is
/// not offered when they disable it).
pub fn start(
    listener: TcpListener,
    tls: Arc<rustls::ServerConfig>,
    chain: Arc<HandlerChain>,
) -> std::io::Result<RunningServer> {
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

impl ServeRequest for HandlerChain {
    async fn serve(self: Arc<Self>, req: Request<Body>) -> Response<Body> {
        self.call(req).await
    }
}
