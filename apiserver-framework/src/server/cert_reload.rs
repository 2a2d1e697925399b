//! Serving certificates that follow their files: a rustls certificate resolver that picks up a
//! rotated certificate and key without a restart (upstream's dynamic serving content).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::RwLock;
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;

use crate::tls::{ServingCert, TlsError};

/// How often [`ReloadingCert::spawn_watcher`] looks at the files by default.
pub const DEFAULT_RELOAD_INTERVAL: Duration = Duration::from_secs(2);

/// The serving certificate, read from a certificate and a key file and re-read when their
/// contents change. New TLS handshakes get the new certificate; open connections keep theirs.
#[derive(Debug)]
pub struct ReloadingCert {
    cert_path: PathBuf,
    key_path: PathBuf,
    state: RwLock<Loaded>,
}

#[derive(Debug)]
struct Loaded {
    key: Arc<CertifiedKey>,
    cert_pem: String,
    key_pem: String,
}

fn load(cert: &Path, key: &Path) -> Result<Loaded, TlsError> {
    let serving = ServingCert::from_files(cert, key)?;
    Ok(Loaded {
        key: serving.certified_key()?,
        cert_pem: serving.chain_pem,
        key_pem: serving.key_pem,
    })
}

impl ReloadingCert {
    /// Reads the certificate chain and key now (an error if they are unusable).
    pub fn from_files(cert: impl Into<PathBuf>, key: impl Into<PathBuf>) -> Result<Self, TlsError> {
        let (cert_path, key_path) = (cert.into(), key.into());
        let loaded = load(&cert_path, &key_path)?;
        Ok(ReloadingCert {
            cert_path,
            key_path,
            state: RwLock::new(loaded),
        })
    }

    /// Re-reads the files; swaps the certificate when they changed and are valid. Returns
    /// whether the certificate changed. Invalid files (e.g. half-written) leave the current
    /// certificate in place.
    pub fn reload(&self) -> Result<bool, TlsError> {
        let cert_pem = std::fs::read_to_string(&self.cert_path).map_err(|source| TlsError::Io {
            path: self.cert_path.clone(),
            source,
        })?;
        let key_pem = std::fs::read_to_string(&self.key_path).map_err(|source| TlsError::Io {
            path: self.key_path.clone(),
            source,
        })?;
        {
            let current = self.state.read();
            if current.cert_pem == cert_pem && current.key_pem == key_pem {
                return Ok(false);
            }
        }
        let loaded = load(&self.cert_path, &self.key_path)?;
        *self.state.write() = loaded;
        Ok(true)
    }

    /// Looks at the files every `interval` in a background task (until the resolver is
    /// dropped by everyone else).
    pub fn spawn_watcher(self: &Arc<Self>, interval: Duration) -> tokio::task::JoinHandle<()> {
        let weak = Arc::downgrade(self);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(interval);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            tick.tick().await;
            loop {
                tick.tick().await;
                let Some(this) = weak.upgrade() else { return };
                match this.reload() {
                    Ok(true) => tracing::info!(
                        cert = %this.cert_path.display(),
                        "serving certificate reloaded"
                    ),
                    Ok(false) => {}
                    Err(e) => tracing::warn!("serving certificate not reloaded: {e}"),
                }
            }
        })
    }
}

impl ResolvesServerCert for ReloadingCert {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.state.read().key.clone())
    }
}

/// A certificate that never changes (e.g. a self-signed one generated at start).
#[derive(Debug)]
pub struct FixedCert(pub Arc<CertifiedKey>);

impl ResolvesServerCert for FixedCert {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.0.clone())
    }
}
