//! `local` mode: a development server on loopback with self-signed TLS, a generated bearer
//! token, allow-all authorization and a kubeconfig written once it is ready.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;

use rand::Rng;

use crate::admission::options::AdmissionOptions;
use crate::audit::{AuditError, AuditOptions};
use crate::auth::{StaticTokenAuthenticator, UserInfo};
use crate::authz::AllowAll;
use crate::cli::kubeconfig;
use crate::cli::server_run_options::ServerRunOptions;
use crate::cli::storage_options::StorageOptions;
use crate::devhost::local_host;
use crate::devhost::self_reviews::AllowAllRules;
use crate::server::generic::GenericApiServer;
use crate::server::serve::{self, HandlerChain, RunningServer};
use crate::server::tls::{ServingCert, TlsError, install_crypto_provider};
use crate::storage::Storage;

/// Options of `local` mode.
#[derive(Clone, Debug, clap::Args)]
pub struct LocalOptions {
    /// The port to serve HTTPS on (0 picks a free port).
    #[arg(long, default_value_t = 8443)]
    pub secure_port: u16,
    /// The loopback address to bind.
    #[arg(long, default_value = "127.0.0.1")]
    pub bind_address: IpAddr,
    /// Where the self-signed certificate is kept when no --tls-cert-file is given.
    #[arg(long, default_value = "apiserver.local.config/certificates")]
    pub cert_dir: PathBuf,
    /// A PEM certificate chain to serve instead of a self-signed one.
    #[arg(long, requires = "tls_private_key_file")]
    pub tls_cert_file: Option<PathBuf>,
    /// The PEM private key of --tls-cert-file.
    #[arg(long, requires = "tls_cert_file")]
    pub tls_private_key_file: Option<PathBuf>,
    /// Where to write the kubeconfig (default: `./<server>.kubeconfig`).
    #[arg(long)]
    pub write_kubeconfig: Option<PathBuf>,
    /// The bearer token to accept (default: a new random token each start).
    #[arg(long, env = "APISERVER_LOCAL_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// Where objects are stored (used by [`crate::App`]; [`start`] serves a server that
    /// already has its storage).
    #[command(flatten)]
    pub storage: StorageOptions,
    /// Auditing.
    #[command(flatten)]
    pub audit: AuditOptions,
    /// Request limits and the shutdown delay.
    #[command(flatten)]
    pub run: ServerRunOptions,
    /// Which admission plugins run (used by [`crate::App`]).
    #[command(flatten)]
    pub admission: AdmissionOptions,
}

impl Default for LocalOptions {
    fn default() -> Self {
        LocalOptions {
            secure_port: 8443,
            bind_address: IpAddr::V4(Ipv4Addr::LOCALHOST),
            cert_dir: PathBuf::from("apiserver.local.config/certificates"),
            tls_cert_file: None,
            tls_private_key_file: None,
            write_kubeconfig: None,
            token: None,
            storage: StorageOptions::default(),
            audit: AuditOptions::default(),
            run: ServerRunOptions::default(),
            admission: AdmissionOptions::default(),
        }
    }
}

/// Errors of starting a local server.
#[derive(Debug, thiserror::Error)]
pub enum LocalError {
    /// Certificates could not be loaded or generated.
    #[error(transparent)]
    Tls(#[from] TlsError),
    /// The storage could not be opened.
    #[error("storage: {0}")]
    Storage(#[from] crate::storage::StorageError),
    /// The audit policy or log is unusable.
    #[error(transparent)]
    Audit(#[from] AuditError),
    /// The local host's namespaces could not be created.
    #[error("creating the local host's namespaces: {0}")]
    LocalHost(String),
    /// The address could not be bound, or the kubeconfig written.
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// A running local server and how to reach it.
pub struct LocalServer {
    /// The running listener.
    pub running: RunningServer,
    /// `https://127.0.0.1:<port>`.
    pub url: String,
    /// The bearer token clients must send.
    pub token: String,
    /// The CA certificate clients must trust (PEM).
    pub ca_pem: String,
    /// Where the kubeconfig was written, if anywhere.
    pub kubeconfig_path: Option<PathBuf>,
    /// The kubeconfig contents.
    pub kubeconfig: String,
}

/// A new random bearer token of `len` lower-case letters and digits.
pub(crate) fn random_token_of(len: usize) -> String {
    const CHARS: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let mut rng = rand::rng();
    (0..len)
        .map(|_| CHARS[rng.random_range(0..CHARS.len())] as char)
        .collect()
}

/// The local host on `storage`, to put last in a local chain
/// (`builder.delegate_to(local::host(storage).await?)`): it serves the core group's namespaces
/// (creating `default`, `kube-system` and `kube-public` if missing) and answers the self
/// reviews (`kubectl auth whoami`, `kubectl auth can-i`) with local mode's user and authorizer.
/// [`crate::App`] adds it in `local` mode.
pub async fn host(storage: Arc<dyn Storage>) -> Result<GenericApiServer, LocalError> {
    local_host::server(storage, Arc::new(AllowAll), Arc::new(AllowAllRules))
        .await
        .map_err(|e| LocalError::LocalHost(e.message))
}

/// Starts `server` in local mode. The kubeconfig is written once the listener is bound.
pub async fn start(
    name: &str,
    server: Arc<GenericApiServer>,
    opts: &LocalOptions,
) -> Result<LocalServer, LocalError> {
    install_crypto_provider();
    let cert = match (&opts.tls_cert_file, &opts.tls_private_key_file) {
        (Some(c), Some(k)) => ServingCert::from_files(c, k)?,
        _ => ServingCert::self_signed(
            &opts.cert_dir,
            &["localhost".into(), "127.0.0.1".into(), "::1".into()],
        )?,
    };
    let tls = cert.server_config()?;
    let listener =
        tokio::net::TcpListener::bind(SocketAddr::new(opts.bind_address, opts.secure_port)).await?;
    let token = opts.token.clone().unwrap_or_else(|| random_token_of(40));
    let user = UserInfo::new("local-admin", &["system:masters", "system:authenticated"]);
    let mut chain = HandlerChain::new(
        server,
        Arc::new(StaticTokenAuthenticator::new(token.clone(), user)),
        Arc::new(AllowAll),
    )
    .with_limits(opts.run.limits())
    .with_shutdown(opts.run.shutdown());
    if let Some(auditor) = opts.audit.build()? {
        chain = chain.with_audit(Arc::new(auditor));
    }
    let running = serve::start(listener, tls, Arc::new(chain))?;
    let url = running.url();
    let kubeconfig = kubeconfig::render(name, &url, &cert.ca_pem, &token);
    if let Some(path) = &opts.write_kubeconfig {
        kubeconfig::write(path, &kubeconfig)?;
    }
    Ok(LocalServer {
        running,
        url,
        token,
        ca_pem: cert.ca_pem,
        kubeconfig_path: opts.write_kubeconfig.clone(),
        kubeconfig,
    })
}
