//! The anonymous authenticator: the last resort of the chain when enabled.

use http::request::Parts;

use super::{Authenticated, Authenticator};
use crate::user::UserInfo;

/// The anonymous user name.
pub const ANONYMOUS_USER: &str = "system:anonymous";
/// The group of unauthenticated callers.
pub const UNAUTHENTICATED_GROUP: &str = "system:unauthenticated";
/// The group every authenticated user gets.
pub const AUTHENTICATED_GROUP: &str = "system:authenticated";

/// `system:anonymous` in group `system:unauthenticated`.
pub fn anonymous_user() -> UserInfo {
    UserInfo::new(ANONYMOUS_USER, &[UNAUTHENTICATED_GROUP])
}

/// Authenticates every request as [`anonymous_user`].
pub struct AnonymousAuthenticator;

#[async_trait::async_trait]
impl Authenticator for AnonymousAuthenticator {
    async fn authenticate(&self, _parts: &Parts) -> Authenticated {
        Authenticated::User(anonymous_user())
    }
}
