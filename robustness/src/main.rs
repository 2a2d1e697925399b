//! `apiserver-robustness`: the long mode of the robustness harness. Runs wardle (the binary
//! given with `--wardle`) on the embedded store and/or on an etcd cluster it starts, with random
//! clients, watchers and faults for the given time, checks the recorded history, prints a
//! report per backend, and exits non-zero if any property failed.

use std::path::PathBuf;
use std::time::Duration;

use apiserver_robustness::checker::CheckOptions;
use apiserver_robustness::faults::{FaultKind, FaultOptions};
use apiserver_robustness::run::{Backend, RunConfig, run};
use apiserver_robustness::system::{ServerOptions, Store};
use clap::Parser;

/// Robustness harness: random concurrent clients and watchers against a real wardle process
/// under injected faults (server kill -9, etcd member kill/SIGSTOP including the leader, a full
/// disk under the embedded store, slow watch clients), with a checker of the recorded history
/// (per-key linearizability, watch order/gaps/resumption, final state).
///
/// Each backend runs for the given time. The history (history.json), every HTTP exchange and
/// watch line (exchanges.jsonl), the report (report.json) and, on failure, the minimal failing
/// histories (violations/) are written under --out. Exits 1 if a property failed, a check was
/// inconclusive, the server exited by itself, or a watcher never caught up.
#[derive(Parser, Debug)]
#[command(name = "apiserver-robustness")]
struct Args {
    /// Minutes each backend runs (e.g. 10).
    #[arg(long, conflicts_with = "seconds")]
    minutes: Option<f64>,
    /// Seconds each backend runs (default 60).
    #[arg(long)]
    seconds: Option<f64>,
    /// Which backends to run.
    #[arg(long, value_enum, default_value = "both")]
    backend: BackendArg,
    /// Members of the etcd cluster (1 or 3).
    #[arg(long, default_value_t = 3)]
    etcd_members: usize,
    /// The seed of every random choice (default: a random one, printed).
    #[arg(long)]
    seed: Option<u64>,
    /// Concurrent clients.
    #[arg(long, default_value_t = 8)]
    clients: u32,
    /// Concurrent watchers.
    #[arg(long, default_value_t = 6)]
    watchers: u32,
    /// Keys the clients share (few keys, many conflicts).
    #[arg(long, default_value_t = 5)]
    keys: u32,
    /// The faults to choose from (default: all that apply to the backend).
    #[arg(long, value_enum, value_delimiter = ',')]
    faults: Vec<FaultKind>,
    /// Seconds of quiet before each fault, at least and at most.
    #[arg(long, num_args = 2, default_values_t = [3.0, 10.0])]
    quiet: Vec<f64>,
    /// Seconds a fault lasts (pause, full disk, slow watcher), at least and at most.
    #[arg(long, num_args = 2, default_values_t = [1.0, 5.0])]
    hold: Vec<f64>,
    /// The server's --compaction-interval (short, so that old revisions get compacted).
    #[arg(long, default_value = "10s")]
    compaction_interval: String,
    /// Size of the embedded store's filesystem (a tmpfs; bytes).
    #[arg(long, default_value_t = 256 * 1024 * 1024)]
    disk_size: u64,
    /// Seconds before a request's outcome counts as unknown.
    #[arg(long, default_value_t = 15)]
    request_timeout: u64,
    /// The wardle binary (default: `wardle`, else `robustness-wardle`, next to this binary).
    #[arg(long)]
    wardle: Option<PathBuf>,
    /// Where to write histories and reports (default: target/robustness/<backend>-<seed>).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Do not log every HTTP exchange and watch line (exchanges.jsonl).
    #[arg(long)]
    no_exchange_log: bool,
    /// Check a recorded history (a run's history.json) instead of running; violations go to
    /// --out (default: violations/ beside the file).
    #[arg(long, value_name = "HISTORY")]
    check: Option<PathBuf>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum BackendArg {
    Embedded,
    Etcd,
    Both,
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let args = Args::parse();
    if let Some(path) = &args.check {
        return check_file(path, args.out.clone());
    }
    let seconds = args
        .minutes
        .map(|m| m * 60.0)
        .or(args.seconds)
        .unwrap_or(60.0);
    let seed = args.seed.unwrap_or_else(rand::random);
    let wardle = match args.wardle.clone().or_else(default_wardle) {
        Some(p) => p,
        None => {
            eprintln!("no wardle binary next to this one: pass --wardle PATH");
            return std::process::ExitCode::from(2);
        }
    };
    let backends: Vec<Store> = match args.backend {
        BackendArg::Embedded => vec![embedded(&args)],
        BackendArg::Etcd => vec![etcd(&args)],
        BackendArg::Both => vec![embedded(&args), etcd(&args)],
    };
    println!(
        "robustness: seed {seed}, {seconds:.0} s per backend, wardle {}",
        wardle.display()
    );
    let mut all_passed = true;
    for store in backends {
        let name = match &store {
            Store::Embedded { .. } => "embedded".to_string(),
            Store::Etcd { members } => format!("etcd-{members}"),
        };
        let kinds = if args.faults.is_empty() {
            match &store {
                Store::Embedded { .. } => FaultKind::EMBEDDED.to_vec(),
                Store::Etcd { .. } => FaultKind::ETCD.to_vec(),
            }
        } else {
            args.faults.clone()
        };
        let out = args
            .out
            .clone()
            .unwrap_or_else(|| PathBuf::from("target/robustness"))
            .join(format!("{name}-{seed}"));
        println!("{name}: running (out: {})", out.display());
        let config = RunConfig {
            backend: Backend::Process {
                store,
                server: ServerOptions {
                    binary: wardle.clone(),
                    compaction_interval: args.compaction_interval.clone(),
                    token: format!("robustness-{seed:x}"),
                },
            },
            name: name.clone(),
            duration: Duration::from_secs_f64(seconds),
            seed,
            clients: args.clients,
            watchers: args.watchers,
            keys: args.keys,
            faults: FaultOptions {
                kinds,
                quiet: (secs(args.quiet[0]), secs(args.quiet[1])),
                hold: (secs(args.hold[0]), secs(args.hold[1])),
            },
            out_dir: out,
            request_timeout: Duration::from_secs(args.request_timeout),
            watch_timeout_seconds: (5, 60),
            check: CheckOptions::default(),
            log_exchanges: !args.no_exchange_log,
        };
        match run(config).await {
            Ok(report) => {
                println!("{}", report.summary());
                all_passed &= report.passed();
            }
            Err(e) => {
                eprintln!("{name}: the run failed: {e}");
                all_passed = false;
            }
        }
    }
    if all_passed {
        std::process::ExitCode::SUCCESS
    } else {
        std::process::ExitCode::FAILURE
    }
}

/// Checks a recorded history and prints what the checker found.
fn check_file(path: &std::path::Path, out: Option<PathBuf>) -> std::process::ExitCode {
    let history: apiserver_robustness::history::History = match std::fs::read(path)
        .map_err(|e| e.to_string())
        .and_then(|b| serde_json::from_slice(&b).map_err(|e| e.to_string()))
    {
        Ok(h) => h,
        Err(e) => {
            eprintln!("{}: {e}", path.display());
            return std::process::ExitCode::from(2);
        }
    };
    let started = std::time::Instant::now();
    let report = apiserver_robustness::checker::check(&history, &CheckOptions::default());
    println!(
        "{} operations, {} streams checked in {:.1?}: {} violation(s){}",
        history.operations.len(),
        history.streams.len(),
        started.elapsed(),
        report.violations.len(),
        if report.inconclusive.is_empty() {
            String::new()
        } else {
            format!(", inconclusive: {:?}", report.inconclusive)
        }
    );
    for v in &report.violations {
        println!("  {}: {}", v.property, v.message);
    }
    if !report.violations.is_empty() {
        let dir = out.unwrap_or_else(|| path.with_file_name("violations"));
        if let Err(e) = report.write(&dir) {
            eprintln!("{}: {e}", dir.display());
        }
    }
    if report.passed() {
        std::process::ExitCode::SUCCESS
    } else {
        std::process::ExitCode::FAILURE
    }
}

fn secs(s: f64) -> Duration {
    Duration::from_secs_f64(s.max(0.0))
}

fn embedded(args: &Args) -> Store {
    Store::Embedded {
        disk_size: Some(args.disk_size),
    }
}

fn etcd(args: &Args) -> Store {
    Store::Etcd {
        members: args.etcd_members,
    }
}

/// `wardle`, else `robustness-wardle`, next to this binary.
fn default_wardle() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let dir = exe.parent()?;
    ["wardle", "robustness-wardle"]
        .iter()
        .map(|n| dir.join(n))
        .find(|p| p.is_file())
}
