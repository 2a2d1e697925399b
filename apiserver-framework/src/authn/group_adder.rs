//! Adding `system:authenticated` to authenticated users (upstream's
//! `AuthenticatedGroupAdder`).

use std::sync::Arc;

use http::request::Parts;

use super::anonymous::{ANONYMOUS_USER, AUTHENTICATED_GROUP, UNAUTHENTICATED_GROUP};
use super::{Authenticated, Authenticator};
use crate::user::UserInfo;

/// `user` with `system:authenticated` appended, unless it is `system:anonymous` or already
/// in `system:authenticated` or `system:unauthenticated`.
pub fn with_authenticated_group(mut user: UserInfo) -> UserInfo {
    let marked = user
        .groups
        .iter()
        .any(|g| g == AUTHENTICATED_GROUP || g == UNAUTHENTICATED_GROUP);
    if user.username != ANONYMOUS_USER && !marked {
        user.groups.push(AUTHENTICATED_GROUP.to_owned());
    }
    user
}

/// Applies [`with_authenticated_group`] to the users another authenticator finds.
pub struct AuthenticatedGroupAdder {
    inner: Arc<dyn Authenticator>,
}

impl AuthenticatedGroupAdder {
    /// Wraps `inner`.
    pub fn new(inner: Arc<dyn Authenticator>) -> Self {
        AuthenticatedGroupAdder { inner }
    }
}

#[async_trait::async_trait]
impl Authenticator for AuthenticatedGroupAdder {
    async fn authenticate(&self, parts: &Parts) -> Authenticated {
        match self.inner.authenticate(parts).await {
            Authenticated::User(user) => Authenticated::User(with_authenticated_group(user)),
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adds_the_group_once_and_never_to_anonymous() {
        let bob = with_authenticated_group(UserInfo::new("bob", &["dev"]));
        assert_eq!(bob.groups, vec!["dev", AUTHENTICATED_GROUP]);
        assert_eq!(with_authenticated_group(bob.clone()), bob);
        let anon = UserInfo::new(ANONYMOUS_USER, &[]);
        assert_eq!(with_authenticated_group(anon.clone()), anon);
        let unauth = UserInfo::new("x", &[UNAUTHENTICATED_GROUP]);
        assert_eq!(with_authenticated_group(unauth.clone()), unauth);
        let none = with_authenticated_group(UserInfo::new("carol", &[]));
        assert_eq!(none.groups, vec![AUTHENTICATED_GROUP]);
    }
}
