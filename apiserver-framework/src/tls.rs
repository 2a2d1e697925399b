//! Certificates and TLS configuration: serving certificates from files, or self-signed and kept
//! in a certificate directory as upstream's `--cert-dir` does; rustls server configurations;
//! PEM bundles (the authorities of clients, webhooks and backends).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// Errors of loading or generating serving certificates.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// A PEM file holds no usable certificate or key.
    #[error("{0}")]
    Pem(String),
    /// Certificate generation failed.
    #[error("generating a self-signed certificate: {0}")]
    Generate(#[from] rcgen::Error),
    /// rustls refused the certificate and key.
    #[error("TLS configuration: {0}")]
    Rustls(#[from] rustls::Error),
}

/// A serving certificate chain and its key, as PEM.
#[derive(Clone, Debug)]
pub struct ServingCert {
    /// The certificate chain (leaf first).
    pub chain_pem: String,
    /// The private key.
    pub key_pem: String,
    /// The certificate clients should trust (the self-signed CA, or the last certificate of
    /// the chain read from a file).
    pub ca_pem: String,
}

fn read(path: &Path) -> Result<String, TlsError> {
    std::fs::read_to_string(path).map_err(|source| TlsError::Io {
        path: path.to_path_buf(),
        source,
    })
}

/// Writes a certificate (`private` false: mode 0644) or a key (mode 0600) with its final mode,
/// its directory created private when missing (it holds the key).
fn write(path: &Path, contents: &str, private: bool) -> Result<(), TlsError> {
    let mode = if private {
        crate::fs::PRIVATE_FILE
    } else {
        crate::fs::PUBLIC_FILE
    };
    crate::fs::write_atomically(path, contents.as_bytes(), mode).map_err(|source| TlsError::Io {
        path: path.to_path_buf(),
        source,
    })
}

impl ServingCert {
    /// Reads a certificate chain and key from PEM files.
    pub fn from_files(cert: &Path, key: &Path) -> Result<Self, TlsError> {
        let chain_pem = read(cert)?;
        let key_pem = read(key)?;
        let certs = parse_certs(&chain_pem)?;
        let ca_pem = certs
            .last()
            .map(|c| pem_of("CERTIFICATE", c.as_ref()))
            .unwrap_or_default();
        Ok(ServingCert {
            chain_pem,
            key_pem,
            ca_pem,
        })
    }

    /// Reuses `apiserver.crt`/`apiserver.key` in `cert_dir`, or generates a self-signed CA
    /// and a serving certificate for `hosts` (DNS names or IP addresses) and writes them
    /// there (the chain file holds the serving certificate followed by the CA).
    pub fn self_signed(cert_dir: &Path, hosts: &[String]) -> Result<Self, TlsError> {
        let cert_path = cert_dir.join("apiserver.crt");
        let key_path = cert_dir.join("apiserver.key");
        if cert_path.exists() && key_path.exists() {
            return Self::from_files(&cert_path, &key_path);
        }
        let ca_key = KeyPair::generate()?;
        let mut ca_params = CertificateParams::new(Vec::<String>::new())?;
        ca_params.distinguished_name.push(
            DnType::CommonName,
            format!(
                "{}-ca",
                hosts.first().map(String::as_str).unwrap_or("localhost")
            ),
        );
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::CrlSign,
        ];
        let ca_cert = ca_params.self_signed(&ca_key)?;
        let issuer = Issuer::new(ca_params, ca_key);
        let leaf_key = KeyPair::generate()?;
        let mut leaf_params = CertificateParams::new(hosts.to_vec())?;
        leaf_params.distinguished_name.push(
            DnType::CommonName,
            hosts.first().cloned().unwrap_or_else(|| "localhost".into()),
        );
        leaf_params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        leaf_params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth];
        let leaf = leaf_params.signed_by(&leaf_key, &issuer)?;
        let ca_pem = ca_cert.pem();
        let chain_pem = format!("{}{}", leaf.pem(), ca_pem);
        let key_pem = leaf_key.serialize_pem();
        write(&cert_path, &chain_pem, false)?;
        write(&key_path, &key_pem, true)?;
        Ok(ServingCert {
            chain_pem,
            key_pem,
            ca_pem,
        })
    }

    /// A rustls server configuration serving this certificate with HTTP/2 and HTTP/1.1.
    pub fn server_config(&self) -> Result<Arc<rustls::ServerConfig>, TlsError> {
        let certs = parse_certs(&self.chain_pem)?;
        let key = PrivateKeyDer::from_pem_slice(self.key_pem.as_bytes())
            .map_err(|e| TlsError::Pem(format!("no private key found: {e}")))?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_no_client_auth()
            .with_single_cert(certs, key)?;
        config.alpn_protocols = alpn_protocols(true);
        Ok(Arc::new(config))
    }

    /// The certified key rustls serves (for a certificate resolver).
    pub fn certified_key(&self) -> Result<Arc<rustls::sign::CertifiedKey>, TlsError> {
        let certs = parse_certs(&self.chain_pem)?;
        let key = PrivateKeyDer::from_pem_slice(self.key_pem.as_bytes())
            .map_err(|e| TlsError::Pem(format!("no private key found: {e}")))?;
        let provider = rustls::crypto::ring::default_provider();
        Ok(Arc::new(rustls::sign::CertifiedKey::from_der(
            certs, key, &provider,
        )?))
    }
}

/// A rustls server configuration (HTTP/2 and HTTP/1.1) taking its certificate from `certs`
/// (e.g. a reloading resolver) and asking clients for certificates with `client_auth`.
pub fn server_config_with(
    certs: Arc<dyn rustls::server::ResolvesServerCert>,
    client_auth: Arc<dyn rustls::server::danger::ClientCertVerifier>,
    min_version: Option<&'static rustls::SupportedProtocolVersion>,
) -> Result<Arc<rustls::ServerConfig>, TlsError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ServerConfig::builder_with_provider(provider);
    let builder = match min_version {
        Some(v) if v.version == rustls::ProtocolVersion::TLSv1_3 => {
            builder.with_protocol_versions(&[&rustls::version::TLS13])?
        }
        _ => builder.with_safe_default_protocol_versions()?,
    };
    let mut config = builder
        .with_client_cert_verifier(client_auth)
        .with_cert_resolver(certs);
    config.alpn_protocols = alpn_protocols(true);
    Ok(Arc::new(config))
}

/// The protocols offered through ALPN: HTTP/2 (unless `http2` is false) and HTTP/1.1.
pub fn alpn_protocols(http2: bool) -> Vec<Vec<u8>> {
    match http2 {
        true => vec![b"h2".to_vec(), b"http/1.1".to_vec()],
        false => vec![b"http/1.1".to_vec()],
    }
}

/// `config`, offering HTTP/1.1 only (upstream's `--disable-http2-serving`).
pub(crate) fn without_http2(config: Arc<rustls::ServerConfig>) -> Arc<rustls::ServerConfig> {
    let mut config = Arc::unwrap_or_clone(config);
    config.alpn_protocols = alpn_protocols(false);
    Arc::new(config)
}

/// Parses every certificate of a PEM bundle (an error when there is none).
pub fn parse_certs(pem: &str) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    crate::fs::pem::parse_certs(pem).map_err(|e| TlsError::Pem(e.to_string()))
}

fn pem_of(label: &str, der: &[u8]) -> String {
    use base64::Engine;
    let b64 = base64::engine::general_purpose::STANDARD.encode(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    for chunk in b64.as_bytes().chunks(64) {
        out.push_str(std::str::from_utf8(chunk).unwrap_or_default());
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}

/// Installs ring as the process-wide rustls crypto provider, once. kube's client uses ring; a
/// second provider in the same process would make rustls panic at the first handshake.
pub fn install_crypto_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}
