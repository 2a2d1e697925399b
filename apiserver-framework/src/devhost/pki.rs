//! The development host's certificates: certificate authorities and the certificates they
//! issue, kept as PEM files in the host's directory and reused across restarts.

use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};

use crate::tls::TlsError;

/// A certificate authority whose certificate and key live in `<dir>/<name>.crt|.key`.
pub struct Authority {
    issuer: Issuer<'static, KeyPair>,
    /// The CA certificate (PEM).
    pub cert_pem: String,
}

/// A certificate and key written as `<dir>/<name>.crt|.key`.
#[derive(Clone, Debug)]
pub struct IssuedCert {
    /// The certificate file.
    pub cert_path: PathBuf,
    /// The key file.
    pub key_path: PathBuf,
    /// The certificate (PEM).
    pub cert_pem: String,
    /// The key (PEM).
    pub key_pem: String,
}

/// What a certificate is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Usage {
    /// A TLS server (SANs are host names and IPs).
    Server,
    /// A TLS client (CN is the user, O the groups).
    Client,
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> TlsError + '_ {
    move |source| TlsError::Io {
        path: path.to_path_buf(),
        source,
    }
}

fn write_file(path: &Path, contents: &str, mode: u32) -> Result<(), TlsError> {
    crate::fs::write_atomically(path, contents.as_bytes(), mode).map_err(io(path))
}

fn read_pair(dir: &Path, name: &str) -> Option<(PathBuf, PathBuf, String, String)> {
    let cert_path = dir.join(format!("{name}.crt"));
    let key_path = dir.join(format!("{name}.key"));
    let cert = std::fs::read_to_string(&cert_path).ok()?;
    let key = std::fs::read_to_string(&key_path).ok()?;
    Some((cert_path, key_path, cert, key))
}

impl Authority {
    /// Loads the CA `<dir>/<name>`, or creates it with common name `common_name`.
    pub fn load_or_create(dir: &Path, name: &str, common_name: &str) -> Result<Self, TlsError> {
        crate::fs::create_private_dir_all(dir).map_err(io(dir))?;
        if let Some((_, _, cert_pem, key_pem)) = read_pair(dir, name) {
            let key = KeyPair::from_pem(&key_pem)?;
            let issuer = Issuer::from_ca_cert_pem(&cert_pem, key)?;
            return Ok(Authority { issuer, cert_pem });
        }
        let key = KeyPair::generate()?;
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        params
            .distinguished_name
            .push(DnType::CommonName, common_name);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::CrlSign,
        ];
        let cert = params.self_signed(&key)?;
        let cert_pem = cert.pem();
        let cert_path = dir.join(format!("{name}.crt"));
        write_file(&cert_path, &cert_pem, crate::fs::PUBLIC_FILE)?;
        write_file(
            &dir.join(format!("{name}.key")),
            &key.serialize_pem(),
            crate::fs::PRIVATE_FILE,
        )?;
        Ok(Authority {
            issuer: Issuer::new(params, key),
            cert_pem,
        })
    }

    /// Loads `<dir>/<name>`, or issues it: a server certificate for `names` (DNS names or
    /// IPs), or a client certificate for user `names[0]` in group `names[1]` (if any).
    pub fn load_or_issue(
        &self,
        dir: &Path,
        name: &str,
        usage: Usage,
        names: &[&str],
    ) -> Result<IssuedCert, TlsError> {
        if let Some((cert_path, key_path, cert_pem, key_pem)) = read_pair(dir, name) {
            return Ok(IssuedCert {
                cert_path,
                key_path,
                cert_pem,
                key_pem,
            });
        }
        let key = KeyPair::generate()?;
        let mut params = match usage {
            Usage::Server => {
                let mut p = CertificateParams::new(
                    names.iter().map(|n| n.to_string()).collect::<Vec<_>>(),
                )?;
                p.distinguished_name.push(
                    DnType::CommonName,
                    names.first().copied().unwrap_or("localhost"),
                );
                p.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
                p
            }
            Usage::Client => {
                let mut p = CertificateParams::new(Vec::<String>::new())?;
                p.distinguished_name
                    .push(DnType::CommonName, names.first().copied().unwrap_or(""));
                if let Some(group) = names.get(1) {
                    p.distinguished_name.push(DnType::OrganizationName, *group);
                }
                p.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
                p
            }
        };
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        let cert = params.signed_by(&key, &self.issuer)?;
        let cert_path = dir.join(format!("{name}.crt"));
        let key_path = dir.join(format!("{name}.key"));
        let cert_pem = cert.pem();
        let key_pem = key.serialize_pem();
        write_file(&cert_path, &cert_pem, crate::fs::PUBLIC_FILE)?;
        write_file(&key_path, &key_pem, crate::fs::PRIVATE_FILE)?;
        Ok(IssuedCert {
            cert_path,
            key_path,
            cert_pem,
            key_pem,
        })
    }
}
