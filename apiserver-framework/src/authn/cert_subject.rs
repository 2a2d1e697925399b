//! The subject of a certificate as authenticators read it: the common name and the
//! organizations.

use rustls::pki_types::CertificateDer;
use x509_parser::prelude::{FromDer, X509Certificate};

/// A certificate's subject names used for authentication.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CertSubject {
    /// The common name (the last one when several are present, as Go's `pkix.Name` reads it);
    /// empty when absent.
    pub common_name: String,
    /// Every organization value, in order.
    pub organizations: Vec<String>,
}

/// The certificate could not be parsed.
#[derive(Debug, thiserror::Error)]
#[error("parsing the client certificate: {0}")]
pub struct CertParseError(String);

impl CertSubject {
    /// Reads the subject of a DER certificate.
    pub fn from_der(cert: &CertificateDer<'_>) -> Result<Self, CertParseError> {
        let (_, cert) =
            X509Certificate::from_der(cert.as_ref()).map_err(|e| CertParseError(e.to_string()))?;
        let subject = cert.subject();
        let text = |attr: &x509_parser::x509::AttributeTypeAndValue<'_>| {
            attr.as_str()
                .map(str::to_owned)
                .map_err(|e| CertParseError(e.to_string()))
        };
        let common_name = match subject.iter_common_name().last() {
            Some(cn) => text(cn)?,
            None => String::new(),
        };
        let organizations = subject
            .iter_organization()
            .map(text)
            .collect::<Result<_, _>>()?;
        Ok(CertSubject {
            common_name,
            organizations,
        })
    }
}
