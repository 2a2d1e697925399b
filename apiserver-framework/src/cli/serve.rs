//! Production mode: HTTPS with a reloading serving certificate, clients asked for (not
//! required to present) certificates, authentication and authorization delegated to the host
//! cluster, behind its aggregation layer.

use std::net::SocketAddr;
use std::sync::Arc;

use rustls::server::ResolvesServerCert;

use crate::authn::{
    self, AuthConfigError, DelegatingAuthenticator, DelegatingOptions, TokenReviewer,
};
use crate::authz::options::AuthorizationOptionsError;
use crate::cli::serve_options::{ServeOptions, TlsMinVersion};
use crate::host_cluster::client::{HostClientError, host_client};
use crate::server::cert_reload::{DEFAULT_RELOAD_INTERVAL, FixedCert, ReloadingCert};
use crate::server::generic::GenericApiServer;
use crate::server::serve::{self, HandlerChain, RunningServer};
use crate::tls::{ServingCert, TlsError, install_crypto_provider, server_config_with};

/// Errors of starting production mode.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// Serving certificates could not be loaded or generated.
    #[error(transparent)]
    Tls(#[from] TlsError),
    /// No client of the host cluster could be built.
    #[error("delegated authentication: {0}")]
    HostClient(#[from] HostClientError),
    /// The authentication configuration is unusable.
    #[error(transparent)]
    Authentication(#[from] AuthConfigError),
    /// The authorization configuration is unusable.
    #[error(transparent)]
    Authorization(#[from] AuthorizationOptionsError),
    /// The audit policy or log is unusable.
    #[error(transparent)]
    Audit(#[from] crate::audit::AuditError),
    /// The address could not be bound.
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// A server running in production mode.
pub struct ProductionServer {
    /// The listener.
    pub running: RunningServer,
    /// `https://<bind address>:<port>`.
    pub url: String,
    /// A client of the host cluster for what the server itself reads there: from
    /// `--kubeconfig` (an unusable file fails the start), else the in-cluster configuration
    /// when running in a cluster.
    pub host: Option<kube::Client>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl ProductionServer {
    /// Stops the background tasks (ConfigMap watch, certificate reload) and the listener.
    pub async fn shutdown(self) {
        for t in &self.tasks {
            t.abort();
        }
        self.running.shutdown().await;
    }
}

/// Serves `server` in production mode as `opts` say.
pub async fn start(
    server: Arc<GenericApiServer>,
    opts: &ServeOptions,
) -> Result<ProductionServer, ServeError> {
    install_crypto_provider();
    let mut tasks = Vec::new();

    let host_reads = match &opts.kubeconfig {
        Some(path) => Some(host_client(Some(path)).await?),
        None => host_client(None).await.ok(),
    };
    let authn_client = host_client(opts.authentication_kubeconfig.as_deref()).await?;
    let setup =
        authn::start_delegated_config(&opts.authentication, Some(authn_client.clone())).await?;
    tasks.extend(setup.watch);
    let reviewer: Arc<dyn TokenReviewer> = Arc::new(authn_client);
    let authenticator = DelegatingAuthenticator::new(
        setup.config.clone(),
        Some(reviewer),
        DelegatingOptions::from(&opts.authentication),
    );

    let authz_config = opts.authorization.config();
    let authz_client = host_client(opts.authorization.authorization_kubeconfig.as_deref()).await?;
    let authorizer = authz_config
        .build(Some(Arc::new(authz_client)))
        .map_err(AuthorizationOptionsError::from)?;
    let anonymous_paths = authz_config
        .anonymous_paths()
        .map_err(AuthorizationOptionsError::from)?;

    let serving = &opts.serving;
    let certs: Arc<dyn ResolvesServerCert> =
        match (&serving.tls_cert_file, &serving.tls_private_key_file) {
            (Some(cert), Some(key)) => {
                let reloading = Arc::new(ReloadingCert::from_files(cert, key)?);
                tasks.push(reloading.spawn_watcher(DEFAULT_RELOAD_INTERVAL));
                reloading
            }
            _ => {
                let generated = ServingCert::self_signed(
                    &serving.cert_dir,
                    &["localhost".into(), "127.0.0.1".into()],
                )?;
                Arc::new(FixedCert(generated.certified_key()?))
            }
        };
    let min_version = match serving.tls_min_version {
        TlsMinVersion::Tls12 => None,
        TlsMinVersion::Tls13 => Some(&rustls::version::TLS13),
    };
    let tls = server_config_with(
        certs,
        authn::client_cert_verifier(setup.config.clone()),
        min_version,
    )?;

    let listener =
        tokio::net::TcpListener::bind(SocketAddr::new(serving.bind_address, serving.secure_port))
            .await?;
    let mut chain = HandlerChain::new(server, Arc::new(authenticator), Arc::new(authorizer))
        .with_anonymous_paths(anonymous_paths)
        .with_request_header_config(setup.config)
        .with_limits(opts.run.limits())
        .with_profiling(opts.run.profiling)
        .with_tracing(opts.tracing.enabled())
        .with_shutdown(opts.run.shutdown());
    if let Some(auditor) = opts.audit.build()? {
        chain = chain.with_audit(Arc::new(auditor));
    }
    let running = serve::RunningServer::start(listener, tls, Arc::new(chain))?;
    let url = running.url();
    Ok(ProductionServer {
        running,
        url,
        host: host_reads,
        tasks,
    })
}
