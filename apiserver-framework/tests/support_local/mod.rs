//! A server assembled by a test, served by the kit's [`TestServer::serve_local`] as `local`
//! mode serves an app, and a client of it: it trusts the server's CA and sends the server's
//! bearer token.

#![allow(dead_code)]

use std::time::Duration;

use apiserver_framework::cli::LocalServer;
use apiserver_framework::server::GenericApiServer;
use apiserver_framework::testing::TestServer;
use serde_json::Value;

/// A server served as `local` mode serves it, with a client of it.
pub struct Local {
    /// The server (its temporary directory, its kube-rs client, its shutdown).
    pub test: TestServer,
    /// A client of it.
    pub client: LocalClient,
}

/// A test's server reaches its client's fields (`http`, `url`, `token`) directly.
impl std::ops::Deref for Local {
    type Target = LocalClient;

    fn deref(&self) -> &LocalClient {
        &self.client
    }
}

/// Serves `app` as `<name> local` on a free port of 127.0.0.1 with its certificates in a new
/// temporary directory, with `local` mode's `flags` added to the kit's own.
pub async fn start_local(name: &str, app: GenericApiServer, flags: &[String]) -> Local {
    let test = TestServer::serve_local(name, app, flags).await.unwrap();
    let client = LocalClient::of(local_server(&test));
    Local { test, client }
}

/// The local server of a [`TestServer`] of this module.
pub fn local_server(test: &TestServer) -> &LocalServer {
    test.local_server().expect("served as local mode serves")
}

/// An HTTPS client builder trusting `server`'s CA: the one the clients here are built from.
pub fn https(server: &LocalServer) -> reqwest::ClientBuilder {
    reqwest::Client::builder().use_preconfigured_tls(
        apiserver_framework::testing::tls::http1_config(&server.ca_pem),
    )
}

/// A client of one local server.
pub struct LocalClient {
    /// An HTTPS client trusting the server's CA.
    pub http: reqwest::Client,
    /// `https://127.0.0.1:<port>`.
    pub url: String,
    /// The server's bearer token.
    pub token: String,
}

impl LocalClient {
    /// A client of `server`.
    pub fn of(server: &LocalServer) -> LocalClient {
        Self::with(server, https(server))
    }

    /// A client of `server` whose requests time out after `timeout`.
    pub fn with_timeout(server: &LocalServer, timeout: Duration) -> LocalClient {
        Self::with(server, https(server).timeout(timeout))
    }

    fn with(server: &LocalServer, builder: reqwest::ClientBuilder) -> LocalClient {
        let http = builder.build().unwrap();
        LocalClient {
            http,
            url: server.url.clone(),
            token: server.token.clone(),
        }
    }

    /// Sends a request accepting `accept`, with `body` as JSON if any; returns the status
    /// code, the Content-Type and the body (YAML or JSON by its Content-Type; null when it is
    /// neither).
    pub async fn send(
        &self,
        method: reqwest::Method,
        path: &str,
        accept: &str,
        body: Option<Value>,
    ) -> (u16, String, Value) {
        let mut req = self
            .http
            .request(method, format!("{}{path}", self.url))
            .bearer_auth(&self.token)
            .header("Accept", accept);
        if let Some(b) = body {
            req = req.json(&b);
        }
        let res = req.send().await.unwrap();
        let status = res.status().as_u16();
        let ct = res
            .headers()
            .get("content-type")
            .map(|v| v.to_str().unwrap().to_string())
            .unwrap_or_default();
        let text = res.text().await.unwrap();
        let body = if ct.starts_with("application/yaml") {
            serde_yaml_ng::from_str(&text).unwrap_or(Value::Null)
        } else {
            serde_json::from_str(&text).unwrap_or(Value::Null)
        };
        (status, ct, body)
    }
}
