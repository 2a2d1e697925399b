//! TLS clients for a test server: one place that builds a client trusting the server's CA, for
//! reqwest, hyper, h2 and raw TLS streams alike.
//!
//! A reqwest client takes [`http1_config`] with `use_preconfigured_tls`; hyper, h2 and raw
//! streams take [`client_config`] with the ALPN protocols they speak, and [`connect`].

use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};

/// A rustls client configuration trusting only the certificates of `ca_pem` (no system roots),
/// with ring as its provider, no client certificate, and `alpn` as its ALPN protocols (empty:
/// none offered).
///
/// Panics when `ca_pem` holds no certificate: a test's CA is always well formed.
pub fn client_config(ca_pem: &str, alpn: &[&[u8]]) -> rustls::ClientConfig {
    let mut config = builder(ca_pem).with_no_client_auth();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    config
}

/// [`client_config`] presenting a client certificate: `identity_pem` holds its chain and its
/// private key (as `reqwest::Identity::from_pem` takes them).
pub fn client_config_with_identity(
    ca_pem: &str,
    identity_pem: &str,
    alpn: &[&[u8]],
) -> rustls::ClientConfig {
    let chain: Vec<CertificateDer<'static>> =
        crate::tls::parse_certs(identity_pem).expect("the client certificate is PEM");
    let key =
        PrivateKeyDer::from_pem_slice(identity_pem.as_bytes()).expect("the client key is PEM");
    let mut config = builder(ca_pem)
        .with_client_auth_cert(chain, key)
        .expect("the client certificate matches its key");
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    config
}

/// ALPN's name of HTTP/1.1, what reqwest (built without `http2`) offers.
pub const HTTP1: &[&[u8]] = &[b"http/1.1"];

/// [`client_config`] offering HTTP/1.1 only ([`HTTP1`]): give it to
/// `reqwest::ClientBuilder::use_preconfigured_tls`.
pub fn http1_config(ca_pem: &str) -> rustls::ClientConfig {
    client_config(ca_pem, HTTP1)
}

/// The root store of the certificates in `ca_pem`.
pub fn roots(ca_pem: &str) -> rustls::RootCertStore {
    let mut roots = rustls::RootCertStore::empty();
    for cert in crate::tls::parse_certs(ca_pem).expect("the CA is PEM") {
        roots.add(cert).expect("a usable CA certificate");
    }
    roots
}

fn builder(
    ca_pem: &str,
) -> rustls::ConfigBuilder<rustls::ClientConfig, rustls::client::WantsClientCert> {
    crate::tls::install_crypto_provider();
    rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .expect("ring supports the default TLS versions")
        .with_root_certificates(roots(ca_pem))
}

/// Opens a TLS connection to `addr` with `config`, checking the server's certificate for
/// `server_name` (`127.0.0.1`, `localhost`, ...).
pub async fn connect(
    addr: impl tokio::net::ToSocketAddrs,
    server_name: &str,
    config: rustls::ClientConfig,
) -> std::io::Result<tokio_rustls::client::TlsStream<tokio::net::TcpStream>> {
    let tcp = tokio::net::TcpStream::connect(addr).await?;
    let name = ServerName::try_from(server_name.to_string())
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
    tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(name, tcp)
        .await
}
