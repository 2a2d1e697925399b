//! CPU profiles of the servers during a load (`--profile DIR`): `perf record` of each process
//! named (wardle, sample-apiserver, the bench itself), and Go's own CPU profile of
//! sample-apiserver (`/debug/pprof/profile`), written to `DIR/<label>-<process>.perf.data`
//! and `DIR/<label>-sample-apiserver.pprof`; read them with `perf report -i FILE` and
//! `go tool pprof -top FILE`. Nothing is taken without `--profile`.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use bytes::Bytes;
use http::{Method, StatusCode};
use tokio::task::JoinHandle;

use crate::client::{self, Target};
use crate::plan::Plan;

/// Samples a second of each profiled process.
const FREQUENCY: &str = "499";

/// The profiles under way during one load.
#[derive(Default)]
pub struct Profiles {
    perfs: Vec<(String, Child)>,
    pprof: Option<JoinHandle<Result<(), String>>>,
}

impl Profiles {
    /// Starts profiling `processes` (a name and a pid each) for the load `label`, and, when
    /// `go` is given, takes Go's CPU profile of that server for that long; nothing when the
    /// plan takes no profiles. A profiler that cannot start is reported and skipped.
    pub fn start(
        plan: &Plan,
        label: &str,
        processes: &[(&str, u32)],
        go: Option<(&Target, Duration)>,
    ) -> Profiles {
        let Some(dir) = plan.profile.as_ref() else {
            return Profiles::default();
        };
        if let Err(e) = std::fs::create_dir_all(dir) {
            eprintln!("profile: {}: {e}", dir.display());
            return Profiles::default();
        }
        let mut perfs = Vec::new();
        for (name, pid) in processes {
            let file = dir.join(format!("{label}-{name}.perf.data"));
            let spawned = Command::new("perf")
                .args([
                    "record",
                    "-F",
                    FREQUENCY,
                    "-g",
                    "-p",
                    &pid.to_string(),
                    "-o",
                ])
                .arg(&file)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn();
            match spawned {
                Ok(child) => perfs.push((file.display().to_string(), child)),
                Err(e) => eprintln!("profile: perf record of {name}: {e}"),
            }
        }
        let pprof = go.map(|(target, length)| {
            let (target, file) = (
                target.clone(),
                dir.join(format!("{label}-sample-apiserver.pprof")),
            );
            tokio::spawn(async move { pprof(target, length, file).await })
        });
        Profiles { perfs, pprof }
    }

    /// Stops the profilers (SIGINT, as perf expects) and waits for their files.
    pub async fn finish(self) {
        for (file, mut child) in self.perfs {
            let stopped = Command::new("kill")
                .args(["-INT", &child.id().to_string()])
                .status();
            if let Err(e) = stopped {
                eprintln!("profile: stopping perf for {file}: {e}");
            }
            match tokio::task::spawn_blocking(move || child.wait()).await {
                Ok(Ok(_)) => eprintln!("profile: wrote {file}"),
                Ok(Err(e)) => eprintln!("profile: {file}: {e}"),
                Err(e) => eprintln!("profile: {file}: {e}"),
            }
        }
        if let Some(task) = self.pprof {
            match task.await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => eprintln!("profile: {e}"),
                Err(e) => eprintln!("profile: {e}"),
            }
        }
    }
}

/// Takes Go's CPU profile of `target` over `length` and writes it to `file`.
async fn pprof(target: Target, length: Duration, file: PathBuf) -> Result<(), String> {
    let path = format!("/debug/pprof/profile?seconds={}", length.as_secs().max(1));
    let mut sender = target.connect().await.map_err(|e| e.to_string())?;
    let request = target.request(Method::GET, &path, Bytes::new());
    let (status, _, body) = client::send_full(&mut sender, request)
        .await
        .map_err(|e| e.to_string())?;
    if status != StatusCode::OK {
        return Err(format!("{path}: {status}"));
    }
    std::fs::write(&file, &body).map_err(|e| format!("{}: {e}", file.display()))?;
    eprintln!("profile: wrote {}", file.display());
    Ok(())
}
