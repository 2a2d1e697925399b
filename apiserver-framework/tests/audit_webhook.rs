//! The audit webhook backend in batch mode (`--audit-webhook-config-file`, upstream's flags):
//! a burst of requests whose events all reach a receiver over HTTPS that is first slow, then
//! refuses batches (503), then goes away and comes back on the same port mid-burst. None is lost:
//! every request's ResponseComplete event arrives, the refused batches were sent again, and
//! `apiserver_audit_error_total` counts no lost event.

mod support_chain;
mod support_kinds;
mod support_local;

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use apiserver_framework::prelude::*;
use apiserver_framework::server::GenericApiServer;
use apiserver_framework::testing::wait;
use apiserver_framework::tls::install_crypto_provider;
use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::post;
use base64::Engine as _;
use parking_lot::Mutex;
use serde_json::Value;
use support_chain::rcgen_server_config;
use support_kinds::Flunder;
use support_local::start_local;

/// Requests of the burst.
const REQUESTS: usize = 1000;

/// What the receiver saw.
#[derive(Default)]
struct Received {
    /// The stages received for each audit id.
    stages: BTreeMap<String, BTreeSet<String>>,
    /// Batches answered 200.
    accepted: usize,
    /// Batches answered 503 (each is sent again by the server).
    refused: usize,
    /// While set, every batch is refused.
    refusing: bool,
    /// While set, every batch is answered only after this long.
    slow: Option<Duration>,
    /// Batches answered late.
    slowed: usize,
}

type Shared = Arc<Mutex<Received>>;

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
fn serve_receiver(
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
fn kubeconfig(addr: SocketAddr, ca_pem: &str) -> String {
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_event_of_a_burst_reaches_a_receiver_that_refuses_and_restarts() {
    install_crypto_provider();
    let dir = tempfile::tempdir().unwrap();
    let cert = rcgen::generate_simple_self_signed(vec!["127.0.0.1".into()]).unwrap();
    let seen = Shared::default();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let mut receiver = serve_receiver(listener, &cert, seen.clone());
    let config = dir.path().join("audit-webhook.kubeconfig");
    std::fs::write(&config, kubeconfig(addr, &cert.cert.pem())).unwrap();
    let policy = dir.path().join("policy.yaml");
    std::fs::write(
        &policy,
        "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n",
    )
    .unwrap();
    let flags = [
        format!("--audit-policy-file={}", policy.display()),
        format!("--audit-webhook-config-file={}", config.display()),
        // Retries and batches quick enough for a test; the backoff's five tries span about
        // 2 s, longer than the receiver is away.
        "--audit-webhook-initial-backoff=200ms".to_string(),
        "--audit-webhook-batch-max-wait=50ms".to_string(),
        "--audit-webhook-batch-max-size=40".to_string(),
        "--audit-webhook-batch-throttle-qps=100".to_string(),
        "--audit-webhook-batch-throttle-burst=20".to_string(),
    ];
    let server = GenericApiServer::builder("audited")
        .group(Group::new("wardle.example.com").resource::<Flunder>())
        .build();
    let local = start_local("audited", server, &flags).await;
    let url = format!(
        "{}/apis/wardle.example.com/v1alpha1/namespaces/default/flunders",
        local.url
    );

    let mut ids = Vec::new();
    for n in 0..REQUESTS {
        match n {
            // The receiver is slow for a while (batches pile up in flight and in the buffer)...
            50 => seen.lock().slow = Some(Duration::from_millis(300)),
            150 => seen.lock().slow = None,
            // ... refuses every batch for a while...
            200 => seen.lock().refusing = true,
            300 => seen.lock().refusing = false,
            // ... then goes away (its listener and connections closed) ...
            500 => receiver.abort(),
            // ... and comes back on the same port.
            600 => {
                let _ = (&mut receiver).await;
                let listener = tokio::net::TcpListener::bind(addr).await.unwrap();
                receiver = serve_receiver(listener, &cert, seen.clone());
            }
            _ => {}
        }
        let res = local.http.get(&url).bearer_auth(&local.token).send();
        let res = res.await.unwrap();
        assert_eq!(res.status(), 200);
        ids.push(res.headers()["audit-id"].to_str().unwrap().to_string());
    }

    let missing = || {
        let seen = seen.lock();
        ids.iter()
            .filter(|id| {
                seen.stages.get(*id).is_none_or(|s| {
                    !s.contains("ResponseComplete") || !s.contains("RequestReceived")
                })
            })
            .count()
    };
    let done = wait::poll(
        "every request's events at the receiver",
        Duration::from_secs(60),
        || async {
            match missing() {
                0 => Ok(()),
                n => Err(format!("{n} of {REQUESTS} requests' events missing")),
            }
        },
    )
    .await;
    let (accepted, refused, slowed) = {
        let seen = seen.lock();
        (seen.accepted, seen.refused, seen.slowed)
    };
    done.unwrap_or_else(|e| {
        panic!("{e}; {accepted} batches accepted, {refused} refused, {slowed} slowed")
    });
    assert!(
        refused > 0,
        "the receiver refused no batch: nothing was retried"
    );
    assert!(slowed > 0, "no batch met the slow receiver");
    let errors = apiserver_framework::metrics::global().encode();
    assert!(
        !errors.contains("apiserver_audit_error_total{"),
        "no event may be lost:\n{errors}"
    );
    let events: f64 = errors
        .lines()
        .find_map(|l| l.strip_prefix("apiserver_audit_event_total "))
        .expect("apiserver_audit_event_total")
        .parse()
        .unwrap();
    assert!(events >= (2 * REQUESTS) as f64, "{events} events counted");
}
