//! The authorizer of a server delegating to its host cluster, as upstream's
//! `DelegatingAuthorizationOptions`: members of the always-allowed groups (`system:masters`),
//! then the always-allowed paths, then a cached SubjectAccessReview.

use std::sync::Arc;
use std::time::Duration;

use super::path::{DEFAULT_ALWAYS_ALLOW_PATHS, InvalidPathPattern, PathAuthorizer};
use super::privileged::{PrivilegedGroups, SYSTEM_MASTERS};
use super::union::{NamedAuthorizer, UnionAuthorizer};
use super::webhook::{DEFAULT_CACHE_TTL, SubjectAccessReviewer, WebhookAuthorizer};

/// How the delegating authorizer is put together.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DelegatingAuthorizerConfig {
    /// Paths anyone may reach (`--authorization-always-allow-paths`); default `/healthz`,
    /// `/readyz`, `/livez`.
    pub always_allow_paths: Vec<String>,
    /// Groups whose members may do anything; default `system:masters`.
    pub always_allow_groups: Vec<String>,
    /// How long allowed answers are cached; default 10 s.
    pub allow_cache_ttl: Duration,
    /// How long other answers are cached; default 10 s.
    pub deny_cache_ttl: Duration,
}

impl Default for DelegatingAuthorizerConfig {
    fn default() -> Self {
        DelegatingAuthorizerConfig {
            always_allow_paths: DEFAULT_ALWAYS_ALLOW_PATHS
                .iter()
                .map(|p| p.to_string())
                .collect(),
            always_allow_groups: vec![SYSTEM_MASTERS.to_string()],
            allow_cache_ttl: DEFAULT_CACHE_TTL,
            deny_cache_ttl: DEFAULT_CACHE_TTL,
        }
    }
}

impl DelegatingAuthorizerConfig {
    /// The union of the privileged groups, the always-allowed paths and, when there is a
    /// `reviewer`, the cached SubjectAccessReview (without one, everything else gets no
    /// opinion and is forbidden, as upstream without an authorization kubeconfig).
    pub fn build(
        &self,
        reviewer: Option<Arc<dyn SubjectAccessReviewer>>,
    ) -> Result<UnionAuthorizer, InvalidPathPattern> {
        let mut authorizers = Vec::new();
        if !self.always_allow_groups.is_empty() {
            authorizers.push(NamedAuthorizer::new(
                "kubernetes.io/always-allow-groups",
                Arc::new(PrivilegedGroups::new(self.always_allow_groups.clone())),
            ));
        }
        if !self.always_allow_paths.is_empty() {
            authorizers.push(NamedAuthorizer::new(
                "kubernetes.io/always-allow-paths",
                Arc::new(PathAuthorizer::new(&self.always_allow_paths)?),
            ));
        }
        if let Some(reviewer) = reviewer {
            authorizers.push(NamedAuthorizer::new(
                "kubernetes.io/webhook",
                Arc::new(WebhookAuthorizer::new(
                    reviewer,
                    self.allow_cache_ttl,
                    self.deny_cache_ttl,
                )),
            ));
        } else {
            tracing::warn!(
                "no authorization kubeconfig: SubjectAccessReviews won't work, requests beyond the always-allowed ones are forbidden"
            );
        }
        Ok(UnionAuthorizer::new(authorizers))
    }

    /// The paths unauthenticated callers may reach: the always-allowed paths.
    pub fn anonymous_paths(&self) -> Result<PathAuthorizer, InvalidPathPattern> {
        PathAuthorizer::new(&self.always_allow_paths)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;
    use crate::authz::webhook::ReviewStatus;
    use crate::authz::{
        Attributes, AuthorizationError, Authorizer, Decision, NonResourceAttributes, Request,
        ResourceAttributes,
    };
    use crate::user::UserInfo;

    /// A test double that allows nothing and counts its calls.
    struct CountingDenier(AtomicUsize);

    #[async_trait::async_trait]
    impl SubjectAccessReviewer for CountingDenier {
        async fn review(&self, _: &Attributes) -> Result<ReviewStatus, AuthorizationError> {
            self.0.fetch_add(1, Ordering::SeqCst);
            Ok(ReviewStatus {
                reason: "no".into(),
                ..Default::default()
            })
        }
    }

    fn attrs(groups: &[&str], request: Request) -> Attributes {
        Attributes {
            user: UserInfo::new("u", groups),
            request,
        }
    }

    fn path(p: &str) -> Request {
        Request::NonResource(NonResourceAttributes {
            path: p.into(),
            verb: "get".into(),
        })
    }

    #[tokio::test]
    async fn groups_then_paths_then_the_webhook() {
        let reviewer = Arc::new(CountingDenier(AtomicUsize::new(0)));
        let a = DelegatingAuthorizerConfig::default()
            .build(Some(reviewer.clone()))
            .unwrap();
        let res = Request::Resource(ResourceAttributes {
            verb: "create".into(),
            resource: "flunders".into(),
            ..Default::default()
        });
        assert_eq!(
            a.authorize(&attrs(&["system:masters"], res.clone())).await,
            Ok(Decision::Allow)
        );
        assert_eq!(
            a.authorize(&attrs(&[], path("/healthz"))).await,
            Ok(Decision::Allow)
        );
        assert_eq!(reviewer.0.load(Ordering::SeqCst), 0);
        assert_eq!(
            a.authorize(&attrs(&[], res)).await,
            Ok(Decision::NoOpinion("kubernetes.io/webhook: no".into()))
        );
        assert_eq!(reviewer.0.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn without_a_reviewer_only_the_always_allowed() {
        let a = DelegatingAuthorizerConfig::default().build(None).unwrap();
        assert_eq!(
            a.authorize(&attrs(&[], path("/livez"))).await,
            Ok(Decision::Allow)
        );
        assert_eq!(
            a.authorize(&attrs(&[], path("/apis"))).await,
            Ok(Decision::NoOpinion(String::new()))
        );
    }

    #[test]
    fn bad_paths_are_refused() {
        let config = DelegatingAuthorizerConfig {
            always_allow_paths: vec!["/a*b".into()],
            ..Default::default()
        };
        assert!(config.build(None).is_err());
        assert!(config.anonymous_paths().is_err());
    }
}
