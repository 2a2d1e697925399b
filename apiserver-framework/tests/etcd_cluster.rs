//! A server on a three-member etcd cluster whose leader is killed while clients write: the
//! store fails over to the remaining members, the server keeps serving reads and writes,
//! `/readyz` is 200 again, and no acknowledged write is lost.

mod support_etcd;
mod support_kinds;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use apiserver_framework::prelude::*;
use apiserver_framework::storage::etcd::EtcdStorage;
use apiserver_framework::testing::wait;
use serde_json::Value;
use support_etcd::{CLUSTER_SIZE, Client, EtcdCluster};
use support_kinds::{sized, sized_kind};

sized_kind!(WidgetSpec, "cluster.example.com", "v1", "Widget");

const WIDGETS: &str = "/apis/cluster.example.com/v1/namespaces/default/widgets";

/// Concurrent writers.
const WRITERS: usize = 4;
/// When the leader is killed, counted from the start of the writes.
const KILL_AFTER: Duration = Duration::from_secs(2);
/// How long the writers go on writing once the remaining members have a new leader.
const WRITE_AFTER_ELECTION: Duration = Duration::from_secs(6);
/// How soon after the remaining members agree on a new leader a write must succeed again.
/// The election itself is etcd's (its 1 s election timeout, longer on a loaded machine); from
/// then on the store's failover is measured.
const FAILOVER_BOUND: Duration = Duration::from_secs(5);
/// The HTTP client's bound on one request: no request may take longer.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(10);
/// Acknowledged writes required after the kill.
const MIN_WRITES_AFTER_KILL: usize = 20;

/// Widget `name` of size 1.
fn widget(name: &str) -> Value {
    sized("cluster.example.com/v1", "Widget", name, 1)
}

/// A write the server acknowledged (201).
#[derive(Debug)]
struct Ack {
    name: String,
    resource_version: u64,
    /// Since the writes started.
    at: Duration,
}

/// What one writer saw.
#[derive(Debug, Default)]
struct Outcome {
    acks: Vec<Ack>,
    /// When 5xx answers (not acknowledged) came, since the writes started, with their message.
    failures: Vec<(Duration, String)>,
    /// 409 AlreadyExists on a retry: the failed attempt was committed but not acknowledged.
    committed_unacknowledged: Vec<String>,
    /// The longest any one request took.
    slowest: Duration,
}

/// Creates `w<id>-<n>` for n = 0, 1, … until `stop` is set, retrying a name after a 5xx
/// answer.
async fn writer(client: Client, id: usize, start: Instant, stop: Arc<AtomicBool>) -> Outcome {
    let mut outcome = Outcome::default();
    let mut n = 0;
    let mut retry = false;
    while !stop.load(Ordering::Acquire) {
        let name = format!("w{id}-{n}");
        let sent = Instant::now();
        let (code, body) = client.create(WIDGETS, &widget(&name)).await;
        outcome.slowest = outcome.slowest.max(sent.elapsed());
        match code {
            201 => {
                let rv = body["metadata"]["resourceVersion"]
                    .as_str()
                    .and_then(|rv| rv.parse().ok())
                    .unwrap_or_else(|| panic!("{name}: no resourceVersion in {body}"));
                outcome.acks.push(Ack {
                    name,
                    resource_version: rv,
                    at: start.elapsed(),
                });
                n += 1;
                retry = false;
            }
            409 if retry => {
                assert_eq!(body["reason"], "AlreadyExists", "{name}: {body}");
                outcome.committed_unacknowledged.push(name);
                n += 1;
                retry = false;
            }
            500..=599 => {
                assert_eq!(body["kind"], "Status", "{name}: {code} {body}");
                let message = body["message"].as_str().unwrap_or_default().to_string();
                outcome.failures.push((start.elapsed(), message));
                retry = true;
                // A client's pause before it retries, on purpose: the load's pace.
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            _ => panic!("{name}: unexpected {code} {body}"),
        }
    }
    outcome
}

/// A framework server on `cluster` with the `etcd` and `etcd-readiness` checks, and a client.
struct Setup {
    client: Client,
    storage: Arc<EtcdStorage>,
    _server: apiserver_framework::testing::TestServer,
}

async fn serve(cluster: &EtcdCluster) -> Setup {
    let served = support_etcd::serve::<Widget>(
        "cluster",
        "cluster.example.com",
        cluster.options("/registry"),
        CLIENT_TIMEOUT,
    )
    .await;
    let client = served.client();
    let server = served.server;
    assert_eq!(client.get("/readyz").await.0, 200);
    Setup {
        client,
        storage: served.storage,
        _server: server,
    }
}

/// Waits up to 10 s for `/readyz` to answer 200.
async fn wait_ready(client: &Client) {
    let ready = wait::poll("/readyz to answer 200", Duration::from_secs(10), || async {
        let (code, text) = client.get("/readyz?verbose").await;
        if code == 200 { Ok(()) } else { Err(text) }
    })
    .await;
    if let Err(e) = ready {
        panic!("{e}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_survives_losing_the_etcd_leader() {
    let test_start = Instant::now();
    let mut cluster = EtcdCluster::start(CLUSTER_SIZE).expect("the etcd cluster starts");
    let setup = serve(&cluster).await;
    let client = setup.client.clone();

    let start = Instant::now();
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..WRITERS)
        .map(|id| tokio::spawn(writer(client.clone(), id, start, stop.clone())))
        .collect();
    // Spaced on purpose: the writers run for a while before the leader is killed.
    tokio::time::sleep(KILL_AFTER).await;
    let leader = cluster.leader().await.expect("an etcd leader");
    cluster.kill(leader);
    let killed_at = start.elapsed();
    eprintln!("killed leader m{leader} at {killed_at:?}");
    // Reads keep working while the writers write.
    let (code, text) = client.get(WIDGETS).await;
    eprintln!("list during the election: {code} at {:?}", start.elapsed());
    assert!(code == 200 || (500..600).contains(&code), "{code}: {text}");
    let new_leader = cluster.leader().await.expect("a new etcd leader");
    let elected_at = start.elapsed();
    eprintln!("the remaining members agree on m{new_leader} at {elected_at:?}");
    // The load's length, on purpose: the writers go on a while under the new leader.
    tokio::time::sleep(WRITE_AFTER_ELECTION).await;
    stop.store(true, Ordering::Release);

    let mut outcomes = Vec::new();
    for w in writers {
        outcomes.push(w.await.unwrap());
    }
    let acks: Vec<&Ack> = outcomes.iter().flat_map(|o| &o.acks).collect();
    let after_kill: Vec<&&Ack> = acks.iter().filter(|a| a.at > killed_at).collect();
    let first_after_kill = after_kill.iter().map(|a| a.at).min();
    let mut failures: Vec<&(Duration, String)> =
        outcomes.iter().flat_map(|o| &o.failures).collect();
    failures.sort_by_key(|f| f.0);
    if let (Some(first), Some(last)) = (failures.first(), failures.last()) {
        eprintln!(
            "5xx answers from {:?} to {:?}; the last: {}",
            first.0, last.0, last.1
        );
    }
    let failures = failures.len();
    let unacknowledged: Vec<&String> = outcomes
        .iter()
        .flat_map(|o| &o.committed_unacknowledged)
        .collect();
    let slowest = outcomes.iter().map(|o| o.slowest).max().unwrap();
    eprintln!(
        "acknowledged {} writes ({} after the kill, first at {first_after_kill:?}), \
         {failures} 5xx answers, {} committed but unacknowledged, slowest request {slowest:?}",
        acks.len(),
        after_kill.len(),
        unacknowledged.len(),
    );
    let logs = || {
        (0..cluster.size())
            .map(|i| format!("--- m{i}'s log, its end:\n{}", cluster.log_tail(i, 40)))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert!(
        after_kill.len() >= MIN_WRITES_AFTER_KILL,
        "only {} writes acknowledged after the kill at {killed_at:?} (first at \
         {first_after_kill:?}, {failures} 5xx answers; a new leader by {elected_at:?})\n{}",
        after_kill.len(),
        logs(),
    );
    assert!(slowest < CLIENT_TIMEOUT, "a request took {slowest:?}");

    // The first write acknowledged once the test saw the new leader (writes acknowledged
    // between the kill and then may have been committed before the kill).
    let first_after_election = acks
        .iter()
        .map(|a| a.at)
        .filter(|&at| at >= elected_at)
        .min();
    let failover = first_after_election.map(|t| t - elected_at);
    assert!(
        failover.is_some_and(|f| f < FAILOVER_BOUND),
        "writes did not succeed again within {FAILOVER_BOUND:?} of the new leader at \
         {elected_at:?} (the kill at {killed_at:?}, the first write after it at \
         {first_after_election:?})\n{}",
        logs(),
    );
    // Readiness is back.
    wait_ready(&client).await;

    // Every acknowledged write is in the list, at its acknowledged resourceVersion.
    // While the killed member is down, the store still sends some requests to it, which fail
    // at once (see `every_request_succeeds_once_a_member_is_gone`): retry a 5xx as clients do.
    let mut attempts = 0;
    let text = loop {
        attempts += 1;
        let (code, text) = client.get(WIDGETS).await;
        if code == 200 {
            break text;
        }
        assert!(
            (500..600).contains(&code) && attempts < 10,
            "{code}: {text}"
        );
        // A client's pause before it retries a 5xx, on purpose (at most ten tries).
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let list: Value = serde_json::from_str(&text).unwrap();
    let stored: BTreeMap<&str, u64> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            let meta = &i["metadata"];
            let rv = meta["resourceVersion"].as_str().unwrap().parse().unwrap();
            (meta["name"].as_str().unwrap(), rv)
        })
        .collect();
    for ack in &acks {
        assert_eq!(
            stored.get(ack.name.as_str()),
            Some(&ack.resource_version),
            "acknowledged write {} lost or changed",
            ack.name
        );
    }
    for name in &unacknowledged {
        assert!(
            stored.contains_key(name.as_str()),
            "{name} answered 409 but is absent"
        );
    }
    assert_eq!(
        stored.len(),
        acks.len() + unacknowledged.len(),
        "only acknowledged or retried writes are stored"
    );
    // Each writer's resourceVersions grow in the order of its acknowledgements.
    for (id, outcome) in outcomes.iter().enumerate() {
        for pair in outcome.acks.windows(2) {
            assert!(
                pair[0].resource_version < pair[1].resource_version,
                "writer {id}: {:?} then {:?}",
                pair[0],
                pair[1]
            );
        }
    }
    assert!(
        test_start.elapsed() < Duration::from_secs(40),
        "the test took {:?}",
        test_start.elapsed()
    );
}

/// Once the cluster has a leader again, every request succeeds although a member is gone: the
/// client keeps the dead member in its rotation, and the storage sends a request that could
/// not connect to it again, to another member.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_request_succeeds_once_a_member_is_gone() {
    let mut cluster = EtcdCluster::start(CLUSTER_SIZE).expect("the etcd cluster starts");
    let setup = serve(&cluster).await;
    assert_eq!(setup.client.create(WIDGETS, &widget("before")).await.0, 201);
    let leader = cluster.leader().await.expect("an etcd leader");
    cluster.kill(leader);
    let _new_leader = cluster.leader().await.expect("an etcd leader");
    wait_ready(&setup.client).await;
    let mut failed = Vec::new();
    for i in 0..30 {
        if let Err(e) = setup.storage.check_health().await {
            failed.push(format!("health check: {e}"));
        }
        let (code, body) = setup
            .client
            .create(WIDGETS, &widget(&format!("after-{i}")))
            .await;
        if code != 201 {
            failed.push(format!("create after-{i}: {code} {body}"));
        }
        let (code, text) = setup.client.get(WIDGETS).await;
        if code != 200 {
            failed.push(format!("list: {code} {text}"));
        }
    }
    assert!(
        failed.is_empty(),
        "{} of 90 failed: {failed:#?}",
        failed.len()
    );
}
