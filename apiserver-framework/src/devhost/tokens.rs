//! A static token file, in upstream's `--token-auth-file` format: one user per line,
//! `token,user,uid,"group1,group2"` (the groups column is optional; `#` starts a comment).

use std::collections::HashMap;
use std::path::Path;

use http::request::Parts;
use rand::Rng;

use crate::authn::{Authenticated, Authenticator, authenticator::bearer_token};
use crate::user::UserInfo;

/// Errors of reading a token file.
#[derive(Debug, thiserror::Error)]
pub enum TokenFileError {
    /// The file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The error.
        source: std::io::Error,
    },
    /// A line is not `token,user,uid[,"groups"]`.
    #[error("{path}:{line}: {message}")]
    Syntax {
        /// The file.
        path: String,
        /// The 1-based line.
        line: usize,
        /// What is wrong.
        message: String,
    },
}

/// The users of a token file, by token.
#[derive(Clone, Debug, Default)]
pub struct TokenFile {
    users: HashMap<String, UserInfo>,
}

/// Splits one CSV line into fields (double quotes group commas; `""` is a quote).
fn csv_fields(line: &str) -> Result<Vec<String>, String> {
    let mut fields = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                chars.next();
                field.push('"');
            }
            ('"', _) => quoted = !quoted,
            (',', false) => fields.push(std::mem::take(&mut field)),
            (c, _) => field.push(c),
        }
    }
    if quoted {
        return Err("unterminated quote".into());
    }
    fields.push(field);
    Ok(fields)
}

impl TokenFile {
    /// Parses the contents of a token file (`path` is only used in messages).
    pub fn parse(path: &str, text: &str) -> Result<Self, TokenFileError> {
        let mut users = HashMap::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let syntax = |message: String| TokenFileError::Syntax {
                path: path.to_string(),
                line: i + 1,
                message,
            };
            let fields = csv_fields(line).map_err(syntax)?;
            if fields.len() < 3 {
                return Err(syntax(format!(
                    "expected token,user,uid[,\"groups\"], got {} fields",
                    fields.len()
                )));
            }
            if fields[0].is_empty() || fields[1].is_empty() {
                return Err(syntax("the token and the user must not be empty".into()));
            }
            let groups = fields
                .get(3)
                .map(|g| {
                    g.split(',')
                        .map(str::trim)
                        .filter(|g| !g.is_empty())
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default();
            users.insert(
                fields[0].clone(),
                UserInfo {
                    username: fields[1].clone(),
                    uid: fields[2].clone(),
                    groups,
                    ..Default::default()
                },
            );
        }
        Ok(TokenFile { users })
    }

    /// Reads and parses a token file.
    pub fn read(path: &Path) -> Result<Self, TokenFileError> {
        let text = std::fs::read_to_string(path).map_err(|source| TokenFileError::Io {
            path: path.display().to_string(),
            source,
        })?;
        Self::parse(&path.display().to_string(), &text)
    }

    /// The user a token belongs to, as listed (without `system:authenticated`).
    pub fn user(&self, token: &str) -> Option<&UserInfo> {
        self.users.get(token)
    }

    /// The token of the user named `username`, if listed.
    pub fn token_of(&self, username: &str) -> Option<&str> {
        self.users
            .iter()
            .find(|(_, u)| u.username == username)
            .map(|(t, _)| t.as_str())
    }

    /// The user a token authenticates as: the listed user plus `system:authenticated`.
    pub fn authenticate_token(&self, token: &str) -> Option<UserInfo> {
        let mut user = self.users.get(token)?.clone();
        if !user.groups.iter().any(|g| g == "system:authenticated") {
            user.groups.push("system:authenticated".into());
        }
        Some(user)
    }
}

#[async_trait::async_trait]
impl Authenticator for TokenFile {
    async fn authenticate(&self, parts: &Parts) -> Authenticated {
        match bearer_token(parts) {
            None => Authenticated::NoCredentials,
            Some(t) => match self.authenticate_token(t) {
                Some(u) => Authenticated::User(u),
                None => Authenticated::Invalid,
            },
        }
    }
}

/// A new random bearer token of `len` lower-case letters and digits.
pub(crate) fn random_token_of(len: usize) -> String {
    const CHARS: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let mut rng = rand::rng();
    (0..len)
        .map(|_| CHARS[rng.random_range(0..CHARS.len())] as char)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_upstream_format() {
        let f = TokenFile::parse(
            "t",
            "# users\nabc,alice,1,\"editors,dev\"\n\ndef,bob,2\nqx,\"we\"\"ird\",3,\n",
        )
        .unwrap();
        let alice = f.authenticate_token("abc").unwrap();
        assert_eq!(alice.username, "alice");
        assert_eq!(alice.uid, "1");
        assert_eq!(alice.groups, ["editors", "dev", "system:authenticated"]);
        assert_eq!(
            f.authenticate_token("def").unwrap().groups,
            ["system:authenticated"]
        );
        assert_eq!(f.user("qx").unwrap().username, "we\"ird");
        assert!(f.user("nope").is_none());
    }

    #[test]
    fn rejects_bad_lines() {
        let e = TokenFile::parse("t", "ok,u,1\nonly,two\n").unwrap_err();
        assert_eq!(
            e.to_string(),
            "t:2: expected token,user,uid[,\"groups\"], got 2 fields"
        );
        assert!(TokenFile::parse("t", "a,\"b,1").is_err());
        assert!(TokenFile::parse("t", ",u,1").is_err());
    }
}
