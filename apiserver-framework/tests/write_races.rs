//! Writes that race with another client's write between the store's read and its own
//! conditional write, over real HTTPS. The race is made certain by a storage wrapper that, on
//! the store's next create, update or delete of a key, first lets another real client's request
//! run through the same server (a fault injector in front of the in-memory store, not a mock
//! of it). The outcomes are upstream's:
//!
//! - a DELETE without preconditions, or with a UID precondition the object still meets,
//!   re-reads and deletes (etcd3 store's conditional delete loop); only a resourceVersion
//!   precondition the object no longer meets answers 409;
//! - marking an object with finalizers as deleting retries too (a guaranteed update), keeping
//!   the other client's change;
//! - a DELETE of the collection deletes every item, skipping one deleted meanwhile;
//! - a server-side apply that creates, racing another create, applies to the object that now
//!   exists (an update: 200, conflicts computed against its managed fields).

mod support_local;

use std::collections::VecDeque;
use std::sync::Arc;

use apiserver_framework::prelude::*;
use apiserver_framework::server::GenericApiServer;
use apiserver_framework::storage::memory::MemoryStorage;
use apiserver_framework::storage::{
    KeyValue, ListPage, ListRequest, Storage, StorageError, WatchStream,
};
use apiserver_framework::testing::TestServer;
use bytes::Bytes;
use futures::future::BoxFuture;
use parking_lot::Mutex;
use serde_json::{Value, json};
use support_local::{Local, start_local};

/// A racer.
#[derive(ApiResource, Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[resource(group = "race.example.com", version = "v1", kind = "Racer", namespaced)]
pub struct RacerSpec {
    /// Pace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pace: Option<String>,
    /// Color.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub color: Option<String>,
}

const RACERS: &str = "/apis/race.example.com/v1/namespaces/default/racers";

fn key(name: &str) -> String {
    format!("/race.example.com/racers/default/{name}")
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Call {
    Create,
    Update,
    Delete,
}

type Hook = Box<dyn FnOnce() -> BoxFuture<'static, ()> + Send>;

/// The in-memory store, with hooks run before the next create, update or delete of a key.
#[derive(Default)]
struct Racing {
    inner: MemoryStorage,
    hooks: Mutex<VecDeque<(Call, String, Hook)>>,
}

impl Racing {
    /// Runs `hook` before the next `call` of `key` (once).
    fn before(&self, call: Call, name: &str, hook: Hook) {
        self.hooks.lock().push_back((call, key(name), hook));
    }

    async fn race(&self, call: Call, key: &str) {
        let hook = {
            let mut hooks = self.hooks.lock();
            let at = hooks.iter().position(|(c, k, _)| *c == call && k == key);
            at.and_then(|i| hooks.remove(i)).map(|(_, _, hook)| hook)
        };
        if let Some(hook) = hook {
            hook().await;
        }
    }

    fn pending(&self) -> usize {
        self.hooks.lock().len()
    }
}

#[async_trait::async_trait]
impl Storage for Racing {
    async fn get(&self, key: &str) -> Result<Option<KeyValue>, StorageError> {
        self.inner.get(key).await
    }
    async fn list(&self, req: ListRequest) -> Result<ListPage, StorageError> {
        self.inner.list(req).await
    }
    async fn create(&self, key: &str, value: Bytes) -> Result<u64, StorageError> {
        self.race(Call::Create, key).await;
        self.inner.create(key, value).await
    }
    async fn update(&self, key: &str, value: Bytes, expected: u64) -> Result<u64, StorageError> {
        self.race(Call::Update, key).await;
        self.inner.update(key, value, expected).await
    }
    async fn delete(
        &self,
        key: &str,
        expected: Option<u64>,
    ) -> Result<(u64, KeyValue), StorageError> {
        self.race(Call::Delete, key).await;
        self.inner.delete(key, expected).await
    }
    async fn watch(&self, prefix: &str, after: u64) -> Result<WatchStream, StorageError> {
        self.inner.watch(prefix, after).await
    }
    async fn current_revision(&self) -> Result<u64, StorageError> {
        self.inner.current_revision().await
    }
    async fn compact(&self, revision: u64) -> Result<(), StorageError> {
        self.inner.compact(revision).await
    }
    fn local_revision(&self) -> Option<u64> {
        self.inner.local_revision()
    }
}

/// A client of the server (cheap to clone: the other client of a race is one too).
#[derive(Clone)]
struct Client {
    http: reqwest::Client,
    url: String,
    token: String,
}

impl Client {
    async fn send(&self, method: &str, path: &str, ct: &str, body: Option<String>) -> (u16, Value) {
        let mut req = self
            .http
            .request(
                method.parse().unwrap(),
                format!("{}{RACERS}{path}", self.url),
            )
            .bearer_auth(&self.token);
        if let Some(body) = body {
            req = req.header("content-type", ct).body(body);
        }
        let res = req.send().await.unwrap();
        let code = res.status().as_u16();
        (code, res.json().await.unwrap_or(Value::Null))
    }

    async fn create(&self, name: &str, spec: Value, finalizers: &[&str], manager: &str) -> Value {
        let body = json!({
            "apiVersion": "race.example.com/v1", "kind": "Racer",
            "metadata": {"name": name, "finalizers": finalizers},
            "spec": spec,
        });
        let (code, obj) = self
            .send(
                "POST",
                &format!("?fieldManager={manager}"),
                "application/json",
                Some(body.to_string()),
            )
            .await;
        assert_eq!(code, 201, "{obj}");
        obj
    }

    async fn label(&self, name: &str, value: &str) -> u16 {
        let patch = json!({"metadata": {"labels": {"raced": value}}});
        self.send(
            "PATCH",
            &format!("/{name}"),
            "application/merge-patch+json",
            Some(patch.to_string()),
        )
        .await
        .0
    }

    async fn delete(&self, name: &str, options: Option<Value>) -> (u16, Value) {
        self.send(
            "DELETE",
            &format!("/{name}"),
            "application/json",
            options.map(|o| o.to_string()),
        )
        .await
    }

    async fn apply(&self, name: &str, spec: Value, force: bool) -> (u16, Value) {
        let config = json!({
            "apiVersion": "race.example.com/v1", "kind": "Racer",
            "metadata": {"name": name}, "spec": spec,
        });
        self.send(
            "PATCH",
            &format!("/{name}?fieldManager=applier&force={force}"),
            "application/apply-patch+yaml",
            Some(config.to_string()),
        )
        .await
    }
}

/// A local server of racers on a [`Racing`] store, and a client.
async fn serve() -> (TestServer, Arc<Racing>, Client) {
    let racing = Arc::new(Racing::default());
    let server = GenericApiServer::builder("races")
        .storage(racing.clone())
        .group(Group::new("race.example.com").resource::<Racer>())
        .build();
    let Local { test, client } = start_local("races", server, &[]).await;
    let client = Client {
        http: client.http,
        url: client.url,
        token: client.token,
    };
    (test, racing, client)
}

/// A hook: `f` with the other client, whose answer (a status code) goes to `answers`.
fn other<F, Fut>(client: &Client, answers: &Arc<Mutex<Vec<u16>>>, f: F) -> Hook
where
    F: FnOnce(Client) -> Fut + Send + 'static,
    Fut: Future<Output = u16> + Send + 'static,
{
    let (client, answers) = (client.clone(), answers.clone());
    Box::new(move || {
        Box::pin(async move {
            let code = f(client).await;
            answers.lock().push(code);
        })
    })
}

#[tokio::test]
async fn a_delete_retries_a_concurrent_change_unless_a_resource_version_precondition_fails() {
    let (_server, racing, c) = serve().await;
    let answers = Arc::new(Mutex::new(Vec::new()));
    for name in ["plain", "by-uid", "by-rv"] {
        c.create(name, json!({"pace": "slow"}), &[], "poster").await;
    }

    // No precondition: deleted, the other client's change notwithstanding.
    racing.before(
        Call::Delete,
        "plain",
        other(&c, &answers, |o| async move { o.label("plain", "x").await }),
    );
    let (code, status) = c.delete("plain", None).await;
    assert_eq!(code, 200, "{status}");
    assert_eq!(status["status"], "Success", "{status}");
    assert_eq!(c.send("GET", "/plain", "", None).await.0, 404);

    // A UID precondition the object still meets: deleted as well.
    let uid = c.send("GET", "/by-uid", "", None).await.1["metadata"]["uid"].clone();
    racing.before(
        Call::Delete,
        "by-uid",
        other(
            &c,
            &answers,
            |o| async move { o.label("by-uid", "x").await },
        ),
    );
    let (code, status) = c
        .delete("by-uid", Some(json!({"preconditions": {"uid": uid}})))
        .await;
    assert_eq!(code, 200, "{status}");
    assert_eq!(c.send("GET", "/by-uid", "", None).await.0, 404);

    // A resourceVersion precondition the object no longer meets: 409, as the precondition
    // failed on the object as it now is.
    let rv = c.send("GET", "/by-rv", "", None).await.1["metadata"]["resourceVersion"].clone();
    racing.before(
        Call::Delete,
        "by-rv",
        other(&c, &answers, |o| async move { o.label("by-rv", "x").await }),
    );
    let (code, status) = c
        .delete(
            "by-rv",
            Some(json!({"preconditions": {"resourceVersion": rv}})),
        )
        .await;
    assert_eq!(code, 409, "{status}");
    assert_eq!(status["reason"], "Conflict", "{status}");
    let message = status["message"].as_str().unwrap();
    assert!(
        message.contains("Precondition failed: ResourceVersion in precondition"),
        "{message}"
    );
    assert_eq!(c.send("GET", "/by-rv", "", None).await.0, 200);

    assert_eq!(
        *answers.lock(),
        [200, 200, 200],
        "the other client's patches"
    );
    assert_eq!(racing.pending(), 0);
}

#[tokio::test]
async fn marking_an_object_with_finalizers_deleting_retries_and_keeps_the_concurrent_change() {
    let (_server, racing, c) = serve().await;
    let answers = Arc::new(Mutex::new(Vec::new()));
    c.create(
        "held",
        json!({"pace": "slow"}),
        &["example.com/hold"],
        "poster",
    )
    .await;
    racing.before(
        Call::Update,
        "held",
        other(&c, &answers, |o| async move {
            o.label("held", "meanwhile").await
        }),
    );
    let (code, obj) = c.delete("held", None).await;
    assert_eq!(code, 200, "{obj}");
    assert!(obj["metadata"]["deletionTimestamp"].is_string(), "{obj}");
    assert_eq!(obj["metadata"]["labels"]["raced"], "meanwhile", "{obj}");
    let (code, stored) = c.send("GET", "/held", "", None).await;
    assert_eq!(code, 200);
    assert!(
        stored["metadata"]["deletionTimestamp"].is_string(),
        "{stored}"
    );
    assert_eq!(*answers.lock(), [200]);
}

#[tokio::test]
async fn a_collection_delete_goes_on_past_concurrent_changes_and_deletions() {
    let (_server, racing, c) = serve().await;
    let answers = Arc::new(Mutex::new(Vec::new()));
    for i in 0..5 {
        c.create(&format!("r{i}"), json!({"pace": "slow"}), &[], "poster")
            .await;
    }
    // r0 changes between the read and the delete; r2 is deleted by another client.
    racing.before(
        Call::Delete,
        "r0",
        other(&c, &answers, |o| async move { o.label("r0", "x").await }),
    );
    racing.before(
        Call::Delete,
        "r2",
        other(
            &c,
            &answers,
            |o| async move { o.delete("r2", None).await.0 },
        ),
    );
    let (code, list) = c.send("DELETE", "", "", None).await;
    assert_eq!(code, 200, "{list}");
    let names: Vec<&str> = apiserver_framework::testing::item_names(&list);
    assert_eq!(names, ["r0", "r1", "r3", "r4"]);
    let (_, left) = c.send("GET", "", "", None).await;
    assert_eq!(left["items"], json!([]), "{left}");
    assert_eq!(*answers.lock(), [200, 200]);
}

#[tokio::test]
async fn an_apply_that_creates_racing_a_create_applies_to_the_object_that_now_exists() {
    let (_server, racing, c) = serve().await;
    let answers = Arc::new(Mutex::new(Vec::new()));
    let post = |name: &'static str| {
        other(&c, &answers, move |o| async move {
            o.create(name, json!({"pace": "slow", "color": "red"}), &[], "poster")
                .await;
            201
        })
    };

    // The same value as the other manager's: shared, no conflict; an update (200).
    racing.before(Call::Create, "shared", post("shared"));
    let (code, obj) = c.apply("shared", json!({"color": "red"}), false).await;
    assert_eq!(code, 200, "{obj}");
    assert_eq!(
        obj["spec"],
        json!({"pace": "slow", "color": "red"}),
        "{obj}"
    );
    let managers: Vec<&str> = obj["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["manager"].as_str().unwrap())
        .collect();
    assert!(
        managers.contains(&"poster") && managers.contains(&"applier"),
        "{obj}"
    );

    // Another value, not forced: a conflict with the other manager, not AlreadyExists.
    racing.before(Call::Create, "contested", post("contested"));
    let (code, status) = c.apply("contested", json!({"color": "blue"}), false).await;
    assert_eq!(code, 409, "{status}");
    assert_eq!(status["reason"], "Conflict", "{status}");
    assert!(
        apiserver_framework::testing::status_message(&status).contains("conflict with \"poster\""),
        "{status}"
    );

    // Forced: applied over the other manager's value.
    racing.before(Call::Create, "forced", post("forced"));
    let (code, obj) = c.apply("forced", json!({"color": "blue"}), true).await;
    assert_eq!(code, 200, "{obj}");
    assert_eq!(
        obj["spec"],
        json!({"pace": "slow", "color": "blue"}),
        "{obj}"
    );

    assert_eq!(*answers.lock(), [201, 201, 201]);
    assert_eq!(racing.pending(), 0);
}
