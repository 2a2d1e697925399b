//! Bearer tokens checked by the host cluster with a TokenReview
//! (`authentication.k8s.io/v1`), results cached for a while (upstream's webhook token
//! authenticator behind its token cache).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use futures::future::{BoxFuture, Shared};
use http::request::Parts;
use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec, TokenReviewStatus};
use parking_lot::Mutex;

use super::token_cache::{CacheKey, TokenCache};
use super::{Authenticated, Authenticator, authenticator::bearer_token};
use crate::user::UserInfo;

/// A TokenReview that could not be answered (host unreachable, error status).
#[derive(Clone, Debug, thiserror::Error)]
#[error("token review failed: {0}")]
pub struct TokenReviewError(pub String);

/// Asks someone (the host cluster) who a bearer token belongs to.
#[async_trait::async_trait]
pub trait TokenReviewer: Send + Sync + 'static {
    /// Reviews `token` for `audiences` (empty: the reviewer's default audience).
    async fn review(
        &self,
        token: &str,
        audiences: &[String],
    ) -> Result<TokenReviewStatus, TokenReviewError>;
}

/// Creates a TokenReview with `POST /apis/authentication.k8s.io/v1/tokenreviews`.
#[async_trait::async_trait]
impl TokenReviewer for kube::Client {
    async fn review(
        &self,
        token: &str,
        audiences: &[String],
    ) -> Result<TokenReviewStatus, TokenReviewError> {
        let review = TokenReview {
            spec: TokenReviewSpec {
                token: Some(token.to_owned()),
                audiences: (!audiences.is_empty()).then(|| audiences.to_vec()),
            },
            ..TokenReview::default()
        };
        let api = kube::Api::<TokenReview>::all(self.clone());
        let created = api
            .create(&kube::api::PostParams::default(), &review)
            .await
            .map_err(|e| TokenReviewError(e.to_string()))?;
        Ok(created.status.unwrap_or_default())
    }
}

/// What a review concluded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TokenLookup {
    /// The token belongs to this user (cached).
    User(UserInfo),
    /// The token is not valid (cached).
    Rejected,
    /// The review could not be done (not cached).
    Failed(String),
}

/// Interprets a TokenReview status as upstream's webhook authenticator: not authenticated
/// with an error message is a failure (not cached); with audiences wanted, the token's
/// audiences (the wanted ones when it states none) must include one of them.
pub fn lookup_from_status(status: TokenReviewStatus, audiences: &[String]) -> TokenLookup {
    if status.authenticated != Some(true) {
        return match status.error.filter(|e| !e.is_empty()) {
            Some(err) => TokenLookup::Failed(err),
            None => TokenLookup::Rejected,
        };
    }
    if !audiences.is_empty() {
        let got = status.audiences.as_deref().filter(|a| !a.is_empty());
        let matches = got.is_none_or(|got| got.iter().any(|a| audiences.contains(a)));
        if !matches {
            return TokenLookup::Rejected;
        }
    }
    let user = status.user.unwrap_or_default();
    TokenLookup::User(UserInfo {
        username: user.username.unwrap_or_default(),
        uid: user.uid.unwrap_or_default(),
        groups: user.groups.unwrap_or_default(),
        extra: user.extra.unwrap_or_default().into_iter().collect(),
    })
}

/// How the token authenticator behaves.
#[derive(Clone, Debug)]
pub struct TokenReviewOptions {
    /// How long answers (valid or not) are remembered (`--authentication-token-webhook-cache-ttl`,
    /// 10 s by default; zero disables the cache).
    pub cache_ttl: Duration,
    /// The audiences tokens must be for (empty: the host's default).
    pub audiences: Vec<String>,
    /// How long one review may take (upstream's 10 s).
    pub timeout: Duration,
}

impl Default for TokenReviewOptions {
    fn default() -> Self {
        TokenReviewOptions {
            cache_ttl: Duration::from_secs(10),
            audiences: Vec::new(),
            timeout: Duration::from_secs(10),
        }
    }
}

/// The longest bearer token reviewed; longer ones are invalid without a review.
///
/// Upstream sets no limit of its own (only the 1 MiB header limit of Go's server). Real
/// tokens are far shorter (service account tokens about 1 KiB, OIDC ID tokens a few KiB),
/// and HTTP/2 clients cannot send a longer one to this server at all: its whole header list
/// is limited to 16 KiB (hyper's default). Over HTTP/1.1 a client could send hundreds of
/// kilobytes, each costing a review with the host; this bound makes HTTP/1.1 agree with
/// HTTP/2 before any work is done.
pub const MAX_TOKEN_BYTES: usize = 16 * 1024;

/// How many distinct reviews may wait for the host at once and be shared by their callers;
/// beyond that, each caller reviews on its own (and nothing is kept for it).
const MAX_SHARED_REVIEWS: usize = 4096;

type InFlight = Shared<BoxFuture<'static, TokenLookup>>;

/// A review in flight and how many lookups wait for it.
struct Waited {
    review: InFlight,
    waiters: usize,
}

type InFlightMap = Mutex<HashMap<CacheKey, Waited>>;

/// A lookup's share of an in-flight review: when the last lookup waiting for it goes (done,
/// or dropped because its request was abandoned), the entry goes, and with it the review.
struct Waiter<'a> {
    map: &'a InFlightMap,
    key: CacheKey,
    review: InFlight,
}

impl Drop for Waiter<'_> {
    fn drop(&mut self) {
        let mut map = self.map.lock();
        if let Some(entry) = map.get_mut(&self.key)
            && entry.review.ptr_eq(&self.review)
        {
            entry.waiters -= 1;
            if entry.waiters == 0 {
                map.remove(&self.key);
            }
        }
    }
}

/// Authenticates bearer tokens with a [`TokenReviewer`]: no bearer token, no credentials;
/// a token the reviewer rejects or cannot review, or one longer than [`MAX_TOKEN_BYTES`],
/// invalid. Answers are cached by a salted hash of the token (never the token itself);
/// concurrent lookups of one token share one review, which is dropped (cancelled) when no
/// lookup waits for it any more.
pub struct TokenReviewAuthenticator {
    reviewer: Arc<dyn TokenReviewer>,
    options: TokenReviewOptions,
    cache: TokenCache,
    in_flight: InFlightMap,
}

impl TokenReviewAuthenticator {
    /// Reviews tokens with `reviewer`.
    pub fn new(reviewer: Arc<dyn TokenReviewer>, options: TokenReviewOptions) -> Self {
        TokenReviewAuthenticator {
            reviewer,
            cache: TokenCache::new(options.cache_ttl),
            options,
            in_flight: Mutex::new(HashMap::new()),
        }
    }

    fn review(&self, token: &str) -> InFlight {
        let reviewer = self.reviewer.clone();
        let token = token.to_owned();
        let audiences = self.options.audiences.clone();
        let timeout = self.options.timeout;
        async move {
            let review = reviewer.review(&token, &audiences);
            match tokio::time::timeout(timeout, review).await {
                Ok(Ok(status)) => lookup_from_status(status, &audiences),
                Ok(Err(err)) => TokenLookup::Failed(err.to_string()),
                Err(_) => TokenLookup::Failed("token review timed out".into()),
            }
        }
        .boxed()
        .shared()
    }

    /// Who `token` belongs to, from the cache or a review.
    pub async fn lookup(&self, token: &str) -> TokenLookup {
        if token.len() > MAX_TOKEN_BYTES {
            tracing::debug!(
                bytes = token.len(),
                "a bearer token longer than {MAX_TOKEN_BYTES} bytes is invalid"
            );
            return TokenLookup::Rejected;
        }
        let key = self.cache.key(token);
        if let Some(hit) = self.cache.get(&key) {
            return hit;
        }
        let (review, _waiter) = {
            let mut in_flight = self.in_flight.lock();
            let full = in_flight.len() >= MAX_SHARED_REVIEWS;
            let shared = match in_flight.get_mut(&key) {
                Some(entry) => {
                    entry.waiters += 1;
                    Some(entry.review.clone())
                }
                None if full => None,
                None => {
                    let review = self.review(token);
                    let entry = Waited {
                        review: review.clone(),
                        waiters: 1,
                    };
                    in_flight.insert(key, entry);
                    Some(review)
                }
            };
            match shared {
                Some(review) => {
                    let waiter = Waiter {
                        map: &self.in_flight,
                        key,
                        review: review.clone(),
                    };
                    (review, Some(waiter))
                }
                None => (self.review(token), None),
            }
        };
        let result = review.clone().await;
        let finished_here = {
            let mut in_flight = self.in_flight.lock();
            let ours = in_flight
                .get(&key)
                .is_some_and(|f| f.review.ptr_eq(&review));
            if ours {
                in_flight.remove(&key);
            }
            ours || _waiter.is_none()
        };
        if finished_here && !matches!(result, TokenLookup::Failed(_)) {
            self.cache.insert(key, result.clone());
        }
        result
    }

    /// How many reviews are in flight (shared by their waiting lookups).
    #[cfg(test)]
    pub fn in_flight(&self) -> usize {
        self.in_flight.lock().len()
    }
}

#[async_trait::async_trait]
impl Authenticator for TokenReviewAuthenticator {
    async fn authenticate(&self, parts: &Parts) -> Authenticated {
        let Some(token) = bearer_token(parts) else {
            return Authenticated::NoCredentials;
        };
        match self.lookup(token).await {
            TokenLookup::User(user) => Authenticated::User(user),
            TokenLookup::Rejected => Authenticated::Invalid,
            TokenLookup::Failed(err) => {
                tracing::warn!("authenticating a bearer token: {err}");
                Authenticated::Invalid
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::authentication::v1::UserInfo as ReviewUser;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A reviewer that counts its calls: `good` is alice, `flaky` fails, anything else is
    /// rejected.
    #[derive(Default)]
    struct CountingTokenReviewer {
        calls: AtomicUsize,
        delay: Duration,
    }

    #[async_trait::async_trait]
    impl TokenReviewer for CountingTokenReviewer {
        async fn review(
            &self,
            token: &str,
            _audiences: &[String],
        ) -> Result<TokenReviewStatus, TokenReviewError> {
            self.calls.fetch_add(1, Ordering::SeqCst);
            tokio::time::sleep(self.delay).await;
            match token {
                "good" => Ok(TokenReviewStatus {
                    authenticated: Some(true),
                    user: Some(ReviewUser {
                        username: Some("alice".into()),
                        groups: Some(vec!["dev".into()]),
                        ..Default::default()
                    }),
                    ..Default::default()
                }),
                "flaky" => Err(TokenReviewError("connection refused".into())),
                _ => Ok(TokenReviewStatus::default()),
            }
        }
    }

    fn authenticator(reviewer: &Arc<CountingTokenReviewer>) -> TokenReviewAuthenticator {
        TokenReviewAuthenticator::new(reviewer.clone(), TokenReviewOptions::default())
    }

    #[tokio::test(start_paused = true)]
    async fn answers_are_cached_for_the_ttl() {
        let reviewer = Arc::new(CountingTokenReviewer::default());
        let authn = authenticator(&reviewer);
        let alice = TokenLookup::User(UserInfo::new("alice", &["dev"]));
        assert_eq!(authn.lookup("good").await, alice);
        assert_eq!(authn.lookup("good").await, alice);
        assert_eq!(authn.lookup("bad").await, TokenLookup::Rejected);
        assert_eq!(authn.lookup("bad").await, TokenLookup::Rejected);
        assert_eq!(reviewer.calls.load(Ordering::SeqCst), 2);
        tokio::time::advance(Duration::from_secs(9)).await;
        authn.lookup("good").await;
        assert_eq!(reviewer.calls.load(Ordering::SeqCst), 2);
        tokio::time::advance(Duration::from_secs(2)).await;
        assert_eq!(authn.lookup("good").await, alice);
        assert_eq!(authn.lookup("bad").await, TokenLookup::Rejected);
        assert_eq!(reviewer.calls.load(Ordering::SeqCst), 4);
    }

    #[tokio::test(start_paused = true)]
    async fn failures_are_not_cached() {
        let reviewer = Arc::new(CountingTokenReviewer::default());
        let authn = authenticator(&reviewer);
        assert!(matches!(
            authn.lookup("flaky").await,
            TokenLookup::Failed(_)
        ));
        assert!(matches!(
            authn.lookup("flaky").await,
            TokenLookup::Failed(_)
        ));
        assert_eq!(reviewer.calls.load(Ordering::SeqCst), 2);
    }

    #[tokio::test(start_paused = true)]
    async fn concurrent_lookups_share_one_review() {
        let reviewer = Arc::new(CountingTokenReviewer {
            delay: Duration::from_millis(100),
            ..Default::default()
        });
        let authn = authenticator(&reviewer);
        let (a, b, c) = tokio::join!(
            authn.lookup("good"),
            authn.lookup("good"),
            authn.lookup("good")
        );
        assert_eq!(a, b);
        assert_eq!(b, c);
        assert_eq!(reviewer.calls.load(Ordering::SeqCst), 1);
    }

    /// A reviewer whose reviews never end; counts those started and those dropped.
    #[derive(Default)]
    struct HangingTokenReviewer {
        started: AtomicUsize,
        dropped: Arc<AtomicUsize>,
    }

    struct CountDrop(Arc<AtomicUsize>);

    impl Drop for CountDrop {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[async_trait::async_trait]
    impl TokenReviewer for HangingTokenReviewer {
        async fn review(
            &self,
            _token: &str,
            _audiences: &[String],
        ) -> Result<TokenReviewStatus, TokenReviewError> {
            self.started.fetch_add(1, Ordering::SeqCst);
            let _dropped = CountDrop(self.dropped.clone());
            std::future::pending().await
        }
    }

    #[tokio::test(start_paused = true)]
    async fn abandoned_lookups_leave_no_review_behind() {
        let reviewer = Arc::new(HangingTokenReviewer::default());
        let authn = TokenReviewAuthenticator::new(reviewer.clone(), TokenReviewOptions::default());
        for i in 0..100 {
            let token = format!("token-{i}");
            let lookup = authn.lookup(&token);
            assert!(
                tokio::time::timeout(Duration::from_millis(1), lookup)
                    .await
                    .is_err()
            );
        }
        assert_eq!(reviewer.started.load(Ordering::SeqCst), 100);
        assert_eq!(
            authn.in_flight(),
            0,
            "abandoned reviews are still in flight"
        );
        // The reviews themselves were dropped with their last waiter.
        assert_eq!(reviewer.dropped.load(Ordering::SeqCst), 100);
        assert_eq!(authn.cache.usage(), (0, 0));
    }

    #[tokio::test(start_paused = true)]
    async fn a_shared_review_goes_on_while_someone_waits() {
        let reviewer = Arc::new(CountingTokenReviewer {
            delay: Duration::from_millis(100),
            ..Default::default()
        });
        let authn = authenticator(&reviewer);
        let alice = TokenLookup::User(UserInfo::new("alice", &["dev"]));
        let patient = authn.lookup("good");
        let impatient = tokio::time::timeout(Duration::from_millis(10), authn.lookup("good"));
        let (patient, impatient) = tokio::join!(patient, impatient);
        assert!(impatient.is_err());
        assert_eq!(patient, alice);
        assert_eq!(reviewer.calls.load(Ordering::SeqCst), 1);
        assert_eq!(authn.in_flight(), 0);
        // The answer was cached by the lookup that saw it through.
        assert_eq!(authn.lookup("good").await, alice);
        assert_eq!(reviewer.calls.load(Ordering::SeqCst), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn overlong_tokens_are_invalid_without_a_review() {
        let reviewer = Arc::new(CountingTokenReviewer::default());
        let authn = authenticator(&reviewer);
        let long = "g".repeat(MAX_TOKEN_BYTES + 1);
        assert_eq!(authn.lookup(&long).await, TokenLookup::Rejected);
        assert_eq!(reviewer.calls.load(Ordering::SeqCst), 0);
        // At the limit, a token is reviewed.
        let at_limit = "g".repeat(MAX_TOKEN_BYTES);
        assert_eq!(authn.lookup(&at_limit).await, TokenLookup::Rejected);
        assert_eq!(reviewer.calls.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn bearer_tokens_map_to_users_or_invalid() {
        let reviewer = Arc::new(CountingTokenReviewer::default());
        let authn = authenticator(&reviewer);
        let req = |auth: Option<&str>| {
            let mut b = http::Request::builder();
            if let Some(a) = auth {
                b = b.header("authorization", a);
            }
            b.body(()).unwrap().into_parts().0
        };
        assert_eq!(
            authn.authenticate(&req(None)).await,
            Authenticated::NoCredentials
        );
        assert_eq!(
            authn.authenticate(&req(Some("Basic Zm9vOmJhcg=="))).await,
            Authenticated::NoCredentials
        );
        assert_eq!(
            authn.authenticate(&req(Some("Bearer good"))).await,
            Authenticated::User(UserInfo::new("alice", &["dev"]))
        );
        assert_eq!(
            authn.authenticate(&req(Some("Bearer nope"))).await,
            Authenticated::Invalid
        );
        assert_eq!(
            authn.authenticate(&req(Some("Bearer flaky"))).await,
            Authenticated::Invalid
        );
    }

    #[test]
    fn audiences_must_intersect() {
        let ok = |auds: Option<Vec<&str>>| TokenReviewStatus {
            authenticated: Some(true),
            audiences: auds.map(|a| a.into_iter().map(String::from).collect()),
            user: Some(ReviewUser {
                username: Some("u".into()),
                ..Default::default()
            }),
            ..Default::default()
        };
        let wanted = vec!["api".to_owned()];
        assert!(matches!(
            lookup_from_status(ok(None), &wanted),
            TokenLookup::User(_)
        ));
        assert!(matches!(
            lookup_from_status(ok(Some(vec!["x", "api"])), &wanted),
            TokenLookup::User(_)
        ));
        assert_eq!(
            lookup_from_status(ok(Some(vec!["x"])), &wanted),
            TokenLookup::Rejected
        );
        let failed = TokenReviewStatus {
            error: Some("boom".into()),
            ..Default::default()
        };
        assert_eq!(
            lookup_from_status(failed, &wanted),
            TokenLookup::Failed("boom".into())
        );
    }
}
