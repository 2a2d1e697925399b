//! The `kms` provider, KMS v2 (feature `kms`): values are encrypted locally by a DEK, and
//! only the DEK's source (a 32-byte seed) is encrypted by an external KMS plugin over its gRPC
//! API on a unix socket, as upstream's `kmsv2` envelope transformer does:
//!
//! - writes use one seed, made and encrypted by the plugin (`Encrypt`) when the provider
//!   starts and again whenever the plugin's key ID (its `Status`) changes; each value is stored
//!   as `k8s:enc:kms:v2:<name>:` and upstream's `EncryptedObject` protobuf (`envelope.rs`);
//! - reads decrypt a value's DEK source through the plugin (`Decrypt`) once and keep it in a
//!   cache (a day, as upstream), so values of known DEKs read while the plugin is away;
//! - the plugin's `Status` is polled (every minute, every 10 s while it fails) and checked by
//!   [`KmsV2::check`] (the `kms-providers` health check); a DEK stays usable for writes for 3
//!   minutes past the last good status, so a short outage does not fail writes, and a longer
//!   one does (`encryptedDEKSource with keyID hash ... expired`).
//!
//! Timings, bounds and messages are upstream's
//! (`k8s.io/apiserver/pkg/server/options/encryptionconfig`, `.../envelope/kmsv2`).

mod channel;
mod client;
mod envelope;
mod proto;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime};

use parking_lot::{Mutex, RwLock};
use sha2::Digest as _;

use client::KmsClient;
use envelope::{Dek, SEED_SIZE};
use proto::{DecryptRequest, EncryptRequest, EncryptedDekSourceType, EncryptedObject};

/// How often a healthy plugin's status is polled (`kmsv2PluginHealthzPositiveInterval`).
const POSITIVE_INTERVAL: Duration = Duration::from_secs(60);
/// How often a failing plugin's status is polled (`kmsv2PluginHealthzNegativeInterval`).
const NEGATIVE_INTERVAL: Duration = Duration::from_secs(10);
/// How long a DEK takes writes past the last good status (`kmsv2PluginWriteDEKSourceMaxTTL`).
const WRITE_DEK_MAX_TTL: Duration = Duration::from_secs(180);
/// How long a check's answer is reused (`kmsPluginHealthzPositiveTTL`, `...NegativeTTL`).
const HEALTHZ_POSITIVE_TTL: Duration = Duration::from_secs(20);
const HEALTHZ_NEGATIVE_TTL: Duration = Duration::from_secs(3);
/// How long a decrypted DEK source stays cached (`cacheTTL`).
const CACHE_TTL: Duration = Duration::from_secs(24 * 3600);

pub use super::provider::KmsConfig;

/// The DEK writes use, and what identifies it.
#[derive(Clone)]
struct WriteState {
    dek: Arc<Dek>,
    key_id: String,
    encrypted_dek_source: Vec<u8>,
    annotations: std::collections::BTreeMap<String, Vec<u8>>,
    cache_key: Vec<u8>,
    expires: SystemTime,
}

/// Decrypted DEK sources by their cache key (`envelope::cache_key`), with when they were
/// last stored.
type DekCache = HashMap<Vec<u8>, (Arc<Dek>, Instant)>;

/// The last check's answer, reused for a while.
#[derive(Default)]
struct Probe {
    last: Option<(Instant, Result<(), String>)>,
    ttl: Duration,
    /// The API version of the first good status: it may not change.
    version: Option<String>,
}

/// A KMS v2 provider (see the module docs).
pub struct KmsV2 {
    config: KmsConfig,
    client: KmsClient,
    state: RwLock<Option<WriteState>>,
    cache: Mutex<DekCache>,
    probe: tokio::sync::Mutex<Probe>,
    started: AtomicBool,
}

impl std::fmt::Debug for KmsV2 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "kms v2 {:?}", self.config.name)
    }
}

impl KmsV2 {
    /// A provider of the plugin `config` names, not yet started (see [`KmsV2::start`]).
    pub fn new(config: KmsConfig) -> Arc<Self> {
        Arc::new(KmsV2 {
            client: KmsClient::new(config.socket.clone(), config.timeout),
            config,
            state: RwLock::new(None),
            cache: Mutex::new(HashMap::new()),
            probe: tokio::sync::Mutex::new(Probe::default()),
            started: AtomicBool::new(false),
        })
    }

    /// The provider's name.
    pub fn name(&self) -> &str {
        &self.config.name
    }

    /// Checks the plugin once (making the first DEK) and polls it from then on, for as long as
    /// the provider is in use, as upstream's `primeAndProbeKMSv2`: a plugin that is not there
    /// yet is not an error, the provider is ready once it answers.
    pub async fn start(self: &Arc<Self>) {
        if self.started.swap(true, Ordering::SeqCst) {
            return;
        }
        let mut failing = self.check_and_log().await.is_err();
        let provider = Arc::downgrade(self);
        tokio::spawn(async move {
            loop {
                let wait = if failing {
                    NEGATIVE_INTERVAL
                } else {
                    POSITIVE_INTERVAL
                };
                tokio::time::sleep(wait).await;
                let Some(provider) = provider.upgrade() else {
                    return;
                };
                failing = provider.check_and_log().await.is_err();
            }
        });
    }

    async fn check_and_log(&self) -> Result<(), String> {
        let result = self.check().await;
        if let Err(e) = &result {
            tracing::error!(name = %self.config.name, error = %e, "kms plugin failed health check probe");
        }
        result
    }

    /// Whether the plugin is healthy, by its `Status` (an answer reused for 20 s, a failure
    /// for 3 s); a new key ID makes a new DEK, a known one keeps the current DEK usable for
    /// writes for 3 more minutes.
    pub async fn check(&self) -> Result<(), String> {
        let mut probe = self.probe.lock().await;
        if let Some((at, result)) = &probe.last
            && at.elapsed() < probe.ttl
        {
            return result.clone();
        }
        let result = match self.client.status().await {
            Err(e) => Err(format!(
                "failed to perform status section of the healthz check for KMS Provider {}, error: {e}",
                self.config.name
            )),
            Ok(status) => self.healthy_and_maybe_rotate(&mut probe, status).await,
        };
        probe.ttl = match result {
            Ok(()) => HEALTHZ_POSITIVE_TTL,
            Err(_) => HEALTHZ_NEGATIVE_TTL,
        };
        probe.last = Some((Instant::now(), result.clone()));
        result
    }

    /// Upstream's `isKMSv2ProviderHealthyAndMaybeRotateDEK`.
    async fn healthy_and_maybe_rotate(
        &self,
        probe: &mut Probe,
        status: proto::StatusResponse,
    ) -> Result<(), String> {
        let mut errors = Vec::new();
        if status.healthz != "ok" {
            errors.push(format!("got unexpected healthz status: {}", status.healthz));
        }
        if status.version != "v2" && status.version != "v2beta1" {
            errors.push(format!(
                "expected KMSv2 API version v2, got {}",
                status.version
            ));
        } else {
            let first = probe.version.get_or_insert_with(|| status.version.clone());
            if *first != status.version {
                errors.push(format!(
                    "KMSv2 API version should not change after the initial status response version {first}, got {}",
                    status.version
                ));
            }
        }
        match envelope::validate_key_id(&status.key_id) {
            Err(e) => errors.push(format!(
                "got invalid KMSv2 KeyID hash {:?}: {e}",
                hash_if_not_empty(&status.key_id)
            )),
            Ok(()) => {
                if let Err(e) = self.rotate_on_key_id_change(&status.key_id).await {
                    errors.push(e);
                }
            }
        }
        match errors.len() {
            0 => Ok(()),
            1 => Err(format!(
                "kmsv2 Provider {} is not healthy, error: {}",
                self.config.name, errors[0]
            )),
            _ => Err(format!(
                "kmsv2 Provider {} is not healthy, error: [{}]",
                self.config.name,
                errors.join(", ")
            )),
        }
    }

    /// Upstream's `rotateDEKOnKeyIDChange`: the DEK is kept while the plugin's key ID is the
    /// one that encrypted it, and replaced by a new one when it changed.
    async fn rotate_on_key_id_change(&self, status_key_id: &str) -> Result<(), String> {
        let expires = SystemTime::now() + WRITE_DEK_MAX_TTL;
        let current_key_id = {
            let mut state = self.state.write();
            match state.as_mut() {
                Some(s) if s.key_id == status_key_id => {
                    s.expires = expires;
                    return Ok(());
                }
                Some(s) => Some(s.key_id.clone()),
                None => None,
            }
        };
        let uid = new_uid();
        let seed: [u8; SEED_SIZE] = rand::random();
        let generated = self
            .client
            .encrypt(EncryptRequest {
                plaintext: seed.to_vec(),
                uid: uid.clone(),
            })
            .await
            .map_err(|e| format!("failed to encrypt DEK, error: {e}"))
            .and_then(|resp| {
                let object = EncryptedObject {
                    encrypted_data: vec![0],
                    key_id: resp.key_id,
                    encrypted_dek_source: resp.ciphertext,
                    annotations: resp.annotations,
                    encrypted_dek_source_type: EncryptedDekSourceType::HkdfSha256XnonceAesGcmSeed
                        as i32,
                };
                envelope::validate(&object).map(|()| object)
            });
        let (err_gen, encrypt_key_id) = match generated {
            Ok(object) if object.key_id == status_key_id => {
                let dek = Arc::new(Dek::Seed(seed.to_vec()));
                let cache_key = envelope::cache_key(&object);
                self.remember(cache_key.clone(), dek.clone());
                *self.state.write() = Some(WriteState {
                    dek,
                    key_id: object.key_id,
                    encrypted_dek_source: object.encrypted_dek_source,
                    annotations: object.annotations,
                    cache_key,
                    expires,
                });
                tracing::info!(name = %self.config.name, uid, key_id_hash = %hash_if_not_empty(status_key_id), "made a new DEK");
                return Ok(());
            }
            Ok(object) => ("<nil>".to_string(), object.key_id),
            Err(e) => (e, String::new()),
        };
        let err_state = match current_key_id {
            Some(_) => "<nil>",
            None => "got unexpected nil transformer",
        };
        Err(format!(
            "failed to rotate DEK uid={uid:?}, useSeed=true, errState={err_state}, errGen={err_gen}, statusKeyIDHash={:?}, encryptKeyIDHash={:?}, stateKeyIDHash={:?}",
            hash_if_not_empty(status_key_id),
            hash_if_not_empty(&encrypt_key_id),
            hash_if_not_empty(current_key_id.as_deref().unwrap_or("")),
        ))
    }

    /// The current DEK for writes (upstream's `getCurrentState` and
    /// `ValidateEncryptCapability`).
    fn write_state(&self) -> Result<WriteState, String> {
        let state = self
            .state
            .read()
            .clone()
            .ok_or("got unexpected nil transformer")?;
        let now = SystemTime::now();
        if now > state.expires {
            return Err(format!(
                "encryptedDEKSource with keyID hash {:?} expired at {} (current time is {})",
                hash_if_not_empty(&state.key_id),
                rfc3339(state.expires),
                rfc3339(now)
            ));
        }
        Ok(state)
    }

    /// `plain` as stored at `key` (after the prefix): the envelope of the current DEK.
    pub async fn encrypt(&self, key: &str, plain: &[u8]) -> Result<Vec<u8>, String> {
        let state = self.write_state()?;
        // Kept fresh in the cache, as upstream does on every write.
        self.remember(state.cache_key.clone(), state.dek.clone());
        let data = state.dek.seal(key, plain)?;
        envelope::encode(&EncryptedObject {
            encrypted_data: data,
            key_id: state.key_id,
            encrypted_dek_source: state.encrypted_dek_source,
            annotations: state.annotations,
            encrypted_dek_source_type: EncryptedDekSourceType::HkdfSha256XnonceAesGcmSeed as i32,
        })
    }

    /// The value `stored` (after the prefix) at `key` holds: its DEK from the cache, or
    /// decrypted by the plugin.
    pub async fn decrypt(&self, key: &str, stored: &[u8]) -> Result<Vec<u8>, String> {
        let object = envelope::decode(stored)?;
        // As upstream: no reads before the provider has had a good status once.
        if self.state.read().is_none() {
            return Err("got unexpected nil transformer".into());
        }
        let cache_key = envelope::cache_key(&object);
        let cached = self.cached(&cache_key);
        let dek = match cached {
            Some(dek) => dek,
            None => {
                let resp = self
                    .client
                    .decrypt(DecryptRequest {
                        ciphertext: object.encrypted_dek_source.clone(),
                        uid: new_uid(),
                        key_id: object.key_id.clone(),
                        annotations: object.annotations.clone(),
                    })
                    .await
                    .map_err(|e| format!("failed to decrypt DEK, error: {e}"))?;
                let dek = match EncryptedDekSourceType::try_from(object.encrypted_dek_source_type) {
                    Ok(EncryptedDekSourceType::HkdfSha256XnonceAesGcmSeed) => {
                        if resp.plaintext.len() < SEED_SIZE {
                            return Err(format!(
                                "invalid seed length {} used for key generation",
                                resp.plaintext.len()
                            ));
                        }
                        Dek::Seed(resp.plaintext)
                    }
                    _ => Dek::Key(resp.plaintext),
                };
                let dek = Arc::new(dek);
                self.remember(cache_key, dek.clone());
                dek
            }
        };
        dek.open(key, &object.encrypted_data)
    }

    /// Whether `stored` (after the prefix) was written with the current DEK's key ID (a
    /// value of an older key ID is rewritten by a storage migration, as upstream marks it
    /// stale).
    pub fn is_current(&self, stored: &[u8]) -> bool {
        let Some(key_id) = self.state.read().as_ref().map(|s| s.key_id.clone()) else {
            return true;
        };
        envelope::decode(stored).is_ok_and(|o| o.key_id == key_id)
    }

    fn cached(&self, key: &[u8]) -> Option<Arc<Dek>> {
        let cache = self.cache.lock();
        cache
            .get(key)
            .filter(|(_, at)| at.elapsed() < CACHE_TTL)
            .map(|(dek, _)| dek.clone())
    }

    fn remember(&self, key: Vec<u8>, dek: Arc<Dek>) {
        let mut cache = self.cache.lock();
        cache.retain(|_, (_, at)| at.elapsed() < CACHE_TTL);
        cache.insert(key, (dek, Instant::now()));
    }
}

/// A unique identifier of a call to the plugin (a random UUID's 128 bits).
fn new_uid() -> String {
    let bits: u128 = rand::random();
    let hex = format!("{bits:032x}");
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

/// Upstream's `GetHashIfNotEmpty`: `sha256:<hex>` of `data`, or nothing.
fn hash_if_not_empty(data: &str) -> String {
    if data.is_empty() {
        return String::new();
    }
    let digest = sha2::Sha256::digest(data.as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

/// `time` as RFC 3339 in UTC, to the second (as Go's `time.RFC3339` writes a UTC time).
fn rfc3339(time: SystemTime) -> String {
    let secs = time
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let (days, rest) = (secs / 86_400, secs % 86_400);
    // Days to a civil date (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_written_as_go_writes_rfc3339() {
        let t = SystemTime::UNIX_EPOCH + Duration::from_secs(1_733_560_496);
        assert_eq!(rfc3339(t), "2024-12-07T08:34:56Z");
        assert_eq!(rfc3339(SystemTime::UNIX_EPOCH), "1970-01-01T00:00:00Z");
    }

    #[test]
    fn hashes_are_upstreams() {
        assert_eq!(hash_if_not_empty(""), "");
        assert_eq!(
            hash_if_not_empty("abc"),
            "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[tokio::test]
    async fn without_a_plugin_nothing_is_written_or_read_and_the_check_says_why() {
        let dir = tempfile::tempdir().unwrap();
        let kms = KmsV2::new(KmsConfig {
            name: "absent".into(),
            socket: dir.path().join("none.sock"),
            timeout: Duration::from_secs(1),
        });
        let err = kms.check().await.unwrap_err();
        assert!(
            err.starts_with(
                "failed to perform status section of the healthz check for KMS Provider absent, error:"
            ),
            "{err}"
        );
        assert_eq!(
            kms.encrypt("/k", b"v").await.unwrap_err(),
            "got unexpected nil transformer"
        );
    }
}
