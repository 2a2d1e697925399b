//! A client of a server started by [`apiserver_framework::cli::local`]: it trusts the
//! server's CA and sends the server's bearer token.

#![allow(dead_code)]

use apiserver_framework::cli::LocalServer;
use serde_json::Value;

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
        let http = reqwest::Client::builder()
            .add_root_certificate(reqwest::Certificate::from_pem(server.ca_pem.as_bytes()).unwrap())
            .build()
            .unwrap();
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
