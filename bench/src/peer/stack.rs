//! What the peer rows run: a development host for delegated authentication and authorization,
//! and behind it both `wardle serve` and Kubernetes' sample-apiserver (`scripts/build-upstream
//! sample-apiserver`), served with the same flags, certificate and identity, each storing in an
//! etcd of its own: two single-member etcds of one binary (upstream's 3.6, from
//! `scripts/build-upstream etcd`) with the same flags.
//!
//! Not one etcd for both: wardle's watch cache answers a LIST once it has caught up with
//! etcd's current revision, and sees only its own prefix's events, so the other server's
//! writes keep it behind until its consistency timeout (3 s) sends the LIST to etcd.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::client::Error;
use crate::devhost::{Host, fresh_dir, log_tail};
use crate::etcd::Etcd;
use crate::process::{Proc, free_addr};
use crate::servers::{self, Server};

/// How long a server may take to become ready.
const READY_WITHIN: Duration = Duration::from_secs(60);

/// wardle's key prefix in its etcd.
pub const WARDLE_PREFIX: &str = "/peer-wardle";

/// sample-apiserver's key prefix in its etcd.
pub const SAMPLE_PREFIX: &str = "/peer-sample-apiserver";

/// An executable that `scripts/build-upstream <what>` builds into `target/upstream/bin`: found
/// beside this binary's target directory (`target/release/../upstream/bin`), else under the
/// working directory.
pub fn upstream_binary(name: &str, what: &str) -> Result<PathBuf, Error> {
    let beside = std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.parent()?.join("upstream/bin").join(name)));
    let candidates = beside
        .into_iter()
        .chain([Path::new("target/upstream/bin").join(name)]);
    for candidate in candidates {
        if candidate.is_file() {
            return Ok(candidate);
        }
    }
    Err(format!("no {name} in target/upstream/bin: run ./scripts/build-upstream {what}").into())
}

/// sample-apiserver's and etcd's executables, or why they are missing.
pub fn binaries() -> Result<(PathBuf, PathBuf), Error> {
    Ok((
        upstream_binary("sample-apiserver", "sample-apiserver")?,
        upstream_binary("etcd", "etcd")?,
    ))
}

/// The etcd, the host, and where the two servers listen.
pub struct Stack {
    // Dropped (killed) in this order: the host, then the etcds.
    /// The development host.
    pub host: Host,
    /// The etcd wardle stores in.
    pub wardle_etcd: Etcd,
    /// The etcd sample-apiserver stores in.
    pub sample_etcd: Etcd,
    dir: PathBuf,
    sample_apiserver: PathBuf,
    wardle_addr: std::net::SocketAddr,
    sample_addr: std::net::SocketAddr,
}

impl Stack {
    /// Starts the etcds and the host in `work/peer`; the servers are started with
    /// [`Stack::wardle`] and [`Stack::sample_apiserver`].
    pub async fn start(work: &Path) -> Result<Stack, Error> {
        let (sample_apiserver, etcd_binary) = binaries()?;
        let dir = fresh_dir(work, "peer")?;
        let mut etcds = Vec::new();
        for name in ["etcd-wardle", "etcd-sample-apiserver"] {
            let etcd_dir = dir.join(name);
            std::fs::create_dir_all(&etcd_dir)?;
            etcds.push(Etcd::start_program(&etcd_dir, &etcd_binary).await?);
        }
        let (sample_etcd, wardle_etcd) = (etcds.pop(), etcds.pop());
        let (Some(wardle_etcd), Some(sample_etcd)) = (wardle_etcd, sample_etcd) else {
            return Err("two etcds were started".into());
        };
        let (wardle_addr, sample_addr) = (free_addr(), free_addr());
        // The host's APIService points at wardle; the bench reaches both servers directly,
        // so the host's availability checks are the only requests it sends either.
        let host = Host::start(&dir, wardle_addr, "30s").await?;
        Ok(Stack {
            host,
            wardle_etcd,
            sample_etcd,
            dir,
            sample_apiserver,
            wardle_addr,
            sample_addr,
        })
    }

    /// Starts `wardle serve` (wardle's own executable when it lies beside this binary) and
    /// waits until `/readyz` answers 200.
    pub async fn wardle(&self) -> Result<Server, Error> {
        let mut args = vec!["serve".to_string()];
        args.extend(self.host.serving_args(self.wardle_addr.port()));
        args.extend([
            "--etcd-servers".into(),
            self.wardle_etcd.url.clone(),
            "--etcd-prefix".into(),
            WARDLE_PREFIX.into(),
            "--data-dir".into(),
            self.dir.join("wardle-data").display().to_string(),
        ]);
        let log = self.dir.join("wardle.log");
        let proc = match servers::wardle_beside_this_binary() {
            Some(exe) => Proc::spawn(std::process::Command::new(exe), &args, &self.dir, &log)?,
            None => Proc::role("wardle", &args, &self.dir, &log)?,
        };
        self.ready(proc, self.wardle_addr, &log, "wardle serve")
            .await
    }

    /// Starts sample-apiserver with the same serving flags and waits until `/readyz` answers
    /// 200. The host serves neither `flowcontrol.apiserver.k8s.io` nor admission policies,
    /// whose informers sample-apiserver would wait for: priority and fairness is off, and the
    /// two admission plugins of policies are disabled (as wardle's client-go tests run it).
    pub async fn sample_apiserver(&self) -> Result<Server, Error> {
        let mut args = self.host.serving_args(self.sample_addr.port());
        args.extend([
            "--etcd-servers".into(),
            self.sample_etcd.url.clone(),
            "--etcd-prefix".into(),
            SAMPLE_PREFIX.into(),
            "--enable-priority-and-fairness=false".into(),
            "--disable-admission-plugins=ValidatingAdmissionPolicy,MutatingAdmissionPolicy".into(),
        ]);
        let log = self.dir.join("sample-apiserver.log");
        let command = std::process::Command::new(&self.sample_apiserver);
        let proc = Proc::spawn(command, &args, &self.dir, &log)?;
        self.ready(proc, self.sample_addr, &log, "sample-apiserver")
            .await
    }

    async fn ready(
        &self,
        mut proc: Proc,
        addr: std::net::SocketAddr,
        log: &Path,
        name: &str,
    ) -> Result<Server, Error> {
        let target = self.host.target(addr);
        match proc.wait_ready(&target, READY_WITHIN).await {
            Ok(ready_after) => Ok(Server {
                proc,
                target,
                ready_after,
            }),
            Err(e) => Err(format!("{name}: {e}; its log ends with:\n{}", log_tail(log)).into()),
        }
    }

    /// A work directory of the run's, for the bare baseline's files.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}
