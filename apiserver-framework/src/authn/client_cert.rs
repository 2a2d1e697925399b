//! The TLS side of client certificates: the server asks for one but lets the handshake
//! succeed with any (or none), like Go's `tls.RequestClientCert`; the authenticators decide
//! which chains they trust.

use std::sync::Arc;

use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::{CertificateDer, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::{DigitallySignedStruct, DistinguishedName, SignatureScheme};

use super::delegated::DelegatedAuthConfig;

/// Requests a client certificate without requiring one; accepts any chain (the
/// authenticators verify it) but checks the handshake signatures, proving the client holds
/// the certificate's key. The CA hints sent to clients are the currently trusted client and
/// request-header authorities, read at every handshake.
#[derive(Debug)]
pub struct RequestClientCertVerifier {
    config: Arc<DelegatedAuthConfig>,
    algorithms: WebPkiSupportedAlgorithms,
}

impl RequestClientCertVerifier {
    /// A verifier hinting the authorities of `config`.
    pub fn new(config: Arc<DelegatedAuthConfig>) -> Self {
        RequestClientCertVerifier {
            config,
            algorithms: rustls::crypto::ring::default_provider().signature_verification_algorithms,
        }
    }
}

impl ClientCertVerifier for RequestClientCertVerifier {
    fn offer_client_auth(&self) -> bool {
        true
    }

    fn client_auth_mandatory(&self) -> bool {
        false
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        self.config.current().hint_subjects()
    }

    fn verify_client_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        Ok(ClientCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}
