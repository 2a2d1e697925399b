//! Three servers' compactors on one etcd take turns: etcd is compacted once per interval
//! between them (not once per server), and a watcher at most one interval behind is never
//! told its revision was compacted, while one several intervals behind is.

mod support_etcd;

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use apiserver_framework::storage::etcd::EtcdStorage;
use apiserver_framework::storage::etcd::compact::spawn_compactor;
use apiserver_framework::storage::{Storage, StorageError};
use bytes::Bytes;
use support_etcd::Etcd;

/// The compaction interval of every server.
const INTERVAL: Duration = Duration::from_millis(1000);
/// Intervals counted.
const INTERVALS: u32 = 6;
/// Servers on the etcd.
const SERVERS: usize = 3;

/// etcd's count of `Compact` requests it has taken (from its Prometheus metrics).
async fn compactions(etcd: &Etcd) -> u64 {
    let text = reqwest::get(format!("{}/metrics", etcd.url()))
        .await
        .expect("etcd metrics")
        .text()
        .await
        .unwrap();
    text.lines()
        .find(|l| {
            l.starts_with("grpc_server_started_total{") && l.contains("grpc_method=\"Compact\"")
        })
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|n| n.parse::<f64>().ok())
        .map(|n| n as u64)
        .expect("etcd's metrics count Compact requests")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn servers_take_turns_compacting() {
    let etcd = Etcd::start().expect("etcd starts");
    // Different prefixes, as different servers; replicas of one server would share one: the
    // turn key is outside every prefix either way.
    let mut servers = Vec::new();
    for i in 0..SERVERS {
        servers.push(Arc::new(
            etcd.storage(&format!("/registry/s{i}"))
                .await
                .expect("connect to the test etcd"),
        ));
    }
    let compactors: Vec<_> = servers
        .iter()
        .map(|s| spawn_compactor(s.clone(), INTERVAL))
        .collect();

    // A steady stream of writes, so that every interval has new revisions to compact.
    let writer = {
        let store = servers[0].clone();
        tokio::spawn(async move {
            for n in 0u64.. {
                store
                    .create(&format!("/k/{n}"), Bytes::from_static(b"v"))
                    .await
                    .expect("write");
                // The writer's pace, on purpose: a write every 10 ms.
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
    };

    // Warm up: the first turn only claims the key; compactions start one interval later. The
    // compactor's interval is the measured subject: this waits out two and a half of them.
    tokio::time::sleep(INTERVAL * 2 + INTERVAL / 2).await;
    let before = compactions(&etcd).await;
    let window_start = Instant::now();

    // Meanwhile, a watcher at most one interval behind: every 100 ms, it watches from the
    // oldest revision it saw less than one interval ago (minus a margin for this machine).
    let watcher_lag = INTERVAL * 9 / 10;
    let mut seen: VecDeque<(Instant, u64)> = VecDeque::new();
    let mut watches = 0;
    let mut oldest = None;
    while window_start.elapsed() < INTERVAL * INTERVALS {
        let now = Instant::now();
        let rev = servers[1].current_revision().await.unwrap();
        seen.push_back((now, rev));
        oldest.get_or_insert(rev);
        while seen
            .front()
            .is_some_and(|(at, _)| now.duration_since(*at) > watcher_lag)
        {
            seen.pop_front();
        }
        let (_, behind) = *seen.front().unwrap();
        let watcher = &servers[2];
        match watcher.watch("/k/", behind).await {
            Ok(_) => watches += 1,
            Err(e) => panic!(
                "a watch from revision {behind}, seen less than one interval ago, failed: {e}"
            ),
        }
        // The watch probes' pace, on purpose: one every 100 ms through the window.
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let after = compactions(&etcd).await;
    writer.abort();
    for c in compactors {
        c.abort();
    }

    let counted = after - before;
    // N intervals: N compactions, give or take the one at either end of the window
    // (three servers compacting on their own would make 3N).
    assert!(
        (u64::from(INTERVALS) - 1..=u64::from(INTERVALS) + 1).contains(&counted),
        "{counted} compactions in {INTERVALS} intervals of {SERVERS} servers"
    );
    assert!(watches > 40, "only {watches} watches checked");
    // Compaction did cut history: a watch from several intervals back is refused.
    let oldest = oldest.unwrap();
    match servers[2].watch("/k/", oldest).await {
        Err(StorageError::Compacted { requested, .. }) => assert_eq!(requested, oldest),
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("revision {oldest}, {INTERVALS} intervals old, was not compacted"),
    }
}

/// One step of one server: the first claims the turn without compacting, the next compacts to
/// the revision of the previous step; a server whose turn was taken learns the new version.
#[tokio::test]
async fn one_turn_per_version() {
    use apiserver_framework::storage::etcd::compact::{CompactionTurn, StepOutcome};
    let etcd = Etcd::start().expect("etcd starts");
    let a: EtcdStorage = etcd
        .storage("/registry/a")
        .await
        .expect("connect to the test etcd");
    let b: EtcdStorage = etcd
        .storage("/registry/b")
        .await
        .expect("connect to the test etcd");
    let (a1, out) = a.compaction_step(CompactionTurn::default()).await.unwrap();
    assert_eq!(out, StepOutcome::Claimed);
    assert_eq!(a1.version, 1);
    // b has seen nothing yet: its turn is taken.
    let (b1, out) = b.compaction_step(CompactionTurn::default()).await.unwrap();
    assert_eq!(out, StepOutcome::Lost);
    assert_eq!(b1.version, 1);
    a.create("/x", Bytes::from_static(b"1")).await.unwrap();
    // Both try the next turn; only the first compacts, to the revision of its last step.
    let (a2, out) = a.compaction_step(a1).await.unwrap();
    assert_eq!(out, StepOutcome::Compacted(a1.revision));
    assert_eq!(a2.version, 2);
    let (b2, out) = b.compaction_step(b1).await.unwrap();
    assert_eq!(out, StepOutcome::Lost);
    assert_eq!(b2.version, 2);
    // Now b is in step and takes the next turn, compacting to what it read.
    let (_, out) = b.compaction_step(b2).await.unwrap();
    assert_eq!(out, StepOutcome::Compacted(b2.revision));
}
