//! The identity of a caller, as authentication establishes it and everything after reads it
//! (authorization, admission, audit, the registry).

use std::collections::BTreeMap;

/// An authenticated user, as upstream's `user.Info`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UserInfo {
    /// User name, e.g. `alice` or `system:anonymous`.
    pub username: String,
    /// Unique id (may be empty).
    pub uid: String,
    /// Groups, e.g. `system:authenticated`.
    pub groups: Vec<String>,
    /// Extra attributes.
    pub extra: BTreeMap<String, Vec<String>>,
}

impl UserInfo {
    /// A user with a name and groups.
    pub fn new(username: impl Into<String>, groups: &[&str]) -> Self {
        UserInfo {
            username: username.into(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            ..Default::default()
        }
    }
}
