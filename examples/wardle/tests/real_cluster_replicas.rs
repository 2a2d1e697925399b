//! Three `wardle serve` replicas on an etcd cluster of three members, behind the real
//! kube-apiserver's aggregator, which balances over the replicas' EndpointSlice
//! (`scripts/real-cluster up --replicas 3`; its readiness prober stands in for the kubelet's
//! readiness probe and the EndpointSlice controller). Writers create Flunders through
//! kube-apiserver throughout; one setup, the dev host's three disruptions in turn:
//!
//! 1. `kill -9` of one replica: requests fail only until the prober has marked it unready
//!    (the real aggregator does not resend a request, as the dev host's does), none after;
//! 2. a rolling restart of all three through SIGTERM (`--shutdown-delay-duration`, so each
//!    leaves the EndpointSlice before it stops serving): no request fails;
//! 3. the etcd leader killed: writes succeed again within seconds.
//!
//! Afterwards every acknowledged write is stored, and `scripts/real-cluster down` leaves no
//! process and no network namespace behind.

#[path = "support/mod.rs"]
mod support;

#[allow(dead_code)]
#[path = "real_cluster/cluster.rs"]
mod cluster;

#[allow(dead_code)]
#[path = "real_cluster/http.rs"]
mod http;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use cluster::{RealCluster, TIMEOUT, block_on};
use serde_json::{Value, json};

/// The namespaced Flunder collection the writers fill.
const FLUNDERS: &str = "/apis/wardle.example.com/v1alpha1/namespaces/default/flunders";
/// Concurrent writers.
const WRITERS: usize = 3;
/// How long after the prober marked a killed replica unready a request may still have been
/// sent to it: the aggregator's EndpointSlice informer hears of the change through a watch.
const AGGREGATOR_NOTICES: Duration = Duration::from_secs(1);

/// One write: when it was sent, and whether it was acknowledged.
#[derive(Debug, Clone)]
struct Write {
    name: String,
    sent: Instant,
    outcome: Result<(), String>,
}

/// The `ready` condition of each address in wardle's EndpointSlice.
fn readiness(cluster: &RealCluster) -> Vec<(String, bool)> {
    let slice = cluster.get_json(&["endpointslice", "api-wardle", "-n", "wardle"]);
    slice["endpoints"]
        .as_array()
        .expect("endpoints")
        .iter()
        .map(|e| {
            (
                e["addresses"][0].as_str().unwrap_or_default().to_string(),
                e["conditions"]["ready"].as_bool().unwrap_or(true),
            )
        })
        .collect()
}

fn wait_ready(cluster: &RealCluster, address: &str, ready: bool) -> Instant {
    cluster.wait_until(
        &format!("the endpoint {address} ready={ready}"),
        TIMEOUT,
        || {
            readiness(cluster)
                .iter()
                .any(|(a, r)| a == address && *r == ready)
        },
    );
    Instant::now()
}

fn pid_of(cluster: &RealCluster, name: &str) -> i32 {
    std::fs::read_to_string(cluster.dir().join(format!("{name}.pid")))
        .expect("a process id file")
        .trim()
        .parse()
        .expect("a process id")
}

fn signal(pid: i32, signal: &str) {
    let status = std::process::Command::new("kill")
        .args([&format!("-{signal}"), &pid.to_string()])
        .status()
        .expect("run kill");
    assert!(status.success(), "kill -{signal} {pid}");
}

/// Waits until process `pid` is gone.
fn wait_gone(cluster: &RealCluster, pid: i32) {
    cluster.wait_until(&format!("process {pid} exits"), TIMEOUT, || {
        !std::path::Path::new(&format!("/proc/{pid}")).exists()
            || std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .map(|s| s.contains(") Z "))
                .unwrap_or(true)
    });
}

/// The leader of wardle's etcd cluster: its member name (`wardle-etcd-<n>`).
async fn etcd_leader(client: &reqwest::Client, servers: &str) -> String {
    for (i, url) in servers.split(',').enumerate() {
        let Ok(res) = client
            .post(format!("{url}/v3/maintenance/status"))
            .body("{}")
            .send()
            .await
        else {
            continue;
        };
        let Ok(status) = res.json::<Value>().await else {
            continue;
        };
        if status["header"]["member_id"] == status["leader"] {
            return format!("wardle-etcd-{}", i + 1);
        }
    }
    panic!("no member of {servers} says it leads");
}

/// Creates `w<id>-<n>` over and over through kube-apiserver until `stop`.
async fn writer(
    client: reqwest::Client,
    url: String,
    id: usize,
    stop: Arc<AtomicBool>,
    writes: Arc<Mutex<Vec<Write>>>,
) {
    let mut n = 0;
    while !stop.load(Ordering::Relaxed) {
        n += 1;
        let name = format!("w{id}-{n}");
        let body = json!({"apiVersion": "wardle.example.com/v1alpha1", "kind": "Flunder",
                          "metadata": {"name": name}, "spec": {"reference": "x"}});
        let sent = Instant::now();
        let outcome = match client.post(&url).json(&body).send().await {
            Ok(res) if res.status() == 201 => Ok(()),
            Ok(res) => Err(format!(
                "{}: {}",
                res.status(),
                res.text().await.unwrap_or_default()
            )),
            Err(e) => Err(e.to_string()),
        };
        writes.lock().unwrap().push(Write {
            name,
            sent,
            outcome,
        });
        // The writer's pace, on purpose: a write every 20 ms.
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn failures_between(writes: &[Write], from: Instant, to: Instant) -> Vec<Write> {
    writes
        .iter()
        .filter(|w| w.sent >= from && w.sent < to && w.outcome.is_err())
        .cloned()
        .collect()
}

#[test]
fn replicas_behind_the_real_aggregator_survive_kills_rollouts_and_etcd_failover() {
    let cluster = RealCluster::up(&[
        "--replicas",
        "3",
        "--wardle-flag",
        "--shutdown-delay-duration=3s",
    ]);
    let addresses: Vec<String> = cluster
        .env("WARDLE_ADDRESSES")
        .split_whitespace()
        .map(str::to_string)
        .collect();
    assert_eq!(addresses.len(), 3);
    let admin = http::host_client(&cluster, Some("admin"), false);
    let url = format!("{}{FLUNDERS}", cluster.api_url());
    let writes: Arc<Mutex<Vec<Write>>> = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let writers: Vec<_> = (0..WRITERS)
        .map(|id| {
            runtime.spawn(writer(
                admin.clone(),
                url.clone(),
                id,
                stop.clone(),
                writes.clone(),
            ))
        })
        .collect();
    let snapshot = || writes.lock().unwrap().clone();
    cluster.wait_until("the writers' first acknowledged writes", TIMEOUT, || {
        snapshot().iter().filter(|w| w.outcome.is_ok()).count() >= 3 * WRITERS
    });

    // 1. kill -9 of one replica.
    let killed = &addresses[1];
    let kill_sent = Instant::now();
    signal(pid_of(&cluster, &format!("wardle-{killed}")), "KILL");
    let unready = wait_ready(&cluster, killed, false);
    // Spaced on purpose: two seconds of writes while the replica is down.
    std::thread::sleep(Duration::from_secs(2));
    let late = failures_between(&snapshot(), unready + AGGREGATOR_NOTICES, Instant::now());
    assert!(
        late.is_empty(),
        "requests failed after the killed replica left the slice: {late:#?}"
    );
    eprintln!(
        "killed {killed}: unready after {:?}; {} writes failed before",
        unready - kill_sent,
        failures_between(&snapshot(), kill_sent, unready + AGGREGATOR_NOTICES).len()
    );
    cluster.script_with("start-wardle", &[killed]);
    wait_ready(&cluster, killed, true);

    // 2. A rolling restart through SIGTERM, one replica at a time: no request fails.
    let roll_start = Instant::now();
    for address in &addresses {
        let pid = pid_of(&cluster, &format!("wardle-{address}"));
        signal(pid, "TERM");
        wait_gone(&cluster, pid);
        cluster.script_with("start-wardle", &[address]);
        wait_ready(&cluster, address, true);
    }
    let rolled = Instant::now();
    let failed = failures_between(&snapshot(), roll_start, rolled);
    assert!(
        failed.is_empty(),
        "requests failed during the rolling restart: {failed:#?}"
    );
    let during = snapshot().iter().filter(|w| w.sent >= roll_start).count();
    assert!(
        during >= 10,
        "only {during} writes during the rolling restart"
    );

    // 3. The etcd leader killed: writes succeed again within seconds.
    let plain = reqwest::Client::new();
    let leader = block_on(etcd_leader(&plain, &cluster.env("ETCD_SERVERS")));
    let leader_killed = Instant::now();
    signal(pid_of(&cluster, &leader), "KILL");
    cluster.wait_until(
        "a write acknowledged after the leader died",
        Duration::from_secs(20),
        || {
            snapshot()
                .iter()
                .any(|w| w.sent > leader_killed + Duration::from_secs(1) && w.outcome.is_ok())
        },
    );
    let recovered = snapshot()
        .iter()
        .filter(|w| w.sent > leader_killed && w.outcome.is_ok())
        .map(|w| w.sent - leader_killed)
        .min()
        .expect("a write after the leader died");
    eprintln!("etcd leader {leader} killed: writes acknowledged again after {recovered:?}");

    stop.store(true, Ordering::Relaxed);
    for w in writers {
        runtime.block_on(w).expect("a writer");
    }
    // Every acknowledged write is stored.
    let stored = cluster.get_json(&["flunders", "-n", "default"]);
    let names: std::collections::BTreeSet<&str> = stored["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter_map(|i| i["metadata"]["name"].as_str())
        .collect();
    let writes = snapshot();
    let acknowledged: Vec<&Write> = writes.iter().filter(|w| w.outcome.is_ok()).collect();
    let lost: Vec<&&Write> = acknowledged
        .iter()
        .filter(|w| !names.contains(w.name.as_str()))
        .collect();
    assert!(lost.is_empty(), "acknowledged writes lost: {lost:#?}");
    eprintln!(
        "{} writes, {} acknowledged, all stored",
        writes.len(),
        acknowledged.len()
    );

    // `scripts/real-cluster down` leaves no process and no network namespace behind.
    let pids = cluster.processes();
    let netns = cluster.env("NETNS");
    assert!(
        pids.len() >= 10,
        "etcd, kube-apiserver, the controller manager, 3 wardles, 3 etcds, the prober: {pids:?}"
    );
    drop(cluster);
    let running: Vec<i32> = pids
        .into_iter()
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .is_ok_and(|stat| !stat.contains(") Z "))
        })
        .collect();
    assert!(running.is_empty(), "still running after down: {running:?}");
    let namespaces = std::process::Command::new("ip")
        .args(["netns", "list"])
        .output()
        .expect("ip netns list");
    let namespaces = String::from_utf8_lossy(&namespaces.stdout);
    assert!(
        !namespaces.split_whitespace().any(|n| n == netns),
        "{netns} is still there: {namespaces}"
    );
}
