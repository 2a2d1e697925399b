//! The short mode of the robustness harness, as `./scripts/test` runs it: wardle as a child
//! process on the embedded store and on a three-member etcd cluster, with random clients,
//! watchers and faults, for a few seconds each with a fixed seed and then a random one (both
//! printed: `apiserver-robustness --seed N` runs the same choices for longer).
//!
//! The embedded store runs on a small tmpfs, so that its full-disk fault runs: the fixed seed's
//! first fault fills it. Mounting needs root; without it the embedded run fails, it does not
//! skip.

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use apiserver_robustness::checker::CheckOptions;
use apiserver_robustness::faults::{FaultKind, FaultOptions};
use apiserver_robustness::report::RunReport;
use apiserver_robustness::run::{Backend, RunConfig, run};
use apiserver_robustness::system::{ServerOptions, Store};

/// The fixed seed.
const FIXED_SEED: u64 = 20_250_101;

async fn short_run(store: Store, kinds: Vec<FaultKind>, seed: u64, out: PathBuf) -> RunReport {
    let name = match &store {
        Store::Embedded { .. } => "embedded".to_string(),
        Store::Etcd { members } => format!("etcd-{members}"),
    };
    // Straight to stderr, past the test harness's capture: the seeds show in every run.
    let _ = writeln!(
        std::io::stderr(),
        "robustness short mode, {name}: seed {seed} (re-run: ./scripts/robustness --backend {} --seed {seed})",
        if name == "embedded" {
            "embedded"
        } else {
            "etcd"
        }
    );
    let report = run(RunConfig {
        backend: Backend::Process {
            store,
            server: ServerOptions {
                binary: PathBuf::from(env!("CARGO_BIN_EXE_robustness-wardle")),
                compaction_interval: "2s".into(),
                token: format!("robustness-{seed:x}"),
            },
        },
        name: name.clone(),
        duration: Duration::from_secs(7),
        seed,
        clients: 3,
        watchers: 3,
        keys: 3,
        faults: FaultOptions {
            kinds,
            quiet: (Duration::from_millis(500), Duration::from_millis(1500)),
            hold: (Duration::from_millis(300), Duration::from_millis(1200)),
        },
        out_dir: out,
        request_timeout: Duration::from_secs(10),
        watch_timeout_seconds: (3, 6),
        check: CheckOptions::default(),
        log_exchanges: true,
    })
    .await
    .unwrap_or_else(|e| panic!("{name} (seed {seed}): the run failed: {e}"));
    let _ = writeln!(std::io::stderr(), "{}", report.summary());
    assert!(
        report.passed(),
        "{name} (seed {seed}) failed:\n{}",
        report.summary()
    );
    let injected: u64 = report.faults.values().sum();
    assert!(
        injected > 0,
        "{name}: no fault was injected:\n{}",
        report.summary()
    );
    assert!(
        report.check.key_operations > 100 && report.events > 20,
        "{name}: too little happened to check:\n{}",
        report.summary()
    );
    report
}

/// The reports of a run with the fixed seed, then one with a random seed.
async fn fixed_and_random(store: Store, kinds: Vec<FaultKind>) -> Vec<RunReport> {
    let dir = tempfile::tempdir().unwrap();
    let random: u64 = rand::random();
    let mut reports = Vec::new();
    for (i, seed) in [FIXED_SEED, random].into_iter().enumerate() {
        reports.push(
            short_run(
                store.clone(),
                kinds.clone(),
                seed,
                dir.path().join(format!("run-{i}")),
            )
            .await,
        );
    }
    reports
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embedded_store_under_faults() {
    let reports = fixed_and_random(
        Store::Embedded {
            disk_size: Some(64 * 1024 * 1024),
        },
        FaultKind::EMBEDDED.to_vec(),
    )
    .await;
    // The fixed seed's choices include a full disk: the store recovered from one.
    assert!(
        reports[0].faults.contains_key(FaultKind::DiskFull.name()),
        "the fixed seed's run filled no disk:\n{}",
        reports[0].summary()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_cluster_under_faults() {
    fixed_and_random(Store::Etcd { members: 3 }, FaultKind::ETCD.to_vec()).await;
}
