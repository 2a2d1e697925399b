//! An audit webhook receiver over HTTPS for the tests of the audit webhook backend: it
//! records the stages it receives by audit ID, and can be made slow or refusing.

#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::post;
use base64::Engine as _;
use parking_lot::Mutex;
use serde_json::Value;

use crate::support_chain::rcgen_server_config;

/// What the receiver saw.
#[derive(Default)]
pub struct Received {
    /// The stages received for each audit id.
    pub stages: BTreeMap<String, BTreeSet<String>>,
    /// Batches answered 200.
    pub accepted: usize,
    /// Batches answered 503 (each is sent again by the server).
    pub refused: usize,
    /// While set, every batch is refused.
    pub refusing: bool,
    /// While set, every batch is answered only after this long.
    pub slow: Option<Duration>,
    /// Batches answered late.
    pub slowed: usize,
}

pub type Shared = Arc<Mutex<Received>>;

async fn receive(State(seen): State<Shared>, body: axum::body::Bytes) -> StatusCode {
    let list: Value = serde_json::from_slice(&body).expect("an EventList");
    assert_eq!(list["kind"], "EventList");
    assert_eq!(list["apiVersion"], "audit.k8s.io/v1");
    let slow = seen.lock().slow;
    if let Some(delay) = slow {
        // The receiver's slowness is what this phase of the test is about, not a wait.
        tokio::time::sleep(delay).await;
    }
    let mut seen = seen.lock();
    if slow.is_some() {
        seen.slowed += 1;
    }
    if seen.refusing {
        seen.refused += 1;
        return StatusCode::SERVICE_UNAVAILABLE;
    }
    seen.accepted += 1;
    for event in list["items"].as_array().expect("items") {
        let id = event["auditID"].as_str().expect("an audit id").to_string();
        let stage = event["stage"].as_str().expect("a stage").to_string();
        seen.stages.entry(id).or_default().insert(stage);
    }
    StatusCode::OK
}

/// The receiver: HTTPS on `listener` with `cert`, until the returned task is aborted (which
/// closes its listener and every connection).
pub fn serve_receiver(
    listener: tokio::net::TcpListener,
    cert: &rcgen::CertifiedKey<rcgen::KeyPair>,
    seen: Shared,
) -> tokio::task::JoinHandle<()> {
    let acceptor =
        tokio_rustls::TlsAcceptor::from(rcgen_server_config(cert, &[b"h2", b"http/1.1"]));
    let app = Router::new()
        .route("/audit", post(receive))
        .with_state(seen);
    tokio::spawn(async move {
        let mut connections = tokio::task::JoinSet::new();
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                return;
            };
            let (acceptor, app) = (acceptor.clone(), app.clone());
            connections.spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let service = hyper_util::service::TowerToHyperService::new(app);
                let _ = hyper_util::server::conn::auto::Builder::new(
                    hyper_util::rt::TokioExecutor::new(),
                )
                .serve_connection(hyper_util::rt::TokioIo::new(tls), service)
                .await;
            });
        }
    })
}

/// A kubeconfig naming the receiver at `addr`, trusting `ca_pem`.
pub fn kubeconfig(addr: SocketAddr, ca_pem: &str) -> String {
    let ca = base64::engine::general_purpose::STANDARD.encode(ca_pem);
    format!(
        "apiVersion: v1
kind: Config
clusters:
- name: audit
  cluster:
    server: https://{addr}/audit
    certificate-authority-data: {ca}
users:
- name: apiserver
  user: {{}}
contexts:
- name: default
  context:
    cluster: audit
    user: apiserver
current-context: default
"
    )
}

/// The flags auditing every request at `Metadata` (a policy file written in `dir` as `name`) to
/// the receiver the kubeconfig `config` names.
pub fn webhook_flags(dir: &std::path::Path, name: &str, config: &std::path::Path) -> Vec<String> {
    let policy = dir.join(name);
    std::fs::write(
        &policy,
        "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n",
    )
    .unwrap();
    vec![
        format!("--audit-policy-file={}", policy.display()),
        format!("--audit-webhook-config-file={}", config.display()),
    ]
}
