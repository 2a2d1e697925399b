//! A bundle of trusted certificate authorities, and verifying client certificate chains
//! against it.

use std::sync::Arc;

use rustls::DistinguishedName;
use rustls::pki_types::{CertificateDer, UnixTime};
use rustls::server::WebPkiClientVerifier;
use rustls::server::danger::ClientCertVerifier;

use crate::tls;

/// Errors of reading a CA bundle.
#[derive(Debug, thiserror::Error)]
pub enum CaBundleError {
    /// The PEM text holds no certificate or an invalid one.
    #[error("{0}")]
    Pem(String),
    /// A certificate of the bundle is not a usable trust anchor.
    #[error("invalid CA certificate: {0}")]
    Anchor(String),
}

/// Why a client certificate chain was not verified.
#[derive(Debug, thiserror::Error)]
pub enum ChainError {
    /// The request carried no certificate.
    #[error("no client certificate")]
    NoCertificate,
    /// The bundle trusts no authority.
    #[error("no certificate authority is configured")]
    NoAuthority,
    /// The chain does not verify (unknown authority, expired, wrong usage...).
    #[error("verifying certificate failed: {0}")]
    Verify(rustls::Error),
}

/// Trusted certificate authorities read from PEM (`--client-ca-file`, the
/// `requestheader-client-ca-file` of the authentication ConfigMap), able to verify client
/// certificate chains for client authentication at the current time.
#[derive(Clone, Debug, Default)]
pub struct CaBundle {
    pem: String,
    subjects: Vec<DistinguishedName>,
    verifier: Option<Arc<dyn ClientCertVerifier>>,
}

impl CaBundle {
    /// A bundle trusting nothing (authentication with it is not attempted).
    pub fn empty() -> Self {
        CaBundle::default()
    }

    /// Reads every certificate of a PEM bundle; blank text gives the empty bundle.
    pub fn from_pem(pem: &str) -> Result<Self, CaBundleError> {
        if pem.trim().is_empty() {
            return Ok(CaBundle::empty());
        }
        let certs = tls::parse_certs(pem).map_err(|e| CaBundleError::Pem(e.to_string()))?;
        let mut roots = rustls::RootCertStore::empty();
        for cert in certs {
            roots
                .add(cert)
                .map_err(|e| CaBundleError::Anchor(e.to_string()))?;
        }
        let subjects = roots.subjects();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
            .build()
            .map_err(|e| CaBundleError::Anchor(e.to_string()))?;
        Ok(CaBundle {
            pem: pem.to_owned(),
            subjects,
            verifier: Some(verifier),
        })
    }

    /// Whether the bundle trusts no authority.
    pub fn is_empty(&self) -> bool {
        self.verifier.is_none()
    }

    /// The PEM text the bundle was read from (empty for the empty bundle).
    pub fn pem(&self) -> &str {
        &self.pem
    }

    /// The subjects of the trusted authorities (the hints a TLS server sends to clients).
    pub fn subjects(&self) -> &[DistinguishedName] {
        &self.subjects
    }

    /// Verifies `chain` (leaf first, then intermediates) for client authentication now:
    /// it must chain to one of the authorities and every certificate must be valid at this
    /// time.
    pub fn verify_client_chain(&self, chain: &[CertificateDer<'_>]) -> Result<(), ChainError> {
        self.verify_client_chain_at(chain, UnixTime::now())
    }

    /// [`verify_client_chain`](Self::verify_client_chain) at time `now`.
    pub(crate) fn verify_client_chain_at(
        &self,
        chain: &[CertificateDer<'_>],
        now: UnixTime,
    ) -> Result<(), ChainError> {
        let (leaf, intermediates) = chain.split_first().ok_or(ChainError::NoCertificate)?;
        let verifier = self.verifier.as_ref().ok_or(ChainError::NoAuthority)?;
        verifier
            .verify_client_cert(leaf, intermediates, now)
            .map(|_| ())
            .map_err(ChainError::Verify)
    }

    /// The verifier of this bundle: the same for clones of it, another for any other bundle
    /// (a reload of the same PEM included). `None` for the empty bundle.
    pub(crate) fn authority(&self) -> Option<&Arc<dyn ClientCertVerifier>> {
        self.verifier.as_ref()
    }
}

impl PartialEq for CaBundle {
    fn eq(&self, other: &Self) -> bool {
        self.pem == other.pem
    }
}
