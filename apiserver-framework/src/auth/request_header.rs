//! The front-proxy authenticator: a proxy whose client certificate chains to the
//! request-header CA asserts the user with `X-Remote-*` headers (upstream's
//! `headerrequest` wrapped in an x509 `Verifier`).

use std::collections::BTreeMap;
use std::sync::Arc;

use http::HeaderMap;
use http::request::Parts;

use super::cert_subject::CertSubject;
use super::delegated::{DelegatedAuthConfig, RequestHeaderConfig};
use super::{Authenticated, Authenticator, PeerCertificates, UserInfo};

/// Authenticates requests from a trusted front proxy by its headers.
///
/// No client certificate, or no request-header CA configured: no credentials. A certificate
/// that does not verify against the request-header CA, or whose common name is not allowed:
/// invalid (as upstream, which lets a later authenticator still succeed). A trusted proxy
/// that names no user: no credentials.
pub struct RequestHeaderAuthenticator {
    config: Arc<DelegatedAuthConfig>,
}

impl RequestHeaderAuthenticator {
    /// Reads the current request-header settings of `config` at every request.
    pub fn new(config: Arc<DelegatedAuthConfig>) -> Self {
        RequestHeaderAuthenticator { config }
    }
}

/// Whether `chain` is a trusted front proxy under `settings`.
fn trusted(chain: &PeerCertificates, settings: &RequestHeaderConfig) -> Result<(), String> {
    settings
        .ca
        .verify_client_chain(&chain.0)
        .map_err(|e| e.to_string())?;
    if settings.allowed_names.is_empty() {
        return Ok(());
    }
    let leaf = chain.0.first().ok_or("no client certificate")?;
    let subject = CertSubject::from_der(leaf).map_err(|e| e.to_string())?;
    if settings.allowed_names.contains(&subject.common_name) {
        Ok(())
    } else {
        Err(format!(
            "x509: subject with cn={} is not in the allowed list",
            subject.common_name
        ))
    }
}

#[async_trait::async_trait]
impl Authenticator for RequestHeaderAuthenticator {
    async fn authenticate(&self, parts: &Parts) -> Authenticated {
        let Some(chain) = parts.extensions.get::<PeerCertificates>() else {
            return Authenticated::NoCredentials;
        };
        let current = self.config.current();
        let settings = &current.request_header;
        if settings.ca.is_empty() || chain.0.is_empty() {
            return Authenticated::NoCredentials;
        }
        if let Err(reason) = trusted(chain, settings) {
            tracing::debug!("front-proxy certificate not trusted: {reason}");
            return Authenticated::Invalid;
        }
        match user_from_headers(&parts.headers, settings) {
            Some(user) => Authenticated::User(user),
            None => Authenticated::NoCredentials,
        }
    }
}

fn text(value: &http::HeaderValue) -> Option<&str> {
    std::str::from_utf8(value.as_bytes()).ok()
}

/// The user the headers name (from a trusted proxy): the first non-empty username header
/// (each header's first line), the first non-empty uid header, every non-empty line of every
/// group header, and extra attributes from headers starting with an extra prefix (key: the
/// rest of the name, lower-cased then %-unescaped, raw when the escape is invalid). `None`
/// when no username header is set.
pub fn user_from_headers(headers: &HeaderMap, settings: &RequestHeaderConfig) -> Option<UserInfo> {
    let first_value = |names: &[http::HeaderName]| {
        names
            .iter()
            .filter_map(|n| headers.get(n).and_then(text))
            .find(|v| !v.is_empty())
            .map(str::to_owned)
    };
    let username = first_value(&settings.username_headers)?;
    let uid = first_value(&settings.uid_headers).unwrap_or_default();
    let groups = settings
        .group_headers
        .iter()
        .flat_map(|n| headers.get_all(n).iter().filter_map(text))
        .filter(|v| !v.is_empty())
        .map(str::to_owned)
        .collect();
    let mut extra: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for prefix in &settings.extra_headers_prefixes {
        for name in headers.keys() {
            let Some(suffix) = strip_prefix_ignore_case(name.as_str(), prefix) else {
                continue;
            };
            let key = unescape_extra_key(&suffix.to_ascii_lowercase());
            let values = headers
                .get_all(name)
                .iter()
                .filter_map(text)
                .map(str::to_owned);
            extra.entry(key).or_default().extend(values);
        }
    }
    Some(UserInfo {
        username,
        uid,
        groups,
        extra,
    })
}

fn strip_prefix_ignore_case<'a>(name: &'a str, prefix: &str) -> Option<&'a str> {
    let head = name.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &name[prefix.len()..])
}

/// Go's `url.PathUnescape`, or the key itself when its escapes are invalid (or decode to
/// something that is not UTF-8).
fn unescape_extra_key(key: &str) -> String {
    path_unescape(key).unwrap_or_else(|| key.to_owned())
}

fn path_unescape(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = text.get(i + 1..i + 3)?;
            out.push(
                u8::from_str_radix(hex, 16)
                    .ok()
                    .filter(|_| hex.bytes().all(|b| b.is_ascii_hexdigit()))?,
            );
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// Removes the headers `settings` reads (username, uid, group headers and every header
/// with an extra prefix) from `headers`.
pub fn clear_request_headers(headers: &mut HeaderMap, settings: &RequestHeaderConfig) {
    for name in settings
        .username_headers
        .iter()
        .chain(&settings.uid_headers)
        .chain(&settings.group_headers)
    {
        headers.remove(name);
    }
    clear_prefixed(headers, &settings.extra_headers_prefixes);
}

/// Removes every header whose name starts with one of `prefixes` (case-insensitively).
pub(crate) fn clear_prefixed(headers: &mut HeaderMap, prefixes: &[String]) {
    let doomed: Vec<http::HeaderName> = headers
        .keys()
        .filter(|n| {
            prefixes
                .iter()
                .any(|p| strip_prefix_ignore_case(n.as_str(), p).is_some())
        })
        .cloned()
        .collect();
    for name in doomed {
        headers.remove(name);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::{HeaderName, HeaderValue};

    fn settings() -> RequestHeaderConfig {
        RequestHeaderConfig {
            uid_headers: vec![HeaderName::from_static("x-remote-uid")],
            ..RequestHeaderConfig::default()
        }
    }

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (k, v) in pairs {
            map.append(
                HeaderName::from_bytes(k.as_bytes()).unwrap(),
                HeaderValue::from_str(v).unwrap(),
            );
        }
        map
    }

    #[test]
    fn groups_come_from_every_header_line_without_comma_splitting() {
        let h = headers(&[
            ("X-Remote-User", "alice"),
            ("X-Remote-Uid", "u-1"),
            ("X-Remote-Group", "dev,ops"),
            ("X-Remote-Group", ""),
            ("X-Remote-Group", "system:masters"),
        ]);
        let user = user_from_headers(&h, &settings()).unwrap();
        assert_eq!(user.username, "alice");
        assert_eq!(user.uid, "u-1");
        assert_eq!(user.groups, vec!["dev,ops", "system:masters"]);
        assert!(user.extra.is_empty());
    }

    #[test]
    fn first_non_empty_username_header_wins() {
        let mut s = settings();
        s.username_headers = vec![
            HeaderName::from_static("x-first"),
            HeaderName::from_static("x-remote-user"),
        ];
        let h = headers(&[("X-First", ""), ("X-Remote-User", "bob")]);
        assert_eq!(user_from_headers(&h, &s).unwrap().username, "bob");
        assert!(user_from_headers(&headers(&[("X-First", "")]), &s).is_none());
        assert!(user_from_headers(&headers(&[("X-Remote-Group", "g")]), &s).is_none());
    }

    #[test]
    fn extra_keys_are_lower_cased_then_unescaped() {
        let h = headers(&[
            ("X-Remote-User", "alice"),
            ("X-Remote-Extra-Example.com%2FScopes", "read"),
            ("X-Remote-Extra-example.com%2fscopes", "write"),
            ("x-remote-extra-bad%zzkey", "v"),
            ("X-Remote-Extra-Reason", "a"),
            ("X-Remote-Extra-Reason", "b"),
        ]);
        let user = user_from_headers(&h, &settings()).unwrap();
        assert_eq!(user.extra["example.com/scopes"], vec!["read", "write"]);
        assert_eq!(user.extra["bad%zzkey"], vec!["v"]);
        assert_eq!(user.extra["reason"], vec!["a", "b"]);
        assert_eq!(user.extra.len(), 3);
    }

    #[test]
    fn unescape_matches_go_path_unescape() {
        assert_eq!(path_unescape("a%20b+c").as_deref(), Some("a b+c"));
        assert_eq!(path_unescape("%"), None);
        assert_eq!(path_unescape("%4"), None);
        assert_eq!(path_unescape("%+1"), None);
        assert_eq!(path_unescape("%e2%9c%93").as_deref(), Some("✓"));
    }

    #[test]
    fn clearing_removes_every_consumed_header() {
        let mut h = headers(&[
            ("X-Remote-User", "alice"),
            ("X-Remote-Uid", "u"),
            ("X-Remote-Group", "g"),
            ("X-Remote-Group", "h"),
            ("X-Remote-Extra-A", "1"),
            ("X-Remote-Extra-B", "2"),
            ("Accept", "application/json"),
        ]);
        clear_request_headers(&mut h, &settings());
        assert_eq!(h.len(), 1);
        assert!(h.contains_key("accept"));
    }
}
