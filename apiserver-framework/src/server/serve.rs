//! Serving a chain over HTTPS: the TLS listener, the handler chain in front of the first
//! server (panic recovery, authentication, authorization) and graceful stop.

use std::net::SocketAddr;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use axum::body::Body;
use futures::FutureExt;
use http::{Request, Response};
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio_rustls::TlsAcceptor;

use crate::auth::{
    self, AuthSnapshot, Authenticated, Authenticator, DelegatedAuthConfig, PeerAddr,
    PeerCertificates, UserInfo,
};
use crate::authz::{self, Attributes, Authorizer, Decision, PathAuthorizer};
use crate::error::ApiError;
use crate::server::generic::GenericApiServer;

/// The filters in front of the first server of a chain.
pub struct HandlerChain {
    server: Arc<GenericApiServer>,
    authenticator: Arc<dyn Authenticator>,
    authorizer: Arc<dyn Authorizer>,
    anonymous_paths: PathAuthorizer,
    credentials: Option<Arc<DelegatedAuthConfig>>,
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
        }
    }

    /// Also removes the front-proxy headers `config` names (besides the default
    /// `X-Remote-*` ones, always removed) from every request once it is authenticated.
    pub fn with_request_header_config(mut self, config: Arc<DelegatedAuthConfig>) -> Self {
        self.credentials = Some(config);
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
    pub async fn call(&self, req: Request<Body>) -> Response<Body> {
        let work = AssertUnwindSafe(self.serve(req)).catch_unwind();
        match work.await {
            Ok(res) => res,
            Err(_) => {
                tracing::error!("handler panicked");
                axum::response::IntoResponse::into_response(ApiError::internal(
                    "the server panicked while handling the request",
                ))
            }
        }
    }

    async fn serve(&self, req: Request<Body>) -> Response<Body> {
        let (parts, body) = req.into_parts();
        let recorder = crate::metrics::RequestRecorder::start(&parts);
        let res = self.serve_parts(parts, body).await;
        recorder.finish(&self.server, res)
    }

    async fn serve_parts(&self, mut parts: http::request::Parts, body: Body) -> Response<Body> {
        let user = match self.authenticator.authenticate(&parts).await {
            Authenticated::User(u) => u,
            // As upstream: invalid credentials are refused everywhere; a caller without any
            // may reach the anonymous paths.
            Authenticated::NoCredentials if self.anonymous_paths.allows(parts.uri.path()) => {
                anonymous()
            }
            _ => return axum::response::IntoResponse::into_response(ApiError::unauthorized()),
        };
        // Credentials are consumed here; nothing behind this point sees them.
        match &self.credentials {
            Some(config) => auth::strip_credentials(&mut parts.headers, &config.current()),
            None => auth::strip_credentials(&mut parts.headers, &AuthSnapshot::default()),
        }
        let attrs =
            Attributes::from_request(user, &parts.method, parts.uri.path(), parts.uri.query());
        match self.authorizer.authorize(&attrs).await {
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

/// A chain being served; dropping it does not stop it, [`RunningServer::shutdown`] does.
pub struct RunningServer {
    /// The address the listener is bound to.
    pub addr: SocketAddr,
    stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

impl RunningServer {
    /// Stops accepting connections, lets open connections finish, and waits for the end.
    pub async fn shutdown(self) {
        let _ = self.stop.send(true);
        let _ = self.task.await;
    }

    /// Waits until the server stops (it runs until shut down).
    pub async fn wait(self) {
        let _ = self.task.await;
    }
}

/// Serves `chain` on `listener` with TLS `tls` in a background task.
pub fn start(
    listener: TcpListener,
    tls: Arc<rustls::ServerConfig>,
    chain: Arc<HandlerChain>,
) -> std::io::Result<RunningServer> {
    let addr = listener.local_addr()?;
    let (stop, mut stopped) = watch::channel(false);
    let acceptor = TlsAcceptor::from(tls);
    let task = tokio::spawn(async move {
        let mut connections = tokio::task::JoinSet::new();
        loop {
            tokio::select! {
                _ = stopped.changed() => break,
                accepted = listener.accept() => {
                    let Ok((tcp, peer)) = accepted else { continue };
                    let _ = tcp.set_nodelay(true);
                    let acceptor = acceptor.clone();
                    let chain = chain.clone();
                    let mut stop_conn = stopped.clone();
                    connections.spawn(async move {
                        let Ok(tls) = acceptor.accept(tcp).await else { return };
                        let certs = tls
                            .get_ref()
                            .1
                            .peer_certificates()
                            .filter(|c| !c.is_empty())
                            .map(|c| PeerCertificates(Arc::new(c.iter().map(|c| c.clone().into_owned()).collect())));
                        let service = hyper::service::service_fn(move |req: Request<hyper::body::Incoming>| {
                            let chain = chain.clone();
                            let mut req = req.map(Body::new);
                            req.extensions_mut().insert(PeerAddr(peer));
                            if let Some(certs) = &certs {
                                req.extensions_mut().insert(certs.clone());
                            }
                            async move {
                                Ok::<_, std::convert::Infallible>(chain.call(req).await)
                            }
                        });
                        let builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
                        let conn = builder.serve_connection_with_upgrades(TokioIo::new(tls), service);
                        tokio::pin!(conn);
                        tokio::select! {
                            _ = conn.as_mut() => {}
                            _ = stop_conn.changed() => {
                                conn.as_mut().graceful_shutdown();
                                let _ = tokio::time::timeout(std::time::Duration::from_secs(5), conn).await;
                            }
                        }
                    });
                }
                Some(_) = connections.join_next(), if !connections.is_empty() => {}
            }
        }
        drop(listener);
        let _ = tokio::time::timeout(std::time::Duration::from_secs(10), async {
            while connections.join_next().await.is_some() {}
        })
        .await;
    });
    Ok(RunningServer { addr, stop, task })
}
