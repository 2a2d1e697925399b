//! The benchmark's PKI: one CA and one serving certificate for 127.0.0.1, given to wardle and to
//! the baseline alike, so both servers do the same TLS work, and the client that trusts it.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use rustls::ClientConfig;
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;

/// The serving certificate and key files, and a client configuration that trusts them.
#[derive(Clone)]
pub struct Pki {
    /// The serving certificate (PEM).
    pub cert_file: PathBuf,
    /// Its private key (PEM).
    pub key_file: PathBuf,
    /// HTTP/1.1 over TLS, trusting only the benchmark's CA.
    pub client: Arc<ClientConfig>,
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
        let mut client = ClientConfig::builder()
            .with_root_certificates(roots)
            .with_no_client_auth();
        client.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Pki {
            cert_file,
            key_file,
            client: Arc::new(client),
        })
    }
}
