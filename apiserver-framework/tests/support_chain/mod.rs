//! A handler chain the test built (its own authenticator, authorizer, audit or layers), served
//! over HTTPS on a free loopback port with a fresh self-signed certificate.

#![allow(dead_code)]

use std::sync::Arc;

use apiserver_framework::server::serve::{self, HandlerChain, RunningServer};
use apiserver_framework::tls::{ServingCert, install_crypto_provider};

/// A served chain and what a client of it needs.
pub struct ServedChain {
    /// The listener (stops when dropped).
    pub running: RunningServer,
    /// `https://127.0.0.1:<port>`.
    pub url: String,
    /// The CA certificate clients must trust (PEM).
    pub ca_pem: String,
    /// The temporary directory (the certificates; the test may add its own files).
    pub dir: tempfile::TempDir,
}

impl ServedChain {
    /// A client builder trusting the chain's CA, for the test to finish.
    pub fn https(&self) -> reqwest::ClientBuilder {
        reqwest::Client::builder().use_preconfigured_tls(
            apiserver_framework::testing::tls::http1_config(&self.ca_pem),
        )
    }
}

/// Serves the chain `build` makes in `dir` (where it may write files it needs, such as an audit
/// policy) over HTTPS on a free port of 127.0.0.1.
pub async fn serve_chain_in(
    dir: tempfile::TempDir,
    build: impl FnOnce(&std::path::Path) -> HandlerChain,
) -> ServedChain {
    install_crypto_provider();
    let cert = ServingCert::self_signed(&dir.path().join("certs"), &["127.0.0.1".into()]).unwrap();
    let chain = build(dir.path());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let running =
        serve::RunningServer::start(listener, cert.server_config().unwrap(), Arc::new(chain))
            .unwrap();
    ServedChain {
        url: format!("https://127.0.0.1:{}", running.addr.port()),
        running,
        ca_pem: cert.ca_pem,
        dir,
    }
}

/// Serves `chain` over HTTPS on a free port of 127.0.0.1, in a new temporary directory.
pub async fn serve_chain(chain: HandlerChain) -> ServedChain {
    serve_chain_in(tempfile::tempdir().unwrap(), |_| chain).await
}

/// A TLS server configuration serving `cert` (a test's own rcgen certificate) and offering
/// the ALPN protocols `alpn`, for a backend or receiver written by the test.
pub fn rcgen_server_config(
    cert: &rcgen::CertifiedKey<rcgen::KeyPair>,
    alpn: &[&[u8]],
) -> Arc<rustls::ServerConfig> {
    let key = rustls::pki_types::PrivateKeyDer::try_from(cert.signing_key.serialize_der()).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![cert.cert.der().clone()], key)
        .unwrap();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Arc::new(config)
}
