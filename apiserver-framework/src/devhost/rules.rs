//! A rules file authorizer for the development host: RBAC-shaped policy rules bound directly
//! to users and groups, read from YAML.
//!
//! ```yaml
//! rules:
//! - groups: ["wardle-editors"]
//!   verbs: ["*"]
//!   apiGroups: ["wardle.example.com"]
//!   resources: ["*"]
//! - groups: ["system:authenticated"]
//!   verbs: ["get"]
//!   nonResourceURLs: ["/api", "/api/*", "/apis", "/apis/*", "/openapi/*", "/version"]
//! ```
//!
//! A request is allowed when one rule names its user or one of its groups and matches it as
//! an RBAC `PolicyRule` would (`*` matches anything; `resources` may name `res/sub` or `*/sub`;
//! a `nonResourceURLs` entry ending in `*` is a prefix). `namespaces` (optional) limits a
//! rule to those namespaces. Anything else gets no opinion, which ends in a denial.

use std::path::Path;

use serde::Deserialize;

use crate::authz::{Attributes, AuthorizationError, Authorizer, Decision, Request};

/// One rule of a rules file.
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Rule {
    /// User names the rule applies to.
    #[serde(default)]
    pub users: Vec<String>,
    /// Groups the rule applies to.
    #[serde(default)]
    pub groups: Vec<String>,
    /// Verbs (`get`, `list`, `create`, …, or `*`).
    pub verbs: Vec<String>,
    /// API groups (`""` for the core group, `*` for any).
    #[serde(default)]
    pub api_groups: Vec<String>,
    /// Resources (`flunders`, `flunders/status`, `*/scale`, `*`).
    #[serde(default)]
    pub resources: Vec<String>,
    /// Object names (empty: any).
    #[serde(default)]
    pub resource_names: Vec<String>,
    /// Namespaces (empty: any, and cluster-scoped requests).
    #[serde(default)]
    pub namespaces: Vec<String>,
    /// Non-resource paths (a trailing `*` is a prefix).
    #[serde(default, rename = "nonResourceURLs")]
    pub non_resource_urls: Vec<String>,
}

/// A rules file.
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct RulesFile {
    /// The rules; any match allows.
    #[serde(default)]
    pub rules: Vec<Rule>,
}

/// Errors of reading a rules file.
#[derive(Debug, thiserror::Error)]
pub enum RulesFileError {
    /// The file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The error.
        source: std::io::Error,
    },
    /// The file is not a valid rules document.
    #[error("{path}: {message}")]
    Syntax {
        /// The file.
        path: String,
        /// What is wrong.
        message: String,
    },
}

fn matches(list: &[String], value: &str) -> bool {
    list.iter().any(|x| x == "*" || x == value)
}

fn resource_matches(list: &[String], resource: &str, subresource: &str) -> bool {
    let combined = if subresource.is_empty() {
        resource.to_string()
    } else {
        format!("{resource}/{subresource}")
    };
    list.iter().any(|r| {
        r == "*"
            || *r == combined
            || (!subresource.is_empty() && r.strip_prefix("*/") == Some(subresource))
    })
}

fn path_matches(list: &[String], path: &str) -> bool {
    list.iter().any(|p| match p.strip_suffix('*') {
        Some(prefix) => path.starts_with(prefix),
        None => p == path,
    })
}

impl Rule {
    fn applies_to(&self, attrs: &Attributes) -> bool {
        self.users.contains(&attrs.user.username)
            || self
                .groups
                .iter()
                .any(|g| attrs.user.groups.iter().any(|x| x == g))
    }

    /// Whether the rule allows the request (ignoring who asks).
    pub fn allows(&self, request: &Request) -> bool {
        match request {
            Request::Resource(r) => {
                matches(&self.verbs, &r.verb)
                    && matches(&self.api_groups, &r.group)
                    && resource_matches(&self.resources, &r.resource, &r.subresource)
                    && (self.resource_names.is_empty() || self.resource_names.contains(&r.name))
                    && (self.namespaces.is_empty()
                        || (!r.namespace.is_empty() && self.namespaces.contains(&r.namespace)))
            }
            Request::NonResource(n) => {
                matches(&self.verbs, &n.verb) && path_matches(&self.non_resource_urls, &n.path)
            }
        }
    }
}

impl RulesFile {
    /// Parses a rules document (`path` is only used in messages).
    pub fn parse(path: &str, text: &str) -> Result<Self, RulesFileError> {
        serde_yaml_ng::from_str(text).map_err(|e| RulesFileError::Syntax {
            path: path.to_string(),
            message: e.to_string(),
        })
    }

    /// Reads and parses a rules file.
    pub fn read(path: &Path) -> Result<Self, RulesFileError> {
        let text = std::fs::read_to_string(path).map_err(|source| RulesFileError::Io {
            path: path.display().to_string(),
            source,
        })?;
        Self::parse(&path.display().to_string(), &text)
    }

    /// Whether some rule for this user allows the request.
    pub fn allows(&self, attrs: &Attributes) -> bool {
        self.rules
            .iter()
            .any(|r| r.applies_to(attrs) && r.allows(&attrs.request))
    }
}

#[async_trait::async_trait]
impl Authorizer for RulesFile {
    async fn authorize(&self, attrs: &Attributes) -> Result<Decision, AuthorizationError> {
        Ok(if self.allows(attrs) {
            Decision::Allow
        } else {
            Decision::NoOpinion(String::new())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::authz::{NonResourceAttributes, ResourceAttributes};
    use crate::user::UserInfo;

    fn res(user: &str, groups: &[&str], verb: &str, ns: &str, res: &str, sub: &str) -> Attributes {
        Attributes {
            user: UserInfo::new(user, groups),
            request: Request::Resource(ResourceAttributes {
                verb: verb.into(),
                group: "wardle.example.com".into(),
                version: "v1alpha1".into(),
                resource: res.into(),
                subresource: sub.into(),
                namespace: ns.into(),
                name: String::new(),
                ..Default::default()
            }),
        }
    }

    const RULES: &str = r#"
rules:
- groups: ["editors"]
  verbs: ["*"]
  apiGroups: ["wardle.example.com"]
  resources: ["*"]
- users: ["bob"]
  verbs: ["get", "list", "watch"]
  apiGroups: ["wardle.example.com"]
  resources: ["flunders", "*/scale"]
  namespaces: ["default"]
- groups: ["system:authenticated"]
  verbs: ["get"]
  nonResourceURLs: ["/apis", "/apis/*", "/version"]
"#;

    #[test]
    fn rules_match_like_rbac() {
        let rules = RulesFile::parse("r", RULES).unwrap();
        assert!(rules.allows(&res("alice", &["editors"], "create", "x", "fischers", "")));
        assert!(rules.allows(&res("bob", &[], "list", "default", "flunders", "")));
        assert!(rules.allows(&res("bob", &[], "get", "default", "flunders", "scale")));
        assert!(!rules.allows(&res("bob", &[], "get", "default", "flunders", "status")));
        assert!(!rules.allows(&res("bob", &[], "create", "default", "flunders", "")));
        assert!(!rules.allows(&res("bob", &[], "list", "other", "flunders", "")));
        assert!(!rules.allows(&res("bob", &[], "list", "", "flunders", "")));
        let path = |p: &str, verb: &str| Attributes {
            user: UserInfo::new("carol", &["system:authenticated"]),
            request: Request::NonResource(NonResourceAttributes {
                path: p.into(),
                verb: verb.into(),
            }),
        };
        assert!(rules.allows(&path("/apis", "get")));
        assert!(rules.allows(&path("/apis/wardle.example.com", "get")));
        assert!(!rules.allows(&path("/apis", "post")));
        assert!(!rules.allows(&path("/openapi/v2", "get")));
    }

    #[test]
    fn unknown_fields_are_errors() {
        let e = RulesFile::parse("r", "rules:\n- verbs: [get]\n  resource: [x]\n").unwrap_err();
        assert!(e.to_string().contains("unknown field `resource`"), "{e}");
    }
}
