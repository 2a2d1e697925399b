//! The certificates of PEM bundles: serving chains, and the authorities of clients, webhooks,
//! backends and etcd.

use rustls_pki_types::CertificateDer;
use rustls_pki_types::pem::PemObject as _;

/// Why a PEM bundle yields no certificates.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PemError {
    /// A block of the bundle is not valid PEM.
    #[error("invalid certificate PEM: {0}")]
    Invalid(String),
    /// The bundle holds no certificate.
    #[error("no certificate found")]
    NoCertificate,
}

/// Parses every certificate of a PEM bundle (an error when there is none).
pub fn parse_certs(pem: &str) -> Result<Vec<CertificateDer<'static>>, PemError> {
    let certs: Vec<_> = CertificateDer::pem_slice_iter(pem.as_bytes())
        .collect::<Result<_, _>>()
        .map_err(|e| PemError::Invalid(e.to_string()))?;
    if certs.is_empty() {
        return Err(PemError::NoCertificate);
    }
    Ok(certs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bundle_without_certificates_is_an_error() {
        assert_eq!(parse_certs(""), Err(PemError::NoCertificate));
        assert_eq!(
            parse_certs("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"),
            Err(PemError::NoCertificate)
        );
        assert!(matches!(
            parse_certs("-----BEGIN CERTIFICATE-----\n!!!\n-----END CERTIFICATE-----\n"),
            Err(PemError::Invalid(_))
        ));
    }

    #[test]
    fn every_certificate_of_a_bundle_is_read() {
        let block = "-----BEGIN CERTIFICATE-----\nAQID\n-----END CERTIFICATE-----\n";
        let certs = parse_certs(&format!("{block}{block}")).unwrap();
        assert_eq!(certs.len(), 2);
        assert_eq!(certs[0].as_ref(), [1, 2, 3]);
    }
}
