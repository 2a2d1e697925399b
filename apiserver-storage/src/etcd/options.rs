//! How to reach etcd: servers, key prefix, TLS files and timeouts.

use std::path::PathBuf;
use std::time::Duration;

/// Where etcd is and how to talk to it; the counterpart of upstream's `--etcd-*` flags.
///
/// ```
/// # use apiserver_storage::etcd::EtcdOptions;
/// let opts = EtcdOptions {
///     servers: vec!["http://127.0.0.1:2379".into()],
///     prefix: "/registry".into(),
///     ..Default::default()
/// };
/// # let _ = opts;
/// ```
#[derive(Clone, Debug)]
pub struct EtcdOptions {
    /// Client URLs of the etcd members (`--etcd-servers`), e.g. `http://127.0.0.1:2379` or
    /// `https://etcd-0:2379`. `https://` needs `ca_file`; a URL without a scheme is `https://`
    /// when TLS files are given, `http://` otherwise.
    pub servers: Vec<String>,
    /// Prepended to every storage key (`--etcd-prefix`); a trailing `/` is dropped. With the
    /// default `/registry`, the framework's key `/<group>/<plural>/<namespace>/<name>` is stored
    /// as `/registry/<group>/<plural>/<namespace>/<name>`: upstream's layout for an extension
    /// server whose etcd prefix is `/registry/<group>`.
    pub prefix: String,
    /// CA bundle (PEM) that verifies the etcd servers' certificates (`--etcd-cafile`).
    pub ca_file: Option<PathBuf>,
    /// Client certificate (PEM) presented to etcd (`--etcd-certfile`); needs `key_file`.
    pub cert_file: Option<PathBuf>,
    /// Private key (PEM) of `cert_file` (`--etcd-keyfile`).
    pub key_file: Option<PathBuf>,
    /// Bound on establishing a connection to one member.
    pub dial_timeout: Duration,
    /// Bound on every request, including opening a watch: past it the request fails with
    /// [`StorageError::Unavailable`](crate::StorageError::Unavailable), so a dead etcd
    /// never hangs a caller.
    pub request_timeout: Duration,
    /// Bound on [`check_health`](super::EtcdStorage::check_health)
    /// (`--etcd-healthcheck-timeout`).
    pub health_timeout: Duration,
    /// HTTP/2 keep-alive ping interval; a connection (and so a watch) whose pings go
    /// unanswered for `keep_alive_timeout` is considered broken. Zero (here or in the timeout)
    /// sends no pings.
    pub keep_alive_interval: Duration,
    /// How long a keep-alive ping may go unanswered.
    pub keep_alive_timeout: Duration,
    /// Largest response accepted from etcd, in bytes (a list of many large objects can be big).
    pub max_response_bytes: usize,
}

impl Default for EtcdOptions {
    /// A local etcd at `http://127.0.0.1:2379`, prefix `/registry`, no TLS, upstream's dial
    /// (20 s), health-check (2 s) and keep-alive (30 s / 10 s) timings, 30 s per request.
    fn default() -> Self {
        EtcdOptions {
            servers: vec!["http://127.0.0.1:2379".into()],
            prefix: "/registry".into(),
            ca_file: None,
            cert_file: None,
            key_file: None,
            dial_timeout: Duration::from_secs(20),
            request_timeout: Duration::from_secs(30),
            health_timeout: Duration::from_secs(2),
            keep_alive_interval: Duration::from_secs(30),
            keep_alive_timeout: Duration::from_secs(10),
            max_response_bytes: i32::MAX as usize,
        }
    }
}

impl EtcdOptions {
    /// The prefix as stored: without a trailing `/`.
    pub(super) fn normalized_prefix(&self) -> String {
        self.prefix.trim_end_matches('/').to_string()
    }
}
