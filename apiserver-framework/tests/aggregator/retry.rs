//! The aggregator sending a request that failed on one backend, before any response byte, to
//! another, when that is safe: real HTTPS on loopback, a real aggregator, and four HTTP/2
//! backends (the `h2` crate's server) that can be told to die on the next request (drop their
//! listener and every connection without a word, as a killed process does) or to refuse it
//! (`RST_STREAM` `REFUSED_STREAM`). Each backend records every request it received.
//!
//! * a refused create goes to another backend, with the same body;
//! * a read in flight on a backend that dies is answered by another;
//! * a create in flight on a backend that dies is not sent again (503), unless it carries an
//!   `Idempotency-Key`;
//! * later requests go to the backends still alive.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use apiserver_framework::host_cluster::resolver::StaticServiceResolver;
use apiserver_framework::tls;
use bytes::Bytes;
use parking_lot::Mutex;
use rcgen::KeyPair;
use serde_json::{Value, json};

const WIDGETS: &str = "/apis/widgets.example.com/v1/namespaces/default/widgets";
const BACKENDS: usize = 4;

/// What the next request for widgets does to the backend that receives it.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Act {
    /// The backend dies without answering.
    Die,
    /// The backend refuses the stream.
    Refuse,
}

/// A request for widgets a backend received, and what became of it.
#[derive(Clone, Debug)]
struct Received {
    backend: usize,
    method: http::Method,
    /// The body, when answered.
    body: String,
    /// `answered`, `died` or `refused`.
    what: &'static str,
}

#[derive(Default)]
struct Script {
    next: Mutex<Option<Act>>,
    received: Mutex<Vec<Received>>,
}

impl Script {
    fn received(&self) -> Vec<Received> {
        self.received.lock().clone()
    }
}

/// Starts backend `id` on a free port; it serves until the script makes it die.
async fn start_backend(
    id: usize,
    cert: &rcgen::CertifiedKey<KeyPair>,
    script: Arc<Script>,
) -> SocketAddr {
    let (acceptor, listener, addr) = super::h2_listener(cert).await;
    let (dead, _) = tokio::sync::watch::channel(false);
    let dead = Arc::new(dead);
    tokio::spawn(async move {
        let mut died = dead.subscribe();
        loop {
            let (tcp, _) = tokio::select! {
                _ = died.wait_for(|d| *d) => return,
                accepted = listener.accept() => accepted.unwrap(),
            };
            let (acceptor, script, dead) = (acceptor.clone(), script.clone(), dead.clone());
            tokio::spawn(async move {
                let mut died = dead.subscribe();
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let Ok(mut conn) = h2::server::handshake(tls).await else {
                    return;
                };
                loop {
                    let next = tokio::select! {
                        // Dropping the connection closes its socket, nothing said.
                        _ = died.wait_for(|d| *d) => return,
                        next = conn.accept() => next,
                    };
                    let Some(Ok((req, respond))) = next else {
                        return;
                    };
                    tokio::spawn(handle(id, req, respond, script.clone(), dead.clone()));
                }
            });
        }
    });
    addr
}

async fn handle(
    id: usize,
    req: http::Request<h2::RecvStream>,
    mut respond: h2::server::SendResponse<Bytes>,
    script: Arc<Script>,
    dead: Arc<tokio::sync::watch::Sender<bool>>,
) {
    let (parts, mut body) = req.into_parts();
    let path = parts.uri.path().to_owned();
    if path == "/readyz" {
        return super::h2_answer(&mut respond, 200, "ok".into());
    }
    if path == "/apis/widgets.example.com/v1" {
        let doc = json!({"kind": "APIResourceList", "apiVersion": "v1",
            "groupVersion": "widgets.example.com/v1",
            "resources": [{"name": "widgets", "singularName": "widget", "namespaced": true,
                "kind": "Widget", "verbs": ["get", "list", "create"]}]});
        return super::h2_answer(&mut respond, 200, doc.to_string());
    }
    if !path.starts_with(WIDGETS) {
        return super::h2_answer(&mut respond, 404, "{}".into());
    }
    let act = script.next.lock().take();
    let record = |body: String, what| {
        script.received.lock().push(Received {
            backend: id,
            method: parts.method.clone(),
            body,
            what,
        })
    };
    match act {
        Some(Act::Die) => {
            record(String::new(), "died");
            dead.send_replace(true);
            // Never answers, on purpose (a backend that hangs): the stream stays open until
            // the connection is gone.
            tokio::time::sleep(Duration::from_secs(60)).await;
            drop((respond, body));
        }
        Some(Act::Refuse) => {
            record(String::new(), "refused");
            respond.send_reset(h2::Reason::REFUSED_STREAM);
        }
        None => {
            let mut read = Vec::new();
            while let Some(chunk) = body.data().await {
                let Ok(chunk) = chunk else { return };
                let _ = body.flow_control().release_capacity(chunk.len());
                read.extend_from_slice(&chunk);
            }
            let text = String::from_utf8_lossy(&read).into_owned();
            record(text.clone(), "answered");
            let status = if parts.method == http::Method::POST {
                201
            } else {
                200
            };
            super::h2_answer(
                &mut respond,
                status,
                json!({"backend": id, "body": text}).to_string(),
            );
        }
    }
}

/// The backend that answered, from an answer's body.
fn backend_of(body: &Value) -> usize {
    body["backend"].as_u64().expect("a backend's answer") as usize
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_that_failed_before_any_response_go_to_another_backend_when_safe() {
    tls::install_crypto_provider();
    let dir = tempfile::tempdir().unwrap();
    let backend_cert = rcgen::generate_simple_self_signed(vec!["backend.test.svc".into()]).unwrap();
    let script = Arc::new(Script::default());
    let mut addrs = Vec::new();
    for id in 0..BACKENDS {
        addrs.push(start_backend(id, &backend_cert, script.clone()).await);
    }
    let resolver = StaticServiceResolver::new().with_endpoints(
        "test",
        "backend",
        addrs.iter().map(|a| a.to_string()),
    );
    // Probes (every 300 ms) never put a dead backend back, nor take one out, during the test.
    let super::Fronted {
        controller,
        agg,
        client,
        ..
    } = super::front_widgets(dir.path(), resolver, &backend_cert.cert.pem()).await;
    // Every backend answers: the aggregator holds a connection to each.
    for _ in 0..100 {
        let answered: std::collections::BTreeSet<usize> =
            script.received().iter().map(|r| r.backend).collect();
        if answered.len() == BACKENDS {
            break;
        }
        let res = client.send(reqwest::Method::GET, WIDGETS).await;
        assert_eq!(res.status(), 200);
    }
    let answered: std::collections::BTreeSet<usize> =
        script.received().iter().map(|r| r.backend).collect();
    assert_eq!(answered.len(), BACKENDS, "{:?}", script.received());
    script.received.lock().clear();

    // 1. A refused create goes to another backend, with its body.
    *script.next.lock() = Some(Act::Refuse);
    let body = json!({"metadata": {"name": "w1"}, "spec": {"size": 3}}).to_string();
    let res = client
        .req(reqwest::Method::POST, WIDGETS)
        .header("content-type", "application/json")
        .body(body.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 201);
    let answer: Value = res.json().await.unwrap();
    let received = std::mem::take(&mut *script.received.lock());
    assert_eq!(received.len(), 2, "{received:?}");
    assert_eq!(received[0].what, "refused");
    assert_eq!(received[1].what, "answered");
    assert!(received.iter().all(|r| r.method == http::Method::POST));
    assert_ne!(received[0].backend, received[1].backend);
    assert_eq!(backend_of(&answer), received[1].backend);
    assert_eq!(received[1].body, body, "the create went again whole");

    // 2. A read in flight on a backend that dies is answered by another.
    *script.next.lock() = Some(Act::Die);
    let res = client
        .send(reqwest::Method::GET, &format!("{WIDGETS}/w1"))
        .await;
    assert_eq!(res.status(), 200);
    let answer: Value = res.json().await.unwrap();
    let received = std::mem::take(&mut *script.received.lock());
    assert_eq!(received.len(), 2, "{received:?}");
    assert_eq!((received[0].what, received[1].what), ("died", "answered"));
    assert!(received.iter().all(|r| r.method == http::Method::GET));
    let first_dead = received[0].backend;
    assert_eq!(backend_of(&answer), received[1].backend);
    assert_ne!(backend_of(&answer), first_dead);

    // 3. A create carrying an Idempotency-Key, in flight on a backend that dies, goes again.
    *script.next.lock() = Some(Act::Die);
    let res = client
        .req(reqwest::Method::POST, WIDGETS)
        .header("idempotency-key", "create-w2")
        .body(r#"{"metadata":{"name":"w2"}}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 201);
    let received = std::mem::take(&mut *script.received.lock());
    assert_eq!(received.len(), 2, "{received:?}");
    assert_eq!((received[0].what, received[1].what), ("died", "answered"));
    assert_eq!(received[1].body, r#"{"metadata":{"name":"w2"}}"#);
    let second_dead = received[0].backend;
    assert_ne!(received[1].backend, first_dead);
    assert_ne!(received[1].backend, second_dead);

    // 4. A plain create in flight on a backend that dies is never sent again, though one
    // backend is alive to take it: its client gets a 503 and decides.
    *script.next.lock() = Some(Act::Die);
    let res = client
        .req(reqwest::Method::POST, WIDGETS)
        .body(r#"{"metadata":{"name":"w3"}}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 503, "{}", res.text().await.unwrap());
    let received = std::mem::take(&mut *script.received.lock());
    assert_eq!(received.len(), 1, "sent again: {received:?}");
    assert_eq!(received[0].what, "died");
    let third_dead = received[0].backend;
    let alive = (0..BACKENDS)
        .find(|b| ![first_dead, second_dead, third_dead].contains(b))
        .unwrap();

    // 5. Later requests, reads and writes, go to the backend alive.
    for i in 0..6 {
        let res = client
            .req(reqwest::Method::POST, WIDGETS)
            .body(format!(r#"{{"metadata":{{"name":"later-{i}"}}}}"#))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 201, "{}", res.text().await.unwrap());
        let answer: Value = res.json().await.unwrap();
        assert_eq!(backend_of(&answer), alive);
        let res = client.send(reqwest::Method::GET, WIDGETS).await;
        assert_eq!(res.status(), 200);
    }

    controller.abort();
    agg.shutdown().await;
}
