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

/// Bearer tokens mapped to users: a fixed table, as upstream's `--token-auth-file` holds one
/// (for a file in that format, see the development host's token file). Meant for tests and
/// development servers; a token that is not in the table is [`Authenticated::Invalid`].
#[derive(Clone, Debug, Default)]
pub struct StaticTokens {
    users: std::collections::BTreeMap<String, UserInfo>,
}

impl StaticTokens {
    /// Adds (or replaces) the user that `token` authenticates as.
    pub fn with(mut self, token: impl Into<String>, user: UserInfo) -> Self {
        self.users.insert(token.into(), user);
        self
    }
}

impl<K: Into<String>> FromIterator<(K, UserInfo)> for StaticTokens {
    fn from_iter<I: IntoIterator<Item = (K, UserInfo)>>(iter: I) -> Self {
        StaticTokens {
            users: iter.into_iter().map(|(k, u)| (k.into(), u)).collect(),
        }
    }
}

impl<K: Into<String>, const N: usize> From<[(K, UserInfo); N]> for StaticTokens {
    fn from(users: [(K, UserInfo); N]) -> Self {
        users.into_iter().collect()
    }
}

#[async_trait::async_trait]
impl Authenticator for StaticTokens {
    async fn authenticate(&self, parts: &Parts) -> Authenticated {
        match bearer_token(parts) {
            None => Authenticated::NoCredentials,
            Some(t) => self
                .users
                .get(t)
                .cloned()
                .map_or(Authenticated::Invalid, Authenticated::User),
        }
    }
}

/// The bearer token of a request, if any.
pub(crate) fn bearer_token(parts: &Parts) -> Option<&str> {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn request(authorization: Option<&str>) -> Parts {
        let mut builder = http::Request::builder().uri("/apis");
        if let Some(value) = authorization {
            builder = builder.header(http::header::AUTHORIZATION, value);
        }
        builder.body(()).unwrap().into_parts().0
    }

    #[tokio::test]
    async fn static_tokens_know_their_users_and_refuse_the_rest() {
        let alice = UserInfo::new("alice", &["system:authenticated"]);
        let tokens = StaticTokens::from([("alice-token", alice.clone())])
            .with("bob-token", UserInfo::new("bob", &["devs"]));
        let auth = |header| {
            let tokens = tokens.clone();
            async move { tokens.authenticate(&request(header)).await }
        };
        assert_eq!(
            auth(Some("Bearer alice-token")).await,
            Authenticated::User(alice)
        );
        assert!(matches!(
            auth(Some("bearer bob-token")).await,
            Authenticated::User(u) if u.username == "bob"
        ));
        assert_eq!(auth(Some("Bearer mallory")).await, Authenticated::Invalid);
        assert_eq!(auth(Some("Basic abc")).await, Authenticated::NoCredentials);
        assert_eq!(auth(None).await, Authenticated::NoCredentials);
    }
}
