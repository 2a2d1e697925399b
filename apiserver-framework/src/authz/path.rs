//! The always-allowed paths (`--authorization-always-allow-paths`), as upstream's
//! `k8s.io/apiserver/pkg/authorization/path`: a path is allowed when it equals a listed path or,
//! for a listed path ending in `*`, starts with what comes before the `*`. Only non-resource
//! requests are considered; anything else gets no opinion.

use super::{Attributes, AuthorizationError, Authorizer, Decision, Request};

/// The paths every caller may reach by default: `/healthz`, `/readyz` and `/livez`.
pub(crate) const DEFAULT_ALWAYS_ALLOW_PATHS: &[&str] = &["/healthz", "/readyz", "/livez"];

/// A listed path with a `*` that is not its last character.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("only trailing * allowed in {0:?}")]
pub struct InvalidPathPattern(pub String);

/// Allows non-resource requests to listed paths.
#[derive(Clone, Debug)]
pub struct PathAuthorizer {
    /// Exact paths, without the leading `/`.
    exact: Vec<String>,
    /// Prefixes (patterns without their trailing `*`), without the leading `/`.
    prefixes: Vec<String>,
}

impl PathAuthorizer {
    /// Allows `patterns`: exact paths, or prefixes written with a trailing `*`. A `*` anywhere
    /// else is refused. The leading `/` is optional (`/healthz` and `healthz` are the same).
    pub fn new<S: AsRef<str>>(patterns: &[S]) -> Result<Self, InvalidPathPattern> {
        let mut exact = Vec::new();
        let mut prefixes = Vec::new();
        for pattern in patterns {
            let p = pattern
                .as_ref()
                .strip_prefix('/')
                .unwrap_or(pattern.as_ref());
            let mut chars = p.chars();
            let last = chars.next_back();
            if chars.as_str().contains('*') {
                return Err(InvalidPathPattern(p.to_string()));
            }
            match last {
                Some('*') => prefixes.push(chars.as_str().to_string()),
                _ => exact.push(p.to_string()),
            }
        }
        Ok(PathAuthorizer { exact, prefixes })
    }

    /// The default paths, `DEFAULT_ALWAYS_ALLOW_PATHS`.
    pub fn default_paths() -> Self {
        PathAuthorizer {
            exact: DEFAULT_ALWAYS_ALLOW_PATHS
                .iter()
                .map(|p| p.trim_start_matches('/').to_string())
                .collect(),
            prefixes: Vec::new(),
        }
    }

    /// Whether a non-resource request to `path` is allowed.
    pub fn allows(&self, path: &str) -> bool {
        let path = path.strip_prefix('/').unwrap_or(path);
        self.exact.iter().any(|p| p == path) || self.prefixes.iter().any(|p| path.starts_with(p))
    }

    /// The decision for a request: allowed for a listed non-resource path, else no opinion.
    pub fn decide(&self, request: &Request) -> Decision {
        match request {
            Request::NonResource(r) if self.allows(&r.path) => Decision::Allow,
            _ => Decision::NoOpinion(String::new()),
        }
    }
}

#[async_trait::async_trait]
impl Authorizer for PathAuthorizer {
    async fn authorize(&self, attrs: &Attributes) -> Result<Decision, AuthorizationError> {
        Ok(self.decide(&attrs.request))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::authz::{NonResourceAttributes, ResourceAttributes};

    fn non(path: &str) -> Request {
        Request::NonResource(NonResourceAttributes {
            path: path.into(),
            verb: "get".into(),
        })
    }

    fn allowed(a: &PathAuthorizer, path: &str) -> bool {
        a.decide(&non(path)) == Decision::Allow
    }

    #[test]
    fn exact_paths() {
        let a = PathAuthorizer::default_paths();
        for p in ["/healthz", "/readyz", "/livez"] {
            assert!(allowed(&a, p), "{p}");
        }
        for p in [
            "/healthz/ping",
            "/healthzx",
            "/",
            "/apis",
            "/version",
            "/readyz/",
        ] {
            assert!(!allowed(&a, p), "{p}");
        }
        let b = PathAuthorizer::new(&["/healthz", "readyz", "/livez"]).unwrap();
        assert!(allowed(&b, "/readyz") && allowed(&b, "/healthz") && !allowed(&b, "/x"));
    }

    #[test]
    fn trailing_star_is_a_prefix() {
        let a = PathAuthorizer::new(&["/healthz*", "/metrics/*"]).unwrap();
        for p in [
            "/healthz",
            "/healthz/ping",
            "/healthzx",
            "/metrics/",
            "/metrics/a/b",
        ] {
            assert!(allowed(&a, p), "{p}");
        }
        for p in ["/metrics", "/apis", "/"] {
            assert!(!allowed(&a, p), "{p}");
        }
        let all = PathAuthorizer::new(&["/*"]).unwrap();
        assert!(allowed(&all, "/anything") && allowed(&all, "/"));
    }

    #[test]
    fn root_is_exact() {
        let a = PathAuthorizer::new(&["/"]).unwrap();
        assert!(allowed(&a, "/"));
        assert!(!allowed(&a, "/apis"));
    }

    #[test]
    fn a_star_before_the_end_is_refused() {
        let err = PathAuthorizer::new(&["/healthz", "/a*/b"]).unwrap_err();
        assert_eq!(err.to_string(), r#"only trailing * allowed in "a*/b""#);
        assert!(PathAuthorizer::new(&["**"]).is_err());
        assert!(PathAuthorizer::new(&["/*"]).is_ok());
        assert!(PathAuthorizer::new(&["/é", "/ü*"]).is_ok());
    }

    #[test]
    fn resource_requests_get_no_opinion() {
        let a = PathAuthorizer::new(&["/*"]).unwrap();
        let r = Request::Resource(ResourceAttributes {
            verb: "get".into(),
            resource: "flunders".into(),
            ..Default::default()
        });
        assert_eq!(a.decide(&r), Decision::NoOpinion(String::new()));
    }
}
