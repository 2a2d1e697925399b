//! Who is calling: the authenticated user, and how requests are authenticated.
//!
//! The delegated chain of an extension API server ([`DelegatingAuthenticator`]) reads its
//! trusted authorities and front-proxy headers from a [`DelegatedAuthConfig`], built from
//! the flags ([`AuthenticationOptions`]) and the host's
//! `kube-system/extension-apiserver-authentication` ConfigMap ([`start_delegated_config`]).
//! The TLS listener asks for client certificates with [`client_cert_verifier`] over the same
//! configuration.

pub(crate) mod anonymous;
pub mod authenticator;
pub(crate) mod ca_bundle;
pub(crate) mod cert_subject;
pub(crate) mod client_cert;
pub(crate) mod configmap;
pub mod delegated;
pub(crate) mod delegating;
pub(crate) mod group_adder;
pub(crate) mod options;
pub(crate) mod peer;
pub(crate) mod request_header;
pub(crate) mod token_cache;
pub(crate) mod token_review;
pub(crate) mod union;
pub(crate) mod verified;
pub(crate) mod x509;

pub use authenticator::{Authenticated, Authenticator, StaticTokenAuthenticator, StaticTokens};
pub use ca_bundle::CaBundle;
pub use configmap::{DelegatedAuthSetup, start_delegated_config};
pub use delegated::{AuthSnapshot, DelegatedAuthConfig, RequestHeaderConfig};
pub use delegating::{DelegatingAuthenticator, DelegatingOptions, client_cert_verifier};
pub use options::{AuthConfigError, AuthenticationOptions};
pub use peer::{PeerAddr, PeerCertificates};
pub use token_review::{TokenReviewError, TokenReviewer};
pub(crate) use verified::VerifiedChains;

/// Removes the credentials of an authenticated request before it goes further, as
/// upstream's authentication filter does: `Authorization`, the configured front-proxy
/// headers (username, uid, group, extra prefixes) and always the default
/// `X-Remote-User`/`X-Remote-Uid`/`X-Remote-Group`/`X-Remote-Extra-*` headers.
///
/// The handler chain calls it after authentication succeeds:
/// `authn::strip_credentials(&mut parts.headers, &config.current())`.
pub(crate) fn strip_credentials(headers: &mut http::HeaderMap, config: &AuthSnapshot) {
    headers.remove(http::header::AUTHORIZATION);
    request_header::clear_request_headers(headers, &config.request_header);
    request_header::clear_request_headers(headers, default_request_headers());
}

/// [`strip_credentials`] when no request-header configuration is in use (local mode).
pub(crate) fn strip_default_credentials(headers: &mut http::HeaderMap) {
    static NONE: std::sync::OnceLock<AuthSnapshot> = std::sync::OnceLock::new();
    strip_credentials(headers, NONE.get_or_init(AuthSnapshot::default));
}

fn default_request_headers() -> &'static RequestHeaderConfig {
    static DEFAULT: std::sync::OnceLock<RequestHeaderConfig> = std::sync::OnceLock::new();
    DEFAULT.get_or_init(|| RequestHeaderConfig {
        uid_headers: vec![http::HeaderName::from_static(delegated::DEFAULT_UID_HEADER)],
        ..RequestHeaderConfig::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_are_stripped_configured_and_default_headers_alike() {
        let mut snapshot = AuthSnapshot::default();
        snapshot.request_header.username_headers = vec![http::HeaderName::from_static("x-user")];
        snapshot.request_header.group_headers = vec![http::HeaderName::from_static("x-groups")];
        snapshot.request_header.extra_headers_prefixes = vec!["x-extra-".into()];
        let mut headers = http::HeaderMap::new();
        for name in [
            "authorization",
            "x-user",
            "x-groups",
            "x-extra-scope",
            "x-remote-user",
            "x-remote-uid",
            "x-remote-group",
            "x-remote-extra-reason",
            "accept",
        ] {
            headers.append(name, http::HeaderValue::from_static("v"));
        }
        headers.append("x-remote-group", http::HeaderValue::from_static("w"));
        headers.append("x-extra-scope", http::HeaderValue::from_static("w"));
        strip_credentials(&mut headers, &snapshot);
        let left: Vec<&str> = headers.keys().map(|k| k.as_str()).collect();
        assert_eq!(left, ["accept"]);
        // A configured prefix in capitals, and the default headers without any configuration.
        snapshot.request_header.extra_headers_prefixes = vec!["X-Extra-".into()];
        let mut headers = http::HeaderMap::new();
        for name in [
            "x-extra-scope",
            "x-remote-extra-a",
            "authorization",
            "x-remoteuser",
            "x-extra",
        ] {
            headers.append(name, http::HeaderValue::from_static("v"));
        }
        let mut unconfigured = headers.clone();
        let names = |h: &http::HeaderMap| {
            let mut names: Vec<String> = h.keys().map(|k| k.to_string()).collect();
            names.sort();
            names
        };
        strip_credentials(&mut headers, &snapshot);
        assert_eq!(names(&headers), ["x-extra", "x-remoteuser"]);
        strip_default_credentials(&mut unconfigured);
        assert_eq!(
            names(&unconfigured),
            ["x-extra", "x-extra-scope", "x-remoteuser"]
        );
        // Nothing to remove: nothing changes.
        let mut plain = http::HeaderMap::new();
        plain.append("accept", http::HeaderValue::from_static("application/json"));
        plain.append("user-agent", http::HeaderValue::from_static("kubectl"));
        let before = plain.clone();
        strip_credentials(&mut plain, &snapshot);
        assert_eq!(plain, before);
    }
}
