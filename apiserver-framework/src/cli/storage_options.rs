//! Where objects are stored: the embedded store under `--data-dir` (the default), etcd when
//! `--etcd-servers` is given, or memory with `--storage-backend memory`; with compaction and the
//! storage health checks.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::cli::{encryption_config, encryption_reload};
use crate::duration::GoDuration;
use crate::metrics::storage::InstrumentedStorage;
use crate::server::health::{FnCheck, HealthCheck};
use crate::storage::cache::{CacheOptions, CachedStorage};
use crate::storage::embedded::EmbeddedStorage;
use crate::storage::encryption::EncryptedStorage;
use crate::storage::memory::MemoryStorage;
use crate::storage::{Storage, StorageError, compactor};

/// The kinds of store `--storage-backend` chooses between.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum StorageBackend {
    /// The durable embedded store under `--data-dir`.
    Embedded,
    /// etcd v3 at `--etcd-servers` (kube-apiserver's name for it).
    Etcd3,
    /// A non-durable store in this process's memory: every object is lost on exit. For tests,
    /// demos and benchmarks.
    Memory,
}

/// Storage flags, with kube-apiserver's names for the etcd ones.
#[derive(Clone, Debug, clap::Args)]
pub struct StorageOptions {
    /// The store: `embedded` (the default), `etcd3` (the default when --etcd-servers is given)
    /// or `memory`.
    #[arg(long, value_enum)]
    pub storage_backend: Option<StorageBackend>,
    /// The directory of the embedded store, used when no --etcd-servers is given.
    #[arg(long, default_value = "apiserver.local.config/data")]
    pub data_dir: PathBuf,
    /// How often revisions older than the previous interval's are compacted ("0" never). On
    /// etcd, the servers sharing it take turns: the cluster is compacted once per interval.
    #[arg(long, default_value = "5m")]
    pub compaction_interval: GoDuration,
    /// etcd servers to store objects in, comma-separated (e.g. https://10.0.0.1:2379).
    #[arg(long, value_delimiter = ',')]
    pub etcd_servers: Vec<String>,
    /// The prefix of every etcd key; objects live at `<prefix>/<group>/<resource>/<namespace>/<name>`.
    #[arg(long, default_value = "/registry")]
    pub etcd_prefix: String,
    /// The CA bundle that verifies etcd's serving certificates.
    #[arg(long)]
    pub etcd_cafile: Option<PathBuf>,
    /// The client certificate presented to etcd.
    #[arg(long, requires = "etcd_keyfile")]
    pub etcd_certfile: Option<PathBuf>,
    /// The private key of --etcd-certfile.
    #[arg(long, requires = "etcd_certfile")]
    pub etcd_keyfile: Option<PathBuf>,
    /// How long the etcd health checks wait for an answer.
    #[arg(long, default_value = "2s")]
    pub etcd_healthcheck_timeout: GoDuration,
    /// Serve lists and watches from an in-memory cache of the storage, as kube-apiserver's
    /// watch cache does.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub watch_cache: bool,
    /// The version a resource served in several versions is stored in, as
    /// `<plural>.<group>=<version>` (repeatable or comma-separated), instead of the one its
    /// kind declares; objects stored in other versions are read converted, and
    /// `migrate-storage` rewrites them.
    #[arg(long = "storage-version", value_delimiter = ',')]
    pub storage_versions: Vec<String>,
    /// An `EncryptionConfiguration` file (`apiserver.config.k8s.io/v1`): the resources it
    /// names are stored encrypted by its providers (`aesgcm`, `aescbc`, `secretbox`, `identity`).
    #[arg(long)]
    pub encryption_provider_config: Option<PathBuf>,
    /// Read `--encryption-provider-config` again when its content changes, as upstream's flag
    /// (`--encryption-provider-config-automatic-reload` or `=true`).
    #[arg(long, num_args = 0..=1, default_missing_value = "true", action = clap::ArgAction::Set, default_value_t = false)]
    pub encryption_provider_config_automatic_reload: bool,
    /// How often the reload reads the file (upstream's controller: every minute). Not an
    /// upstream flag: tests and impatient operators shorten it.
    #[arg(long, default_value = "1m", hide = true)]
    pub encryption_provider_config_reload_interval: GoDuration,
}

impl Default for StorageOptions {
    fn default() -> Self {
        StorageOptions {
            storage_backend: None,
            data_dir: PathBuf::from("apiserver.local.config/data"),
            compaction_interval: GoDuration(Duration::from_secs(300)),
            etcd_servers: Vec::new(),
            etcd_prefix: "/registry".into(),
            etcd_cafile: None,
            etcd_certfile: None,
            etcd_keyfile: None,
            etcd_healthcheck_timeout: GoDuration(Duration::from_secs(2)),
            watch_cache: true,
            storage_versions: Vec::new(),
            encryption_provider_config: None,
            encryption_provider_config_automatic_reload: false,
            encryption_provider_config_reload_interval: GoDuration(Duration::from_secs(60)),
        }
    }
}

/// An opened storage with the health checks that watch it.
pub struct OpenedStorage {
    /// The store.
    pub storage: Arc<dyn Storage>,
    /// Checks for `/healthz`, `/livez` and `/readyz` (`etcd`, `embedded-storage`).
    pub health_checks: Vec<Arc<dyn HealthCheck>>,
    /// Checks for `/readyz` only (`etcd-readiness`, `embedded-storage-readiness`).
    pub readiness_checks: Vec<Arc<dyn HealthCheck>>,
    /// Checks for `/healthz` and `/readyz`, not `/livez` (`kms-providers`).
    pub healthz_checks: Vec<Arc<dyn HealthCheck>>,
    /// With `--encryption-provider-config`, the encryption right above the backend (for
    /// `migrate-storage`, which writes again what an old key wrote).
    pub encrypted: Option<Arc<EncryptedStorage>>,
}

impl StorageOptions {
    /// `--storage-version` as (`<plural>.<group>`, version) pairs; an entry without `=` is an
    /// error naming it.
    pub fn parsed_storage_versions(&self) -> Result<Vec<(String, String)>, String> {
        self.storage_versions
            .iter()
            .map(|entry| match entry.split_once('=') {
                Some((resource, version)) if resource.contains('.') && !version.is_empty() => {
                    Ok((resource.to_string(), version.to_string()))
                }
                _ => Err(format!(
                    "--storage-version {entry:?}: expected <plural>.<group>=<version>"
                )),
            })
            .collect()
    }

    /// The store these flags choose: `--storage-backend`, or else etcd when `--etcd-servers`
    /// is given and the embedded store otherwise.
    pub fn backend(&self) -> StorageBackend {
        match self.storage_backend {
            Some(backend) => backend,
            None if self.etcd_servers.is_empty() => StorageBackend::Embedded,
            None => StorageBackend::Etcd3,
        }
    }

    /// Opens the configured storage, records its calls in the metrics, starts its compactor
    /// and, with `--watch-cache`, puts the watch cache in front of it.
    pub async fn open(&self) -> Result<OpenedStorage, StorageError> {
        let local = |storage: Arc<dyn Storage>| OpenedStorage {
            storage,
            health_checks: Vec::new(),
            readiness_checks: Vec::new(),
            healthz_checks: Vec::new(),
            encrypted: None,
        };
        let mut opened = match self.backend() {
            StorageBackend::Embedded => {
                let store = EmbeddedStorage::open(&self.data_dir)?;
                let (open, writable) = (store.health(), store.health());
                OpenedStorage {
                    storage: Arc::new(store),
                    // As upstream's `etcd` and `etcd-readiness` checks: the store serves, and
                    // (for readiness) takes writes.
                    health_checks: vec![Arc::new(FnCheck::new("embedded-storage", move || {
                        open.check_open()
                    }))],
                    readiness_checks: vec![Arc::new(FnCheck::new(
                        "embedded-storage-readiness",
                        move || writable.check_writable(),
                    ))],
                    healthz_checks: Vec::new(),
                    encrypted: None,
                }
            }
            StorageBackend::Memory => local(Arc::new(MemoryStorage::new())),
            StorageBackend::Etcd3 if self.etcd_servers.is_empty() => {
                return Err(StorageError::Unavailable(
                    "--storage-backend etcd3 needs --etcd-servers".into(),
                ));
            }
            StorageBackend::Etcd3 => self.open_etcd().await?,
        };
        if self.encryption_provider_config_automatic_reload
            && self.encryption_provider_config.is_none()
        {
            // Upstream's message.
            return Err(StorageError::Internal(
                "--encryption-provider-config-automatic-reload must be set with --encryption-provider-config".into(),
            ));
        }
        if let Some(path) = &self.encryption_provider_config {
            let loaded = encryption_config::load(path).map_err(|e| {
                StorageError::Internal(format!(
                    "--encryption-provider-config {}: {e}",
                    path.display()
                ))
            })?;
            encryption_reload::record_config_info(&loaded.hash);
            // A plugin that does not answer yet is no error: its check fails until it does.
            loaded.config.start_kms().await;
            // As upstream: one `kms-providers` check when a KMS v2 provider is configured or
            // the file may bring one.
            let kms_check =
                self.encryption_provider_config_automatic_reload || loaded.config.uses_kms();
            let encrypted = EncryptedStorage::new(opened.storage, loaded.config);
            if kms_check {
                opened
                    .healthz_checks
                    .push(Arc::new(KmsProvidersCheck(encrypted.clone())));
            }
            if self.encryption_provider_config_automatic_reload {
                encryption_reload::spawn(
                    path.clone(),
                    encrypted.clone(),
                    loaded.hash,
                    self.encryption_provider_config_reload_interval.0,
                );
            }
            opened.storage = encrypted.clone();
            opened.encrypted = Some(encrypted);
        }
        opened.storage = InstrumentedStorage::wrap(opened.storage);
        // etcd is compacted by the servers on it taking turns (started by `open_etcd`).
        if !self.compaction_interval.0.is_zero() && self.backend() != StorageBackend::Etcd3 {
            compactor::spawn_compactor(opened.storage.clone(), self.compaction_interval.0);
        }
        if self.watch_cache {
            opened.storage =
                CachedStorage::new(opened.storage.clone(), CacheOptions::default()).await?;
        }
        Ok(opened)
    }

    #[cfg(feature = "etcd")]
    async fn open_etcd(&self) -> Result<OpenedStorage, StorageError> {
        use crate::storage::etcd::{EtcdOptions, EtcdStorage};
        let etcd = Arc::new(
            EtcdStorage::connect(EtcdOptions {
                servers: self.etcd_servers.clone(),
                prefix: self.etcd_prefix.clone(),
                ca_file: self.etcd_cafile.clone(),
                cert_file: self.etcd_certfile.clone(),
                key_file: self.etcd_keyfile.clone(),
                health_timeout: self.etcd_healthcheck_timeout.0,
                ..Default::default()
            })
            .await?,
        );
        if !self.compaction_interval.0.is_zero() {
            crate::storage::etcd::compact::spawn_compactor(
                etcd.clone(),
                self.compaction_interval.0,
            );
        }
        let check = |name: &'static str| -> Arc<dyn HealthCheck> {
            Arc::new(EtcdHealthCheck::new(name, etcd.clone()))
        };
        Ok(OpenedStorage {
            health_checks: vec![check("etcd")],
            readiness_checks: vec![check("etcd-readiness")],
            storage: etcd,
            healthz_checks: Vec::new(),
            encrypted: None,
        })
    }

    #[cfg(not(feature = "etcd"))]
    async fn open_etcd(&self) -> Result<OpenedStorage, StorageError> {
        Err(StorageError::Unavailable(
            "--etcd-servers needs apiserver-framework's `etcd` feature, which this binary was built without".into(),
        ))
    }
}

/// Upstream's `kms-providers` check: every KMS v2 provider of the configuration in use
/// answers its plugin's `Status` healthily (see [`EncryptedStorage::check_kms`]).
struct KmsProvidersCheck(Arc<EncryptedStorage>);

#[async_trait::async_trait]
impl HealthCheck for KmsProvidersCheck {
    fn name(&self) -> &str {
        "kms-providers"
    }

    async fn check(&self) -> Result<(), String> {
        self.0.check_kms().await
    }
}

/// The `etcd` and `etcd-readiness` checks: etcd answers a bounded read.
#[cfg(feature = "etcd")]
pub struct EtcdHealthCheck {
    name: &'static str,
    etcd: Arc<crate::storage::etcd::EtcdStorage>,
}

#[cfg(feature = "etcd")]
impl EtcdHealthCheck {
    /// A check named `name` (`etcd` or `etcd-readiness`) of `etcd`.
    pub fn new(name: &'static str, etcd: Arc<crate::storage::etcd::EtcdStorage>) -> Self {
        EtcdHealthCheck { name, etcd }
    }
}

#[cfg(feature = "etcd")]
#[async_trait::async_trait]
impl HealthCheck for EtcdHealthCheck {
    fn name(&self) -> &str {
        self.name
    }

    async fn check(&self) -> Result<(), String> {
        self.etcd.check_health().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Flags {
        #[command(flatten)]
        storage: StorageOptions,
    }

    fn backend(args: &[&str]) -> StorageBackend {
        Flags::try_parse_from(std::iter::once("test").chain(args.iter().copied()))
            .unwrap()
            .storage
            .backend()
    }

    #[test]
    fn the_backend_follows_the_flags() {
        assert_eq!(backend(&[]), StorageBackend::Embedded);
        assert_eq!(
            backend(&["--etcd-servers", "http://127.0.0.1:2379"]),
            StorageBackend::Etcd3
        );
        assert_eq!(
            backend(&["--storage-backend", "memory"]),
            StorageBackend::Memory
        );
        assert!(Flags::try_parse_from(["test", "--storage-backend", "sqlite"]).is_err());
    }

    #[tokio::test]
    async fn etcd3_without_servers_is_refused() {
        let opts = StorageOptions {
            storage_backend: Some(StorageBackend::Etcd3),
            ..Default::default()
        };
        let err = opts.open().await.err().expect("no etcd servers");
        assert!(err.to_string().contains("needs --etcd-servers"), "{err}");
    }

    #[tokio::test]
    async fn memory_stores_nothing_on_disk() {
        let dir = tempfile::tempdir().unwrap();
        let opts = StorageOptions {
            storage_backend: Some(StorageBackend::Memory),
            data_dir: dir.path().join("data"),
            watch_cache: false,
            compaction_interval: GoDuration(Duration::ZERO),
            ..Default::default()
        };
        let opened = opts.open().await.unwrap();
        opened
            .storage
            .create("/k", bytes::Bytes::from_static(b"v"))
            .await
            .unwrap();
        assert!(opened.storage.get("/k").await.unwrap().is_some());
        assert!(!dir.path().join("data").exists());
    }

    #[tokio::test]
    async fn the_automatic_reload_flag_is_gos_bool_and_needs_a_configuration() {
        let parse = |args: &[&str]| {
            Flags::try_parse_from(std::iter::once("test").chain(args.iter().copied()))
                .unwrap()
                .storage
        };
        let flag = "--encryption-provider-config-automatic-reload";
        assert!(!parse(&[]).encryption_provider_config_automatic_reload);
        assert!(parse(&[flag]).encryption_provider_config_automatic_reload);
        assert!(parse(&[&format!("{flag}=true")]).encryption_provider_config_automatic_reload);
        assert!(!parse(&[&format!("{flag}=false")]).encryption_provider_config_automatic_reload);
        let mut opts = parse(&[flag, "--storage-backend", "memory"]);
        opts.watch_cache = false;
        let err = opts.open().await.err().expect("no configuration");
        assert!(
            err.to_string().contains(
                "--encryption-provider-config-automatic-reload must be set with --encryption-provider-config"
            ),
            "{err}"
        );
    }
}
