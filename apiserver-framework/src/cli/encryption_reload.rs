//! `--encryption-provider-config-automatic-reload`: the file is read again periodically and,
//! when its content changed and is valid, its configuration replaces the storage's at once
//! (as upstream's `DynamicEncryptionConfigContent` controller: a poll, a content hash, an
//! atomic swap). A file that does not load leaves the configuration in use as it was; the
//! failure is logged (never a secret: errors name fields and redact values) and counted once
//! per content.
//!
//! The metrics are upstream's (`k8s.io/apiserver/pkg/server/options/encryptionconfig/metrics`):
//! `apiserver_encryption_config_controller_automatic_reloads_total{status,apiserver_id_hash}`,
//! `apiserver_encryption_config_controller_automatic_reload_last_timestamp_seconds{status,apiserver_id_hash}`
//! and `apiserver_encryption_config_controller_last_config_info{apiserver_id_hash,hash}`.

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, SystemTime};

use crate::cli::encryption_config::{self, Loaded};
use crate::metrics;
use crate::storage::encryption::EncryptedStorage;

/// The process's identity in the metrics' `apiserver_id_hash` label: the hash of
/// `apiserver-<uuid>`, as upstream hashes its `APIServerID`.
fn apiserver_id_hash() -> &'static str {
    static HASH: OnceLock<String> = OnceLock::new();
    HASH.get_or_init(|| {
        encryption_config::content_hash(&format!("apiserver-{}", uuid::Uuid::new_v4()))
    })
}

/// Records `hash` as the configuration in use.
pub(crate) fn record_config_info(hash: &str) {
    let info = &metrics::global().encryption_config_info;
    info.reset();
    info.with_label_values(&[apiserver_id_hash(), hash]).set(1);
}

fn record_reload(status: &str) {
    let m = metrics::global();
    let labels = [status, apiserver_id_hash()];
    m.encryption_reloads.with_label_values(&labels).inc();
    let now = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs_f64();
    m.encryption_reload_timestamp
        .with_label_values(&labels)
        .set(now);
}

/// `loaded` once its KMS v2 providers are started and healthy (waiting up to 10 s for them,
/// as upstream's `validateNewTransformersHealth`), or why not.
async fn healthy(loaded: Loaded) -> Result<Loaded, String> {
    loaded.config.start_kms().await;
    if !loaded.config.uses_kms() {
        return Ok(loaded);
    }
    let deadline = tokio::time::Instant::now() + NEW_PROVIDERS_GRACE;
    loop {
        match loaded.config.check_kms().await {
            Ok(()) => return Ok(loaded),
            Err(e) if tokio::time::Instant::now() >= deadline => {
                return Err(format!("health check for new transformers failed: {e}"));
            }
            // The pause between two looks of upstream's poll.
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}

/// How long a reload waits for its new KMS v2 providers to be healthy
/// (`minKMSPluginCloseGracePeriod`).
const NEW_PROVIDERS_GRACE: Duration = Duration::from_secs(10);

/// Reads `path` every `interval` and gives `storage` each new valid configuration it holds,
/// `loaded_hash` being the hash of the content in use.
pub(crate) fn spawn(
    path: PathBuf,
    storage: Arc<EncryptedStorage>,
    loaded_hash: String,
    interval: Duration,
) {
    tokio::spawn(async move {
        let mut in_use = loaded_hash;
        let mut failed: Option<String> = None;
        let mut ticks = tokio::time::interval(interval);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticks.tick().await;
            let read = encryption_config::read(&path);
            let hash = read
                .as_ref()
                .ok()
                .map(|text| encryption_config::content_hash(text));
            if hash
                .as_ref()
                .is_some_and(|h| *h == in_use || Some(h) == failed.as_ref())
            {
                continue;
            }
            let loaded = read.and_then(|text| {
                encryption_config::parse(&text).map(|config| Loaded {
                    config,
                    hash: encryption_config::content_hash(&text),
                })
            });
            let loaded = match loaded {
                Ok(loaded) => healthy(loaded).await,
                Err(e) => Err(e),
            };
            match loaded {
                Ok(Loaded { config, hash }) => {
                    storage.set_config(config);
                    record_reload("success");
                    record_config_info(&hash);
                    tracing::info!(path = %path.display(), %hash, "loaded a new encryption provider configuration");
                    in_use = hash;
                    failed = None;
                }
                Err(e) => {
                    record_reload("failure");
                    tracing::error!(
                        path = %path.display(),
                        error = %e,
                        "error processing the encryption provider configuration; the one in use stays"
                    );
                    failed = hash;
                }
            }
        }
    });
}
