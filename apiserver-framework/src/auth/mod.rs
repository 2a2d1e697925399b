//! Who is calling: the authenticated user, and how requests are authenticated.

pub mod authenticator;
pub mod peer;
pub mod user;

pub use authenticator::{Authenticated, Authenticator, StaticTokenAuthenticator};
pub use peer::{PeerAddr, PeerCertificates};
pub use user::UserInfo;

/// Paths every caller may reach, authenticated or not (upstream's default always-allow paths).
pub const ALWAYS_ALLOW_PATHS: &[&str] = &["/healthz", "/readyz", "/livez"];

/// Whether `path` is an always-allowed path or below one.
pub fn is_always_allowed(path: &str) -> bool {
    ALWAYS_ALLOW_PATHS
        .iter()
        .any(|p| path == *p || path.strip_prefix(p).is_some_and(|r| r.starts_with('/')))
}
