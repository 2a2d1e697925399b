//! etcd for the framework's etcd tests: the test kit's etcd launcher
//! ([`apiserver_framework::testing::etcd`]) and [`serve`], a server on it.

#![allow(dead_code, unused_imports)] // each test crate uses part of it

use std::time::Duration;

use apiserver_framework::storage::etcd::{EtcdOptions, EtcdStorage};
pub use apiserver_framework::testing::etcd::{Etcd, EtcdCluster, tls_files};

/// How many members the tests' clusters have.
pub const CLUSTER_SIZE: usize = 3;

/// A framework server serving resource `T` on an etcd, over HTTPS on a free loopback port,
/// with the `etcd` and `etcd-readiness` checks.
pub struct Served {
    /// The running server (stops when dropped).
    pub server: apiserver_framework::cli::LocalServer,
    /// Its storage.
    pub storage: std::sync::Arc<EtcdStorage>,
    /// An HTTPS client trusting the server's CA, with `timeout`.
    pub http: reqwest::Client,
    _dir: tempfile::TempDir,
}

/// Starts a server named `name` serving `T` (in group `group`) on the etcd `options` point at.
pub async fn serve<T: apiserver_framework::ApiResource>(
    name: &str,
    group: &str,
    options: EtcdOptions,
    timeout: Duration,
) -> Served {
    use apiserver_framework::Group;
    use apiserver_framework::cli::storage_options::EtcdHealthCheck;
    use apiserver_framework::cli::{LocalOptions, local};
    use apiserver_framework::server::GenericApiServer;
    use std::sync::Arc;

    let storage = Arc::new(EtcdStorage::connect(options).await.unwrap());
    let app = GenericApiServer::builder(name)
        .group(Group::new(group).resource::<T>())
        .storage(storage.clone())
        .health_check(Arc::new(EtcdHealthCheck::new("etcd", storage.clone())))
        .readiness_check(Arc::new(EtcdHealthCheck::new(
            "etcd-readiness",
            storage.clone(),
        )))
        .build();
    let dir = tempfile::tempdir().unwrap();
    let opts = LocalOptions {
        secure_port: 0,
        cert_dir: dir.path().join("certs"),
        ..Default::default()
    };
    let server = local::start(name, Arc::new(app), &opts).await.unwrap();
    let http = reqwest::Client::builder()
        .add_root_certificate(reqwest::Certificate::from_pem(server.ca_pem.as_bytes()).unwrap())
        .timeout(timeout)
        .build()
        .unwrap();
    Served {
        server,
        storage,
        http,
        _dir: dir,
    }
}
