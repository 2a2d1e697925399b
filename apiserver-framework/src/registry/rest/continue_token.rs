//! The opaque `continue` token of paged lists: the revision of the first page and the last
//! key returned, base64url-encoded JSON (`{"v":"meta.k8s.io/v1","rv":<n>,"start":"<key>\0"}`,
//! the shape upstream uses).
//!
//! Decoding errors carry upstream's texts (`continue key is not valid...`); the list answers
//! them as a 400 `invalid continue token: <text>`.

use base64::Engine;
use base64::alphabet::URL_SAFE;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
struct Token {
    v: String,
    rv: i64,
    start: String,
}

const TOKEN_VERSION: &str = "meta.k8s.io/v1";
const INVALID: &str = "continue key is not valid";

/// Unpadded base64url that, like Go's decoder, ignores CR/LF and tolerates non-zero
/// trailing bits.
const ENGINE: GeneralPurpose = GeneralPurpose::new(
    &URL_SAFE,
    GeneralPurposeConfig::new()
        .with_encode_padding(false)
        .with_decode_padding_mode(DecodePaddingMode::RequireNone)
        .with_decode_allow_trailing_bits(true),
);

/// Encodes a token for continuing after `last_key` at `revision`.
pub fn encode(revision: u64, last_key: &str) -> String {
    let t = Token {
        v: TOKEN_VERSION.into(),
        rv: i64::try_from(revision).unwrap_or(i64::MAX),
        start: format!("{last_key}\u{0}"),
    };
    ENGINE.encode(serde_json::to_vec(&t).unwrap_or_default())
}

/// Encodes a token for continuing after `last_key` at the latest revision, which the
/// expired-continue error offers (the rest of the list, no longer consistent with its start).
pub fn encode_latest(last_key: &str) -> String {
    let t = Token {
        v: TOKEN_VERSION.into(),
        rv: -1,
        start: format!("{last_key}\u{0}"),
    };
    ENGINE.encode(serde_json::to_vec(&t).unwrap_or_default())
}

/// Where Go's base64 decoder reports the input as corrupt: the first byte outside the
/// alphabet, or the last byte when a lone character ends the input.
fn corrupt_at(token: &str) -> Option<usize> {
    let mut count = 0usize;
    let mut last = 0usize;
    for (i, c) in token.bytes().enumerate() {
        if c == b'\r' || c == b'\n' {
            continue;
        }
        if !(c.is_ascii_alphanumeric() || c == b'-' || c == b'_') {
            return Some(i);
        }
        count += 1;
        last = i;
    }
    (count % 4 == 1).then_some(last)
}

/// Decodes a token into (revision, last key returned); the revision is `None` for a token that
/// continues at the latest revision.
pub fn decode(token: &str) -> Result<(Option<u64>, String), String> {
    if let Some(at) = corrupt_at(token) {
        return Err(format!("{INVALID}: illegal base64 data at input byte {at}"));
    }
    let cleaned: String = token.chars().filter(|c| *c != '\r' && *c != '\n').collect();
    let raw = ENGINE
        .decode(cleaned)
        .map_err(|e| format!("{INVALID}: {e}"))?;
    let t: Token = serde_json::from_slice(&raw).map_err(|e| format!("{INVALID}: {e}"))?;
    if t.v != TOKEN_VERSION {
        return Err(format!(
            "{INVALID}: server does not recognize this encoded version {}",
            t.v
        ));
    }
    if t.rv == 0 {
        return Err(format!(
            "{INVALID}: incorrect encoded start resourceVersion (version meta.k8s.io/v1)"
        ));
    }
    if t.start.is_empty() {
        return Err(format!(
            "{INVALID}: encoded start key empty (version meta.k8s.io/v1)"
        ));
    }
    if !is_clean_path(&t.start) {
        // Keys that climb out of their place (`..`, `//`, `.`) are refused, as upstream.
        return Err(format!("{INVALID}: {}", t.start));
    }
    // A negative revision continues at the latest one.
    let rv = u64::try_from(t.rv).ok();
    let start = t.start.strip_suffix('\u{0}').unwrap_or(&t.start);
    Ok((rv, start.to_string()))
}

/// Whether `/`-rooted `key` is already in the lexically clean form of a path: no empty,
/// `.` or `..` segments and no trailing slash.
fn is_clean_path(key: &str) -> bool {
    let rooted = key.strip_prefix('/').unwrap_or(key);
    rooted.is_empty()
        || rooted
            .split('/')
            .all(|seg| !seg.is_empty() && seg != "." && seg != "..")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let t = encode(42, "/g/flunders/ns/a");
        assert_eq!(
            decode(&t).unwrap(),
            (Some(42), "/g/flunders/ns/a".to_string())
        );
        let t = encode_latest("/g/flunders/ns/a");
        assert_eq!(decode(&t).unwrap(), (None, "/g/flunders/ns/a".to_string()));
    }

    #[test]
    fn bad_tokens() {
        assert_eq!(
            decode("a").unwrap_err(),
            "continue key is not valid: illegal base64 data at input byte 0"
        );
        assert_eq!(
            decode("e30=").unwrap_err(),
            "continue key is not valid: illegal base64 data at input byte 3"
        );
        assert!(decode("not-a-token").unwrap_err().starts_with(INVALID));
        // `{}`: no version.
        assert_eq!(
            decode("e30").unwrap_err(),
            "continue key is not valid: missing field `v` at line 1 column 2"
        );
        let enc = |json: &str| ENGINE.encode(json);
        assert_eq!(
            decode(&enc(r#"{"v":"meta.k8s.io/v1","rv":0,"start":"a"}"#)).unwrap_err(),
            "continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)"
        );
        assert_eq!(
            decode(&enc(r#"{"v":"meta.k8s.io/v1","rv":3,"start":""}"#)).unwrap_err(),
            "continue key is not valid: encoded start key empty (version meta.k8s.io/v1)"
        );
        assert_eq!(
            decode(&enc(r#"{"v":"x/v9","rv":3,"start":"a"}"#)).unwrap_err(),
            "continue key is not valid: server does not recognize this encoded version x/v9"
        );
        assert_eq!(
            decode(&enc(r#"{"v":"meta.k8s.io/v1","rv":3,"start":"/a/../b"}"#)).unwrap_err(),
            "continue key is not valid: /a/../b"
        );
    }
}
