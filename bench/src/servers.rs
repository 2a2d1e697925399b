//! Starting the servers under test: wardle (this binary running wardle's `main`, or wardle's
//! own executable for the memory rows) and the baseline, both on the benchmark's certificate.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::client::{Error, Target};
use crate::process::{Proc, free_addr};
use crate::tls::Pki;

/// The bearer token of wardle's local mode in every run.
pub const TOKEN: &str = "bench-token";

/// The namespaces the scenarios write Flunders to on wardle. `wardle local` creates objects
/// only in namespaces that exist (NamespaceLifecycle, as in a cluster), so each wardle gets
/// them once ready (its start time is measured before).
pub const NAMESPACES: &[&str] = &[
    "bench",
    "bench-list",
    "bench-record",
    "bench-big",
    "bench-create",
    "bench-watch",
    "bench-watchers",
    "bench-sweep",
    "bench-memory",
];

/// How long a server may take to become ready.
const READY_WITHIN: Duration = Duration::from_secs(60);

/// A running server and how to reach it.
pub struct Server {
    /// The process.
    pub proc: Proc,
    /// Its address, TLS and token.
    pub target: Target,
    /// How long it took from spawn to `/readyz` 200.
    pub ready_after: Duration,
}

impl Server {
    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.proc.pid
    }
}

/// A fresh directory `name` under `work`.
fn fresh_dir(work: &Path, name: &str) -> Result<PathBuf, Error> {
    let dir = work.join(name);
    if dir.exists() {
        std::fs::remove_dir_all(&dir)?;
    }
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

/// Starts `wardle local` in a fresh directory `work/name`, with `extra` flags (the storage
/// backend), and waits until it is ready.
pub async fn wardle(work: &Path, name: &str, pki: &Pki, extra: &[String]) -> Result<Server, Error> {
    let dir = fresh_dir(work, name)?;
    let addr = free_addr();
    let args = wardle_args(&dir, addr, pki, extra);
    let proc = Proc::role("wardle", &args, &dir, &dir.join("wardle.log"))?;
    with_namespaces(ready(proc, addr, pki, &dir.join("wardle.log")).await?).await
}

/// Creates the [`NAMESPACES`] on a wardle that is ready.
async fn with_namespaces(server: Server) -> Result<Server, Error> {
    let mut sender = server.target.connect().await?;
    for name in NAMESPACES {
        let body = serde_json::to_vec(&serde_json::json!({
            "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name},
        }))?;
        let request = server
            .target
            .request(http::Method::POST, "/api/v1/namespaces", body.into());
        let (status, body) = crate::client::send(&mut sender, request).await?;
        if status != http::StatusCode::CREATED {
            return Err(format!(
                "creating namespace {name}: {status}: {}",
                String::from_utf8_lossy(&body)
            )
            .into());
        }
    }
    Ok(server)
}

/// [`wardle()`], run from wardle's own executable when it lies beside this one (`scripts/bench`
/// builds both), else from this binary; says which. Resident memory counts the pages of the
/// executable's code the kernel has mapped, and this binary's code (the load generator, the
/// baseline, the charts) lies between wardle's: measured in it, wardle's idle RSS is about
/// 1.5 MB higher than wardle's own executable shows.
pub async fn wardle_executable(
    work: &Path,
    name: &str,
    pki: &Pki,
    extra: &[String],
) -> Result<(Server, &'static str), Error> {
    let Some(exe) = wardle_beside_this_binary() else {
        let server = wardle(work, name, pki, extra).await?;
        return Ok((
            server,
            "this benchmark's binary running wardle's main (no wardle executable beside it)",
        ));
    };
    let dir = fresh_dir(work, name)?;
    let addr = free_addr();
    let args = wardle_args(&dir, addr, pki, extra);
    let proc = Proc::spawn(
        std::process::Command::new(exe),
        &args,
        &dir,
        &dir.join("wardle.log"),
    )?;
    let server = with_namespaces(ready(proc, addr, pki, &dir.join("wardle.log")).await?).await?;
    Ok((server, "wardle's own executable"))
}

/// The `wardle` executable in this binary's directory (or the one above it, for a test build
/// in `deps/`), if any.
pub fn wardle_beside_this_binary() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let dir = exe.parent()?;
    [dir.join("wardle"), dir.parent()?.join("wardle")]
        .into_iter()
        .find(|p| p.is_file())
}

/// The flags of `wardle local` in `dir` on `addr`, with the benchmark's certificate.
fn wardle_args(dir: &Path, addr: std::net::SocketAddr, pki: &Pki, extra: &[String]) -> Vec<String> {
    let path = |p: &Path| p.display().to_string();
    let mut args: Vec<String> = ["local", "--bind-address", "127.0.0.1", "--token", TOKEN]
        .map(String::from)
        .to_vec();
    args.extend([
        "--secure-port".into(),
        addr.port().to_string(),
        "--tls-cert-file".into(),
        path(&pki.cert_file),
        "--tls-private-key-file".into(),
        path(&pki.key_file),
        "--data-dir".into(),
        path(&dir.join("data")),
        "--cert-dir".into(),
        path(&dir.join("certificates")),
        "--write-kubeconfig".into(),
        path(&dir.join("wardle.kubeconfig")),
    ]);
    args.extend(extra.iter().cloned());
    args
}

/// Starts the baseline in a fresh directory `work/name`, answering from `recordings`.
pub async fn baseline(
    work: &Path,
    name: &str,
    pki: &Pki,
    recordings: &Path,
) -> Result<Server, Error> {
    let dir = fresh_dir(work, name)?;
    let addr = free_addr();
    let path = |p: &Path| p.display().to_string();
    let args = vec![
        addr.port().to_string(),
        path(&pki.cert_file),
        path(&pki.key_file),
        path(recordings),
    ];
    let proc = Proc::role("baseline", &args, &dir, &dir.join("baseline.log"))?;
    ready(proc, addr, pki, &dir.join("baseline.log")).await
}

async fn ready(
    mut proc: Proc,
    addr: std::net::SocketAddr,
    pki: &Pki,
    log: &Path,
) -> Result<Server, Error> {
    let target = Target::new(addr, pki.trust.clone(), TOKEN);
    match proc.wait_ready(&target, READY_WITHIN).await {
        Ok(ready_after) => Ok(Server {
            proc,
            target,
            ready_after,
        }),
        Err(e) => {
            let log = std::fs::read_to_string(log).unwrap_or_default();
            let tail: Vec<&str> = log.lines().rev().take(20).collect();
            let tail: Vec<&str> = tail.into_iter().rev().collect();
            Err(format!("{e}; its log ends:\n{}", tail.join("\n")).into())
        }
    }
}
