//! Authenticators: turn a request's credentials into a [`UserInfo`].

use http::request::Parts;

use crate::user::UserInfo;

/// The outcome of authenticating a request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Authenticated {
    /// The request carries valid credentials of this user.
    User(UserInfo),
    /// The request carries no credentials this authenticator understands.
    NoCredentials,
    /// The request carries credentials that are not valid.
    Invalid,
}

/// Authenticates requests.
#[async_trait::async_trait]
pub trait Authenticator: Send + Sync + 'static {
    /// Authenticates one request from its head.
    async fn authenticate(&self, parts: &Parts) -> Authenticated;
}

/// Accepts exactly one bearer token (the `local` development mode's generated token).
pub struct StaticTokenAuthenticator {
    token: String,
    user: UserInfo,
}

impl StaticTokenAuthenticator {
    /// Accepts `token` as `user`.
    pub fn new(token: impl Into<String>, user: UserInfo) -> Self {
        StaticTokenAuthenticator {
            token: token.into(),
            user,
        }
    }
}

/// The bearer token of a request, if any.
pub fn bearer_token(parts: &Parts) -> Option<&str> {
    let value = parts
        .headers
        .get(http::header::AUTHORIZATION)?
        .to_str()
        .ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim())
        .filter(|t| !t.is_empty())
}

#[async_trait::async_trait]
impl Authenticator for StaticTokenAuthenticator {
    async fn authenticate(&self, parts: &Parts) -> Authenticated {
        match bearer_token(parts) {
            None => Authenticated::NoCredentials,
            Some(t) if constant_time_eq(t.as_bytes(), self.token.as_bytes()) => {
                Authenticated::User(self.user.clone())
            }
            Some(_) => Authenticated::Invalid,
        }
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}
