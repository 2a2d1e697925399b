//! Delegated authorization: ask the host cluster with a `SubjectAccessReview`
//! (`authorization.k8s.io/v1`), as upstream's webhook authorizer
//! (`k8s.io/apiserver/plugin/pkg/authorizer/webhook`).
//!
//! The review carries the user (name, uid, groups, extra) and either `resourceAttributes` or
//! `nonResourceAttributes`. Its status maps to a decision: `allowed` → allow, `denied` → deny
//! with the reason, neither → no opinion with the reason, both → an error. Answers are cached
//! by the whole review spec, allowed ones for the authorized TTL and the others for the
//! unauthorized TTL; failures to ask are not cached and make the request fail with `500`.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::authorization::v1 as sar;
use k8s_openapi::apimachinery::pkg::apis::meta::v1 as meta;
use parking_lot::Mutex;

use super::cache::{Clock, ExpiringCache, SystemClock};
use super::{Attributes, AuthorizationError, Authorizer, Decision, Request};

/// Upstream's default for both cache TTLs (`--authorization-webhook-cache-authorized-ttl`,
/// `--authorization-webhook-cache-unauthorized-ttl`).
pub const DEFAULT_CACHE_TTL: Duration = Duration::from_secs(10);

/// How many answers are cached at most (upstream's size).
pub const CACHE_SIZE: usize = 8192;

/// How many bytes the cached answers may hold together, keys (the whole review spec)
/// included. Ordinary answers weigh a few hundred bytes, so all [`CACHE_SIZE`] of them fit;
/// the bound is for keys that clients make large.
pub const CACHE_BYTES: usize = 16 << 20;

/// Requests whose client-controlled attributes are longer than this together are not cached
/// (upstream's `maxControlledAttrCacheSize`).
const MAX_CACHED_ATTRIBUTES_SIZE: usize = 10000;

/// The answer of a SubjectAccessReview (its `status`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReviewStatus {
    /// The request is allowed.
    pub allowed: bool,
    /// The request is denied (other authorizers are not asked).
    pub denied: bool,
    /// Why, for the user (appended to the Forbidden message).
    pub reason: String,
    /// An error the reviewer met while evaluating (informational; the decision stands).
    pub evaluation_error: String,
}

impl From<sar::SubjectAccessReviewStatus> for ReviewStatus {
    fn from(s: sar::SubjectAccessReviewStatus) -> Self {
        ReviewStatus {
            allowed: s.allowed,
            denied: s.denied.unwrap_or(false),
            reason: s.reason.unwrap_or_default(),
            evaluation_error: s.evaluation_error.unwrap_or_default(),
        }
    }
}

/// Asks someone (the host cluster) whether a request is allowed.
#[async_trait::async_trait]
pub trait SubjectAccessReviewer: Send + Sync + 'static {
    /// Reviews one request; an error means no answer was had.
    async fn review(&self, attrs: &Attributes) -> Result<ReviewStatus, AuthorizationError>;
}

fn non_empty(s: &str) -> Option<String> {
    (!s.is_empty()).then(|| s.to_string())
}

/// The SubjectAccessReview spec for a request, as upstream builds it.
pub fn review_spec(attrs: &Attributes) -> sar::SubjectAccessReviewSpec {
    let user = &attrs.user;
    let mut spec = sar::SubjectAccessReviewSpec {
        user: non_empty(&user.username),
        uid: non_empty(&user.uid),
        groups: (!user.groups.is_empty()).then(|| user.groups.clone()),
        extra: (!user.extra.is_empty()).then(|| user.extra.clone()),
        ..Default::default()
    };
    match &attrs.request {
        Request::Resource(r) => {
            spec.resource_attributes = Some(sar::ResourceAttributes {
                namespace: non_empty(&r.namespace),
                verb: non_empty(&r.verb),
                group: non_empty(&r.group),
                version: non_empty(&r.version),
                resource: non_empty(&r.resource),
                subresource: non_empty(&r.subresource),
                name: non_empty(&r.name),
                field_selector: (!r.field_selector.is_empty()).then(|| {
                    sar::FieldSelectorAttributes {
                        raw_selector: None,
                        requirements: Some(
                            r.field_selector
                                .iter()
                                .map(|q| meta::FieldSelectorRequirement {
                                    key: q.key.clone(),
                                    operator: q.operator.clone(),
                                    values: (!q.values.is_empty()).then(|| q.values.clone()),
                                })
                                .collect(),
                        ),
                    }
                }),
                label_selector: (!r.label_selector.is_empty()).then(|| {
                    sar::LabelSelectorAttributes {
                        raw_selector: None,
                        requirements: Some(
                            r.label_selector
                                .iter()
                                .map(|q| meta::LabelSelectorRequirement {
                                    key: q.key.clone(),
                                    operator: q.operator.clone(),
                                    values: (!q.values.is_empty()).then(|| q.values.clone()),
                                })
                                .collect(),
                        ),
                    }
                }),
            });
        }
        Request::NonResource(n) => {
            spec.non_resource_attributes = Some(sar::NonResourceAttributes {
                path: non_empty(&n.path),
                verb: non_empty(&n.verb),
            });
        }
    }
    spec
}

/// The SubjectAccessReview object for a request.
pub fn review_object(attrs: &Attributes) -> sar::SubjectAccessReview {
    sar::SubjectAccessReview {
        metadata: Default::default(),
        spec: review_spec(attrs),
        status: None,
    }
}

/// Upstream's retry schedule for webhook calls: five attempts, 0.5 s apart at first, each wait
/// 1.5 times the last, with up to 20 % jitter.
const RETRY_STEPS: u32 = 5;
const RETRY_FIRST_DELAY: Duration = Duration::from_millis(500);
/// Each attempt's time limit (upstream's client timeout).
const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(10);

/// Whether a failed review is worth retrying: lost connections, timeouts, `500
/// InternalError`, `429`, `504`, or an answer with a `Retry-After`.
fn should_retry(err: &kube::Error) -> bool {
    match err {
        kube::Error::Api(status) => {
            status.code == 429
                || status.code == 504
                || status.reason == "InternalError"
                || status.reason == "Timeout"
                || status.reason == "TooManyRequests"
                || status
                    .details
                    .as_ref()
                    .is_some_and(|d| d.retry_after_seconds > 0)
        }
        kube::Error::HyperError(_) | kube::Error::Service(_) => true,
        _ => false,
    }
}

/// Reviews through the host cluster's API: `POST
/// /apis/authorization.k8s.io/v1/subjectaccessreviews`, retried on transient failures.
#[async_trait::async_trait]
impl SubjectAccessReviewer for kube::Client {
    async fn review(&self, attrs: &Attributes) -> Result<ReviewStatus, AuthorizationError> {
        let api: kube::Api<sar::SubjectAccessReview> = kube::Api::all(self.clone());
        let object = review_object(attrs);
        let mut delay = RETRY_FIRST_DELAY;
        let mut attempt = 1;
        loop {
            let created = tokio::time::timeout(
                ATTEMPT_TIMEOUT,
                api.create(&kube::api::PostParams::default(), &object),
            )
            .await;
            let err = match created {
                Ok(Ok(review)) => return Ok(review.status.unwrap_or_default().into()),
                Ok(Err(e)) if attempt < RETRY_STEPS && should_retry(&e) => e.to_string(),
                Ok(Err(e)) => return Err(AuthorizationError(e.to_string())),
                Err(_) if attempt < RETRY_STEPS => "timeout".to_string(),
                Err(_) => {
                    return Err(AuthorizationError(format!(
                        "the SubjectAccessReview did not complete within {ATTEMPT_TIMEOUT:?}"
                    )));
                }
            };
            tracing::debug!(attempt, error = %err, "retrying a SubjectAccessReview");
            let jitter = 1.0 + rand::random::<f64>() * 0.2;
            tokio::time::sleep(delay.mul_f64(jitter)).await;
            delay = delay.mul_f64(1.5);
            attempt += 1;
        }
    }
}

/// Authorizes by SubjectAccessReview, caching the answers.
pub struct WebhookAuthorizer {
    reviewer: Arc<dyn SubjectAccessReviewer>,
    authorized_ttl: Duration,
    unauthorized_ttl: Duration,
    cache: Mutex<ExpiringCache<String, ReviewStatus>>,
}

impl WebhookAuthorizer {
    /// Asks `reviewer`; keeps allowed answers for `authorized_ttl` and the others for
    /// `unauthorized_ttl` (a zero TTL caches nothing).
    pub fn new(
        reviewer: Arc<dyn SubjectAccessReviewer>,
        authorized_ttl: Duration,
        unauthorized_ttl: Duration,
    ) -> Self {
        Self::with_clock(
            reviewer,
            authorized_ttl,
            unauthorized_ttl,
            Arc::new(SystemClock),
        )
    }

    /// Like [`WebhookAuthorizer::new`], with the cache's time taken from `clock`.
    pub fn with_clock(
        reviewer: Arc<dyn SubjectAccessReviewer>,
        authorized_ttl: Duration,
        unauthorized_ttl: Duration,
        clock: Arc<dyn Clock>,
    ) -> Self {
        WebhookAuthorizer {
            reviewer,
            authorized_ttl,
            unauthorized_ttl,
            cache: Mutex::new(ExpiringCache::new(CACHE_SIZE, CACHE_BYTES, clock)),
        }
    }
}

/// Upstream's `shouldCache`: the attributes the client controls are not too long together.
/// Unlike upstream, the selectors count too: a list's label and field selectors are part of
/// the review, so of the cache key.
fn should_cache(request: &Request) -> bool {
    let size = match request {
        Request::Resource(r) => {
            let selectors: usize = r
                .field_selector
                .iter()
                .chain(&r.label_selector)
                .map(|q| {
                    q.key.len() + q.operator.len() + q.values.iter().map(String::len).sum::<usize>()
                })
                .sum();
            r.namespace.len()
                + r.verb.len()
                + r.group.len()
                + r.version.len()
                + r.resource.len()
                + r.subresource.len()
                + r.name.len()
                + selectors
        }
        Request::NonResource(n) => n.verb.len() + n.path.len(),
    };
    size < MAX_CACHED_ATTRIBUTES_SIZE
}

/// The bytes a cached answer holds: its key and its strings.
fn cached_size(key: &str, status: &ReviewStatus) -> usize {
    key.len() + status.reason.len() + status.evaluation_error.len() + size_of::<ReviewStatus>()
}

#[async_trait::async_trait]
impl Authorizer for WebhookAuthorizer {
    async fn authorize(&self, attrs: &Attributes) -> Result<Decision, AuthorizationError> {
        let key = serde_json::to_string(&review_spec(attrs))
            .map_err(|e| AuthorizationError(e.to_string()))?;
        let cached = self.cache.lock().get(&key);
        let status = match cached {
            Some(status) => status,
            None => {
                let status = self.reviewer.review(attrs).await?;
                let ttl = if status.allowed {
                    self.authorized_ttl
                } else {
                    self.unauthorized_ttl
                };
                if should_cache(&attrs.request) && !ttl.is_zero() {
                    let size = cached_size(&key, &status);
                    self.cache.lock().insert(key, status.clone(), ttl, size);
                }
                status
            }
        };
        if !status.evaluation_error.is_empty() {
            tracing::debug!(error = %status.evaluation_error, "SubjectAccessReview evaluation error");
        }
        match (status.allowed, status.denied) {
            (true, true) => Err(AuthorizationError(
                "webhook subject access review returned both allow and deny response".into(),
            )),
            (_, true) => Ok(Decision::Deny(status.reason)),
            (true, false) => Ok(Decision::Allow),
            (false, false) => Ok(Decision::NoOpinion(status.reason)),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;
    use crate::authz::cache::tests::ManualClock;
    use crate::authz::{NonResourceAttributes, ResourceAttributes};
    use crate::user::UserInfo;

    type Answer = dyn Fn(&Attributes) -> Result<ReviewStatus, AuthorizationError> + Send + Sync;

    /// A test double that answers from a function of the attributes and counts its calls.
    struct CountingReviewer {
        calls: AtomicUsize,
        answer: Box<Answer>,
    }

    impl CountingReviewer {
        fn new(
            answer: impl Fn(&Attributes) -> Result<ReviewStatus, AuthorizationError>
            + Send
            + Sync
            + 'static,
        ) -> Arc<Self> {
            Arc::new(CountingReviewer {
                calls: AtomicUsize::new(0),
                answer: Box::new(answer),
            })
        }

        fn calls(&self) -> usize {
            self.calls.load(Ordering::SeqCst)
        }
    }

    #[async_trait::async_trait]
    impl SubjectAccessReviewer for CountingReviewer {
        async fn review(&self, attrs: &Attributes) -> Result<ReviewStatus, AuthorizationError> {
            self.calls.fetch_add(1, Ordering::SeqCst);
            (self.answer)(attrs)
        }
    }

    fn get(user: &str, name: &str) -> Attributes {
        Attributes {
            user: UserInfo::new(user, &["system:authenticated"]),
            request: Request::Resource(ResourceAttributes {
                verb: "get".into(),
                group: "wardle.example.com".into(),
                version: "v1alpha1".into(),
                resource: "flunders".into(),
                namespace: "ns".into(),
                name: name.into(),
                ..Default::default()
            }),
        }
    }

    /// Allows `alice`, denies `mallory` (with a reason), has no opinion on anybody else.
    fn by_user(a: &Attributes) -> Result<ReviewStatus, AuthorizationError> {
        Ok(match a.user.username.as_str() {
            "alice" => ReviewStatus {
                allowed: true,
                ..Default::default()
            },
            "mallory" => ReviewStatus {
                denied: true,
                reason: "banned".into(),
                ..Default::default()
            },
            _ => ReviewStatus {
                reason: "no rule".into(),
                ..Default::default()
            },
        })
    }

    fn authorizer(
        reviewer: Arc<CountingReviewer>,
        allowed: u64,
        denied: u64,
    ) -> (WebhookAuthorizer, Arc<ManualClock>) {
        let clock = ManualClock::new();
        let a = WebhookAuthorizer::with_clock(
            reviewer,
            Duration::from_secs(allowed),
            Duration::from_secs(denied),
            clock.clone(),
        );
        (a, clock)
    }

    #[tokio::test]
    async fn decisions() {
        let reviewer = CountingReviewer::new(by_user);
        let (a, _) = authorizer(reviewer, 10, 10);
        assert_eq!(a.authorize(&get("alice", "x")).await, Ok(Decision::Allow));
        assert_eq!(
            a.authorize(&get("mallory", "x")).await,
            Ok(Decision::Deny("banned".into()))
        );
        assert_eq!(
            a.authorize(&get("bob", "x")).await,
            Ok(Decision::NoOpinion("no rule".into()))
        );
        let both = CountingReviewer::new(|_| {
            Ok(ReviewStatus {
                allowed: true,
                denied: true,
                ..Default::default()
            })
        });
        let (a, _) = authorizer(both, 10, 10);
        assert_eq!(
            a.authorize(&get("alice", "x")).await,
            Err(AuthorizationError(
                "webhook subject access review returned both allow and deny response".into()
            ))
        );
    }

    #[tokio::test]
    async fn allowed_answers_are_cached_for_the_authorized_ttl() {
        let reviewer = CountingReviewer::new(by_user);
        let (a, clock) = authorizer(reviewer.clone(), 10, 3);
        for _ in 0..3 {
            assert_eq!(a.authorize(&get("alice", "x")).await, Ok(Decision::Allow));
        }
        assert_eq!(reviewer.calls(), 1);
        clock.advance(Duration::from_millis(9999));
        a.authorize(&get("alice", "x")).await.unwrap();
        assert_eq!(reviewer.calls(), 1);
        clock.advance(Duration::from_millis(1));
        a.authorize(&get("alice", "x")).await.unwrap();
        assert_eq!(reviewer.calls(), 2);
    }

    #[tokio::test]
    async fn denied_answers_are_cached_for_the_unauthorized_ttl() {
        let reviewer = CountingReviewer::new(by_user);
        let (a, clock) = authorizer(reviewer.clone(), 10, 3);
        for user in ["mallory", "bob"] {
            a.authorize(&get(user, "x")).await.unwrap();
            a.authorize(&get(user, "x")).await.unwrap();
        }
        assert_eq!(reviewer.calls(), 2);
        clock.advance(Duration::from_millis(2999));
        a.authorize(&get("mallory", "x")).await.unwrap();
        a.authorize(&get("bob", "x")).await.unwrap();
        assert_eq!(reviewer.calls(), 2);
        clock.advance(Duration::from_millis(1));
        assert_eq!(
            a.authorize(&get("mallory", "x")).await,
            Ok(Decision::Deny("banned".into()))
        );
        a.authorize(&get("bob", "x")).await.unwrap();
        assert_eq!(reviewer.calls(), 4);
    }

    #[tokio::test]
    async fn distinct_attributes_are_asked_separately() {
        let reviewer = CountingReviewer::new(by_user);
        let (a, _) = authorizer(reviewer.clone(), 10, 10);
        let base = get("alice", "x");
        let mut variants = vec![base.clone(), get("alice", "y"), get("bob", "x")];
        let mut with_uid = base.clone();
        with_uid.user.uid = "u1".into();
        variants.push(with_uid);
        let mut with_group = base.clone();
        with_group.user.groups.push("g".into());
        variants.push(with_group);
        let mut with_extra = base.clone();
        with_extra
            .user
            .extra
            .insert("scopes".into(), vec!["a".into()]);
        variants.push(with_extra);
        let mut other_verb = base.clone();
        if let Request::Resource(r) = &mut other_verb.request {
            r.verb = "delete".into();
        }
        variants.push(other_verb);
        let mut sub = base.clone();
        if let Request::Resource(r) = &mut sub.request {
            r.subresource = "status".into();
        }
        variants.push(sub);
        variants.push(Attributes {
            user: base.user.clone(),
            request: Request::NonResource(NonResourceAttributes {
                path: "/apis".into(),
                verb: "get".into(),
            }),
        });
        for v in &variants {
            a.authorize(v).await.unwrap();
        }
        assert_eq!(reviewer.calls(), variants.len());
        for v in &variants {
            a.authorize(v).await.unwrap();
        }
        assert_eq!(reviewer.calls(), variants.len());
    }

    #[tokio::test]
    async fn errors_are_not_cached() {
        let reviewer = CountingReviewer::new(|_| Err(AuthorizationError("host down".into())));
        let (a, _) = authorizer(reviewer.clone(), 10, 10);
        for _ in 0..3 {
            assert_eq!(
                a.authorize(&get("alice", "x")).await,
                Err(AuthorizationError("host down".into()))
            );
        }
        assert_eq!(reviewer.calls(), 3);
    }

    #[tokio::test]
    async fn very_long_attributes_are_not_cached() {
        let reviewer = CountingReviewer::new(by_user);
        let (a, _) = authorizer(reviewer.clone(), 10, 10);
        let long = get("alice", &"n".repeat(10_000));
        a.authorize(&long).await.unwrap();
        a.authorize(&long).await.unwrap();
        assert_eq!(reviewer.calls(), 2);
    }

    #[tokio::test]
    async fn long_selectors_are_not_cached() {
        let reviewer = CountingReviewer::new(by_user);
        let (a, _) = authorizer(reviewer.clone(), 10, 10);
        let list = |values: Vec<String>| {
            let mut attrs = get("alice", "");
            if let Request::Resource(r) = &mut attrs.request {
                r.verb = "list".into();
                r.label_selector = vec![crate::authz::SelectorRequirement {
                    key: "app".into(),
                    operator: "In".into(),
                    values,
                }];
            }
            attrs
        };
        let short = list(vec!["a".into()]);
        a.authorize(&short).await.unwrap();
        a.authorize(&short).await.unwrap();
        assert_eq!(reviewer.calls(), 1);
        let long = list((0..200).map(|i| format!("{i:063}")).collect());
        a.authorize(&long).await.unwrap();
        a.authorize(&long).await.unwrap();
        assert_eq!(reviewer.calls(), 3);
        assert_eq!(a.cache.lock().len(), 1);
    }

    /// An attack's worth of distinct answers, each as large as may be cached: the cache holds
    /// at most its byte bound, and nothing once their time is up.
    #[tokio::test]
    async fn the_cache_is_bounded_in_bytes_and_empties_after_the_ttl() {
        let reviewer = CountingReviewer::new(by_user);
        let (a, clock) = authorizer(reviewer.clone(), 10, 10);
        let mut largest = 0;
        for i in 0..3000 {
            // Just under the attribute limit, with the name making each unique.
            let attrs = get("system:anonymous", &format!("{i:09}{}", "n".repeat(9_900)));
            a.authorize(&attrs).await.unwrap();
            largest = largest.max(a.cache.lock().bytes());
        }
        assert_eq!(reviewer.calls(), 3000);
        assert!(largest <= CACHE_BYTES, "{largest} bytes cached");
        assert!(largest > CACHE_BYTES / 2, "entries are counted: {largest}");
        clock.advance(Duration::from_secs(10));
        a.authorize(&get("alice", "x")).await.unwrap();
        assert_eq!(a.cache.lock().len(), 1);
        assert!(a.cache.lock().bytes() < 2048);
    }

    #[test]
    fn review_body() {
        let mut user = UserInfo::new("bob", &["g", "system:authenticated"]);
        user.uid = "u".into();
        user.extra.insert("k".into(), vec!["v".into()]);
        let mut a = get("bob", "");
        a.user = user;
        if let Request::Resource(r) = &mut a.request {
            r.verb = "list".into();
        }
        let json = serde_json::to_value(review_object(&a)).unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "apiVersion": "authorization.k8s.io/v1",
                "kind": "SubjectAccessReview",
                "metadata": {},
                "spec": {
                    "user": "bob", "uid": "u", "groups": ["g", "system:authenticated"],
                    "extra": {"k": ["v"]},
                    "resourceAttributes": {"namespace": "ns", "verb": "list",
                        "group": "wardle.example.com", "version": "v1alpha1", "resource": "flunders"}
                }
            })
        );
        if let Request::Resource(r) = &mut a.request {
            r.field_selector = vec![crate::authz::SelectorRequirement {
                key: "metadata.name".into(),
                operator: "In".into(),
                values: vec!["x".into()],
            }];
            r.label_selector = vec![crate::authz::SelectorRequirement {
                key: "app".into(),
                operator: "Exists".into(),
                values: vec![],
            }];
        }
        let json = serde_json::to_value(review_object(&a)).unwrap();
        assert_eq!(
            json["spec"]["resourceAttributes"]["fieldSelector"],
            serde_json::json!({"requirements": [{"key": "metadata.name", "operator": "In", "values": ["x"]}]})
        );
        assert_eq!(
            json["spec"]["resourceAttributes"]["labelSelector"],
            serde_json::json!({"requirements": [{"key": "app", "operator": "Exists"}]})
        );
        let n = Attributes {
            user: UserInfo::new("alice", &[]),
            request: Request::NonResource(NonResourceAttributes {
                path: "/apis".into(),
                verb: "get".into(),
            }),
        };
        let json = serde_json::to_value(review_object(&n)).unwrap();
        assert_eq!(
            json["spec"],
            serde_json::json!({"user": "alice", "nonResourceAttributes": {"path": "/apis", "verb": "get"}})
        );
    }
}
