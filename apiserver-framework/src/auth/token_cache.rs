//! Remembering token review answers for a while, keyed by a salted hash of the token.

use std::collections::HashMap;
use std::time::Duration;

use parking_lot::Mutex;
use sha2::{Digest, Sha256};
use tokio::time::Instant;

use super::token_review::TokenLookup;

/// The cache key of a token: a SHA-256 of a per-process random salt and the token.
pub type CacheKey = [u8; 32];

/// How many answers are kept at most; beyond that, expired ones are dropped first, then
/// arbitrary ones.
const CAPACITY: usize = 4096;

/// Token review answers, each kept for the TTL (measured with Tokio's clock).
pub struct TokenCache {
    ttl: Duration,
    salt: [u8; 32],
    entries: Mutex<HashMap<CacheKey, (Instant, TokenLookup)>>,
}

impl TokenCache {
    /// A cache keeping answers for `ttl` (zero: nothing is kept).
    pub fn new(ttl: Duration) -> Self {
        TokenCache {
            ttl,
            salt: rand::random(),
            entries: Mutex::new(HashMap::new()),
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
        let mut entries = self.entries.lock();
        match entries.get(key) {
            Some((expires, answer)) if Instant::now() < *expires => Some(answer.clone()),
            Some(_) => {
                entries.remove(key);
                None
            }
            None => None,
        }
    }

    /// Remembers `answer` under `key` for the TTL.
    pub fn insert(&self, key: CacheKey, answer: TokenLookup) {
        if self.ttl.is_zero() {
            return;
        }
        let now = Instant::now();
        let mut entries = self.entries.lock();
        if entries.len() >= CAPACITY && !entries.contains_key(&key) {
            entries.retain(|_, (expires, _)| now < *expires);
            if entries.len() >= CAPACITY
                && let Some(victim) = entries.keys().next().copied()
            {
                entries.remove(&victim);
            }
        }
        entries.insert(key, (now + self.ttl, answer));
    }
}
