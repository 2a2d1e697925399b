//! `apiserver-bench`: measures wardle against a bare hyper + rustls baseline serving the same
//! bytes, and against raw etcd puts, over loopback HTTPS with keep-alive, and writes a
//! markdown table and JSON.
//!
//! ```sh
//! ./scripts/bench            # release build, then the full run (about two minutes)
//! ./scripts/bench --smoke    # every scenario, tiny, in seconds (what CI runs)
//! ```
//!
//! The servers run as child processes of this binary: with `APISERVER_BENCH_ROLE=wardle` it runs
//! wardle's own `main` (`wardle::app().run()`), with `APISERVER_BENCH_ROLE=baseline` the
//! baseline, so one build holds everything and each server's CPU and memory are its own.

mod baseline;
mod client;
mod etcd;
mod load;
mod process;
mod report;
mod scenarios;
mod servers;
mod tls;
mod watch;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;

/// The same allocator as wardle's binary, for wardle and the baseline alike.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Benchmarks of apiserver-framework.
#[derive(Parser, Debug)]
#[command(name = "apiserver-bench")]
struct Options {
    /// A run of a few seconds through every scenario with tiny sizes (CI runs this).
    #[arg(long)]
    smoke: bool,
    /// Where bench.json and bench.md are written.
    #[arg(long, default_value = "target/bench")]
    out: PathBuf,
    /// Connections of the closed-loop scenarios (full run).
    #[arg(long, default_value_t = 64)]
    concurrency: usize,
    /// Measured seconds of each closed-loop load (full run), after one second of warm-up.
    #[arg(long, default_value_t = 5.0)]
    measure: f64,
    /// Creates per second of the watch fan-out's writer (full run).
    #[arg(long, default_value_t = 100.0)]
    watch_rate: f64,
}

fn main() -> ExitCode {
    match std::env::var(process::ROLE_ENV).as_deref() {
        Ok("wardle") => return run_wardle(),
        Ok("baseline") => return baseline::main(),
        _ => {}
    }
    let options = Options::parse();
    let plan = if options.smoke {
        scenarios::Plan::smoke()
    } else {
        scenarios::Plan::full(
            options.concurrency,
            Duration::from_secs_f64(options.measure),
            options.watch_rate,
        )
    };
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

async fn bench(plan: scenarios::Plan, out: &std::path::Path) -> Result<(), client::Error> {
    let work = tempfile::Builder::new()
        .prefix("apiserver-bench")
        .tempdir()?;
    let report = scenarios::run(&plan, work.path()).await?;
    std::fs::create_dir_all(out)?;
    let markdown = format!(
        "{}\n\nMachine: {}. Mode: {}, concurrency {}, run time {:.0} s.\n",
        report.markdown(),
        report.machine,
        report.mode,
        report.concurrency,
        report.run_seconds
    );
    std::fs::write(out.join("bench.md"), &markdown)?;
    std::fs::write(out.join("bench.json"), serde_json::to_vec_pretty(&report)?)?;
    println!("{markdown}");
    eprintln!("wrote {0}/bench.md and {0}/bench.json", out.display());
    Ok(())
}
