//! `apiserver-bench`: measures wardle against a bare hyper + rustls baseline serving the same
//! bytes (over HTTP/1.1 and HTTP/2), against raw etcd puts, and against itself reached
//! directly rather than through the development host's aggregator, and beside Kubernetes'
//! sample-apiserver (the peer group), over loopback HTTPS with keep-alive; writes a markdown
//! table, JSON and SVG charts.
//!
//! ```sh
//! ./scripts/bench            # release build, then the full run (about fifteen minutes)
//! ./scripts/bench --smoke    # every scenario, tiny, in well under a minute (what CI runs)
//! ./scripts/bench --only get,list   # some groups of scenarios (see --help)
//! ```
//!
//! The servers run as child processes of this binary: with `APISERVER_BENCH_ROLE=wardle` it runs
//! wardle's own `main` (`wardle::app().run()`), with `APISERVER_BENCH_ROLE=baseline` the
//! baseline, so one build holds everything and each server's CPU and memory are its own.

mod aggregated;
mod baseline;
mod charts;
mod client;
mod compare;
mod devhost;
mod encryption;
mod etcd;
mod lists;
mod load;
mod memory;
mod peer;
mod plan;
mod process;
mod profile;
mod report;
mod requests;
mod scenarios;
mod servers;
mod sweep;
mod tls;
mod watch;
mod watchers;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;

/// The same allocator as wardle's binary, for wardle and the baseline alike.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Benchmarks of apiserver-framework: wardle against a bare baseline serving the same bytes
/// (HTTP/1.1 and HTTP/2), raw etcd puts, and itself reached directly rather than through the
/// aggregator, and beside Kubernetes' sample-apiserver (--only peer). Writes bench.md,
/// bench.json and SVG charts.
#[derive(Parser, Debug)]
#[command(name = "apiserver-bench", after_help = groups_help())]
struct Options {
    /// A run through every scenario with tiny sizes, in well under a minute (CI runs this).
    #[arg(long)]
    smoke: bool,
    /// Where bench.json, bench.md and the charts (*.svg) are written.
    #[arg(long, default_value = "target/bench")]
    out: PathBuf,
    /// Only these groups of scenarios, comma-separated (listed below); all by default.
    #[arg(long, value_delimiter = ',', value_parser = group_name)]
    only: Vec<String>,
    /// Only these rows of the peer group, comma-separated (listed below); all by default.
    #[arg(long, value_delimiter = ',', value_parser = peer_row_name)]
    rows: Vec<String>,
    /// Takes CPU profiles of both servers during the peer group's loads and writes them here:
    /// `perf record` of wardle, sample-apiserver and the bench itself, and Go's
    /// `/debug/pprof/profile` of sample-apiserver.
    #[arg(long)]
    profile: Option<PathBuf>,
    /// Clients of the closed-loop scenarios (full run).
    #[arg(long, default_value_t = 64)]
    concurrency: usize,
    /// Measured seconds of each closed-loop comparison (full run), taken in three rounds that
    /// alternate wardle and its baseline, after one second of warm-up.
    #[arg(long, default_value_t = 5.0)]
    measure: f64,
    /// Clients sharing one HTTP/2 connection in the HTTP/2 scenarios (full run).
    #[arg(long, default_value_t = 8)]
    h2_streams: usize,
    /// Creates per second of the writer of the 1,000-watcher fan-outs (full run).
    #[arg(long, default_value_t = 100.0)]
    watch_rate: f64,
    /// Creates per second of the writer of the 10,000-watcher fan-out (full run).
    #[arg(long, default_value_t = 5.0)]
    many_watch_rate: f64,
    /// Events of the 10,000-watcher fan-out on wardle (full run; the baseline gets a fifth),
    /// fewer for a shorter run while iterating.
    #[arg(long, default_value_t = 1000)]
    many_watch_events: usize,
}

fn groups_help() -> String {
    let mut help = String::from("Groups of scenarios (--only):\n");
    for (name, what) in plan::GROUPS {
        help.push_str(&format!("  {name:<11} {what}\n"));
    }
    help.push_str("\nRows of the peer group (--rows):\n");
    for (name, what) in plan::PEER_ROWS {
        help.push_str(&format!("  {name:<11} {what}\n"));
    }
    help.push_str(&format!(
        "\nEnvironment:\n  {}=1  the baseline batches its HTTP/2 writes as wardle's server does\n  (a run to compare; the report's mode says so)\n",
        process::BASELINE_BATCHED_ENV
    ));
    help
}

fn group_name(name: &str) -> Result<String, String> {
    if plan::GROUPS.iter().any(|(g, _)| *g == name) {
        Ok(name.to_string())
    } else {
        let names: Vec<&str> = plan::GROUPS.iter().map(|(g, _)| *g).collect();
        Err(format!(
            "not a group of scenarios; one of {}",
            names.join(", ")
        ))
    }
}

fn peer_row_name(name: &str) -> Result<String, String> {
    if plan::PEER_ROWS.iter().any(|(r, _)| *r == name) {
        Ok(name.to_string())
    } else {
        let names: Vec<&str> = plan::PEER_ROWS.iter().map(|(r, _)| *r).collect();
        Err(format!("not a peer row; one of {}", names.join(", ")))
    }
}

fn main() -> ExitCode {
    match std::env::var(process::ROLE_ENV).as_deref() {
        Ok("wardle") => return run_wardle(),
        Ok("baseline") => return baseline::main(),
        _ => {}
    }
    let options = Options::parse();
    let mut plan = if options.smoke {
        plan::Plan::smoke()
    } else {
        plan::Plan::full(&plan::Knobs {
            concurrency: options.concurrency,
            measure: Duration::from_secs_f64(options.measure),
            watch_rate: options.watch_rate,
            many_watch_rate: options.many_watch_rate,
            many_watch_events: options.many_watch_events,
            h2_streams: options.h2_streams,
        })
    };
    plan.only = options.only.clone();
    plan.rows = options.rows.clone();
    plan.profile = options.profile.clone();
    // Thousands of watch connections in the bench and in the servers it spawns (which inherit
    // the limit).
    if let Err(e) = process::raise_open_files() {
        eprintln!("apiserver-bench: cannot raise the open-file limit: {e}");
    }
    let runtime = tokio::runtime::Runtime::new().expect("a tokio runtime");
    match runtime.block_on(bench(plan, &options.out)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("apiserver-bench: {e}");
            ExitCode::FAILURE
        }
    }
}

/// wardle's `main`, unchanged.
fn run_wardle() -> ExitCode {
    let runtime = tokio::runtime::Runtime::new().expect("a tokio runtime");
    match runtime.block_on(wardle::app().run()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("wardle: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn bench(plan: plan::Plan, out: &std::path::Path) -> Result<(), client::Error> {
    let work = tempfile::Builder::new()
        .prefix("apiserver-bench")
        .tempdir()?;
    let report = scenarios::run(&plan, work.path()).await?;
    std::fs::create_dir_all(out)?;
    let stolen = report.stolen_percent.map_or(String::new(), |p| {
        format!("; the hypervisor gave {p:.1} % of the machine's CPU time to other guests (steal)")
    });
    let markdown = format!(
        "{}\nMachine: {}. Mode: {}, concurrency {}, run time {:.0} s; load average {} at the start, {} at the end{stolen}.\n",
        report.markdown(),
        report.machine,
        report.mode,
        report.concurrency,
        report.run_seconds,
        report.load_average[0],
        report.load_average[1],
    );
    std::fs::write(out.join("bench.md"), &markdown)?;
    std::fs::write(out.join("bench.json"), serde_json::to_vec_pretty(&report)?)?;
    let charts = charts::write(&report, out)?;
    println!("{markdown}");
    eprintln!("wrote {0}/bench.md and {0}/bench.json", out.display());
    for chart in charts {
        eprintln!("wrote {}", chart.display());
    }
    Ok(())
}
