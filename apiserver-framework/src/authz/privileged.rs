//! Privileged groups, as upstream's `authorizerfactory.NewPrivilegedGroups`: members of any of
//! the groups (by default `system:masters`) may do anything.

use super::{Attributes, AuthorizationError, Authorizer, Decision};

/// The group whose members are always allowed by default.
pub const SYSTEM_MASTERS: &str = "system:masters";

/// Allows every request of a member of one of its groups; no opinion otherwise.
#[derive(Clone, Debug)]
pub struct PrivilegedGroups {
    groups: Vec<String>,
}

impl PrivilegedGroups {
    /// Members of `groups` are allowed everything.
    pub fn new<S: Into<String>>(groups: impl IntoIterator<Item = S>) -> Self {
        PrivilegedGroups {
            groups: groups.into_iter().map(Into::into).collect(),
        }
    }

    /// Only `system:masters`.
    pub fn system_masters() -> Self {
        Self::new([SYSTEM_MASTERS])
    }
}

#[async_trait::async_trait]
impl Authorizer for PrivilegedGroups {
    async fn authorize(&self, attrs: &Attributes) -> Result<Decision, AuthorizationError> {
        let member = attrs.user.groups.iter().any(|g| self.groups.contains(g));
        Ok(if member {
            Decision::Allow
        } else {
            Decision::NoOpinion(String::new())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::authz::{NonResourceAttributes, Request};
    use crate::user::UserInfo;

    fn attrs(groups: &[&str]) -> Attributes {
        Attributes {
            user: UserInfo::new("u", groups),
            request: Request::NonResource(NonResourceAttributes {
                path: "/apis".into(),
                verb: "get".into(),
            }),
        }
    }

    #[tokio::test]
    async fn members_are_allowed() {
        let a = PrivilegedGroups::system_masters();
        let d = a.authorize(&attrs(&["x", "system:masters"])).await;
        assert_eq!(d, Ok(Decision::Allow));
        let d = a.authorize(&attrs(&["system:authenticated"])).await;
        assert_eq!(d, Ok(Decision::NoOpinion(String::new())));
        let d = a.authorize(&attrs(&[])).await;
        assert_eq!(d, Ok(Decision::NoOpinion(String::new())));
    }
}
