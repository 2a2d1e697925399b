//! `local` mode: a development server on loopback with self-signed TLS, a generated bearer
//! token, allow-all authorization and a kubeconfig written once it is ready.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;

use crate::admission::AdmissionPlugin;
use crate::admission::options::AdmissionOptions;
use crate::audit::{AuditError, AuditOptions};
use crate::authn::StaticTokenAuthenticator;
use crate::authz::AllowAll;
use crate::cli::server_run_options::ServerRunOptions;
use crate::cli::storage_options::StorageOptions;
use crate::devhost::self_reviews::AllowAllRules;
use crate::devhost::tokens::random_token_of;
use crate::devhost::{kubeconfig, local_host};
use crate::server::generic::GenericApiServer;
use crate::server::serve::{self, HandlerChain, RunningServer};
use crate::server::tracing::TracingOptions;
use crate::storage::Storage;
use crate::tls::{ServingCert, TlsError, install_crypto_provider};
use crate::user::UserInfo;

/// Options of `local` mode.
#[derive(Clone, Debug, clap::Args)]
pub struct LocalOptions {
    /// The port to serve HTTPS on (0 picks a free port).
    #[arg(long, default_value_t = 8443)]
    pub secure_port: u16,
    /// The loopback address to bind (local mode lets its token do anything, so it refuses
    /// any other address).
    #[arg(long, default_value = "127.0.0.1", value_parser = parse_loopback)]
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
    /// OpenTelemetry tracing (the request spans; [`crate::App`] also traces storage and
    /// exports the spans).
    #[command(flatten)]
    pub tracing: TracingOptions,
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
            tracing: TracingOptions::default(),
        }
    }
}

/// Why `address` may not be served on in local mode, if it may not.
fn non_loopback(address: IpAddr) -> Option<String> {
    (!address.to_canonical().is_loopback()).then(|| {
        format!(
            "{address} is not a loopback address: local mode grants every request with its \
             token full access and serves only on loopback (127.0.0.1 or ::1); use `serve` \
             to serve on other addresses"
        )
    })
}

/// Parses `--bind-address`, refusing anything but a loopback address.
fn parse_loopback(text: &str) -> Result<IpAddr, String> {
    let address: IpAddr = text.parse().map_err(|e| format!("{e}"))?;
    match non_loopback(address) {
        Some(why) => Err(why),
        None => Ok(address),
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
    /// The address to bind is not a loopback address.
    #[error("--bind-address {0}")]
    NotLoopback(String),
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

/// The admission plugins of an app's server in a local chain, to put before its own (as
/// [`crate::App`] does in `local` mode, subject to `--enable/--disable-admission-plugins`):
/// `NamespaceLifecycle` over the namespaces of the local host on `storage`, so that objects are
/// created only in namespaces that exist and are not terminating, as in a cluster.
pub(crate) fn host_plugins(storage: Arc<dyn Storage>) -> Vec<Arc<dyn AdmissionPlugin>> {
    local_host::lifecycle_plugins(storage)
}

/// Starts `server` in local mode. The kubeconfig is written once the listener is bound.
pub async fn start(
    name: &str,
    server: Arc<GenericApiServer>,
    opts: &LocalOptions,
) -> Result<LocalServer, LocalError> {
    if let Some(why) = non_loopback(opts.bind_address) {
        return Err(LocalError::NotLoopback(why));
    }
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
    .with_profiling(opts.run.profiling)
    .with_tracing(opts.tracing.enabled())
    .with_shutdown(opts.run.shutdown());
    if let Some(auditor) = opts.audit.build()? {
        chain = chain.with_audit(Arc::new(auditor));
    }
    // The kubeconfig is written before the server answers anything, so that whoever waits for
    // it to be ready finds it.
    let url = serve::https_url(listener.local_addr()?);
    let kubeconfig = kubeconfig::render(name, &url, &cert.ca_pem, &token);
    if let Some(path) = &opts.write_kubeconfig {
        kubeconfig::write(path, &kubeconfig)?;
    }
    let running = serve::RunningServer::start(listener, tls, Arc::new(chain))?;
    Ok(LocalServer {
        running,
        url,
        token,
        ca_pem: cert.ca_pem,
        kubeconfig_path: opts.write_kubeconfig.clone(),
        kubeconfig,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        local: LocalOptions,
    }

    #[test]
    fn only_loopback_addresses_are_accepted() {
        for ok in ["127.0.0.1", "127.0.0.2", "::1", "::ffff:127.0.0.1"] {
            let cli = Cli::try_parse_from(["server", "--bind-address", ok]).unwrap();
            assert_eq!(cli.local.bind_address, ok.parse::<IpAddr>().unwrap());
        }
        for bad in ["0.0.0.0", "::", "192.168.1.10", "10.0.0.1", "fd00::2"] {
            let err = Cli::try_parse_from(["server", "--bind-address", bad])
                .err()
                .unwrap_or_else(|| panic!("{bad} accepted"))
                .to_string();
            assert!(
                err.contains(bad) && err.contains("not a loopback address"),
                "{bad}: {err}"
            );
        }
        assert!(Cli::try_parse_from(["server", "--bind-address", "nope"]).is_err());
        let defaults = Cli::try_parse_from(["server"]).unwrap();
        assert_eq!(defaults.local.bind_address, IpAddr::V4(Ipv4Addr::LOCALHOST));
    }

    #[tokio::test]
    async fn starting_on_another_address_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let opts = LocalOptions {
            bind_address: "0.0.0.0".parse().unwrap(),
            secure_port: 0,
            cert_dir: dir.path().join("certs"),
            ..LocalOptions::default()
        };
        let server = Arc::new(GenericApiServer::builder("t").build());
        match start("t", server, &opts).await {
            Err(LocalError::NotLoopback(why)) => assert!(why.contains("0.0.0.0"), "{why}"),
            Err(e) => panic!("unexpected error: {e}"),
            Ok(_) => panic!("local mode served on 0.0.0.0"),
        }
        assert!(!dir.path().join("certs").exists());
    }
}
