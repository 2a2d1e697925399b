//! [`serve_chain`]: a handler chain the test assembled itself (its own authenticator,
//! authorizer, audit or layers), served over HTTPS on a free loopback port with a fresh
//! self-signed certificate. For an app served as `local` or `serve` serve it, use
//! [`TestServer`](super::TestServer).

use std::path::Path;
use std::sync::Arc;

use super::TestServerError;
use crate::server::serve::{self, HandlerChain, RunningServer};
use crate::tls::{ServingCert, install_crypto_provider};

/// A served chain and what a client of it needs.
pub struct ServedChain {
    /// The listener (stops when dropped, or with its `shutdown`).
    pub running: RunningServer,
    /// `https://127.0.0.1:<port>`.
    pub url: String,
    /// The CA certificate clients must trust (PEM; see [`super::tls`]).
    pub ca_pem: String,
    /// The temporary directory (the certificates, and the test's own files).
    pub dir: tempfile::TempDir,
}

/// Serves the chain `build` makes, given a new temporary directory in which it may write the
/// files it needs (an audit policy, a token file), over HTTPS on a free port of 127.0.0.1.
pub async fn serve_chain_in(
    build: impl FnOnce(&Path) -> HandlerChain,
) -> Result<ServedChain, TestServerError> {
    install_crypto_provider();
    let dir = tempfile::tempdir()?;
    let options = |e: &dyn std::fmt::Display| TestServerError::Options(e.to_string());
    let cert = ServingCert::self_signed(&dir.path().join("certs"), &["127.0.0.1".into()])
        .map_err(|e| options(&e))?;
    let config = cert.server_config().map_err(|e| options(&e))?;
    let chain = build(dir.path());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let running = serve::RunningServer::start(listener, config, Arc::new(chain))?;
    Ok(ServedChain {
        url: format!("https://127.0.0.1:{}", running.addr.port()),
        running,
        ca_pem: cert.ca_pem,
        dir,
    })
}

/// Serves `chain` over HTTPS on a free port of 127.0.0.1.
pub async fn serve_chain(chain: HandlerChain) -> Result<ServedChain, TestServerError> {
    serve_chain_in(|_| chain).await
}
