//! HTTPS clients of the cluster: of kube-apiserver as one of its users, and straight to wardle
//! around it (its serving name resolved to its address in the servers' network namespace).

use std::time::Duration;

use rcgen::{Issuer, KeyPair};
use serde_json::Value;

use crate::cluster::RealCluster;

/// A file of the cluster's PKI.
fn pki(cluster: &RealCluster, name: &str) -> Vec<u8> {
    std::fs::read(cluster.dir().join("pki").join(name)).expect("a file of the cluster's PKI")
}

/// A client of kube-apiserver as `user` (its client certificate in the cluster's PKI), or with
/// no credentials when `None`; HTTP/1.1 only if `http1`.
pub fn host_client(cluster: &RealCluster, user: Option<&str>, http1: bool) -> reqwest::Client {
    let ca = pki(cluster, "ca.crt");
    let ca = String::from_utf8(ca).expect("the CA is PEM");
    let tls = match user {
        Some(user) => {
            let mut identity = pki(cluster, &format!("{user}.crt"));
            identity.extend(pki(cluster, &format!("{user}.key")));
            let identity = String::from_utf8(identity).expect("the identity is PEM");
            apiserver_framework::testing::tls::client_config_with_identity(
                &ca,
                &identity,
                apiserver_framework::testing::tls::HTTP1,
            )
        }
        None => apiserver_framework::testing::tls::http1_config(&ca),
    };
    let mut builder = reqwest::Client::builder()
        .use_preconfigured_tls(tls)
        .timeout(Duration::from_secs(30));
    if http1 {
        builder = builder.http1_only();
    }
    builder.build().expect("a client")
}

/// A client straight to wardle (`https://api.wardle.svc`), presenting `identity` (certificate
/// and key PEM) if any.
pub fn wardle_client(cluster: &RealCluster, identity: Option<(&str, &str)>) -> reqwest::Client {
    let ca = std::fs::read(cluster.dir().join("wardle-manifests/ca.crt")).expect("wardle's CA");
    let ca = String::from_utf8(ca).expect("wardle's CA is PEM");
    let tls = match identity {
        Some((cert, key)) => apiserver_framework::testing::tls::client_config_with_identity(
            &ca,
            &format!("{cert}{key}"),
            apiserver_framework::testing::tls::HTTP1,
        ),
        None => apiserver_framework::testing::tls::http1_config(&ca),
    };
    reqwest::Client::builder()
        .use_preconfigured_tls(tls)
        .resolve("api.wardle.svc", cluster.wardle_address())
        .timeout(Duration::from_secs(30))
        .build()
        .expect("a client")
}

/// The certificate and key PEM of the cluster's `name` (`front-proxy-client`, `admin`, ...).
pub fn certificate(cluster: &RealCluster, name: &str) -> (String, String) {
    let text = |ext: &str| String::from_utf8(pki(cluster, &format!("{name}.{ext}"))).expect("PEM");
    (text("crt"), text("key"))
}

/// The issuer of the cluster's CA `name` (`ca`, `front-proxy-ca`).
pub fn issuer(cluster: &RealCluster, name: &str) -> Issuer<'static, KeyPair> {
    let (cert, key) = certificate(cluster, name);
    Issuer::from_ca_cert_pem(&cert, KeyPair::from_pem(&key).expect("the CA's key")).expect("the CA")
}

/// The status and body (JSON, or the text as a string) of `request`, whose body must end
/// within 10 s: an answer, not a stream.
pub async fn send(request: reqwest::RequestBuilder) -> (u16, Value) {
    let res = request.send().await.expect("an answer");
    let code = res.status().as_u16();
    let text = tokio::time::timeout(Duration::from_secs(10), res.text())
        .await
        .expect("the body ends: an answer, not a stream")
        .expect("a body");
    (
        code,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}
