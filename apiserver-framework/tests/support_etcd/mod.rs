//! A real etcd for tests: `etcd` from PATH on free loopback ports with a temporary data
//! directory, killed when dropped. A missing `etcd` fails the test (it does not skip it):
//! `scripts/install-test-deps` installs it.

#![allow(dead_code)] // each test crate uses part of it

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use apiserver_framework::storage::etcd::{EtcdClient, EtcdOptions, EtcdStorage};

/// How long etcd may take to serve clients after it starts.
const READY_WITHIN: Duration = Duration::from_secs(30);

/// The largest request etcd accepts in the tests: 4 MiB, as the backend's docs advise.
const MAX_REQUEST_BYTES: u32 = 4 * 1024 * 1024;

/// Files for serving etcd over TLS with client certificates.
#[derive(Clone, Debug)]
pub struct ServerTls {
    /// CA that signed the client certificates etcd accepts.
    pub ca_file: PathBuf,
    /// etcd's serving certificate.
    pub cert_file: PathBuf,
    /// Its key.
    pub key_file: PathBuf,
}

/// One single-member etcd process.
pub struct Etcd {
    child: Option<Child>,
    dir: tempfile::TempDir,
    client_port: u16,
    peer_port: u16,
    tls: Option<ServerTls>,
    starts: u32,
}

impl Etcd {
    /// Starts an etcd serving plain HTTP on loopback and waits until it serves clients.
    pub fn start() -> Etcd {
        Etcd::start_with(None)
    }

    /// Starts an etcd serving clients over TLS (client certificates required).
    pub fn start_tls(tls: ServerTls) -> Etcd {
        Etcd::start_with(Some(tls))
    }

    fn start_with(tls: Option<ServerTls>) -> Etcd {
        let binary = which_etcd();
        // Free ports can be taken between probing and etcd binding them: try a few times.
        let mut last_error = String::new();
        for _ in 0..3 {
            let mut etcd = Etcd {
                child: None,
                dir: tempfile::tempdir().expect("temporary directory for etcd"),
                client_port: free_port(),
                peer_port: free_port(),
                tls: tls.clone(),
                starts: 0,
            };
            match etcd.spawn(&binary) {
                Ok(()) => return etcd,
                Err(e) => last_error = e,
            }
        }
        panic!("etcd did not start: {last_error}");
    }

    /// The client URL, e.g. `http://127.0.0.1:40123`.
    pub fn url(&self) -> String {
        let scheme = if self.tls.is_some() { "https" } else { "http" };
        format!("{scheme}://127.0.0.1:{}", self.client_port)
    }

    /// Options for a store on this etcd under `prefix`, with a 2 s request timeout.
    pub fn options(&self, prefix: &str) -> EtcdOptions {
        EtcdOptions {
            servers: vec![self.url()],
            prefix: prefix.into(),
            dial_timeout: Duration::from_secs(2),
            request_timeout: Duration::from_secs(2),
            ..Default::default()
        }
    }

    /// A store on this etcd under `prefix`.
    pub async fn storage(&self, prefix: &str) -> EtcdStorage {
        EtcdStorage::connect(self.options(prefix))
            .await
            .expect("connect to the test etcd")
    }

    /// Kills etcd at once (SIGKILL), keeping its data directory and ports.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Freezes etcd (SIGSTOP): connections stay open and the kernel still accepts new ones,
    /// but nothing answers — a hung etcd.
    pub fn freeze(&self) {
        self.signal("STOP");
    }

    /// Lets a frozen etcd run again (SIGCONT).
    pub fn thaw(&self) {
        self.signal("CONT");
    }

    fn signal(&self, name: &str) {
        let child = self.child.as_ref().expect("etcd is running");
        let status = Command::new("kill")
            .arg(format!("-{name}"))
            .arg(child.id().to_string())
            .status()
            .expect("run kill");
        assert!(status.success(), "kill -{name} {} failed", child.id());
    }

    /// Starts etcd again on the same data directory and ports, after [`kill`](Self::kill).
    pub fn restart(&mut self) {
        self.kill();
        self.spawn(&which_etcd())
            .unwrap_or_else(|e| panic!("etcd did not restart: {e}"));
    }

    fn spawn(&mut self, binary: &Path) -> Result<(), String> {
        self.starts += 1;
        let log_path = self.dir.path().join(format!("etcd-{}.log", self.starts));
        let log = std::fs::File::create(&log_path).map_err(|e| e.to_string())?;
        let peer = format!("http://127.0.0.1:{}", self.peer_port);
        let mut cmd = Command::new(binary);
        cmd.arg("--name=test")
            .arg(format!(
                "--data-dir={}",
                self.dir.path().join("data").display()
            ))
            .arg(format!("--listen-client-urls={}", self.url()))
            .arg(format!("--advertise-client-urls={}", self.url()))
            .arg(format!("--listen-peer-urls={peer}"))
            .arg(format!("--initial-advertise-peer-urls={peer}"))
            .arg(format!("--initial-cluster=test={peer}"))
            .arg(format!("--max-request-bytes={MAX_REQUEST_BYTES}"))
            .arg("--logger=zap")
            .arg("--log-outputs=stderr");
        if let Some(tls) = &self.tls {
            cmd.arg(format!("--cert-file={}", tls.cert_file.display()))
                .arg(format!("--key-file={}", tls.key_file.display()))
                .arg(format!("--trusted-ca-file={}", tls.ca_file.display()))
                .arg("--client-cert-auth");
        }
        let log_err = log.try_clone().map_err(|e| e.to_string())?;
        let child = cmd
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log_err)
            .spawn()
            .map_err(|e| format!("spawning {}: {e}", binary.display()))?;
        self.child = Some(child);
        self.wait_ready(&log_path)
    }

    /// Waits for etcd's log to say it serves clients (it does once it has elected itself).
    fn wait_ready(&mut self, log_path: &Path) -> Result<(), String> {
        let deadline = Instant::now() + READY_WITHIN;
        loop {
            let log = std::fs::read_to_string(log_path).unwrap_or_default();
            if log.contains("serving client traffic") {
                return Ok(());
            }
            let exited = self
                .child
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten());
            if let Some(status) = exited {
                self.child = None;
                return Err(format!("etcd exited ({status}); its log:\n{}", tail(&log)));
            }
            if Instant::now() > deadline {
                self.kill();
                return Err(format!(
                    "etcd did not serve clients within {READY_WITHIN:?}; its log:\n{}",
                    tail(&log)
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Etcd {
    fn drop(&mut self) {
        // SIGKILL ends a frozen process as well.
        self.kill();
    }
}

/// `etcd` from PATH, or a failure that says how to install it.
fn which_etcd() -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join("etcd"))
        .find(|p| p.is_file())
        .unwrap_or_else(|| {
            panic!("etcd is not installed (not on PATH): run scripts/install-test-deps")
        })
}

/// A loopback port that was free a moment ago.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free loopback port")
        .port()
}

/// The last lines of a log.
fn tail(log: &str) -> String {
    let lines: Vec<&str> = log.lines().collect();
    lines[lines.len().saturating_sub(20)..].join("\n")
}

/// Files for a TLS client of [`Etcd::start_tls`].
#[derive(Clone, Debug)]
pub struct ClientTls {
    /// CA that signed etcd's serving certificate.
    pub ca_file: PathBuf,
    /// The client's certificate.
    pub cert_file: PathBuf,
    /// Its key.
    pub key_file: PathBuf,
}

/// A fresh CA in `dir` with a serving certificate for 127.0.0.1 and a client certificate.
pub fn tls_files(dir: &Path) -> (ServerTls, ClientTls) {
    use rcgen::{
        BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer,
        KeyPair, KeyUsagePurpose,
    };
    let write = |name: &str, pem: String| {
        let path = dir.join(name);
        std::fs::write(&path, pem).expect("write a TLS file");
        path
    };
    let ca_key = KeyPair::generate().unwrap();
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.distinguished_name
        .push(DnType::CommonName, "etcd-test-ca");
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let ca_file = write("ca.crt", ca.self_signed(&ca_key).unwrap().pem());
    let issuer = Issuer::new(ca, ca_key);
    let leaf = |name: &str, hosts: Vec<String>, usage: ExtendedKeyUsagePurpose| {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(hosts).unwrap();
        params.distinguished_name.push(DnType::CommonName, name);
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        params.extended_key_usages = vec![usage];
        let cert = params.signed_by(&key, &issuer).unwrap();
        (
            write(&format!("{name}.crt"), cert.pem()),
            write(&format!("{name}.key"), key.serialize_pem()),
        )
    };
    let hosts = vec!["127.0.0.1".to_string(), "localhost".to_string()];
    let (server_cert, server_key) = leaf("server", hosts, ExtendedKeyUsagePurpose::ServerAuth);
    let (client_cert, client_key) = leaf("client", vec![], ExtendedKeyUsagePurpose::ClientAuth);
    (
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
    )
}

/// How many members a [`Cluster`] has.
pub const CLUSTER_SIZE: usize = 3;

/// One member of a [`Cluster`].
struct Member {
    name: String,
    client_port: u16,
    peer_port: u16,
    child: Option<Child>,
    starts: u32,
}

impl Member {
    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.client_port)
    }

    fn peer_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.peer_port)
    }

    fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A three-member etcd cluster on loopback (plain HTTP), each member with its own free client
/// and peer ports and data directory; all members are killed when dropped.
pub struct Cluster {
    members: Vec<Member>,
    dir: tempfile::TempDir,
}

impl Cluster {
    /// Starts the three members together and waits until every one serves clients (which
    /// needs a leader, so they cannot be waited for one by one).
    pub fn start() -> Cluster {
        let binary = which_etcd();
        // Free ports can be taken between probing and etcd binding them: try a few times.
        let mut last_error = String::new();
        for _ in 0..3 {
            let mut cluster = Cluster {
                members: (0..CLUSTER_SIZE)
                    .map(|i| Member {
                        name: format!("m{i}"),
                        client_port: free_port(),
                        peer_port: free_port(),
                        child: None,
                        starts: 0,
                    })
                    .collect(),
                dir: tempfile::tempdir().expect("temporary directory for etcd"),
            };
            let started = (0..CLUSTER_SIZE).try_for_each(|i| cluster.spawn(&binary, i));
            match started.and_then(|()| (0..CLUSTER_SIZE).try_for_each(|i| cluster.wait_ready(i))) {
                Ok(()) => return cluster,
                Err(e) => last_error = e,
            }
        }
        panic!("etcd cluster did not start: {last_error}");
    }

    /// The client URLs of all members, in member order.
    pub fn urls(&self) -> Vec<String> {
        self.members.iter().map(Member::url).collect()
    }

    /// Options for a store on all members under `prefix`, with 2 s dial and request timeouts.
    pub fn options(&self, prefix: &str) -> EtcdOptions {
        EtcdOptions {
            servers: self.urls(),
            prefix: prefix.into(),
            dial_timeout: Duration::from_secs(2),
            request_timeout: Duration::from_secs(2),
            ..Default::default()
        }
    }

    /// Whether member `i` runs.
    pub fn is_running(&self, i: usize) -> bool {
        self.members[i].child.is_some()
    }

    /// Kills member `i` at once (SIGKILL), keeping its data directory and ports.
    pub fn kill(&mut self, i: usize) {
        self.members[i].kill();
    }

    /// Starts member `i` again on its data directory and ports, after [`kill`](Self::kill),
    /// and waits until it serves clients (it rejoins the running members).
    pub fn restart(&mut self, i: usize) {
        self.kill(i);
        let started = self
            .spawn(&which_etcd(), i)
            .and_then(|()| self.wait_ready(i));
        started.unwrap_or_else(|e| panic!("etcd member {i} did not restart: {e}"));
    }

    /// The index of the member the running members agree is the leader, asking each for its
    /// status (etcd's maintenance `Status`); fails if they do not agree within 10 s.
    pub async fn leader(&self) -> usize {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            match self.try_leader().await {
                Ok(i) => return i,
                Err(e) if Instant::now() > deadline => panic!("no etcd leader: {e}"),
                Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        }
    }

    async fn try_leader(&self) -> Result<usize, String> {
        let mut ids = Vec::new();
        let mut leaders = Vec::new();
        for member in &self.members {
            if member.child.is_none() {
                ids.push(None);
                continue;
            }
            // A member answers its status even while it has no leader: it says so (leader 0).
            let opts = EtcdOptions {
                servers: vec![member.url()],
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
        let leader = leaders[0];
        if leader == 0 || leaders.iter().any(|&l| l != leader) {
            return Err(format!("members disagree on the leader: {leaders:?}"));
        }
        ids.iter()
            .position(|&id| id == Some(leader))
            .ok_or_else(|| format!("leader {leader:x} is not a running member"))
    }

    fn spawn(&mut self, binary: &Path, i: usize) -> Result<(), String> {
        let initial_cluster = self
            .members
            .iter()
            .map(|m| format!("{}={}", m.name, m.peer_url()))
            .collect::<Vec<_>>()
            .join(",");
        let member = &mut self.members[i];
        member.starts += 1;
        let log_path = self
            .dir
            .path()
            .join(format!("{}-{}.log", member.name, member.starts));
        let log = std::fs::File::create(&log_path).map_err(|e| e.to_string())?;
        let log_err = log.try_clone().map_err(|e| e.to_string())?;
        let child = Command::new(binary)
            .arg(format!("--name={}", member.name))
            .arg(format!(
                "--data-dir={}",
                self.dir.path().join(&member.name).display()
            ))
            .arg(format!("--listen-client-urls={}", member.url()))
            .arg(format!("--advertise-client-urls={}", member.url()))
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
            .arg("--log-outputs=stderr")
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log_err)
            .spawn()
            .map_err(|e| format!("spawning {}: {e}", binary.display()))?;
        member.child = Some(child);
        Ok(())
    }

    fn log_path(&self, i: usize) -> PathBuf {
        let member = &self.members[i];
        self.dir
            .path()
            .join(format!("{}-{}.log", member.name, member.starts))
    }

    /// Waits for member `i`'s log to say it serves clients.
    fn wait_ready(&mut self, i: usize) -> Result<(), String> {
        let log_path = self.log_path(i);
        let deadline = Instant::now() + READY_WITHIN;
        loop {
            let log = std::fs::read_to_string(&log_path).unwrap_or_default();
            if log.contains("serving client traffic") {
                return Ok(());
            }
            let member = &mut self.members[i];
            let exited = member
                .child
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten());
            if let Some(status) = exited {
                member.child = None;
                self.kill_all();
                return Err(format!(
                    "etcd member {i} exited ({status}); its log:\n{}",
                    tail(&log)
                ));
            }
            if Instant::now() > deadline {
                self.kill_all();
                return Err(format!(
                    "etcd member {i} did not serve clients within {READY_WITHIN:?}; its log:\n{}",
                    tail(&log)
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn kill_all(&mut self) {
        self.members.iter_mut().for_each(Member::kill);
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.kill_all();
    }
}

/// A framework server serving resource `T` on an etcd, over HTTPS on a free loopback port,
/// with the `etcd` and `etcd-readiness` checks.
pub struct Served {
    /// The running server (stops when dropped).
    pub server: apiserver_framework::cli::LocalServer,
    /// Its storage.
    pub storage: std::sync::Arc<EtcdStorage>,
    /// An HTTPS client trusting the server's CA, with `timeout`.
    pub http: reqwest::Client,
    _dir: tempfile::TempDir,
}

/// Starts a server named `name` serving `T` (in group `group`) on the etcd `options` point at.
pub async fn serve<T: apiserver_framework::ApiResource>(
    name: &str,
    group: &str,
    options: EtcdOptions,
    timeout: Duration,
) -> Served {
    use apiserver_framework::Group;
    use apiserver_framework::cli::storage_options::EtcdHealthCheck;
    use apiserver_framework::cli::{LocalOptions, local};
    use apiserver_framework::server::GenericApiServer;
    use std::sync::Arc;

    let storage = Arc::new(EtcdStorage::connect(options).await.unwrap());
    let app = GenericApiServer::builder(name)
        .group(Group::new(group).resource::<T>())
        .storage(storage.clone())
        .health_check(Arc::new(EtcdHealthCheck::new("etcd", storage.clone())))
        .readiness_check(Arc::new(EtcdHealthCheck::new(
            "etcd-readiness",
            storage.clone(),
        )))
        .build();
    let dir = tempfile::tempdir().unwrap();
    let opts = LocalOptions {
        secure_port: 0,
        cert_dir: dir.path().join("certs"),
        ..Default::default()
    };
    let server = local::start(name, Arc::new(app), &opts).await.unwrap();
    let http = reqwest::Client::builder()
        .add_root_certificate(reqwest::Certificate::from_pem(server.ca_pem.as_bytes()).unwrap())
        .timeout(timeout)
        .build()
        .unwrap();
    Served {
        server,
        storage,
        http,
        _dir: dir,
    }
}
