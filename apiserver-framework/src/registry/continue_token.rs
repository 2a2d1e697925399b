//! The opaque `continue` token of paged lists: the revision of the first page and the last
//! key returned, base64url-encoded JSON.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
struct Token {
    v: String,
    rv: u64,
    start: String,
}

const TOKEN_VERSION: &str = "meta.k8s.io/v1";

/// Encodes a token for continuing after `last_key` at `revision`.
pub fn encode(revision: u64, last_key: &str) -> String {
    let t = Token {
        v: TOKEN_VERSION.into(),
        rv: revision,
        start: format!("{last_key}\u{0}"),
    };
    URL_SAFE_NO_PAD.encode(serde_json::to_vec(&t).unwrap_or_default())
}

/// Decodes a token into (revision, last key returned).
pub fn decode(token: &str) -> Result<(u64, String), String> {
    let invalid = || {
        "continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)".to_string()
    };
    let raw = URL_SAFE_NO_PAD
        .decode(token.trim_end_matches('='))
        .map_err(|_| invalid())?;
    let t: Token = serde_json::from_slice(&raw).map_err(|_| invalid())?;
    if t.v != TOKEN_VERSION || t.rv == 0 {
        return Err(invalid());
    }
    let start = t.start.strip_suffix('\u{0}').ok_or_else(invalid)?;
    Ok((t.rv, start.to_string()))
}

#[cfg(test)]
mod tests {
    #[test]
    fn round_trip() {
        let t = super::encode(42, "/g/flunders/ns/a");
        assert_eq!(
            super::decode(&t).unwrap(),
            (42, "/g/flunders/ns/a".to_string())
        );
        assert!(super::decode("not-a-token").is_err());
        assert!(super::decode("e30").is_err());
    }
}
