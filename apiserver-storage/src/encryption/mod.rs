//! Encryption at rest, as upstream's `--encryption-provider-config`: [`EncryptedStorage`]
//! writes the values of the resources an [`EncryptionConfig`] names through the first of
//! their [`Providers`], and reads each value through the provider whose prefix it carries, so
//! that a rotation (a new key added first, every object written again, the old key removed)
//! never leaves a value unreadable. Resources the configuration does not name pass through.
//!
//! The wrapper sits right above the backend: the watch cache, the metrics and everything
//! above hold plain values in memory only, and what reaches the backend (etcd, the embedded
//! store's file) is encrypted. `aesgcm` authenticates each value with its storage key (the key
//! below `--etcd-prefix`), so a value copied under another key does not decrypt.
//!
//! [`EncryptedStorage::rewrite_stale`] is the storage-migration step of a rotation: it writes
//! every value the first provider did not write again (see [`rewrite`]).

#[cfg(test)]
mod fixtures;
#[cfg(feature = "kms")]
pub mod kms;
pub mod provider;
pub mod rewrite;

use std::sync::Arc;

use bytes::Bytes;
use futures::StreamExt;
use parking_lot::RwLock;

use provider::ENCRYPTED_PREFIX;
pub use provider::{KmsConfig, Provider};
use rewrite::RewriteReport;

use crate::keys::group_resource;
use crate::{KeyValue, ListPage, ListRequest, Storage, StorageError, StorageEvent, WatchStream};

/// The providers of some resources, in order: the first writes, and each reads the values
/// that carry its prefix (`identity` those that carry none).
#[derive(Clone, Debug)]
pub struct Providers(Vec<Provider>);

impl Providers {
    /// `providers`, the first of which writes (at least one).
    pub fn new(providers: Vec<Provider>) -> Self {
        Providers(providers)
    }

    /// `plain` as written at `key`.
    async fn write(&self, key: &str, plain: &[u8]) -> Result<Bytes, StorageError> {
        let first = self.0.first().unwrap_or(&Provider::Identity);
        first
            .encrypt(key, plain)
            .await
            .map(Bytes::from)
            .map_err(|e| transform_error(key, &e))
    }

    /// Whether `stored` was written by the first provider (rather than by one that only reads;
    /// for `kms`, with the plugin's current key ID, as upstream counts a value of another key
    /// ID stale).
    fn is_current(&self, stored: &[u8]) -> bool {
        let first = self.0.first().unwrap_or(&Provider::Identity);
        let prefix = first.prefix();
        match first {
            Provider::Identity => !stored.starts_with(ENCRYPTED_PREFIX),
            #[cfg(feature = "kms")]
            Provider::Kms(kms) => {
                stored.starts_with(&prefix) && kms.is_current(&stored[prefix.len()..])
            }
            _ => stored.starts_with(&prefix),
        }
    }

    /// The value `stored` at `key` holds.
    async fn read(&self, key: &str, stored: &Bytes) -> Result<Bytes, StorageError> {
        for provider in &self.0 {
            let prefix = provider.prefix();
            let identity = prefix.is_empty();
            if (identity && !stored.starts_with(ENCRYPTED_PREFIX))
                || (!identity && stored.starts_with(&prefix))
            {
                return provider
                    .decrypt(key, &stored[prefix.len()..])
                    .await
                    .map(Bytes::from)
                    .map_err(|e| transform_error(key, &e));
            }
        }
        Err(transform_error(key, "no matching prefix found"))
    }
}

fn transform_error(key: &str, message: &str) -> StorageError {
    StorageError::Internal(format!("unable to transform key {key:?}: {message}"))
}

/// The resources one list of providers covers: `<resource>.<group>` (`flunders.wardle.example.com`),
/// a core resource by its name (`secrets`), every resource of a group (`*.wardle.example.com`),
/// every core resource (`*.`), or every resource (`*.*`).
#[derive(Clone, Debug)]
pub struct Rule {
    /// The resources, as upstream's configuration names them.
    pub resources: Vec<String>,
    /// Their providers.
    pub providers: Providers,
}

impl Rule {
    fn covers(&self, group: &str, resource: &str) -> bool {
        self.resources.iter().any(|r| {
            let (name, of_group) = r.split_once('.').unwrap_or((r.as_str(), ""));
            (name == "*" || name == resource) && (of_group == "*" || of_group == group)
        })
    }
}

/// An encryption configuration: its rules, the first covering a resource deciding.
#[derive(Clone, Debug, Default)]
pub struct EncryptionConfig {
    /// The rules, in order.
    pub rules: Vec<Rule>,
}

impl EncryptionConfig {
    /// The providers of the resource `key` belongs to, if a rule covers it.
    fn providers_of(&self, key: &str) -> Option<&Providers> {
        let (group, resource) = group_resource(key);
        self.rules
            .iter()
            .find(|r| r.covers(group, resource))
            .map(|r| &r.providers)
    }

    /// The KMS v2 providers, in the order of the configuration (upstream's `kms-provider-<i>`).
    #[cfg(feature = "kms")]
    pub fn kms_providers(&self) -> Vec<Arc<kms::KmsV2>> {
        self.rules
            .iter()
            .flat_map(|r| r.providers.0.iter())
            .filter_map(|p| match p {
                Provider::Kms(kms) => Some(kms.clone()),
                _ => None,
            })
            .collect()
    }

    /// Starts the KMS v2 providers (see [`kms::KmsV2::start`]); nothing without any.
    pub async fn start_kms(&self) {
        #[cfg(feature = "kms")]
        for kms in self.kms_providers() {
            kms.start().await;
        }
    }

    /// Whether any provider is KMS v2.
    pub fn uses_kms(&self) -> bool {
        #[cfg(feature = "kms")]
        return !self.kms_providers().is_empty();
        #[cfg(not(feature = "kms"))]
        false
    }

    /// The check of every KMS v2 provider (upstream's `kms-providers` health check): each
    /// failure as `kms-provider-<i>: <error>`.
    pub async fn check_kms(&self) -> Result<(), String> {
        #[allow(unused_mut)]
        let mut errors: Vec<String> = Vec::new();
        #[cfg(feature = "kms")]
        for (i, kms) in self.kms_providers().iter().enumerate() {
            if let Err(e) = kms.check().await {
                errors.push(format!("kms-provider-{i}: {e}"));
            }
        }
        match errors.len() {
            0 => Ok(()),
            1 => Err(errors.remove(0)),
            _ => Err(format!("[{}]", errors.join(", "))),
        }
    }
}

/// A storage whose values are encrypted as an [`EncryptionConfig`] says. The configuration can
/// be replaced while the storage serves ([`EncryptedStorage::set_config`]): each call reads and
/// writes with the configuration current when it starts.
pub struct EncryptedStorage {
    inner: Arc<dyn Storage>,
    /// Shared with the watches, which read each event with the current configuration.
    config: Arc<RwLock<Arc<EncryptionConfig>>>,
}

impl EncryptedStorage {
    /// `inner`, its values encrypted as `config` says.
    pub fn new(inner: Arc<dyn Storage>, config: EncryptionConfig) -> Arc<EncryptedStorage> {
        Arc::new(EncryptedStorage {
            inner,
            config: Arc::new(RwLock::new(Arc::new(config))),
        })
    }

    /// The configuration calls start with from now on (as upstream's automatic reload swaps
    /// its transformers): calls under way finish with the one they started with.
    pub fn set_config(&self, config: EncryptionConfig) {
        *self.config.write() = Arc::new(config);
    }

    /// The current configuration.
    pub fn config(&self) -> Arc<EncryptionConfig> {
        self.config.read().clone()
    }

    /// The current configuration's KMS v2 check (see [`EncryptionConfig::check_kms`]).
    pub async fn check_kms(&self) -> Result<(), String> {
        self.config().check_kms().await
    }

    /// `inner`, its values encrypted as `config` says, as a [`Storage`].
    pub fn wrap(inner: Arc<dyn Storage>, config: EncryptionConfig) -> Arc<dyn Storage> {
        Self::new(inner, config)
    }

    /// Writes again every value under `prefix` that the configuration encrypts and its first
    /// provider did not write, with that provider: the storage-migration step of a key
    /// rotation (see [`rewrite`]).
    pub async fn rewrite_stale(&self, prefix: &str) -> Result<RewriteReport, StorageError> {
        rewrite::rewrite_stale(self.inner.as_ref(), &self.config(), prefix).await
    }
}

/// `kv` with its value read as `config` says.
async fn read(config: &EncryptionConfig, mut kv: KeyValue) -> Result<KeyValue, StorageError> {
    if let Some(providers) = config.providers_of(&kv.key) {
        kv.value = providers.read(&kv.key, &kv.value).await?;
    }
    Ok(kv)
}

#[async_trait::async_trait]
impl Storage for EncryptedStorage {
    async fn get(&self, key: &str) -> Result<Option<KeyValue>, StorageError> {
        let config = self.config();
        match self.inner.get(key).await? {
            Some(kv) => Ok(Some(read(&config, kv).await?)),
            None => Ok(None),
        }
    }

    async fn list(&self, req: ListRequest) -> Result<ListPage, StorageError> {
        let config = self.config();
        let mut page = self.inner.list(req).await?;
        let mut items = Vec::with_capacity(page.items.len());
        for kv in std::mem::take(&mut page.items) {
            items.push(read(&config, kv).await?);
        }
        page.items = items;
        Ok(page)
    }

    async fn create(&self, key: &str, value: Bytes) -> Result<u64, StorageError> {
        let value = match self.config().providers_of(key) {
            Some(providers) => providers.write(key, &value).await?,
            None => value,
        };
        self.inner.create(key, value).await
    }

    async fn update(&self, key: &str, value: Bytes, expected: u64) -> Result<u64, StorageError> {
        let value = match self.config().providers_of(key) {
            Some(providers) => providers.write(key, &value).await?,
            None => value,
        };
        self.inner.update(key, value, expected).await
    }

    async fn delete(
        &self,
        key: &str,
        expected: Option<u64>,
    ) -> Result<(u64, KeyValue), StorageError> {
        let config = self.config();
        let (revision, kv) = self.inner.delete(key, expected).await?;
        Ok((revision, read(&config, kv).await?))
    }

    async fn watch(&self, prefix: &str, after: u64) -> Result<WatchStream, StorageError> {
        let shared = self.config.clone();
        let events = self.inner.watch(prefix, after).await?;
        Ok(events
            .then(move |event| {
                // Each event with the configuration current when it arrives: a value written
                // under a key added by a reload reads.
                let config = shared.read().clone();
                async move {
                    let event = event?;
                    let prev = match event.prev {
                        Some(kv) => Some(read(&config, kv).await?),
                        None => None,
                    };
                    Ok(StorageEvent {
                        kind: event.kind,
                        kv: read(&config, event.kv).await?,
                        prev,
                    })
                }
            })
            .boxed())
    }

    async fn current_revision(&self) -> Result<u64, StorageError> {
        self.inner.current_revision().await
    }

    async fn compact(&self, revision: u64) -> Result<(), StorageError> {
        self.inner.compact(revision).await
    }

    fn local_revision(&self) -> Option<u64> {
        self.inner.local_revision()
    }
}

#[cfg(test)]
mod tests {
    use super::fixtures::{flunders as config, gcm};
    use super::*;
    use crate::memory::MemoryStorage;

    const KEY: &str = "/wardle.example.com/flunders/ns/a";

    #[tokio::test]
    async fn named_resources_are_encrypted_and_others_pass_through() {
        let backend: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
        let storage = EncryptedStorage::wrap(backend.clone(), config(vec![gcm("k1", 1)]));
        storage.create(KEY, Bytes::from("plain")).await.unwrap();
        storage
            .create("/wardle.example.com/fischers/a", Bytes::from("open"))
            .await
            .unwrap();
        let raw = backend.get(KEY).await.unwrap().unwrap().value;
        assert!(raw.starts_with(b"k8s:enc:aesgcm:v1:k1:"), "{raw:?}");
        assert_eq!(storage.get(KEY).await.unwrap().unwrap().value, "plain");
        let open = backend.get("/wardle.example.com/fischers/a").await.unwrap();
        assert_eq!(open.unwrap().value, "open");
        let page = storage
            .list(ListRequest {
                prefix: "/wardle.example.com/".into(),
                ..Default::default()
            })
            .await
            .unwrap();
        let values: Vec<&[u8]> = page.items.iter().map(|kv| &kv.value[..]).collect();
        assert_eq!(values, [&b"open"[..], b"plain"]);
    }

    #[tokio::test]
    async fn a_rotation_reads_values_of_the_old_key_and_writes_the_new() {
        let backend: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
        let old = EncryptedStorage::wrap(backend.clone(), config(vec![gcm("k1", 1)]));
        let rev = old.create(KEY, Bytes::from("v1")).await.unwrap();
        // Both keys, the new one first: reads the old value, writes under the new key.
        let both =
            EncryptedStorage::wrap(backend.clone(), config(vec![gcm("k2", 2), gcm("k1", 1)]));
        assert_eq!(both.get(KEY).await.unwrap().unwrap().value, "v1");
        both.update(KEY, Bytes::from("v2"), rev).await.unwrap();
        let raw = backend.get(KEY).await.unwrap().unwrap().value;
        assert!(raw.starts_with(b"k8s:enc:aesgcm:v1:k2:"), "{raw:?}");
        // The old key removed: the rewritten value still reads.
        let new = EncryptedStorage::wrap(backend.clone(), config(vec![gcm("k2", 2)]));
        assert_eq!(new.get(KEY).await.unwrap().unwrap().value, "v2");
        // Without the key a value was written with, it does not read.
        let lost = EncryptedStorage::wrap(backend, config(vec![gcm("k3", 3)]));
        let err = lost.get(KEY).await.unwrap_err();
        assert!(
            err.to_string().contains("no matching prefix found"),
            "{err}"
        );
    }

    #[tokio::test]
    async fn identity_last_reads_values_written_before_encryption() {
        let backend: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
        backend.create(KEY, Bytes::from("old plain")).await.unwrap();
        let storage = EncryptedStorage::wrap(
            backend.clone(),
            config(vec![gcm("k1", 1), Provider::Identity]),
        );
        assert_eq!(storage.get(KEY).await.unwrap().unwrap().value, "old plain");
        let strict = EncryptedStorage::wrap(backend, config(vec![gcm("k1", 1)]));
        assert!(
            strict.get(KEY).await.is_err(),
            "plain data without identity"
        );
    }

    #[test]
    fn rules_match_as_upstream() {
        let rule = |r: &str| Rule {
            resources: vec![r.into()],
            providers: Providers::new(vec![]),
        };
        assert!(rule("flunders.wardle.example.com").covers("wardle.example.com", "flunders"));
        assert!(!rule("flunders.wardle.example.com").covers("wardle.example.com", "fischers"));
        assert!(rule("*.wardle.example.com").covers("wardle.example.com", "fischers"));
        assert!(rule("*.*").covers("any.example.com", "things"));
        assert!(rule("secrets").covers("", "secrets"));
        assert!(rule("*.").covers("", "configmaps"));
        assert!(!rule("*.").covers("wardle.example.com", "flunders"));
    }
}
