//! The audit webhook backend in batch mode (`--audit-webhook-config-file`, upstream's flags):
//! a burst of requests whose events all reach a receiver over HTTPS that is first slow, then
//! refuses batches (503), then goes away and comes back on the same port mid-burst. None is lost:
//! every request's ResponseComplete event arrives, the refused batches were sent again, and
//! `apiserver_audit_error_total` counts no lost event.

mod support_audit_receiver;
mod support_chain;
mod support_kinds;
mod support_local;

use std::time::Duration;

use apiserver_framework::prelude::*;
use apiserver_framework::server::GenericApiServer;
use apiserver_framework::testing::wait;
use apiserver_framework::tls::install_crypto_provider;
use support_audit_receiver::{Shared, kubeconfig, serve_receiver, webhook_flags};
use support_kinds::Flunder;
use support_local::start_local;

/// Requests of the burst.
const REQUESTS: usize = 1000;

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
    let mut flags = webhook_flags(dir.path(), "policy.yaml", &config);
    flags.extend([
        // Retries and batches quick enough for a test; the backoff's five tries span about
        // 2 s, longer than the receiver is away.
        "--audit-webhook-initial-backoff=200ms".to_string(),
        "--audit-webhook-batch-max-wait=50ms".to_string(),
        "--audit-webhook-batch-max-size=40".to_string(),
        "--audit-webhook-batch-throttle-qps=100".to_string(),
        "--audit-webhook-batch-throttle-burst=20".to_string(),
    ]);
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
