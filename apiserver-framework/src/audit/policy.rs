//! The audit policy (`--audit-policy-file`): an `audit.k8s.io/v1` `Policy` whose first
//! matching rule decides how much of a request is recorded, as upstream's
//! `k8s.io/apiserver/pkg/audit/policy` checker decides it. No matching rule means `None`.

use std::path::Path;

use serde::Deserialize;

use super::event::{Level, Stage};
use crate::authz::{Attributes, Request};

/// A group's resources a rule applies to (`audit.k8s.io/v1` `GroupResources`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GroupResources {
    /// The API group (`""` for the core group).
    #[serde(default)]
    pub group: String,
    /// Resources (`pods`, `pods/log`, `*/scale`, `pods/*`, `*`); empty means all of the group.
    #[serde(default)]
    pub resources: Vec<String>,
    /// Object names; empty means all.
    #[serde(default)]
    pub resource_names: Vec<String>,
}

/// One rule of a policy (`audit.k8s.io/v1` `PolicyRule`). Empty lists match everything.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicyRule {
    /// The level of the requests this rule matches.
    pub level: Level,
    /// User names.
    #[serde(default)]
    pub users: Vec<String>,
    /// Groups (any of the user's groups).
    #[serde(default)]
    pub user_groups: Vec<String>,
    /// Authorization verbs.
    #[serde(default)]
    pub verbs: Vec<String>,
    /// Resources.
    #[serde(default)]
    pub resources: Vec<GroupResources>,
    /// Namespaces (`""` matches cluster-scoped requests).
    #[serde(default)]
    pub namespaces: Vec<String>,
    /// Non-resource paths (`/healthz`, `/apis*`, `*`).
    #[serde(default, rename = "nonResourceURLs")]
    pub non_resource_urls: Vec<String>,
    /// Stages not recorded for the requests this rule matches (besides the policy's).
    #[serde(default)]
    pub omit_stages: Vec<Stage>,
}

/// An audit policy (`audit.k8s.io/v1` `Policy`).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Policy {
    /// Must be `audit.k8s.io/v1`.
    pub api_version: String,
    /// Must be `Policy`.
    pub kind: String,
    /// The rules, first match wins.
    #[serde(default)]
    pub rules: Vec<PolicyRule>,
    /// Stages never recorded.
    #[serde(default)]
    pub omit_stages: Vec<Stage>,
}

/// What the policy decided for one request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestAuditConfig {
    /// How much to record.
    pub level: Level,
    /// Stages not to record.
    pub omit_stages: Vec<Stage>,
}

/// A policy file could not be read or is not a valid policy.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    /// The file could not be read.
    #[error("failed to read audit policy file {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not a policy.
    #[error("failed decoding audit policy file {path}: {message}")]
    Decode {
        /// The file.
        path: String,
        /// Why.
        message: String,
    },
    /// The policy is not valid.
    #[error("invalid audit policy file {path}: {message}")]
    Invalid {
        /// The file.
        path: String,
        /// Why.
        message: String,
    },
}

impl Policy {
    /// Reads and validates a policy file (YAML or JSON).
    pub fn from_file(path: &Path) -> Result<Self, PolicyError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| PolicyError::Read {
            path: shown.clone(),
            source,
        })?;
        Self::parse(&text).map_err(|e| match e {
            PolicyError::Decode { message, .. } => PolicyError::Decode {
                path: shown.clone(),
                message,
            },
            PolicyError::Invalid { message, .. } => PolicyError::Invalid {
                path: shown.clone(),
                message,
            },
            other => other,
        })
    }

    /// Parses and validates a policy (YAML or JSON).
    pub fn parse(text: &str) -> Result<Self, PolicyError> {
        let policy: Policy = serde_yaml_ng::from_str(text).map_err(|e| PolicyError::Decode {
            path: String::new(),
            message: e.to_string(),
        })?;
        let invalid = |message: String| PolicyError::Invalid {
            path: String::new(),
            message,
        };
        if policy.api_version != "audit.k8s.io/v1" || policy.kind != "Policy" {
            return Err(PolicyError::Decode {
                path: String::new(),
                message: format!(
                    "no kind \"{}\" is registered for version \"{}\"",
                    policy.kind, policy.api_version
                ),
            });
        }
        if policy.rules.is_empty() {
            return Err(invalid("loaded illegal policy with 0 rules".into()));
        }
        for (i, rule) in policy.rules.iter().enumerate() {
            if !rule.non_resource_urls.is_empty()
                && (!rule.resources.is_empty() || !rule.namespaces.is_empty())
            {
                return Err(invalid(format!(
                    "rules[{i}].nonResourceURLs: Invalid value: {:?}: rules cannot apply to both regular resources and non-resource URLs",
                    rule.non_resource_urls
                )));
            }
            for url in &rule.non_resource_urls {
                if url.contains('*') && !url.ends_with('*') || url.matches('*').count() > 1 {
                    return Err(invalid(format!(
                        "rules[{i}].nonResourceURLs: Invalid value: {url:?}: non-resource URL wildcards ('*') must be the final character"
                    )));
                }
            }
        }
        Ok(policy)
    }

    /// What to record for a request (`None` when no rule matches).
    pub fn evaluate(&self, attrs: &Attributes) -> RequestAuditConfig {
        for rule in &self.rules {
            if rule.matches(attrs) {
                let mut omit_stages = self.omit_stages.clone();
                for s in &rule.omit_stages {
                    if !omit_stages.contains(s) {
                        omit_stages.push(*s);
                    }
                }
                return RequestAuditConfig {
                    level: rule.level,
                    omit_stages,
                };
            }
        }
        RequestAuditConfig {
            level: Level::None,
            omit_stages: self.omit_stages.clone(),
        }
    }
}

impl PolicyRule {
    /// Whether this rule applies to a request.
    pub fn matches(&self, attrs: &Attributes) -> bool {
        let user = &attrs.user;
        if !self.users.is_empty() && !self.users.contains(&user.username) {
            return false;
        }
        if !self.user_groups.is_empty() && !user.groups.iter().any(|g| self.user_groups.contains(g))
        {
            return false;
        }
        let verb = match &attrs.request {
            Request::Resource(r) => &r.verb,
            Request::NonResource(n) => &n.verb,
        };
        if !self.verbs.is_empty() && !self.verbs.contains(verb) {
            return false;
        }
        if !self.namespaces.is_empty() || !self.resources.is_empty() {
            return self.matches_resource(&attrs.request);
        }
        if !self.non_resource_urls.is_empty() {
            return match &attrs.request {
                Request::NonResource(n) => self
                    .non_resource_urls
                    .iter()
                    .any(|spec| path_matches(&n.path, spec)),
                Request::Resource(_) => false,
            };
        }
        true
    }

    fn matches_resource(&self, request: &Request) -> bool {
        let Request::Resource(r) = request else {
            return false;
        };
        if !self.namespaces.is_empty() && !self.namespaces.contains(&r.namespace) {
            return false;
        }
        if self.resources.is_empty() {
            return true;
        }
        let combined = if r.subresource.is_empty() {
            r.resource.clone()
        } else {
            format!("{}/{}", r.resource, r.subresource)
        };
        for gr in &self.resources {
            if gr.group != r.group {
                continue;
            }
            if gr.resources.is_empty() {
                return true;
            }
            if !gr.resource_names.is_empty() && !gr.resource_names.contains(&r.name) {
                continue;
            }
            for res in &gr.resources {
                if *res == combined || res == "*" {
                    return true;
                }
                if let Some(sub) = res.strip_prefix("*/")
                    && !r.subresource.is_empty()
                    && sub == r.subresource
                {
                    return true;
                }
                if let Some(base) = res.strip_suffix("/*")
                    && base == r.resource
                {
                    return true;
                }
            }
        }
        false
    }
}

fn path_matches(path: &str, spec: &str) -> bool {
    spec == "*"
        || spec == path
        || spec
            .strip_suffix('*')
            .is_some_and(|prefix| path.starts_with(prefix))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::user::UserInfo;

    const POLICY: &str = r#"
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: None
  users: ["system:kube-proxy"]
- level: None
  nonResourceURLs: ["/healthz*", "/version"]
- level: RequestResponse
  resources:
  - group: wardle.example.com
    resources: ["flunders/status", "*/scale"]
- level: Request
  userGroups: ["admins"]
  verbs: ["create", "update"]
  namespaces: ["prod"]
- level: Metadata
  resources:
  - group: wardle.example.com
    resources: ["fischers"]
    resourceNames: ["special"]
  omitStages: [ResponseStarted]
- level: Metadata
  resources:
  - group: ""
    resources: ["pods/*"]
"#;

    fn attrs(user: &str, groups: &[&str], method: &str, path: &str) -> Attributes {
        Attributes::from_request(
            UserInfo::new(user, groups),
            &method.parse().unwrap(),
            path,
            None,
        )
    }

    fn level(p: &Policy, a: &Attributes) -> Level {
        p.evaluate(a).level
    }

    #[test]
    fn first_matching_rule_wins_and_no_match_is_none() {
        let p = Policy::parse(POLICY).unwrap();
        let flunders = "/apis/wardle.example.com/v1alpha1/namespaces/prod/flunders";
        assert_eq!(
            level(&p, &attrs("system:kube-proxy", &[], "GET", flunders)),
            Level::None
        );
        assert_eq!(
            level(&p, &attrs("bob", &[], "GET", "/healthz/ping")),
            Level::None
        );
        assert_eq!(
            level(&p, &attrs("bob", &[], "GET", "/version")),
            Level::None
        );
        assert_eq!(
            level(
                &p,
                &attrs("bob", &[], "PUT", &format!("{flunders}/a/status"))
            ),
            Level::RequestResponse
        );
        assert_eq!(
            level(
                &p,
                &attrs("bob", &[], "PUT", &format!("{flunders}/a/scale"))
            ),
            Level::RequestResponse
        );
        assert_eq!(
            level(&p, &attrs("bob", &["admins"], "POST", flunders)),
            Level::Request
        );
        assert_eq!(
            level(&p, &attrs("bob", &["admins"], "GET", flunders)),
            Level::None
        );
        assert_eq!(level(&p, &attrs("bob", &[], "POST", flunders)), Level::None);
        let fischers = "/apis/wardle.example.com/v1alpha1/fischers";
        let c = p.evaluate(&attrs("bob", &[], "GET", &format!("{fischers}/special")));
        assert_eq!(c.level, Level::Metadata);
        assert_eq!(
            c.omit_stages,
            [Stage::RequestReceived, Stage::ResponseStarted]
        );
        assert_eq!(
            level(&p, &attrs("bob", &[], "GET", &format!("{fischers}/other"))),
            Level::None
        );
        assert_eq!(
            level(
                &p,
                &attrs("bob", &[], "GET", "/api/v1/namespaces/a/pods/x/log")
            ),
            Level::Metadata
        );
        assert_eq!(
            level(&p, &attrs("bob", &[], "GET", "/api/v1/namespaces/a/pods")),
            Level::Metadata
        );
        assert_eq!(
            level(
                &p,
                &attrs("bob", &[], "GET", "/api/v1/namespaces/a/services")
            ),
            Level::None
        );
        assert_eq!(
            p.evaluate(&attrs("bob", &[], "GET", "/openapi/v2"))
                .omit_stages,
            [Stage::RequestReceived]
        );
    }

    #[test]
    fn invalid_policies_are_refused() {
        assert!(Policy::parse("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: []\n").is_err());
        assert!(
            Policy::parse("apiVersion: audit.k8s.io/v2\nkind: Policy\nrules: [{level: None}]\n")
                .is_err()
        );
        assert!(
            Policy::parse("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{level: Loud}]\n")
                .is_err()
        );
        assert!(Policy::parse("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{level: None, omitStages: [Never]}]\n").is_err());
        assert!(Policy::parse("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{level: None, nonResourceURLs: ['/a*b']}]\n").is_err());
        assert!(Policy::parse("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{level: None, nonResourceURLs: ['/a'], namespaces: [x]}]\n").is_err());
        assert!(
            Policy::parse(
                "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{level: Metadata}]\n"
            )
            .is_ok()
        );
    }
}
