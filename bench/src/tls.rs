//! The benchmark's PKI: one CA and one serving certificate for 127.0.0.1, given to wardle and to
//! the baseline alike, so both servers do the same TLS work, and the client settings that trust
//! it.

use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;

use crate::client::Trust;

/// The serving certificate and key files, and a client configuration that trusts them.
#[derive(Clone)]
pub struct Pki {
    /// The serving certificate (PEM).
    pub cert_file: PathBuf,
    /// Its private key (PEM).
    pub key_file: PathBuf,
    /// Client settings (HTTP/1.1 or HTTP/2) trusting only the benchmark's CA.
    pub trust: Trust,
}

impl Pki {
    /// A new CA and serving certificate written into `dir`.
    pub fn create(dir: &Path) -> Result<Self, crate::client::Error> {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let ca_key = KeyPair::generate()?;
        let mut ca = CertificateParams::new(Vec::<String>::new())?;
        ca.distinguished_name.push(DnType::CommonName, "bench-ca");
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let ca_cert = ca.self_signed(&ca_key)?;
        let issuer = Issuer::new(ca, ca_key);

        let key = KeyPair::generate()?;
        let mut leaf = CertificateParams::new(vec!["127.0.0.1".to_string()])?;
        leaf.distinguished_name
            .push(DnType::CommonName, "bench-server");
        leaf.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let cert = leaf.signed_by(&key, &issuer)?;

        let cert_file = dir.join("serving.crt");
        let key_file = dir.join("serving.key");
        std::fs::write(&cert_file, cert.pem())?;
        std::fs::write(&key_file, key.serialize_pem())?;

        let mut roots = rustls::RootCertStore::empty();
        roots.add(CertificateDer::from_pem_slice(ca_cert.pem().as_bytes())?)?;
        Ok(Pki {
            cert_file,
            key_file,
            trust: Trust::new(roots),
        })
    }
}
