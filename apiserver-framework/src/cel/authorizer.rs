//! Kubernetes' CEL authorizer library (upstream's `library.Authz`), as admission's expressions
//! see it: the `authorizer` variable, and `authorizer.requestResource` for the resource of the
//! request being admitted.
//!
//! ```text
//! authorizer.group('apps').resource('deployments').namespace('ns').name('web').check('update').allowed()
//! authorizer.requestResource.subresource('status').check('patch').reason()
//! authorizer.path('/healthz').check('get').allowed()
//! authorizer.serviceAccount('ns', 'builder').group('').resource('pods').check('create').errored()
//! authorizer.group('').resource('pods').labelSelector('app=web').check('list').allowed()
//! ```
//!
//! A check asks the server's authorizer whether the request's user (or the named service
//! account) may do the verb, as upstream asks it: `apiVersion` `*`, the path's or resource's
//! attributes (a resource check's field and label selectors as requirements, none when one does
//! not parse), the user's name, groups and extra. Each check costs upstream's 350,000 of the
//! expression's budget ([`crate::cel::cost`]), so an expression asks at most two.
//!
//! The `cel` crate's functions are synchronous and the authorizer is not: an evaluation that
//! reaches a check not decided yet records it and fails; [`evaluate_with_checks`] then asks the
//! authorizer for what was recorded and evaluates again, with those decisions known, until an
//! evaluation asks nothing new. Expressions are pure, so the last evaluation is the one that
//! counts; the rounds are few (one more than the checks an expression makes one after the
//! other) and bounded ([`MAX_ROUNDS`]).

use std::collections::HashMap;
use std::sync::Arc;

use kube_cel::cel::extractors::This;
use kube_cel::cel::objects::{Key, Map, Opaque};
use kube_cel::cel::{Context, ExecutionError, Value as CelValue};
use parking_lot::Mutex;

use crate::cel::cost::Meter;
use crate::user::UserInfo;

/// Upstream's cost of one authorization check (`authzCheckCost`... `check` in
/// `library/cost.go`).
pub(crate) const CHECK_COST: u64 = 350_000;

/// The most evaluations [`evaluate_with_checks`] makes; checks still undecided after them fail.
pub(crate) const MAX_ROUNDS: usize = 8;

/// The error of a check not decided yet (the evaluation is run again once it is).
const UNDECIDED: &str = "authorization decision pending";

/// The name an expression's map value keeps the authorizer under (not a name a field can have).
const AUTHORIZER_KEY: &str = "@authorizer";

/// What a check asks the server's authorizer.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Check {
    /// Whose permission: `None` for the request's user, else a service account's
    /// (namespace, name).
    pub service_account: Option<(String, String)>,
    /// The verb (`get`, `create`…, or an HTTP verb for a path).
    pub verb: String,
    /// What the verb is done to.
    pub target: Target,
}

/// What a check is about.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Target {
    /// A non-resource path.
    Path(String),
    /// A resource.
    Resource(ResourceTarget),
}

/// A resource a check names (empty strings for what it leaves out).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub(crate) struct ResourceTarget {
    /// The API group.
    pub group: String,
    /// The plural resource.
    pub resource: String,
    /// The subresource.
    pub subresource: String,
    /// The namespace.
    pub namespace: String,
    /// The object's name.
    pub name: String,
    /// The field selector the check is limited to (`fieldSelector()`; empty for none).
    pub field_selector: String,
    /// The label selector the check is limited to (`labelSelector()`; empty for none).
    pub label_selector: String,
}

/// The authorizer's answer to a check, as upstream's `Decision` value gives it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Verdict {
    /// Whether the authorizer allowed it.
    pub allowed: bool,
    /// The authorizer's reason.
    pub reason: String,
    /// Why it could not decide (`errored()`), if it could not.
    pub error: Option<String>,
}

/// Decides checks: the server's authorizer, for the user of the request.
#[async_trait::async_trait]
pub(crate) trait Authorize: Send + Sync {
    /// Whether `user` may do what `check` says (`check.service_account` replaces `user` when
    /// set).
    async fn decide(&self, user: &UserInfo, check: &Check) -> Verdict;
}

/// The user a check is for: `user`, or the service account it names, as upstream's
/// `serviceaccount.UserInfo`.
pub(crate) fn user_of(user: &UserInfo, check: &Check) -> UserInfo {
    match &check.service_account {
        None => user.clone(),
        Some((namespace, name)) => UserInfo::new(
            format!("system:serviceaccount:{namespace}:{name}"),
            &[
                "system:serviceaccounts",
                &format!("system:serviceaccounts:{namespace}"),
            ],
        ),
    }
}

/// The checks of one admission evaluation: those decided, and those asked since the last round.
#[derive(Clone, Default)]
pub(crate) struct Checks {
    inner: Arc<Mutex<Rounds>>,
    request_resource: Option<ResourceTarget>,
}

#[derive(Default)]
struct Rounds {
    decided: HashMap<Check, Verdict>,
    asked: Vec<Check>,
}

impl Checks {
    /// Checks for a request on `request_resource` (`authorizer.requestResource`; `None`
    /// leaves it out).
    pub(crate) fn new(request_resource: Option<ResourceTarget>) -> Self {
        Checks {
            inner: Arc::default(),
            request_resource,
        }
    }

    /// Installs `authorizer` (and `authorizer.requestResource`) and the library's functions in
    /// `context`, charging each check to `meter`.
    pub(crate) fn install(&self, context: &mut Context<'_>, meter: &Meter) {
        let mut authorizer: HashMap<String, CelValue> = HashMap::new();
        authorizer.insert(
            AUTHORIZER_KEY.into(),
            opaque(Principal {
                service_account: None,
            }),
        );
        if let Some(target) = &self.request_resource {
            authorizer.insert(
                "requestResource".into(),
                opaque(ResourceCheck {
                    principal: Principal {
                        service_account: None,
                    },
                    target: target.clone(),
                }),
            );
        }
        context.add_variable_from_value("authorizer", authorizer);
        install_builders(context);
        let checks = self.clone();
        let meter = meter.clone();
        context.add_function(
            "check",
            move |This(this): This<CelValue>,
                  verb: Arc<String>|
                  -> Result<CelValue, ExecutionError> {
                meter.charge("check", CHECK_COST)?;
                let check = match &this {
                    CelValue::Opaque(o) => {
                        if let Some(r) = o.downcast_ref::<ResourceCheck>() {
                            Check {
                                service_account: r.principal.service_account.clone(),
                                verb: verb.to_string(),
                                target: Target::Resource(r.target.clone()),
                            }
                        } else if let Some(p) = o.downcast_ref::<PathCheck>() {
                            Check {
                                service_account: p.principal.service_account.clone(),
                                verb: verb.to_string(),
                                target: Target::Path(p.path.clone()),
                            }
                        } else {
                            return Err(receiver("check", "a resource or path check"));
                        }
                    }
                    _ => return Err(receiver("check", "a resource or path check")),
                };
                checks.verdict(check).map(opaque)
            },
        );
    }

    /// The verdict on `check` if it is decided; else it is recorded for the next round.
    fn verdict(&self, check: Check) -> Result<Verdict, ExecutionError> {
        let mut rounds = self.inner.lock();
        if let Some(verdict) = rounds.decided.get(&check) {
            return Ok(verdict.clone());
        }
        if !rounds.asked.contains(&check) {
            rounds.asked.push(check);
        }
        Err(ExecutionError::function_error("check", UNDECIDED))
    }

    /// The checks asked since the last call and not decided.
    fn take_asked(&self) -> Vec<Check> {
        std::mem::take(&mut self.inner.lock().asked)
    }

    /// Records `verdict` on `check`.
    fn decide(&self, check: Check, verdict: Verdict) {
        self.inner.lock().decided.insert(check, verdict);
    }
}

/// Runs `evaluate` until it asks no check that is not decided, asking `authorizer` (for
/// `user`) between the rounds; the last round's result. Without an authorizer every check is
/// an error (`errored()`). Checks still undecided after [`MAX_ROUNDS`] are decided as errors.
pub(crate) async fn evaluate_with_checks<T>(
    checks: &Checks,
    authorizer: Option<&dyn Authorize>,
    user: &UserInfo,
    mut evaluate: impl FnMut(&Checks) -> T,
) -> T {
    for round in 1.. {
        // A round that asked something is discarded before the authorizer is awaited.
        let asked = {
            let result = evaluate(checks);
            let asked = checks.take_asked();
            if asked.is_empty() {
                return result;
            }
            asked
        };
        let verdicts = futures::future::join_all(asked.iter().map(|check| async {
            match authorizer {
                _ if round >= MAX_ROUNDS => Verdict {
                    error: Some(format!(
                        "more than {MAX_ROUNDS} rounds of authorization checks"
                    )),
                    ..Verdict::default()
                },
                Some(authorizer) => authorizer.decide(user, check).await,
                None => Verdict {
                    error: Some("no authorizer is configured".into()),
                    ..Verdict::default()
                },
            }
        }))
        .await;
        for (check, verdict) in asked.into_iter().zip(verdicts) {
            checks.decide(check, verdict);
        }
    }
    unreachable!("the rounds end when nothing is asked")
}

/// Whose permission a check asks about.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Principal {
    service_account: Option<(String, String)>,
}

/// `authorizer.group(g)`, then `.resource(r)`, `.subresource(s)`, `.namespace(n)`, `.name(n)`.
#[derive(Clone, Debug, PartialEq, Eq)]
struct ResourceCheck {
    principal: Principal,
    target: ResourceTarget,
}

/// `authorizer.path(p)`.
#[derive(Clone, Debug, PartialEq, Eq)]
struct PathCheck {
    principal: Principal,
    path: String,
}

impl Opaque for Principal {
    fn runtime_type_name(&self) -> &str {
        "kubernetes.authorization.Authorizer"
    }
}

impl Opaque for ResourceCheck {
    fn runtime_type_name(&self) -> &str {
        "kubernetes.authorization.ResourceCheck"
    }
}

impl Opaque for PathCheck {
    fn runtime_type_name(&self) -> &str {
        "kubernetes.authorization.PathCheck"
    }
}

impl Opaque for Verdict {
    fn runtime_type_name(&self) -> &str {
        "kubernetes.authorization.Decision"
    }
}

fn opaque<T: Opaque>(value: T) -> CelValue {
    CelValue::Opaque(Arc::new(value))
}

/// The error of a library function called on something else than its receiver.
fn receiver(function: &str, expected: &str) -> ExecutionError {
    ExecutionError::function_error(
        function,
        format!("{function}() is a function of {expected}"),
    )
}

/// The principal of an authorizer value: the `authorizer` variable (a map keeping it under
/// [`AUTHORIZER_KEY`]) or the result of `serviceAccount()`.
fn principal(function: &str, this: &CelValue) -> Result<Principal, ExecutionError> {
    let found = match this {
        CelValue::Opaque(o) => o.downcast_ref::<Principal>().cloned(),
        CelValue::Map(Map { map }) => {
            map.get(&Key::from(AUTHORIZER_KEY.to_string()))
                .and_then(|v| match v {
                    CelValue::Opaque(o) => o.downcast_ref::<Principal>().cloned(),
                    _ => None,
                })
        }
        _ => None,
    };
    found.ok_or_else(|| receiver(function, "an authorizer"))
}

/// `this` as a resource check.
fn resource_check(function: &str, this: &CelValue) -> Result<ResourceCheck, ExecutionError> {
    match this {
        CelValue::Opaque(o) => o.downcast_ref::<ResourceCheck>().cloned(),
        _ => None,
    }
    .ok_or_else(|| receiver(function, "a resource check"))
}

/// `this` as a decision.
fn verdict(function: &str, this: &CelValue) -> Result<Verdict, ExecutionError> {
    match this {
        CelValue::Opaque(o) => o.downcast_ref::<Verdict>().cloned(),
        _ => None,
    }
    .ok_or_else(|| receiver(function, "a decision"))
}

/// Sets one field of a resource check.
fn with_field(
    function: &'static str,
    set: fn(&mut ResourceTarget, String),
) -> impl Fn(This<CelValue>, Arc<String>) -> Result<CelValue, ExecutionError> + Send + Sync {
    move |This(this): This<CelValue>, value: Arc<String>| {
        let mut check = resource_check(function, &this)?;
        set(&mut check.target, value.to_string());
        Ok(opaque(check))
    }
}

/// The functions that build checks and read decisions.
fn install_builders(context: &mut Context<'_>) {
    context.add_function(
        "group",
        |This(this): This<CelValue>, group: Arc<String>| -> Result<CelValue, ExecutionError> {
            Ok(opaque(ResourceCheck {
                principal: principal("group", &this)?,
                target: ResourceTarget {
                    group: group.to_string(),
                    ..ResourceTarget::default()
                },
            }))
        },
    );
    context.add_function(
        "path",
        |This(this): This<CelValue>, path: Arc<String>| -> Result<CelValue, ExecutionError> {
            Ok(opaque(PathCheck {
                principal: principal("path", &this)?,
                path: path.to_string(),
            }))
        },
    );
    context.add_function(
        "serviceAccount",
        |This(this): This<CelValue>,
         namespace: Arc<String>,
         name: Arc<String>|
         -> Result<CelValue, ExecutionError> {
            principal("serviceAccount", &this)?;
            Ok(opaque(Principal {
                service_account: Some((namespace.to_string(), name.to_string())),
            }))
        },
    );
    context.add_function("resource", with_field("resource", |t, v| t.resource = v));
    context.add_function(
        "subresource",
        with_field("subresource", |t, v| t.subresource = v),
    );
    context.add_function("namespace", with_field("namespace", |t, v| t.namespace = v));
    context.add_function("name", with_field("name", |t, v| t.name = v));
    context.add_function(
        "fieldSelector",
        with_field("fieldSelector", |t, v| t.field_selector = v),
    );
    context.add_function(
        "labelSelector",
        with_field("labelSelector", |t, v| t.label_selector = v),
    );
    context.add_function(
        "allowed",
        |This(this): This<CelValue>| -> Result<bool, ExecutionError> {
            Ok(verdict("allowed", &this)?.allowed)
        },
    );
    context.add_function(
        "reason",
        |This(this): This<CelValue>| -> Result<Arc<String>, ExecutionError> {
            Ok(Arc::new(verdict("reason", &this)?.reason))
        },
    );
    context.add_function(
        "errored",
        |This(this): This<CelValue>| -> Result<bool, ExecutionError> {
            Ok(verdict("errored", &this)?.error.is_some())
        },
    );
    context.add_function(
        "error",
        |This(this): This<CelValue>| -> Result<Arc<String>, ExecutionError> {
            Ok(Arc::new(verdict("error", &this)?.error.unwrap_or_default()))
        },
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cel::compile;
    use crate::cel::cost::{OUT_OF_BUDGET, PER_CALL_LIMIT, metered};

    /// A decision table standing in for the server's authorizer (the real one is asked in
    /// the production tests): allows what it lists, and records what it was asked.
    #[derive(Default)]
    struct Table {
        allowed: Vec<(String, Check)>,
        asked: Mutex<Vec<(String, Check)>>,
    }

    #[async_trait::async_trait]
    impl Authorize for Table {
        async fn decide(&self, user: &UserInfo, check: &Check) -> Verdict {
            let user = user_of(user, check).username;
            let key = (
                user,
                Check {
                    service_account: None,
                    ..check.clone()
                },
            );
            self.asked.lock().push(key.clone());
            if matches!(&check.target, Target::Path(p) if p == "/broken") {
                return Verdict {
                    error: Some("the authorizer failed".into()),
                    ..Verdict::default()
                };
            }
            Verdict {
                allowed: self.allowed.contains(&key),
                reason: format!("{} asked {}", key.0, key.1.verb),
                error: None,
            }
        }
    }

    fn resource(group: &str, resource: &str, namespace: &str, name: &str) -> Target {
        Target::Resource(ResourceTarget {
            group: group.into(),
            resource: resource.into(),
            namespace: namespace.into(),
            name: name.into(),
            ..ResourceTarget::default()
        })
    }

    fn check(verb: &str, target: Target) -> Check {
        Check {
            service_account: None,
            verb: verb.into(),
            target,
        }
    }

    /// `expression` evaluated as admission evaluates it, for alice on a flunder `f` in `ns`.
    async fn run(expression: &str, authorizer: Option<&dyn Authorize>) -> Result<CelValue, String> {
        let program = metered(compile(expression).unwrap().expression());
        let checks = Checks::new(Some(ResourceTarget {
            group: "wardle.example.com".into(),
            resource: "flunders".into(),
            namespace: "ns".into(),
            name: "f".into(),
            ..ResourceTarget::default()
        }));
        let alice = UserInfo::new("alice", &["editors"]);
        evaluate_with_checks(&checks, authorizer, &alice, |checks| {
            let mut context = crate::cel::context();
            let meter = Meter::install(&mut context, PER_CALL_LIMIT);
            checks.install(&mut context, &meter);
            meter.run(&program, &context)
        })
        .await
    }

    #[tokio::test]
    async fn checks_ask_the_authorizer_for_the_user_or_a_service_account() {
        let table = Table {
            allowed: vec![
                (
                    "alice".into(),
                    check(
                        "delete",
                        resource("wardle.example.com", "flunders", "ns", "f"),
                    ),
                ),
                (
                    "system:serviceaccount:ns:builder".into(),
                    check("create", resource("", "pods", "ns", "")),
                ),
                (
                    "alice".into(),
                    check("get", Target::Path("/healthz".into())),
                ),
            ],
            ..Table::default()
        };
        let yes = |e: &'static str| (e, CelValue::Bool(true));
        let cases = [
            yes(
                "'delete flunders: ' + string(authorizer.requestResource.check('delete').allowed()) + ', delete nodes: ' + string(authorizer.group('').resource('nodes').check('delete').allowed()) == 'delete flunders: true, delete nodes: false'",
            ),
            yes("authorizer.requestResource.check('delete').allowed()"),
            yes("!authorizer.requestResource.check('update').allowed()"),
            yes("authorizer.requestResource.check('update').reason() == 'alice asked update'"),
            yes(
                "authorizer.serviceAccount('ns', 'builder').group('').resource('pods').namespace('ns').check('create').allowed()",
            ),
            yes("!authorizer.group('').resource('pods').namespace('ns').check('create').allowed()"),
            yes("authorizer.path('/healthz').check('get').allowed()"),
            yes(
                "authorizer.path('/broken').check('get').errored() && authorizer.path('/broken').check('get').error() == 'the authorizer failed'",
            ),
            yes("!authorizer.path('/healthz').check('get').errored()"),
            yes(
                "authorizer.group('wardle.example.com').resource('flunders').subresource('status').namespace('ns').name('f').check('patch').reason() == 'alice asked patch'",
            ),
            yes(
                "authorizer.group('').resource('pods').labelSelector('app=web').fieldSelector('spec.nodeName=n1').check('list').reason() == 'alice asked list'",
            ),
        ];
        for (expression, expected) in cases {
            assert_eq!(
                run(expression, Some(&table)).await,
                Ok(expected),
                "{expression}"
            );
        }
        let asked = table.asked.lock().clone();
        assert!(asked.contains(&(
            "alice".into(),
            check(
                "patch",
                Target::Resource(ResourceTarget {
                    group: "wardle.example.com".into(),
                    resource: "flunders".into(),
                    subresource: "status".into(),
                    namespace: "ns".into(),
                    name: "f".into(),
                    ..ResourceTarget::default()
                })
            )
        )));
        assert!(asked.contains(&(
            "alice".into(),
            check(
                "list",
                Target::Resource(ResourceTarget {
                    resource: "pods".into(),
                    label_selector: "app=web".into(),
                    field_selector: "spec.nodeName=n1".into(),
                    ..ResourceTarget::default()
                })
            )
        )));
        // One question per distinct check of an evaluation, however often it is named.
        let broken = asked
            .iter()
            .filter(|(_, c)| c.target == Target::Path("/broken".into()))
            .count();
        assert_eq!(broken, 1, "{asked:?}");
    }

    #[tokio::test]
    async fn checks_cost_upstreams_350000_and_fail_without_an_authorizer() {
        let table = Table::default();
        let two = "authorizer.path('/a').check('get').allowed() || authorizer.path('/b').check('get').allowed() || true";
        assert_eq!(run(two, Some(&table)).await, Ok(CelValue::Bool(true)));
        let three = "authorizer.path('/a').check('get').allowed() || authorizer.path('/b').check('get').allowed() || authorizer.path('/c').check('get').allowed()";
        assert_eq!(run(three, Some(&table)).await, Err(OUT_OF_BUDGET.into()));
        assert_eq!(
            run("authorizer.path('/a').check('get').error()", None).await,
            Ok(CelValue::String(Arc::new(
                "no authorizer is configured".into()
            )))
        );
        let misuse = run("authorizer.path('/a').resource('x')", Some(&table)).await;
        assert!(
            misuse
                .as_ref()
                .is_err_and(|e| e.contains("resource() is a function of a resource check")),
            "{misuse:?}"
        );
    }
}
