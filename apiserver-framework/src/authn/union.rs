//! Several authenticators tried in order, as upstream's `union` authenticator.

use std::sync::Arc;

use http::request::Parts;

use super::{Authenticated, Authenticator};

/// Tries authenticators in order; the first user found wins. Otherwise the request is
/// invalid if any of them found invalid credentials, else it has no credentials. With
/// `fail_on_error`, invalid credentials stop the search at once (upstream's
/// `NewFailOnError`, used so that bad credentials are never treated as anonymous).
pub struct UnionAuthenticator {
    authenticators: Vec<Arc<dyn Authenticator>>,
    fail_on_error: bool,
}

impl UnionAuthenticator {
    /// Tries every authenticator, invalid credentials of one not stopping the others.
    pub fn new(authenticators: Vec<Arc<dyn Authenticator>>) -> Self {
        UnionAuthenticator {
            authenticators,
            fail_on_error: false,
        }
    }

    /// Stops at the first authenticator finding invalid credentials.
    pub fn fail_on_error(authenticators: Vec<Arc<dyn Authenticator>>) -> Self {
        UnionAuthenticator {
            authenticators,
            fail_on_error: true,
        }
    }
}

#[async_trait::async_trait]
impl Authenticator for UnionAuthenticator {
    async fn authenticate(&self, parts: &Parts) -> Authenticated {
        let mut invalid = false;
        for authenticator in &self.authenticators {
            match authenticator.authenticate(parts).await {
                Authenticated::User(user) => return Authenticated::User(user),
                Authenticated::Invalid if self.fail_on_error => return Authenticated::Invalid,
                Authenticated::Invalid => invalid = true,
                Authenticated::NoCredentials => {}
            }
        }
        if invalid {
            Authenticated::Invalid
        } else {
            Authenticated::NoCredentials
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::user::UserInfo;

    struct Fixed(Authenticated);

    #[async_trait::async_trait]
    impl Authenticator for Fixed {
        async fn authenticate(&self, _parts: &Parts) -> Authenticated {
            self.0.clone()
        }
    }

    fn parts() -> Parts {
        http::Request::new(()).into_parts().0
    }

    fn fixed(a: Authenticated) -> Arc<dyn Authenticator> {
        Arc::new(Fixed(a))
    }

    #[tokio::test]
    async fn first_user_wins_even_after_invalid() {
        let alice = Authenticated::User(UserInfo::new("alice", &[]));
        let union = UnionAuthenticator::new(vec![
            fixed(Authenticated::Invalid),
            fixed(Authenticated::NoCredentials),
            fixed(alice.clone()),
            fixed(Authenticated::User(UserInfo::new("bob", &[]))),
        ]);
        assert_eq!(union.authenticate(&parts()).await, alice);
    }

    #[tokio::test]
    async fn invalid_beats_no_credentials() {
        let union = UnionAuthenticator::new(vec![
            fixed(Authenticated::NoCredentials),
            fixed(Authenticated::Invalid),
        ]);
        assert_eq!(union.authenticate(&parts()).await, Authenticated::Invalid);
        let none = UnionAuthenticator::new(vec![fixed(Authenticated::NoCredentials)]);
        assert_eq!(
            none.authenticate(&parts()).await,
            Authenticated::NoCredentials
        );
    }

    #[tokio::test]
    async fn fail_on_error_stops_at_invalid() {
        let union = UnionAuthenticator::fail_on_error(vec![
            fixed(Authenticated::Invalid),
            fixed(Authenticated::User(UserInfo::new("anyone", &[]))),
        ]);
        assert_eq!(union.authenticate(&parts()).await, Authenticated::Invalid);
    }
}
