//! The availability check's probes as a backend sees them: of the parallel GETs of a probe, the
//! first success is enough, and the others still run to their end rather than being cancelled
//! (as kube-aggregator's probes do; a Go backend logs each cancelled request as an error). The
//! backend (the `h2` crate's server over real TLS) answers the first probe it ever gets at
//! once and holds the others until the test releases them; a held probe the aggregator resets
//! is recorded as abandoned.

use std::sync::Arc;
use std::time::Duration;

use apiserver_framework::host_cluster::resolver::StaticServiceResolver;
use apiserver_framework::testing::wait;
use apiserver_framework::tls;
use bytes::Bytes;
use parking_lot::Mutex;
use serde_json::json;

/// The group-version the APIService names, which every probe GETs.
const PROBED: &str = "/apis/widgets.example.com/v1";

/// What became of the probes the backend received.
#[derive(Default)]
struct Probes {
    received: usize,
    answered: usize,
    abandoned: usize,
}

/// Starts the backend; `release` lets the held probes be answered.
async fn start_backend(
    cert: &rcgen::CertifiedKey<rcgen::KeyPair>,
    probes: Arc<Mutex<Probes>>,
    release: tokio::sync::watch::Receiver<bool>,
) -> std::net::SocketAddr {
    let (acceptor, listener, addr) = super::h2_listener(cert).await;
    tokio::spawn(async move {
        loop {
            let (tcp, _) = listener.accept().await.unwrap();
            let (acceptor, probes, release) = (acceptor.clone(), probes.clone(), release.clone());
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let Ok(mut conn) = h2::server::handshake(tls).await else {
                    return;
                };
                while let Some(Ok((req, respond))) = conn.accept().await {
                    tokio::spawn(handle(req, respond, probes.clone(), release.clone()));
                }
            });
        }
    });
    addr
}

async fn handle(
    req: http::Request<h2::RecvStream>,
    mut respond: h2::server::SendResponse<Bytes>,
    probes: Arc<Mutex<Probes>>,
    mut release: tokio::sync::watch::Receiver<bool>,
) {
    let path = req.uri().path().to_owned();
    // A probe asks for anything; the discovery fetch of the same path asks for JSON.
    let probe = path == PROBED
        && req
            .headers()
            .get("accept")
            .is_some_and(|accept| accept == "*/*");
    if path == PROBED {
        let doc = json!({"kind": "APIResourceList", "apiVersion": "v1",
            "groupVersion": "widgets.example.com/v1",
            "resources": [{"name": "widgets", "singularName": "widget", "namespaced": true,
                "kind": "Widget", "verbs": ["get", "list"]}]});
        if probe {
            let first = {
                let mut p = probes.lock();
                p.received += 1;
                p.received == 1
            };
            if !first {
                tokio::select! {
                    _ = release.wait_for(|released| *released) => {}
                    _ = std::future::poll_fn(|cx| respond.poll_reset(cx)) => {
                        probes.lock().abandoned += 1;
                        return;
                    }
                }
            }
            super::h2_answer(&mut respond, 200, doc.to_string());
            probes.lock().answered += 1;
            return;
        }
        return super::h2_answer(&mut respond, 200, doc.to_string());
    }
    if path == "/readyz" {
        return super::h2_answer(&mut respond, 200, "ok".into());
    }
    super::h2_answer(&mut respond, 404, "{}".into());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn probes_after_the_first_success_run_to_their_end() {
    tls::install_crypto_provider();
    let dir = tempfile::tempdir().unwrap();
    let backend_cert = rcgen::generate_simple_self_signed(vec!["backend.test.svc".into()]).unwrap();
    let probes = Arc::new(Mutex::new(Probes::default()));
    let (release, released) = tokio::sync::watch::channel(false);
    let addr = start_backend(&backend_cert, probes.clone(), released).await;
    let resolver = StaticServiceResolver::new().with("test", "backend", addr.to_string());
    // Available on the first probe's answer, while the others of its round are held.
    let super::Fronted {
        controller, agg, ..
    } = super::front_widgets(dir.path(), resolver, &backend_cert.cert.pem()).await;
    assert!(
        probes.lock().received > 1,
        "the availability check sent one probe"
    );
    release.send_replace(true);
    wait::eventually(
        "every probe received to be answered or abandoned",
        Duration::from_secs(10),
        || {
            let settled = {
                let p = probes.lock();
                p.answered + p.abandoned == p.received
            };
            async move { settled }
        },
    )
    .await;
    let (received, answered, abandoned) = {
        let p = probes.lock();
        (p.received, p.answered, p.abandoned)
    };
    assert_eq!(
        abandoned, 0,
        "of {received} probes, {answered} answered and {abandoned} reset by the aggregator before their answer"
    );
    controller.abort();
    agg.shutdown().await;
}
