//! A real etcd for tests and harnesses: `etcd` from `PATH` (or a binary the test names), one
//! member ([`Etcd`]) or several ([`EtcdCluster`]), on free loopback ports with data directories
//! of their own. Members can be killed, restarted on their data, paused (`SIGSTOP`, a hung etcd)
//! and resumed; every member is killed when its owner is dropped.
//!
//! A missing `etcd` is an error that says how to install it (`scripts/install-test-deps`); tests
//! fail on it rather than skip.
//!
//! ```no_run
//! use apiserver_framework::testing::etcd::Etcd;
//!
//! let etcd = Etcd::start().expect("etcd starts");
//! println!("etcd serves clients at {}", etcd.url());
//! ```

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// How long a member may take to serve clients after it starts.
const READY_WITHIN: Duration = Duration::from_secs(30);

/// The largest request the test etcd accepts: 4 MiB, as the etcd backend's docs advise.
pub(crate) const MAX_REQUEST_BYTES: u32 = 4 * 1024 * 1024;

/// Why etcd could not be started, restarted or signalled (with the tail of its log where
/// there is one).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct EtcdError(String);

impl From<std::io::Error> for EtcdError {
    fn from(e: std::io::Error) -> Self {
        EtcdError(e.to_string())
    }
}

impl From<EtcdError> for String {
    fn from(e: EtcdError) -> Self {
        e.0
    }
}

/// Files for serving etcd over TLS with client certificates (see [`tls_files`]).
#[derive(Clone, Debug)]
pub struct ServerTls {
    /// CA that signed the client certificates etcd accepts.
    pub ca_file: PathBuf,
    /// etcd's serving certificate.
    pub cert_file: PathBuf,
    /// Its key.
    pub key_file: PathBuf,
}

/// Files for a TLS client of [`Etcd::start_tls`] (see [`tls_files`]).
#[derive(Clone, Debug)]
pub struct ClientTls {
    /// CA that signed etcd's serving certificate.
    pub ca_file: PathBuf,
    /// The client's certificate.
    pub cert_file: PathBuf,
    /// Its key.
    pub key_file: PathBuf,
}

/// One member's process and ports.
struct Member {
    name: String,
    client_port: u16,
    peer_port: u16,
    child: Option<Child>,
    paused: bool,
    starts: u32,
}

impl Member {
    fn url(&self, tls: bool) -> String {
        let scheme = if tls { "https" } else { "http" };
        format!("{scheme}://127.0.0.1:{}", self.client_port)
    }

    fn peer_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.peer_port)
    }

    fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        self.paused = false;
    }
}

/// Where the members keep their data and logs.
enum DataDir {
    /// A temporary directory, removed on drop.
    Temporary(tempfile::TempDir),
    /// A directory the caller chose (kept, for a harness to show the logs).
    Kept(PathBuf),
}

impl DataDir {
    fn path(&self) -> &Path {
        match self {
            DataDir::Temporary(dir) => dir.path(),
            DataDir::Kept(dir) => dir,
        }
    }
}

/// An etcd cluster of one or more members on loopback; all members are killed when dropped.
pub struct EtcdCluster {
    binary: PathBuf,
    dir: DataDir,
    members: Vec<Member>,
    tls: Option<ServerTls>,
}

impl EtcdCluster {
    /// Starts `size` members (plain HTTP) in a temporary directory and waits until every one
    /// serves clients (which needs a leader, so they start together).
    pub fn start(size: usize) -> Result<EtcdCluster, EtcdError> {
        EtcdCluster::start_with(None, size, None)
    }

    /// Starts `size` members with their data and logs under `dir`, which is kept.
    pub fn start_in(dir: &Path, size: usize) -> Result<EtcdCluster, EtcdError> {
        EtcdCluster::start_with(Some(dir), size, None)
    }

    fn start_with(
        dir: Option<&Path>,
        size: usize,
        tls: Option<ServerTls>,
    ) -> Result<EtcdCluster, EtcdError> {
        let binary = which("etcd").ok_or_else(|| {
            EtcdError("etcd is not installed (not on PATH): run scripts/install-test-deps".into())
        })?;
        EtcdCluster::start_binary_with(binary, dir, size, tls)
    }

    fn start_binary_with(
        binary: PathBuf,
        dir: Option<&Path>,
        size: usize,
        tls: Option<ServerTls>,
    ) -> Result<EtcdCluster, EtcdError> {
        if !binary.is_file() {
            return Err(EtcdError(format!("{} is missing", binary.display())));
        }
        // Free ports can be taken between probing and etcd binding them: try a few times.
        let mut last = String::new();
        for attempt in 0..3 {
            let dir = match dir {
                Some(dir) => {
                    let dir = dir.join(format!("cluster-{attempt}"));
                    std::fs::create_dir_all(&dir)?;
                    DataDir::Kept(dir)
                }
                None => DataDir::Temporary(tempfile::tempdir()?),
            };
            let mut members = Vec::with_capacity(size);
            for i in 0..size {
                members.push(Member {
                    name: format!("m{i}"),
                    client_port: super::free_port()?,
                    peer_port: super::free_port()?,
                    child: None,
                    paused: false,
                    starts: 0,
                });
            }
            let mut cluster = EtcdCluster {
                binary: binary.clone(),
                dir,
                members,
                tls: tls.clone(),
            };
            let started = (0..size)
                .try_for_each(|i| cluster.spawn(i))
                .and_then(|()| (0..size).try_for_each(|i| cluster.wait_ready(i)));
            match started {
                Ok(()) => return Ok(cluster),
                Err(e) => last = e.0,
            }
        }
        Err(EtcdError(format!("etcd did not start: {last}")))
    }

    /// How many members it has.
    pub fn size(&self) -> usize {
        self.members.len()
    }

    /// The client URLs of all members, in member order (e.g. `http://127.0.0.1:40123`).
    pub fn urls(&self) -> Vec<String> {
        let tls = self.tls.is_some();
        self.members.iter().map(|m| m.url(tls)).collect()
    }

    /// Whether member `i` runs (it may be paused).
    pub fn is_running(&self, i: usize) -> bool {
        self.members[i].child.is_some()
    }

    /// Whether member `i` runs and is not paused.
    pub fn is_healthy(&self, i: usize) -> bool {
        self.is_running(i) && !self.members[i].paused
    }

    /// The last `lines` lines member `i` logged since it last started (its own words on
    /// elections and peers, for a failing test to show); empty if there is no log.
    pub fn log_tail(&self, i: usize, lines: usize) -> String {
        let log = std::fs::read_to_string(log_path(self.dir.path(), &self.members[i]))
            .unwrap_or_default();
        let all: Vec<&str> = log.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }

    /// Kills member `i` at once (SIGKILL), keeping its data directory and ports.
    pub fn kill(&mut self, i: usize) {
        self.members[i].kill();
    }

    /// Starts member `i` again on its data directory and ports, after [`kill`](Self::kill),
    /// and waits until it serves clients (it rejoins the running members).
    pub fn restart(&mut self, i: usize) -> Result<(), EtcdError> {
        self.members[i].kill();
        self.spawn(i)?;
        self.wait_ready(i)
    }

    /// Freezes member `i` (SIGSTOP): its connections stay open and the kernel still accepts
    /// new ones, but nothing answers — a hung etcd.
    pub fn pause(&mut self, i: usize) -> Result<(), EtcdError> {
        let pid = self.members[i]
            .child
            .as_ref()
            .ok_or_else(|| EtcdError(format!("etcd member {i} is not running")))?
            .id();
        signal(pid, "STOP")?;
        self.members[i].paused = true;
        Ok(())
    }

    /// Lets a paused member `i` run again (SIGCONT).
    pub fn resume(&mut self, i: usize) -> Result<(), EtcdError> {
        if let Some(child) = &self.members[i].child {
            signal(child.id(), "CONT")?;
        }
        self.members[i].paused = false;
        Ok(())
    }

    /// Brings every member back: resumes paused ones, restarts killed ones.
    pub fn heal(&mut self) -> Result<(), EtcdError> {
        for i in 0..self.members.len() {
            if self.members[i].paused {
                self.resume(i)?;
            }
            if self.members[i].child.is_none() {
                self.restart(i)?;
            }
        }
        Ok(())
    }

    fn spawn(&mut self, i: usize) -> Result<(), EtcdError> {
        let tls = self.tls.is_some();
        let initial_cluster = self
            .members
            .iter()
            .map(|m| format!("{}={}", m.name, m.peer_url()))
            .collect::<Vec<_>>()
            .join(",");
        let member = &mut self.members[i];
        member.starts += 1;
        let log_path = log_path(self.dir.path(), member);
        let log = std::fs::File::create(&log_path)?;
        let log_err = log.try_clone()?;
        let mut cmd = Command::new(&self.binary);
        cmd.arg(format!("--name={}", member.name))
            .arg(format!(
                "--data-dir={}",
                self.dir.path().join(&member.name).display()
            ))
            .arg(format!("--listen-client-urls={}", member.url(tls)))
            .arg(format!("--advertise-client-urls={}", member.url(tls)))
            .arg(format!("--listen-peer-urls={}", member.peer_url()))
            .arg(format!(
                "--initial-advertise-peer-urls={}",
                member.peer_url()
            ))
            .arg(format!("--initial-cluster={initial_cluster}"))
            .arg("--initial-cluster-state=new")
            .arg("--initial-cluster-token=apiserver-framework-test")
            .arg(format!("--max-request-bytes={MAX_REQUEST_BYTES}"))
            .arg("--logger=zap")
            .arg("--log-outputs=stderr");
        if let Some(tls) = &self.tls {
            cmd.arg(format!("--cert-file={}", tls.cert_file.display()))
                .arg(format!("--key-file={}", tls.key_file.display()))
                .arg(format!("--trusted-ca-file={}", tls.ca_file.display()))
                .arg("--client-cert-auth");
        }
        let child = cmd
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log_err)
            .spawn()
            .map_err(|e| EtcdError(format!("spawning {}: {e}", self.binary.display())))?;
        member.child = Some(child);
        member.paused = false;
        Ok(())
    }

    /// Waits for member `i`'s log to say it serves clients; kills every member on failure.
    fn wait_ready(&mut self, i: usize) -> Result<(), EtcdError> {
        let log_path = log_path(self.dir.path(), &self.members[i]);
        let member = &mut self.members[i];
        // Ok(Err(_)): the member exited, which no more waiting mends.
        let outcome = super::wait::poll_blocking("etcd to serve clients", READY_WITHIN, || {
            let log = std::fs::read_to_string(&log_path).unwrap_or_default();
            if log.contains("serving client traffic") || log.contains("serving insecure client") {
                return Ok(Ok(()));
            }
            let exited = member
                .child
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten());
            match exited {
                Some(status) => {
                    member.child = None;
                    Ok(Err(EtcdError(format!(
                        "etcd member {i} exited ({status}); its log:\n{}",
                        tail(&log)
                    ))))
                }
                None => Err(tail(&log)),
            }
        });
        let failed = match outcome {
            Ok(Ok(())) => return Ok(()),
            Ok(Err(exited)) => exited,
            Err(_) => EtcdError(format!(
                "etcd member {i} did not serve clients within {READY_WITHIN:?}; its log:\n{}",
                tail(&std::fs::read_to_string(&log_path).unwrap_or_default())
            )),
        };
        self.kill_all();
        Err(failed)
    }

    fn kill_all(&mut self) {
        // SIGKILL ends a paused process as well.
        self.members.iter_mut().for_each(Member::kill);
    }
}

impl Drop for EtcdCluster {
    fn drop(&mut self) {
        self.kill_all();
    }
}

/// A single-member etcd in a temporary directory: an [`EtcdCluster`] of one, with member-less
/// methods.
pub struct Etcd {
    cluster: EtcdCluster,
}

impl Etcd {
    /// Starts an etcd serving plain HTTP on loopback and waits until it serves clients.
    pub fn start() -> Result<Etcd, EtcdError> {
        Ok(Etcd {
            cluster: EtcdCluster::start(1)?,
        })
    }

    /// Starts the etcd at `binary` (rather than the one on `PATH`: a release a test needs, such
    /// as the one `scripts/build-upstream etcd` builds) like [`Etcd::start`].
    pub fn start_binary(binary: &Path) -> Result<Etcd, EtcdError> {
        Ok(Etcd {
            cluster: EtcdCluster::start_binary_with(binary.to_path_buf(), None, 1, None)?,
        })
    }

    /// Starts an etcd serving clients over TLS, client certificates required.
    pub fn start_tls(tls: ServerTls) -> Result<Etcd, EtcdError> {
        Ok(Etcd {
            cluster: EtcdCluster::start_with(None, 1, Some(tls))?,
        })
    }

    /// The client URL, e.g. `http://127.0.0.1:40123` (`https` with TLS).
    pub fn url(&self) -> String {
        self.cluster.urls().remove(0)
    }

    /// Kills etcd at once (SIGKILL), keeping its data directory and ports.
    pub fn kill(&mut self) {
        self.cluster.kill(0);
    }

    /// Starts etcd again on the same data directory and ports, after [`kill`](Self::kill).
    pub fn restart(&mut self) -> Result<(), EtcdError> {
        self.cluster.restart(0)
    }

    /// Freezes etcd (SIGSTOP): connections stay open, nothing answers — a hung etcd.
    pub fn freeze(&mut self) -> Result<(), EtcdError> {
        self.cluster.pause(0)
    }

    /// Lets a frozen etcd run again (SIGCONT).
    pub fn thaw(&mut self) -> Result<(), EtcdError> {
        self.cluster.resume(0)
    }
}

#[cfg(feature = "etcd")]
mod client {
    use std::time::Duration;

    use super::{Etcd, EtcdCluster, EtcdError};
    use crate::storage::etcd::{EtcdClient, EtcdOptions, EtcdStorage};

    /// Options for a store on `servers` under `prefix`, with 2 s dial and request timeouts.
    fn options(servers: Vec<String>, prefix: &str) -> EtcdOptions {
        EtcdOptions {
            servers,
            prefix: prefix.into(),
            dial_timeout: Duration::from_secs(2),
            request_timeout: Duration::from_secs(2),
            ..Default::default()
        }
    }

    impl EtcdCluster {
        /// Options for a store on all members under `prefix`, with 2 s dial and request
        /// timeouts.
        pub fn options(&self, prefix: &str) -> EtcdOptions {
            options(self.urls(), prefix)
        }

        /// The index of the member the running members agree is the leader, asking each for
        /// its status (etcd's maintenance `Status`); an error if they do not agree within
        /// 10 s.
        pub async fn leader(&self) -> Result<usize, EtcdError> {
            crate::testing::wait::poll("an etcd leader", Duration::from_secs(10), || {
                self.try_leader()
            })
            .await
            .map_err(|e| EtcdError(format!("no etcd leader: {e}")))
        }

        async fn try_leader(&self) -> Result<usize, String> {
            let mut ids = Vec::new();
            let mut leaders = Vec::new();
            for (member, url) in self.members.iter().zip(self.urls()) {
                if member.child.is_none() {
                    ids.push(None);
                    continue;
                }
                // A member answers its status even while it has no leader: it says so (0).
                let opts = EtcdOptions {
                    servers: vec![url],
                    dial_timeout: Duration::from_secs(1),
                    ..Default::default()
                };
                let client = EtcdClient::connect(&opts)
                    .await
                    .map_err(|e| format!("{}: {e}", member.name))?
                    .require_leader(false);
                let status = tokio::time::timeout(Duration::from_secs(1), client.status())
                    .await
                    .map_err(|_| format!("{}: no status within 1 s", member.name))?
                    .map_err(|e| format!("{}: {}", member.name, e.message()))?;
                let id = status.header.map(|h| h.member_id).unwrap_or_default();
                ids.push(Some(id));
                leaders.push(status.leader);
            }
            let leader = leaders.first().copied().unwrap_or_default();
            if leader == 0 || leaders.iter().any(|&l| l != leader) {
                return Err(format!("members disagree on the leader: {leaders:?}"));
            }
            ids.iter()
                .position(|&id| id == Some(leader))
                .ok_or_else(|| format!("leader {leader:x} is not a running member"))
        }
    }

    impl Etcd {
        /// Options for a store on this etcd under `prefix`, with 2 s dial and request
        /// timeouts.
        pub fn options(&self, prefix: &str) -> EtcdOptions {
            self.cluster.options(prefix)
        }

        /// A store on this etcd under `prefix`.
        pub async fn storage(&self, prefix: &str) -> Result<EtcdStorage, EtcdError> {
            EtcdStorage::connect(self.options(prefix))
                .await
                .map_err(|e| EtcdError(format!("connecting to the test etcd: {e}")))
        }
    }
}

fn log_path(dir: &Path, member: &Member) -> PathBuf {
    dir.join(format!("{}-{}.log", member.name, member.starts))
}

/// `name` on `PATH`.
fn which(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

/// Sends `signal` (a `kill` signal name such as `STOP`) to process `pid`.
fn signal(pid: u32, signal: &str) -> Result<(), EtcdError> {
    let status = Command::new("kill")
        .arg(format!("-{signal}"))
        .arg(pid.to_string())
        .status()
        .map_err(|e| EtcdError(format!("running kill: {e}")))?;
    if status.success() {
        Ok(())
    } else {
        Err(EtcdError(format!("kill -{signal} {pid}: {status}")))
    }
}

/// The last lines of a log.
fn tail(log: &str) -> String {
    let lines: Vec<&str> = log.lines().collect();
    lines[lines.len().saturating_sub(20)..].join("\n")
}

/// A fresh CA in `dir` with a serving certificate for `127.0.0.1` and `localhost` and a client
/// certificate, for [`Etcd::start_tls`] and its clients.
pub fn tls_files(dir: &Path) -> Result<(ServerTls, ClientTls), EtcdError> {
    use rcgen::{
        BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer,
        KeyPair, KeyUsagePurpose,
    };
    let tls = |e: rcgen::Error| EtcdError(format!("test certificates: {e}"));
    let write = |name: &str, pem: String| -> Result<PathBuf, EtcdError> {
        let path = dir.join(name);
        std::fs::write(&path, pem)?;
        Ok(path)
    };
    let ca_key = KeyPair::generate().map_err(tls)?;
    let mut ca = CertificateParams::new(Vec::<String>::new()).map_err(tls)?;
    ca.distinguished_name
        .push(DnType::CommonName, "etcd-test-ca");
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let ca_file = write("ca.crt", ca.self_signed(&ca_key).map_err(tls)?.pem())?;
    let issuer = Issuer::new(ca, ca_key);
    let leaf = |name: &str, hosts: Vec<String>, usage: ExtendedKeyUsagePurpose| {
        let key = KeyPair::generate().map_err(tls)?;
        let mut params = CertificateParams::new(hosts).map_err(tls)?;
        params.distinguished_name.push(DnType::CommonName, name);
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        params.extended_key_usages = vec![usage];
        let cert = params.signed_by(&key, &issuer).map_err(tls)?;
        Ok::<_, EtcdError>((
            write(&format!("{name}.crt"), cert.pem())?,
            write(&format!("{name}.key"), key.serialize_pem())?,
        ))
    };
    let hosts = vec!["127.0.0.1".to_string(), "localhost".to_string()];
    let (server_cert, server_key) = leaf("server", hosts, ExtendedKeyUsagePurpose::ServerAuth)?;
    let (client_cert, client_key) = leaf("client", vec![], ExtendedKeyUsagePurpose::ClientAuth)?;
    Ok((
        ServerTls {
            ca_file: ca_file.clone(),
            cert_file: server_cert,
            key_file: server_key,
        },
        ClientTls {
            ca_file,
            cert_file: client_cert,
            key_file: client_key,
        },
    ))
}
