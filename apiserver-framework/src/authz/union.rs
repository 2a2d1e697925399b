//! Several authorizers asked in turn, as upstream's `authorization/union`: the first that
//! allows or denies decides (with its own reason); when none does, the answer is no opinion
//! with every reason given, each as `<authorizer name>: <reason>`, or, if any of them failed,
//! an error aggregating their errors.

use std::sync::Arc;

use super::{Attributes, AuthorizationError, Authorizer, Decision};

/// An authorizer and the name its reasons are given under.
#[derive(Clone)]
pub struct NamedAuthorizer {
    /// E.g. `kubernetes.io/webhook`; an empty name gives reasons without a prefix.
    pub name: String,
    /// The authorizer.
    pub authorizer: Arc<dyn Authorizer>,
}

impl NamedAuthorizer {
    /// `authorizer` under `name`.
    pub fn new(name: impl Into<String>, authorizer: Arc<dyn Authorizer>) -> Self {
        NamedAuthorizer {
            name: name.into(),
            authorizer,
        }
    }
}

/// Asks its authorizers in order until one allows or denies.
#[derive(Clone)]
pub struct UnionAuthorizer {
    authorizers: Vec<NamedAuthorizer>,
}

impl UnionAuthorizer {
    /// Asks `authorizers` in this order.
    pub fn new(authorizers: Vec<NamedAuthorizer>) -> Self {
        UnionAuthorizer { authorizers }
    }
}

/// Upstream's aggregate error text: one distinct message as it is, several as `[a, b]`.
fn aggregate(errors: &[AuthorizationError]) -> AuthorizationError {
    let mut texts: Vec<&str> = Vec::new();
    for e in errors {
        if !texts.contains(&e.0.as_str()) {
            texts.push(&e.0);
        }
    }
    match texts.as_slice() {
        [one] => AuthorizationError(one.to_string()),
        _ => AuthorizationError(format!("[{}]", texts.join(", "))),
    }
}

#[async_trait::async_trait]
impl Authorizer for UnionAuthorizer {
    async fn authorize(&self, attrs: &Attributes) -> Result<Decision, AuthorizationError> {
        let mut errors = Vec::new();
        let mut reasons = Vec::new();
        for named in &self.authorizers {
            match named.authorizer.authorize(attrs).await {
                Ok(Decision::NoOpinion(reason)) if reason.is_empty() => {}
                Ok(Decision::NoOpinion(reason)) if named.name.is_empty() => reasons.push(reason),
                Ok(Decision::NoOpinion(reason)) => {
                    reasons.push(format!("{}: {reason}", named.name));
                }
                Ok(decision) => return Ok(decision),
                Err(e) => errors.push(e),
            }
        }
        if errors.is_empty() {
            Ok(Decision::NoOpinion(reasons.join("\n")))
        } else {
            Err(aggregate(&errors))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::authz::{NonResourceAttributes, Request};
    use crate::user::UserInfo;

    /// A test double answering the same thing every time.
    struct Fixed(Result<Decision, AuthorizationError>);

    #[async_trait::async_trait]
    impl Authorizer for Fixed {
        async fn authorize(&self, _: &Attributes) -> Result<Decision, AuthorizationError> {
            self.0.clone()
        }
    }

    fn fixed(d: Result<Decision, AuthorizationError>) -> NamedAuthorizer {
        NamedAuthorizer::new("", Arc::new(Fixed(d)))
    }

    fn no(reason: &str) -> NamedAuthorizer {
        fixed(Ok(Decision::NoOpinion(reason.into())))
    }

    fn err(text: &str) -> NamedAuthorizer {
        fixed(Err(AuthorizationError(text.into())))
    }

    async fn ask(authorizers: Vec<NamedAuthorizer>) -> Result<Decision, AuthorizationError> {
        let attrs = Attributes {
            user: UserInfo::new("u", &[]),
            request: Request::NonResource(NonResourceAttributes {
                path: "/".into(),
                verb: "get".into(),
            }),
        };
        UnionAuthorizer::new(authorizers).authorize(&attrs).await
    }

    #[tokio::test]
    async fn first_decision_wins() {
        let allow = fixed(Ok(Decision::Allow));
        let deny = fixed(Ok(Decision::Deny("nope".into())));
        assert_eq!(
            ask(vec![no("a"), allow.clone(), deny.clone()]).await,
            Ok(Decision::Allow)
        );
        assert_eq!(
            ask(vec![no(""), deny, allow.clone()]).await,
            Ok(Decision::Deny("nope".into()))
        );
        // An error before a decision does not stop it.
        assert_eq!(ask(vec![err("down"), allow]).await, Ok(Decision::Allow));
    }

    #[tokio::test]
    async fn no_opinion_joins_reasons_and_errors_aggregate() {
        assert_eq!(ask(vec![]).await, Ok(Decision::NoOpinion(String::new())));
        assert_eq!(
            ask(vec![no("a"), no(""), no("b")]).await,
            Ok(Decision::NoOpinion("a\nb".into()))
        );
        let mut named = no("c");
        named.name = "kubernetes.io/webhook".into();
        assert_eq!(
            ask(vec![no("a"), named]).await,
            Ok(Decision::NoOpinion("a\nkubernetes.io/webhook: c".into()))
        );
        assert_eq!(
            ask(vec![no("a"), err("down")]).await,
            Err(AuthorizationError("down".into()))
        );
        assert_eq!(
            ask(vec![err("x"), err("y"), err("x")]).await,
            Err(AuthorizationError("[x, y]".into()))
        );
    }
}
