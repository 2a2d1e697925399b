//! Two replicas of one server on one etcd, each with its watch cache (the storage `serve`
//! opens), behave as one server: a write acknowledged by A is read by B right after, lists and
//! watches on B see it, resourceVersion preconditions and server-side apply conflicts hold
//! across them, and B continues A's paged lists.

mod support_etcd;
mod support_kinds;
mod support_local;

use std::time::Duration;

use apiserver_framework::cli::storage_options::StorageOptions;
use apiserver_framework::duration::GoDuration;
use apiserver_framework::prelude::*;
use apiserver_framework::server::GenericApiServer;
use apiserver_framework::testing::TestServer;
use futures::StreamExt as _;
use serde_json::{Value, json};
use support_etcd::Etcd;
use support_kinds::sized_kind;
use support_local::{Local, LocalClient, local_server, start_local};

sized_kind!(GadgetSpec, "replicas.example.com", "v1", "Gadget");

const GADGETS: &str = "/apis/replicas.example.com/v1/namespaces/default/gadgets";

/// Creates through one replica and reads through the other this many times.
const ROUNDS: usize = 1000;

/// One replica: a server on the etcd with the storage `serve` opens (watch cache included).
struct Replica {
    http: reqwest::Client,
    url: String,
    token: String,
    _server: TestServer,
}

impl Replica {
    async fn start(etcd: &Etcd) -> Replica {
        let storage = StorageOptions {
            etcd_servers: vec![etcd.url()],
            etcd_prefix: "/registry/replicas".into(),
            compaction_interval: GoDuration(Duration::ZERO),
            ..Default::default()
        };
        let opened = storage.open().await.expect("open etcd");
        assert!(
            storage.watch_cache,
            "serve's default: the watch cache is on"
        );
        let mut builder = GenericApiServer::builder("replicas")
            .group(Group::new("replicas.example.com").resource::<Gadget>())
            .storage(opened.storage);
        for check in opened.health_checks {
            builder = builder.health_check(check);
        }
        let Local { test, .. } = start_local("replicas", builder.build(), &[]).await;
        let client = LocalClient::with_timeout(local_server(&test), Duration::from_secs(10));
        Replica {
            http: client.http,
            url: client.url,
            token: client.token,
            _server: test,
        }
    }

    async fn send(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> (u16, Value) {
        let mut req = self
            .http
            .request(method.clone(), format!("{}{path}", self.url))
            .bearer_auth(&self.token);
        if let Some(body) = body {
            req = req.json(&body);
        }
        let res = req
            .send()
            .await
            .unwrap_or_else(|e| panic!("{method} {path}: {e}"));
        let code = res.status().as_u16();
        (code, res.json().await.unwrap_or(Value::Null))
    }

    async fn get(&self, path: &str) -> (u16, Value) {
        self.send(reqwest::Method::GET, path, None).await
    }
}

fn gadget(name: &str, size: i64, rv: Option<&str>) -> Value {
    let mut g = json!({
        "apiVersion": "replicas.example.com/v1",
        "kind": "Gadget",
        "metadata": {"name": name},
        "spec": {"size": size},
    });
    if let Some(rv) = rv {
        g["metadata"]["resourceVersion"] = json!(rv);
    }
    g
}

fn rv(obj: &Value) -> String {
    obj["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or_else(|| panic!("no resourceVersion: {obj}"))
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_on_one_etcd_are_one_server() {
    let etcd = Etcd::start().expect("etcd starts");
    let a = Replica::start(&etcd).await;
    let b = Replica::start(&etcd).await;

    // B watches from before any write: it must see A's writes in order.
    let (code, list) = b.get(GADGETS).await;
    assert_eq!(code, 200, "{list}");
    let from = list["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string();
    let watch = b
        .http
        .get(format!(
            "{}{GADGETS}?watch=true&resourceVersion={from}",
            b.url
        ))
        .bearer_auth(&b.token)
        .timeout(Duration::from_secs(120))
        .send()
        .await
        .unwrap();
    assert_eq!(watch.status(), 200);

    // Read-your-writes across replicas: created through A, read through B at once (a
    // consistent read: resourceVersion unset); every tenth also listed through B.
    let mut created = Vec::new();
    for i in 0..ROUNDS {
        let name = format!("g{i}");
        let (code, obj) = a
            .send(reqwest::Method::POST, GADGETS, Some(gadget(&name, 1, None)))
            .await;
        assert_eq!(code, 201, "{obj}");
        let (code, got) = b.get(&format!("{GADGETS}/{name}")).await;
        assert_eq!(
            code, 200,
            "round {i}: B did not find {name} created through A: {got}"
        );
        assert_eq!(rv(&got), rv(&obj), "round {i}");
        if i % 10 == 0 {
            let (code, list) = b
                .get(&format!("{GADGETS}?fieldSelector=metadata.name%3D{name}"))
                .await;
            assert_eq!(code, 200, "{list}");
            assert_eq!(
                list["items"].as_array().map(Vec::len),
                Some(1),
                "round {i}: B's list misses {name}: {list}"
            );
        }
        created.push((name, rv(&obj)));
    }

    // B's watch has every one of A's creations, in order.
    let mut lines = watch.bytes_stream();
    let mut buffer = Vec::new();
    let mut seen = Vec::new();
    while seen.len() < ROUNDS {
        let chunk = tokio::time::timeout(Duration::from_secs(10), lines.next())
            .await
            .unwrap_or_else(|_| panic!("B's watch stalled after {} events", seen.len()))
            .expect("B's watch ended")
            .unwrap();
        buffer.extend_from_slice(&chunk);
        while let Some(end) = buffer.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = buffer.drain(..=end).collect();
            let event: Value = serde_json::from_slice(&line).unwrap();
            assert_eq!(event["type"], "ADDED", "{event}");
            let obj = &event["object"];
            seen.push((
                obj["metadata"]["name"].as_str().unwrap().to_string(),
                rv(obj),
            ));
        }
    }
    assert_eq!(seen, created, "B's watch events differ from A's writes");

    // Optimistic concurrency across replicas: an update through B with A's resourceVersion
    // succeeds, the same stale resourceVersion through A is a conflict.
    let (name, first_rv) = created[0].clone();
    let path = format!("{GADGETS}/{name}");
    let (code, updated) = b
        .send(
            reqwest::Method::PUT,
            &path,
            Some(gadget(&name, 2, Some(&first_rv))),
        )
        .await;
    assert_eq!(code, 200, "{updated}");
    let (code, status) = a
        .send(
            reqwest::Method::PUT,
            &path,
            Some(gadget(&name, 3, Some(&first_rv))),
        )
        .await;
    assert_eq!(code, 409, "{status}");
    assert_eq!(status["reason"], "Conflict", "{status}");
    let (code, got) = a.get(&path).await;
    assert_eq!(code, 200);
    assert_eq!(got["spec"]["size"], 2, "A reads B's update: {got}");
    assert_eq!(rv(&got), rv(&updated));

    // Server-side apply conflicts across replicas: a field applied by one manager through A
    // is a conflict for another manager through B, until B forces it.
    let apply = |r: &Replica, manager: &str, size: i64, force: bool| {
        let req = r
            .http
            .patch(format!(
                "{}{GADGETS}/applied?fieldManager={manager}&force={force}",
                r.url
            ))
            .bearer_auth(&r.token)
            .header("content-type", "application/apply-patch+yaml")
            .body(gadget("applied", size, None).to_string());
        async move {
            let res = req.send().await.unwrap();
            let code = res.status().as_u16();
            (code, res.json::<Value>().await.unwrap_or(Value::Null))
        }
    };
    let (code, body) = apply(&a, "one", 1, false).await;
    assert_eq!(code, 201, "{body}");
    let (code, status) = apply(&b, "two", 2, false).await;
    assert_eq!(code, 409, "{status}");
    assert_eq!(status["reason"], "Conflict", "{status}");
    assert!(
        apiserver_framework::testing::status_message(&status).contains("\"one\""),
        "{status}"
    );
    let (code, body) = apply(&b, "two", 2, true).await;
    assert_eq!(code, 200, "{body}");
    let (code, got) = a.get(&format!("{GADGETS}/applied")).await;
    assert_eq!(code, 200);
    assert_eq!(got["spec"]["size"], 2, "{got}");
    let (code, status) = apply(&a, "one", 1, false).await;
    assert_eq!(code, 409, "A sees B's forced apply: {status}");
    let (code, _) = a
        .send(reqwest::Method::DELETE, &format!("{GADGETS}/applied"), None)
        .await;
    assert_eq!(code, 200);

    // A paged list started on A continues on B, at A's revision.
    let (code, page) = a.get(&format!("{GADGETS}?limit=400")).await;
    assert_eq!(code, 200, "{page}");
    let token = page["metadata"]["continue"].as_str().unwrap().to_string();
    let list_rv = page["metadata"]["resourceVersion"].clone();
    let mut names: Vec<String> = page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["metadata"]["name"].as_str().unwrap().to_string())
        .collect();
    let mut token = Some(token);
    let mut replicas = [&b, &a].into_iter().cycle();
    while let Some(t) = token {
        let r = replicas.next().unwrap();
        let (code, page) = r.get(&format!("{GADGETS}?limit=400&continue={t}")).await;
        assert_eq!(code, 200, "{page}");
        assert_eq!(
            page["metadata"]["resourceVersion"], list_rv,
            "a continued list is read at the revision of its first page"
        );
        names.extend(
            page["items"]
                .as_array()
                .unwrap()
                .iter()
                .map(|i| i["metadata"]["name"].as_str().unwrap().to_string()),
        );
        token = page["metadata"]["continue"]
            .as_str()
            .filter(|t| !t.is_empty())
            .map(str::to_string);
    }
    let mut expected: Vec<String> = created.iter().map(|(n, _)| n.clone()).collect();
    expected.sort();
    assert_eq!(names, expected);
}
