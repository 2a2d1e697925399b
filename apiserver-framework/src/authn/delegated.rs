//! The delegated authentication configuration: which authorities and front-proxy headers
//! are trusted right now. Swapped as a whole when its sources change (CA rotation, a new
//! ConfigMap), so authenticators and the TLS handshake always see one consistent version.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use http::HeaderName;
use parking_lot::{Mutex, RwLock};
use rustls::DistinguishedName;

use super::ca_bundle::CaBundle;

/// The front-proxy (request-header) settings: whose certificates may assert a user with
/// headers, and which headers carry it.
#[derive(Clone, Debug, PartialEq)]
pub struct RequestHeaderConfig {
    /// The authorities front-proxy certificates must chain to (empty: request-header
    /// authentication is off).
    pub ca: CaBundle,
    /// Common names a front-proxy certificate may have (empty: any).
    pub allowed_names: Vec<String>,
    /// Headers carrying the user name; the first non-empty one wins.
    pub username_headers: Vec<HeaderName>,
    /// Headers carrying the user's uid; the first non-empty one wins.
    pub uid_headers: Vec<HeaderName>,
    /// Headers carrying groups; every value of every one is a group.
    pub group_headers: Vec<HeaderName>,
    /// Header name prefixes (lower case) carrying extra attributes.
    pub extra_headers_prefixes: Vec<String>,
}

/// The header names upstream uses when none are configured: `x-remote-user`,
/// `x-remote-group`, `x-remote-extra-` (no uid header).
pub(crate) const DEFAULT_USERNAME_HEADER: &str = "x-remote-user";
/// The default group header.
pub(crate) const DEFAULT_GROUP_HEADER: &str = "x-remote-group";
/// The default extra header prefix.
pub(crate) const DEFAULT_EXTRA_HEADERS_PREFIX: &str = "x-remote-extra-";
/// The uid header the aggregator sends.
pub(crate) const DEFAULT_UID_HEADER: &str = "x-remote-uid";

impl Default for RequestHeaderConfig {
    /// No trusted authority, upstream's default header names.
    fn default() -> Self {
        RequestHeaderConfig {
            ca: CaBundle::empty(),
            allowed_names: Vec::new(),
            username_headers: vec![HeaderName::from_static(DEFAULT_USERNAME_HEADER)],
            uid_headers: Vec::new(),
            group_headers: vec![HeaderName::from_static(DEFAULT_GROUP_HEADER)],
            extra_headers_prefixes: vec![DEFAULT_EXTRA_HEADERS_PREFIX.to_owned()],
        }
    }
}

/// An invalid header name in the configuration.
#[derive(Debug, thiserror::Error)]
#[error("invalid header name {0:?}")]
pub struct InvalidHeaderName(pub String);

/// Parses header names as upstream does (trimmed; empty names refused).
pub(crate) fn header_names(names: &[String]) -> Result<Vec<HeaderName>, InvalidHeaderName> {
    names
        .iter()
        .map(|n| {
            let trimmed = n.trim();
            HeaderName::from_bytes(trimmed.as_bytes()).map_err(|_| InvalidHeaderName(n.clone()))
        })
        .collect()
}

/// Parses extra header prefixes (trimmed, lower-cased; empty ones refused).
pub(crate) fn header_prefixes(prefixes: &[String]) -> Result<Vec<String>, InvalidHeaderName> {
    prefixes
        .iter()
        .map(|p| {
            let trimmed = p.trim();
            if trimmed.is_empty() {
                Err(InvalidHeaderName(p.clone()))
            } else {
                Ok(trimmed.to_ascii_lowercase())
            }
        })
        .collect()
}

/// One consistent version of the delegated authentication configuration.
#[derive(Clone, Debug)]
pub struct AuthSnapshot {
    /// The authorities of x509 client certificates (`client-ca-file`).
    pub client_ca: CaBundle,
    /// The front-proxy settings.
    pub request_header: RequestHeaderConfig,
    hint_subjects: &'static [DistinguishedName],
}

impl AuthSnapshot {
    /// A snapshot from its parts.
    pub fn new(client_ca: CaBundle, request_header: RequestHeaderConfig) -> Self {
        let subjects: Vec<DistinguishedName> = client_ca
            .subjects()
            .iter()
            .chain(request_header.ca.subjects())
            .cloned()
            .collect();
        AuthSnapshot {
            hint_subjects: intern_subjects(subjects),
            client_ca,
            request_header,
        }
    }

    /// The subjects of every trusted authority (client CA, then request-header CA): the
    /// hints sent to clients in the TLS handshake so they pick a matching certificate.
    pub fn hint_subjects(&self) -> &'static [DistinguishedName] {
        self.hint_subjects
    }
}

impl Default for AuthSnapshot {
    fn default() -> Self {
        AuthSnapshot::new(CaBundle::empty(), RequestHeaderConfig::default())
    }
}

/// Keeps every distinct list of hint subjects alive for the life of the process, so the TLS
/// verifier can lend them out (rustls borrows them from the verifier). A list is added only
/// when the trusted authorities change, which is rare (CA rotation).
fn intern_subjects(subjects: Vec<DistinguishedName>) -> &'static [DistinguishedName] {
    static INTERNED: Mutex<Vec<&'static [DistinguishedName]>> = Mutex::new(Vec::new());
    let same = |a: &[DistinguishedName]| {
        a.len() == subjects.len()
            && a.iter()
                .zip(&subjects)
                .all(|(x, y)| x.as_ref() == y.as_ref())
    };
    let mut interned = INTERNED.lock();
    if let Some(found) = interned.iter().find(|s| same(s)) {
        return found;
    }
    let leaked: &'static [DistinguishedName] = Box::leak(subjects.into_boxed_slice());
    interned.push(leaked);
    leaked
}

/// The current delegated authentication configuration, shared by the authenticators and the
/// TLS client-certificate verifier, replaced atomically when its sources change.
#[derive(Debug, Default)]
pub struct DelegatedAuthConfig {
    current: RwLock<Arc<AuthSnapshot>>,
    synced: AtomicBool,
}

impl DelegatedAuthConfig {
    /// A configuration starting at `snapshot`, already synced.
    pub fn new(snapshot: AuthSnapshot) -> Self {
        DelegatedAuthConfig {
            current: RwLock::new(Arc::new(snapshot)),
            synced: AtomicBool::new(true),
        }
    }

    /// A configuration trusting nothing, not yet synced (see [`DelegatedAuthConfig::replace`]).
    pub fn unsynced() -> Self {
        DelegatedAuthConfig::default()
    }

    /// The configuration in force now.
    pub fn current(&self) -> Arc<AuthSnapshot> {
        self.current.read().clone()
    }

    /// Puts `snapshot` in force for every following request and handshake, and marks the
    /// configuration synced.
    pub fn replace(&self, snapshot: AuthSnapshot) {
        *self.current.write() = Arc::new(snapshot);
        self.synced.store(true, Ordering::Release);
    }

    /// Whether a configuration has been loaded from its sources (for a readiness check).
    pub fn is_synced(&self) -> bool {
        self.synced.load(Ordering::Acquire)
    }
}
