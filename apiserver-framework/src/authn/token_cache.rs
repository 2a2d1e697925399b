//! Remembering token review answers for a while, keyed by a salted hash of the token.

use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use sha2::{Digest, Sha256};

use super::token_review::TokenLookup;
use crate::authz::cache::{Clock, ExpiringCache};

/// The cache key of a token: a SHA-256 of a per-process random salt and the token.
pub type CacheKey = [u8; 32];

/// How many answers are kept at most; beyond that, the least recently used go first.
const CAPACITY: usize = 4096;

/// How many bytes the kept answers may hold together (the users the host names, with their
/// groups and extra values). Ordinary users weigh a few hundred bytes, so all [`CAPACITY`]
/// fit.
const CAPACITY_BYTES: usize = 8 << 20;

/// Tokio's clock, so that paused-time tests drive the cache.
struct TokioClock;

impl Clock for TokioClock {
    fn now(&self) -> Instant {
        tokio::time::Instant::now().into_std()
    }
}

/// Token review answers, each kept for the TTL (measured with Tokio's clock).
pub struct TokenCache {
    ttl: Duration,
    salt: [u8; 32],
    entries: Mutex<ExpiringCache<CacheKey, TokenLookup>>,
}

/// The bytes an answer holds.
fn answer_size(answer: &TokenLookup) -> usize {
    let strings = match answer {
        TokenLookup::User(user) => {
            user.username.len()
                + user.uid.len()
                + user.groups.iter().map(String::len).sum::<usize>()
                + user
                    .extra
                    .iter()
                    .map(|(k, v)| k.len() + v.iter().map(String::len).sum::<usize>())
                    .sum::<usize>()
        }
        TokenLookup::Rejected => 0,
        TokenLookup::Failed(why) => why.len(),
    };
    size_of::<CacheKey>() + size_of::<TokenLookup>() + strings
}

impl TokenCache {
    /// A cache keeping answers for `ttl` (zero: nothing is kept).
    pub fn new(ttl: Duration) -> Self {
        TokenCache {
            ttl,
            salt: rand::random(),
            entries: Mutex::new(ExpiringCache::new(
                CAPACITY,
                CAPACITY_BYTES,
                Arc::new(TokioClock),
            )),
        }
    }

    /// The key of `token`.
    pub fn key(&self, token: &str) -> CacheKey {
        let mut hasher = Sha256::new();
        hasher.update(self.salt);
        hasher.update(token.as_bytes());
        hasher.finalize().into()
    }

    /// The answer remembered under `key`, if not expired.
    pub fn get(&self, key: &CacheKey) -> Option<TokenLookup> {
        self.entries.lock().get(key)
    }

    /// Remembers `answer` under `key` for the TTL.
    pub fn insert(&self, key: CacheKey, answer: TokenLookup) {
        if self.ttl.is_zero() {
            return;
        }
        let size = answer_size(&answer);
        self.entries.lock().insert(key, answer, self.ttl, size);
    }

    /// How many answers are kept, and the bytes they are counted for.
    #[cfg(test)]
    pub fn usage(&self) -> (usize, usize) {
        let entries = self.entries.lock();
        (entries.len(), entries.bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::user::UserInfo;

    #[tokio::test(start_paused = true)]
    async fn answers_count_their_size_and_expire() {
        let cache = TokenCache::new(Duration::from_secs(10));
        let mut user = UserInfo::new("alice", &["a-group-of-some-length"]);
        user.extra.insert("scopes".into(), vec!["x".repeat(10_000)]);
        cache.insert(cache.key("t1"), TokenLookup::User(user));
        cache.insert(cache.key("t2"), TokenLookup::Rejected);
        let (entries, bytes) = cache.usage();
        assert_eq!(entries, 2);
        assert!(bytes > 10_000 && bytes < 12_000, "{bytes}");
        tokio::time::advance(Duration::from_secs(10)).await;
        assert_eq!(cache.get(&cache.key("t3")), None);
        assert_eq!(cache.usage(), (0, 0));
    }

    #[tokio::test(start_paused = true)]
    async fn the_cache_is_bounded() {
        let cache = TokenCache::new(Duration::from_secs(10));
        let mut user = UserInfo::new("u", &[]);
        user.extra.insert("k".into(), vec!["v".repeat(4096)]);
        for i in 0..5000 {
            cache.insert(cache.key(&format!("{i}")), TokenLookup::User(user.clone()));
            let (entries, bytes) = cache.usage();
            assert!(entries <= CAPACITY && bytes <= CAPACITY_BYTES);
        }
    }
}
