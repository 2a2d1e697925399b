//! The audit webhook's blocking modes (`--audit-webhook-mode=blocking` and `blocking-strict`):
//! each event reaches the receiver before the request is answered; with the receiver gone,
//! `blocking-strict` refuses requests with upstream's `failed to store audit event` and counts
//! them in `apiserver_audit_requests_rejected_total`, while `blocking` serves them and counts
//! the lost events.

mod support_audit_receiver;
mod support_chain;
mod support_kinds;
mod support_local;

use apiserver_framework::prelude::*;
use apiserver_framework::server::GenericApiServer;
use apiserver_framework::tls::install_crypto_provider;
use support_audit_receiver::{Shared, kubeconfig, serve_receiver, webhook_flags};
use support_kinds::Flunder;
use support_local::{Local, start_local};

const FLUNDERS: &str = "/apis/wardle.example.com/v1alpha1/namespaces/default/flunders";

/// A server auditing every request at `Metadata` to the receiver at `config`, in `mode`.
async fn audited(dir: &std::path::Path, config: &std::path::Path, mode: &str) -> Local {
    let mut flags = webhook_flags(dir, &format!("policy-{mode}.yaml"), config);
    flags.extend([
        format!("--audit-webhook-mode={mode}"),
        // Five quick tries.
        "--audit-webhook-initial-backoff=10ms".to_string(),
    ]);
    let server = GenericApiServer::builder(mode)
        .group(Group::new("wardle.example.com").resource::<Flunder>())
        .build();
    start_local(mode, server, &flags).await
}

/// The counter `name` (without labels) in this process's metrics, 0 when absent.
fn counter(name: &str) -> f64 {
    apiserver_framework::metrics::global()
        .encode()
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{name} ")))
        .map_or(0.0, |v| v.parse().unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blocking_modes_store_each_event_before_answering() {
    install_crypto_provider();
    let dir = tempfile::tempdir().unwrap();
    let cert = rcgen::generate_simple_self_signed(vec!["127.0.0.1".into()]).unwrap();
    let seen = Shared::default();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let receiver = serve_receiver(listener, &cert, seen.clone());
    let config = dir.path().join("audit-webhook.kubeconfig");
    std::fs::write(&config, kubeconfig(addr, &cert.cert.pem())).unwrap();
    let strict = audited(dir.path(), &config, "blocking-strict").await;
    let blocking = audited(dir.path(), &config, "blocking").await;

    // Both events of a request are at the receiver when its answer arrives: no waiting here.
    for server in [&strict, &blocking] {
        let url = format!("{}{FLUNDERS}", server.url);
        let res = server.http.get(&url).bearer_auth(&server.token).send();
        let res = res.await.unwrap();
        assert_eq!(res.status(), 200);
        let id = res.headers()["audit-id"].to_str().unwrap().to_string();
        let stages = seen.lock().stages.get(&id).cloned().unwrap_or_default();
        assert_eq!(
            stages.into_iter().collect::<Vec<_>>(),
            ["RequestReceived", "ResponseComplete"],
            "the events of {id} before its answer"
        );
    }

    // The receiver gone: blocking-strict refuses to serve what it cannot audit...
    receiver.abort();
    let _ = receiver.await;
    let rejected = counter("apiserver_audit_requests_rejected_total");
    let url = format!("{}{FLUNDERS}?limit=1", strict.url);
    let res = strict.http.get(&url).bearer_auth(&strict.token).send();
    let res = res.await.unwrap();
    assert_eq!(res.status(), 500);
    assert_eq!(
        res.text().await.unwrap(),
        format!("Internal Server Error: \"{FLUNDERS}?limit=1\": failed to store audit event\n")
    );
    assert_eq!(
        counter("apiserver_audit_requests_rejected_total"),
        rejected + 1.0
    );

    // ... blocking serves it, and the lost events are counted.
    let url = format!("{}{FLUNDERS}", blocking.url);
    let res = blocking.http.get(&url).bearer_auth(&blocking.token).send();
    assert_eq!(res.await.unwrap().status(), 200);
    let errors = apiserver_framework::metrics::global().encode();
    assert!(
        errors.contains("apiserver_audit_error_total{plugin=\"webhook\"}"),
        "{errors}"
    );
    assert_eq!(
        counter("apiserver_audit_requests_rejected_total"),
        rejected + 1.0,
        "blocking mode refuses nothing"
    );
}
