//! The storage-migration step of a key rotation: every stored value of the encrypted resources
//! that the first provider did not write (an old key's, or plain values before encryption) is
//! read and written again, unchanged, so that the first provider encrypts it.
//!
//! Upstream's documented step reads and replaces every object through the API
//! (`kubectl get secrets -A -o json | kubectl replace -f -`). This one works below the API, on
//! the stored values: an object's content is not touched (only its `resourceVersion` moves on,
//! as any write moves it), objects the first provider already wrote are skipped, so running it
//! again after an interruption finishes the work, and each value is written with a
//! compare-and-swap, so a client's write that lands first wins (it was encrypted by the first
//! provider already, or is read again and rewritten).

use bytes::Bytes;

use super::EncryptionConfig;
use crate::{ListRequest, Storage, StorageError};

/// How many values a rewrite reads per page.
const PAGE: usize = 500;

/// What [`rewrite_stale`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RewriteReport {
    /// Values of encrypted resources read.
    pub seen: usize,
    /// Values written again with the first provider.
    pub rewritten: usize,
}

/// Writes again every value under `prefix` of `raw` (the store below the encryption) that
/// `config` encrypts and its first provider did not write, with that provider.
pub async fn rewrite_stale(
    raw: &dyn Storage,
    config: &EncryptionConfig,
    prefix: &str,
) -> Result<RewriteReport, StorageError> {
    let mut report = RewriteReport::default();
    let mut start_after = None;
    loop {
        let page = raw
            .list(ListRequest {
                prefix: prefix.to_string(),
                start_after: start_after.take(),
                limit: PAGE,
                ..Default::default()
            })
            .await?;
        for kv in &page.items {
            let Some(providers) = config.providers_of(&kv.key) else {
                continue;
            };
            report.seen += 1;
            let mut current = kv.clone();
            while !providers.is_current(&current.value) {
                let plain = providers.read(&current.key, &current.value).await?;
                let value: Bytes = providers.write(&current.key, &plain).await?;
                match raw.update(&current.key, value, current.mod_revision).await {
                    Ok(_) => {
                        report.rewritten += 1;
                        break;
                    }
                    // Written meanwhile: read it again (a client's write used the first
                    // provider and ends the loop).
                    Err(StorageError::Conflict { .. }) => match raw.get(&current.key).await? {
                        Some(latest) => current = latest,
                        None => break,
                    },
                    Err(StorageError::NotFound(_)) => break,
                    Err(e) => return Err(e),
                }
            }
        }
        if !page.more {
            return Ok(report);
        }
        start_after = page.items.last().map(|kv| kv.key.to_string());
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::encryption::fixtures::{cbc, flunders as config};
    use crate::encryption::{EncryptedStorage, Provider};
    use crate::memory::MemoryStorage;

    #[tokio::test]
    async fn values_of_old_keys_and_plain_values_are_rewritten_with_the_first_provider() {
        let raw: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
        let plain_key = "/wardle.example.com/flunders/ns/plain";
        raw.create(plain_key, Bytes::from("before encryption"))
            .await
            .unwrap();
        let old = EncryptedStorage::wrap(raw.clone(), config(vec![cbc("key1", 1)]));
        for i in 0..1200 {
            let key = format!("/wardle.example.com/flunders/ns/f{i:04}");
            old.create(&key, Bytes::from(format!("value {i}")))
                .await
                .unwrap();
        }
        raw.create("/wardle.example.com/fischers/x", Bytes::from("open"))
            .await
            .unwrap();
        let rotated = config(vec![cbc("key2", 2), cbc("key1", 1), Provider::Identity]);
        let report = rewrite_stale(raw.as_ref(), &rotated, "/").await.unwrap();
        assert_eq!(
            report,
            RewriteReport {
                seen: 1201,
                rewritten: 1201
            }
        );
        // Every Flunder under key2, with its value; the Fischer untouched.
        let page = raw
            .list(ListRequest {
                prefix: "/wardle.example.com/flunders/".into(),
                ..Default::default()
            })
            .await
            .unwrap();
        assert_eq!(page.items.len(), 1201);
        for kv in &page.items {
            assert!(kv.value.starts_with(b"k8s:enc:aescbc:v1:key2:"), "{kv:?}");
        }
        let only_key2 = EncryptedStorage::wrap(raw.clone(), config(vec![cbc("key2", 2)]));
        let got = only_key2.get("/wardle.example.com/flunders/ns/f0042").await;
        assert_eq!(got.unwrap().unwrap().value, "value 42");
        let got = only_key2.get(plain_key).await.unwrap().unwrap();
        assert_eq!(got.value, "before encryption");
        let fischer = raw.get("/wardle.example.com/fischers/x").await.unwrap();
        assert_eq!(fischer.unwrap().value, "open");
        // A second run finds nothing to do.
        let again = rewrite_stale(raw.as_ref(), &rotated, "/").await.unwrap();
        assert_eq!(again.rewritten, 0);
        assert_eq!(again.seen, 1201);
    }

    #[tokio::test]
    async fn a_value_no_provider_reads_stops_the_rewrite_naming_its_key() {
        let raw: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
        let old = EncryptedStorage::wrap(raw.clone(), config(vec![cbc("key0", 9)]));
        old.create("/wardle.example.com/flunders/ns/a", Bytes::from("v"))
            .await
            .unwrap();
        let err = rewrite_stale(raw.as_ref(), &config(vec![cbc("key2", 2)]), "/")
            .await
            .unwrap_err();
        let message = err.to_string();
        assert!(
            message.contains("/wardle.example.com/flunders/ns/a")
                && message.contains("no matching prefix found"),
            "{message}"
        );
    }
}
