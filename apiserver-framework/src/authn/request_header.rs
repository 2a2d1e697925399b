//! The front-proxy authenticator: a proxy whose client certificate chains to the
//! request-header CA asserts the user with `X-Remote-*` headers (upstream's
//! `headerrequest` wrapped in an x509 `Verifier`).

use std::collections::BTreeMap;
use std::sync::Arc;

use http::HeaderMap;
use http::request::Parts;

use super::cert_subject::CertSubject;
use super::delegated::{DelegatedAuthConfig, RequestHeaderConfig};
use super::{Authenticated, Authenticator, PeerCertificates, VerifiedChains};
use crate::user::UserInfo;

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

/// Whether `chain` is a trusted front proxy under `settings`; through the connection's
/// `verified` chains when the listener provides them.
fn trusted(
    chain: &PeerCertificates,
    verified: Option<&VerifiedChains>,
    settings: &RequestHeaderConfig,
) -> Result<(), String> {
    match verified {
        Some(memo) => memo.verify(&settings.ca, &chain.0),
        None => settings.ca.verify_client_chain(&chain.0),
    }
    .map_err(|e| e.to_string())?;
    if settings.allowed_names.is_empty() {
        return Ok(());
    }
    let leaf = chain.0.first().ok_or("no client certificate")?;
    let subject = match verified {
        Some(memo) => memo.subject(leaf),
        None => CertSubject::from_der(leaf),
    }
    .map_err(|e| e.to_string())?;
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
        let verified = parts.extensions.get::<VerifiedChains>();
        if let Err(reason) = trusted(chain, verified, settings) {
            tracing::debug!("front-proxy certificate not trusted: {reason}");
            return Authenticated::Invalid;
        }
        match user_from_headers(&parts.headers, settings) {
            Ok(Some(user)) => Authenticated::User(user),
            Ok(None) => Authenticated::NoCredentials,
            Err(e) => {
                tracing::debug!("front-proxy headers refused: {e}");
                Authenticated::Invalid
            }
        }
    }
}

/// A front-proxy identity header whose value is not UTF-8 text.
#[derive(Debug, thiserror::Error)]
#[error("the value of the {0} header is not UTF-8")]
pub struct NotUtf8(pub String);

/// A header value as text. The front proxy sends names as they are, UTF-8 included (upstream's
/// `SetAuthProxyHeaders`), and upstream reads the bytes back as they are; a value that is not
/// UTF-8 cannot be a name here, and is refused rather than skipped (skipping would make the
/// caller someone else: anonymous, or a user without that group).
fn text<'a>(name: &http::HeaderName, value: &'a http::HeaderValue) -> Result<&'a str, NotUtf8> {
    std::str::from_utf8(value.as_bytes()).map_err(|_| NotUtf8(name.to_string()))
}

/// The user the headers name (from a trusted proxy), read as upstream's `headerrequest`
/// reads them: the first non-empty username header (each header's first value), the first
/// non-empty uid header, every non-empty value of every group header, and extra attributes
/// from headers starting with an extra prefix (key: the rest of the name, lower-cased then
/// %-unescaped, raw when the escape is invalid). Values are UTF-8 text as sent, `jürgen` as
/// `jürgen`. `Ok(None)` when no username header is set; an error when a value read is not
/// UTF-8.
pub fn user_from_headers(
    headers: &HeaderMap,
    settings: &RequestHeaderConfig,
) -> Result<Option<UserInfo>, NotUtf8> {
    let first_value = |names: &[http::HeaderName]| -> Result<Option<String>, NotUtf8> {
        for n in names {
            if let Some(v) = headers.get(n) {
                let v = text(n, v)?;
                if !v.is_empty() {
                    return Ok(Some(v.to_owned()));
                }
            }
        }
        Ok(None)
    };
    let Some(username) = first_value(&settings.username_headers)? else {
        return Ok(None);
    };
    let uid = first_value(&settings.uid_headers)?.unwrap_or_default();
    let mut groups = Vec::new();
    for n in &settings.group_headers {
        for v in headers.get_all(n) {
            let v = text(n, v)?;
            if !v.is_empty() {
                groups.push(v.to_owned());
            }
        }
    }
    let mut extra: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for prefix in &settings.extra_headers_prefixes {
        for name in headers.keys() {
            let Some(suffix) = strip_prefix_ignore_case(name.as_str(), prefix) else {
                continue;
            };
            let key = unescape_extra_key(&suffix.to_ascii_lowercase());
            let values = extra.entry(key).or_default();
            for v in headers.get_all(name) {
                values.push(text(name, v)?.to_owned());
            }
        }
    }
    Ok(Some(UserInfo {
        username,
        uid,
        groups,
        extra,
    }))
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
        let user = user_from_headers(&h, &settings()).unwrap().unwrap();
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
        assert_eq!(user_from_headers(&h, &s).unwrap().unwrap().username, "bob");
        assert!(
            user_from_headers(&headers(&[("X-First", "")]), &s)
                .unwrap()
                .is_none()
        );
        assert!(
            user_from_headers(&headers(&[("X-Remote-Group", "g")]), &s)
                .unwrap()
                .is_none()
        );
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
        let user = user_from_headers(&h, &settings()).unwrap().unwrap();
        assert_eq!(user.extra["example.com/scopes"], vec!["read", "write"]);
        assert_eq!(user.extra["bad%zzkey"], vec!["v"]);
        assert_eq!(user.extra["reason"], vec!["a", "b"]);
        assert_eq!(user.extra.len(), 3);
    }

    /// Values as raw bytes, as a proxy sends a name with non-ASCII letters.
    fn raw_headers(pairs: &[(&str, &[u8])]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (k, v) in pairs {
            map.append(
                HeaderName::from_bytes(k.as_bytes()).unwrap(),
                HeaderValue::from_bytes(v).unwrap(),
            );
        }
        map
    }

    #[test]
    fn utf8_values_are_read_as_sent() {
        let h = raw_headers(&[
            ("X-Remote-User", "jürgen".as_bytes()),
            ("X-Remote-Uid", "ユーザー".as_bytes()),
            ("X-Remote-Group", "équipe".as_bytes()),
            ("X-Remote-Extra-R%C3%B4le", "chef ✓".as_bytes()),
        ]);
        let user = user_from_headers(&h, &settings()).unwrap().unwrap();
        assert_eq!(user.username, "jürgen");
        assert_eq!(user.uid, "ユーザー");
        assert_eq!(user.groups, ["équipe"]);
        assert_eq!(user.extra["rôle"], ["chef ✓"]);
    }

    #[test]
    fn values_that_are_not_utf8_are_refused_not_skipped() {
        for (name, bad) in [
            ("X-Remote-User", "X-Remote-User"),
            ("X-Remote-Group", "X-Remote-Group"),
            ("X-Remote-Extra-K", "X-Remote-Extra-K"),
        ] {
            let mut h = raw_headers(&[("X-Remote-User", b"alice"), ("X-Remote-Group", b"g")]);
            h.insert(
                HeaderName::from_bytes(bad.as_bytes()).unwrap(),
                HeaderValue::from_bytes(b"j\xfcrgen").unwrap(),
            );
            let e = user_from_headers(&h, &settings()).unwrap_err();
            assert_eq!(e.0, name.to_ascii_lowercase());
        }
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
