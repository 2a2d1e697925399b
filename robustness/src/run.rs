//! One run: start the system, let clients, watchers and faults loose for a while, stop them,
//! read the final state, check the history, and report.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::api::{Api, Target};
use crate::checker::{self, CheckOptions};
use crate::faults::{FaultOptions, FaultOutcome, fault_loop};
use crate::history::{Outcome, Request};
use crate::recorder::Recorder;
use crate::report::RunReport;
use crate::system::{ServerOptions, Store, System};
use crate::watchers::{Revisions, Watcher, WatcherControl, WatcherOptions};
use crate::workload::client_loop;

/// The client number of the harness's own requests (the start, the marker, the final list).
pub const HARNESS_CLIENT: u32 = 9999;

/// The client number of the recovery probes after faults.
pub const PROBE_CLIENT: u32 = 9998;

/// The key the harness writes after the run so that watchers can show they caught up.
pub const MARKER_KEY: &str = "marker";

/// What a run talks to.
pub enum Backend {
    /// A wardle process the harness starts (and injects faults into).
    Process {
        /// The store.
        store: Store,
        /// How to start the server.
        server: ServerOptions,
    },
    /// A server running elsewhere (no faults): its address, token and CA.
    External(Arc<Target>),
}

/// How a run goes.
pub struct RunConfig {
    /// What it talks to.
    pub backend: Backend,
    /// A name for reports ("embedded", "etcd-3"…).
    pub name: String,
    /// How long clients run.
    pub duration: Duration,
    /// The seed of every random choice (operations, faults, watchers).
    pub seed: u64,
    /// Concurrent clients.
    pub clients: u32,
    /// Concurrent watchers.
    pub watchers: u32,
    /// Keys in the key space.
    pub keys: u32,
    /// Faults and their pacing.
    pub faults: FaultOptions,
    /// Where the history, logs and any violations go.
    pub out_dir: PathBuf,
    /// How long a request may take before its outcome counts as unknown.
    pub request_timeout: Duration,
    /// `timeoutSeconds` of watches, at least and at most.
    pub watch_timeout_seconds: (u64, u64),
    /// The checker's bounds.
    pub check: CheckOptions,
    /// Whether to log every HTTP exchange and watch line to `exchanges.jsonl`.
    pub log_exchanges: bool,
}

/// Runs one robustness run and checks it.
pub async fn run(config: RunConfig) -> Result<RunReport, String> {
    std::fs::create_dir_all(&config.out_dir)
        .map_err(|e| format!("{}: {e}", config.out_dir.display()))?;
    // Absolute: the server runs in a directory of its own and must find its data.
    let mut config = config;
    config.out_dir = std::fs::canonicalize(&config.out_dir)
        .map_err(|e| format!("{}: {e}", config.out_dir.display()))?;
    let log = config
        .log_exchanges
        .then(|| config.out_dir.join("exchanges.jsonl"));
    let recorder =
        Arc::new(Recorder::new(log.as_deref()).map_err(|e| format!("the exchange log: {e}"))?);
    let mut rng = StdRng::seed_from_u64(config.seed);

    // The system.
    let (system, target) = match config.backend {
        Backend::Process { store, server } => {
            let dir = config.out_dir.clone();
            let system = tokio::task::spawn_blocking(move || System::start(&dir, &store, &server))
                .await
                .map_err(|e| e.to_string())??;
            let target = system.target.clone();
            (Some(system), target)
        }
        Backend::External(target) => (None, target),
    };
    let harness = Api::new(
        target.clone(),
        recorder.clone(),
        HARNESS_CLIENT,
        config.request_timeout,
    );
    let keys: Arc<Vec<String>> = Arc::new((0..config.keys).map(|i| format!("k{i}")).collect());

    // The revision every change of the run comes after.
    let start_rv = until_ok(Duration::from_secs(60), || async {
        match harness
            .run(Request::List {
                limit: None,
                any_version: false,
            })
            .await
            .outcome
        {
            Outcome::List { rv, .. } => Some(rv),
            _ => None,
        }
    })
    .await
    .ok_or("the server answered no list within 60 s")?;

    // Watchers first, so that they see the clients' first writes.
    let stop_watchers = Arc::new(AtomicBool::new(false));
    let revisions = Arc::new(Revisions::default());
    let controls: Vec<Arc<WatcherControl>> = (0..config.watchers)
        .map(|_| Arc::new(WatcherControl::default()))
        .collect();
    let mut watcher_tasks = Vec::new();
    for (w, control) in controls.iter().enumerate() {
        let watcher = Watcher {
            id: w as u32,
            target: target.clone(),
            recorder: recorder.clone(),
            keys: keys.clone(),
            control: control.clone(),
            revisions: revisions.clone(),
            options: WatcherOptions {
                timeout_seconds: config.watch_timeout_seconds,
                restart_chance: 0.3,
                // The first watcher is steady: it keeps the committed history complete.
                steady: w == 0,
            },
            request_timeout: config.request_timeout,
        };
        watcher_tasks.push(tokio::spawn(
            watcher.run(rng.random(), stop_watchers.clone()),
        ));
    }

    // Clients and faults.
    let started = Instant::now();
    let stop_clients = Arc::new(AtomicBool::new(false));
    let stop_faults = Arc::new(AtomicBool::new(false));
    // Whatever happens from here on, everything stops when the run returns.
    let _stop = StopOnDrop(vec![
        stop_clients.clone(),
        stop_faults.clone(),
        stop_watchers.clone(),
    ]);
    let mut client_tasks = Vec::new();
    for c in 1..=config.clients {
        let api = Api::new(target.clone(), recorder.clone(), c, config.request_timeout);
        client_tasks.push(tokio::spawn(client_loop(
            api,
            keys.clone(),
            rng.random(),
            stop_clients.clone(),
        )));
    }
    let fault_thread = system.map(|system| {
        let (opts, seed, clock) = (config.faults.clone(), rng.random(), recorder.clock);
        let (controls, stop) = (controls.clone(), stop_faults.clone());
        // Probes of recovery: a write of the marker key, recorded like any other.
        let prober = Api::new(
            target.clone(),
            recorder.clone(),
            PROBE_CLIENT,
            Duration::from_secs(5),
        );
        let (handle, recorder) = (tokio::runtime::Handle::current(), recorder.clone());
        let probe = move || {
            let value = format!("probe-{}", recorder.next_id());
            let op = handle.block_on(prober.run(Request::Apply {
                key: MARKER_KEY.into(),
                value,
            }));
            matches!(op.outcome, Outcome::Object(_))
        };
        std::thread::spawn(move || fault_loop(system, opts, seed, clock, controls, stop, probe))
    });

    tokio::time::sleep(config.duration).await;
    stop_clients.store(true, Ordering::Relaxed);
    for t in client_tasks {
        let _ = t.await;
    }
    let clients_ran = started.elapsed();
    stop_faults.store(true, Ordering::Relaxed);
    let faults = match fault_thread {
        Some(t) => Some(
            tokio::task::spawn_blocking(move || t.join())
                .await
                .map_err(|e| e.to_string())?
                .map_err(|_| "the fault thread panicked".to_string())?,
        ),
        None => None,
    };
    if let Some(FaultOutcome {
        heal_error: Some(e),
        ..
    }) = &faults
    {
        return Err(format!(
            "the system could not be brought back after the faults: {e}"
        ));
    }

    // The end: a marker write every watcher of the whole collection must reach, then the final
    // consistent list.
    let marker = until_ok(Duration::from_secs(60), || async {
        match harness
            .run(Request::Apply {
                key: MARKER_KEY.into(),
                value: format!("marker-{}", recorder.next_id()),
            })
            .await
            .outcome
        {
            Outcome::Object(s) => Some(s.rv),
            _ => None,
        }
    })
    .await
    .ok_or("the server took no write within 60 s after the faults")?;
    let caught_up = until_ok(Duration::from_secs(30), || async {
        controls
            .iter()
            .all(|c| c.progress.load(Ordering::Relaxed) >= marker)
            .then_some(())
    })
    .await
    .is_some();
    let final_list = until_ok(Duration::from_secs(60), || async {
        let op = harness
            .run(Request::List {
                limit: None,
                any_version: false,
            })
            .await;
        matches!(op.outcome, Outcome::List { .. }).then_some(op.id)
    })
    .await
    .ok_or("the server answered no final list within 60 s")?;
    stop_watchers.store(true, Ordering::Relaxed);
    for t in watcher_tasks {
        let _ = t.await;
    }
    recorder.flush();

    let history = recorder.history(keys.to_vec(), start_rv, Some(final_list));
    let history_path = config.out_dir.join("history.json");
    std::fs::write(
        &history_path,
        serde_json::to_vec(&history).map_err(|e| e.to_string())?,
    )
    .map_err(|e| format!("{}: {e}", history_path.display()))?;
    let check_opts = config.check.clone();
    let history = Arc::new(history);
    let checked = {
        let history = history.clone();
        tokio::task::spawn_blocking(move || checker::check(&history, &check_opts))
            .await
            .map_err(|e| e.to_string())?
    };
    if !checked.violations.is_empty() {
        checked
            .write(&config.out_dir.join("violations"))
            .map_err(|e| format!("writing the violations: {e}"))?;
    }
    let (records, server_exits, unrecovered, system) = match faults {
        Some(f) => (f.records, f.server_exits, f.unrecovered, Some(f.system)),
        None => (Vec::new(), Vec::new(), Vec::new(), None),
    };
    let report = RunReport::new(
        &config.name,
        config.seed,
        clients_ran,
        &history,
        records,
        server_exits,
        unrecovered,
        caught_up,
        checked,
        &config.out_dir,
    );
    std::fs::write(
        config.out_dir.join("report.json"),
        serde_json::to_vec_pretty(&report).map_err(|e| e.to_string())?,
    )
    .map_err(|e| e.to_string())?;
    drop(system);
    Ok(report)
}

/// Sets its flags when dropped.
struct StopOnDrop(Vec<Arc<AtomicBool>>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        for flag in &self.0 {
            flag.store(true, Ordering::Relaxed);
        }
    }
}

/// Calls `f` until it gives a value or `within` passes.
async fn until_ok<T, F, Fut>(within: Duration, mut f: F) -> Option<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = Instant::now() + within;
    loop {
        if let Some(v) = f().await {
            return Some(v);
        }
        if Instant::now() > deadline {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
