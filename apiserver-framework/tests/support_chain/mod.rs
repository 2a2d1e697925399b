//! Serving a handler chain the test built (the kit's `testing::serve_chain`), and the TLS bits
//! the tests' own backends and receivers use.

#![allow(dead_code, unused_imports)]

use std::sync::Arc;

pub use apiserver_framework::testing::{ServedChain, serve_chain, serve_chain_in};

/// An HTTPS client builder trusting `served`'s CA, for the test to finish.
pub fn https(served: &ServedChain) -> reqwest::ClientBuilder {
    reqwest::Client::builder().use_preconfigured_tls(
        apiserver_framework::testing::tls::http1_config(&served.ca_pem),
    )
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
