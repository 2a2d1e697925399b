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
    pub server: apiserver_framework::testing::TestServer,
    /// Its storage.
    pub storage: std::sync::Arc<EtcdStorage>,
    /// An HTTPS client trusting the server's CA, with `timeout`.
    pub http: reqwest::Client,
}

impl Served {
    /// The local server (its token and CA).
    fn local(&self) -> &apiserver_framework::cli::LocalServer {
        self.server
            .local_server()
            .expect("served as local mode serves")
    }

    /// A client of the server, with its token.
    pub fn client(&self) -> Client {
        Client {
            http: self.http.clone(),
            url: self.server.url().to_string(),
            token: self.local().token.clone(),
        }
    }
}

/// A client of a [`Served`] server (cheap to clone).
#[derive(Clone)]
pub struct Client {
    /// An HTTPS client trusting the server's CA.
    pub http: reqwest::Client,
    /// `https://127.0.0.1:<port>`.
    pub url: String,
    /// The server's bearer token.
    pub token: String,
}

impl Client {
    /// GETs `path`: the status code and the body's text.
    pub async fn get(&self, path: &str) -> (u16, String) {
        let res = self
            .http
            .get(format!("{}{path}", self.url))
            .bearer_auth(&self.token)
            .send()
            .await
            .unwrap_or_else(|e| panic!("GET {path}: {e}"));
        (res.status().as_u16(), res.text().await.unwrap())
    }

    /// POSTs `object` to `collection`: the status code and the JSON body (null if it is not
    /// JSON).
    pub async fn create(
        &self,
        collection: &str,
        object: &serde_json::Value,
    ) -> (u16, serde_json::Value) {
        let res = self
            .http
            .post(format!("{}{collection}", self.url))
            .bearer_auth(&self.token)
            .json(object)
            .send()
            .await
            .unwrap_or_else(|e| panic!("POST {collection} {}: {e}", object["metadata"]["name"]));
        let code = res.status().as_u16();
        (code, res.json().await.unwrap_or(serde_json::Value::Null))
    }
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
    use apiserver_framework::server::GenericApiServer;
    use apiserver_framework::testing::TestServer;
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
    let server = TestServer::serve_local(name, app, &[]).await.unwrap();
    let ca_pem = &server.local_server().expect("a local server").ca_pem;
    let http = reqwest::Client::builder()
        .use_preconfigured_tls(apiserver_framework::testing::tls::http1_config(ca_pem))
        .timeout(timeout)
        .build()
        .unwrap();
    Served {
        server,
        storage,
        http,
    }
}
