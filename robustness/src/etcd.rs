//! A real etcd cluster of one or three members on free loopback ports (`etcd` from PATH), each
//! with a data directory of its own; members can be killed, restarted, paused and resumed, and
//! the leader is found through each member's `/metrics` (`etcd_server_is_leader`).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::server::{free_port, signal};

/// How long a member may take to serve clients after it starts.
const READY_WITHIN: Duration = Duration::from_secs(30);

struct Member {
    name: String,
    client_port: u16,
    peer_port: u16,
    child: Option<Child>,
    paused: bool,
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
        self.paused = false;
    }
}

/// An etcd cluster; every member is killed when it is dropped.
pub struct EtcdCluster {
    binary: PathBuf,
    dir: PathBuf,
    members: Vec<Member>,
}

impl EtcdCluster {
    /// Starts `size` members with their data under `dir` and waits until all serve clients.
    pub fn start(dir: &Path, size: usize) -> Result<EtcdCluster, String> {
        let binary = which("etcd").ok_or(
            "etcd is not installed (not on PATH): run scripts/install-test-deps".to_string(),
        )?;
        let mut last = String::new();
        // Free ports can be taken between probing and etcd binding them: try a few times.
        for attempt in 0..3 {
            let dir = dir.join(format!("cluster-{attempt}"));
            std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
            let mut members = Vec::new();
            for i in 0..size {
                members.push(Member {
                    name: format!("m{i}"),
                    client_port: free_port()?,
                    peer_port: free_port()?,
                    child: None,
                    paused: false,
                    starts: 0,
                });
            }
            let mut cluster = EtcdCluster {
                binary: binary.clone(),
                dir,
                members,
            };
            let started = (0..size)
                .try_for_each(|i| cluster.spawn(i))
                .and_then(|()| (0..size).try_for_each(|i| cluster.wait_ready(i)));
            match started {
                Ok(()) => return Ok(cluster),
                Err(e) => last = e,
            }
        }
        Err(format!("etcd did not start: {last}"))
    }

    /// How many members it has.
    pub fn size(&self) -> usize {
        self.members.len()
    }

    /// The client URLs of all members.
    pub fn urls(&self) -> Vec<String> {
        self.members.iter().map(Member::url).collect()
    }

    /// Kills member `i` (SIGKILL), keeping its data directory and ports.
    pub fn kill(&mut self, i: usize) {
        self.members[i].kill();
    }

    /// Starts member `i` again after [`kill`](Self::kill) and waits until it serves clients.
    pub fn restart(&mut self, i: usize) -> Result<(), String> {
        self.members[i].kill();
        self.spawn(i)?;
        self.wait_ready(i)
    }

    /// Freezes member `i` (SIGSTOP): its connections stay open but nothing answers.
    pub fn pause(&mut self, i: usize) -> Result<(), String> {
        let pid = self.members[i].child.as_ref().ok_or("not running")?.id();
        signal(pid, "STOP")?;
        self.members[i].paused = true;
        Ok(())
    }

    /// Lets a frozen member `i` run again (SIGCONT).
    pub fn resume(&mut self, i: usize) -> Result<(), String> {
        if let Some(child) = &self.members[i].child {
            signal(child.id(), "CONT")?;
        }
        self.members[i].paused = false;
        Ok(())
    }

    /// Whether member `i` runs and is not paused.
    pub fn healthy(&self, i: usize) -> bool {
        self.members[i].child.is_some() && !self.members[i].paused
    }

    /// Brings every member back: resumes paused ones, restarts killed ones.
    pub fn heal(&mut self) -> Result<(), String> {
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

    /// The member that says it leads, asking the running, unpaused ones.
    pub fn leader(&self) -> Option<usize> {
        (0..self.members.len()).find(|&i| {
            self.healthy(i)
                && http_get(self.members[i].client_port, "/metrics")
                    .is_some_and(|m| m.lines().any(|l| l.trim() == "etcd_server_is_leader 1"))
        })
    }

    fn spawn(&mut self, i: usize) -> Result<(), String> {
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
            .join(format!("{}-{}.log", member.name, member.starts));
        let log = std::fs::File::create(&log_path).map_err(|e| e.to_string())?;
        let log_err = log.try_clone().map_err(|e| e.to_string())?;
        let child = Command::new(&self.binary)
            .arg(format!("--name={}", member.name))
            .arg(format!(
                "--data-dir={}",
                self.dir.join(&member.name).display()
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
            .arg("--initial-cluster-token=apiserver-robustness")
            .arg("--logger=zap")
            .arg("--log-outputs=stderr")
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log_err)
            .spawn()
            .map_err(|e| format!("spawning {}: {e}", self.binary.display()))?;
        member.child = Some(child);
        member.paused = false;
        Ok(())
    }

    fn wait_ready(&mut self, i: usize) -> Result<(), String> {
        let member = &self.members[i];
        let log_path = self
            .dir
            .join(format!("{}-{}.log", member.name, member.starts));
        let deadline = Instant::now() + READY_WITHIN;
        loop {
            let log = std::fs::read_to_string(&log_path).unwrap_or_default();
            if log.contains("serving client traffic") || log.contains("serving insecure client") {
                return Ok(());
            }
            let member = &mut self.members[i];
            if let Some(status) = member
                .child
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten())
            {
                member.child = None;
                return Err(format!("etcd member {i} exited ({status}): {}", tail(&log)));
            }
            if Instant::now() > deadline {
                member.kill();
                return Err(format!(
                    "etcd member {i} did not serve within {READY_WITHIN:?}: {}",
                    tail(&log)
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for EtcdCluster {
    fn drop(&mut self) {
        for m in &mut self.members {
            // SIGKILL ends a paused process as well.
            m.kill();
        }
    }
}

fn tail(log: &str) -> String {
    let lines: Vec<&str> = log.lines().collect();
    lines[lines.len().saturating_sub(10)..].join("\n")
}

/// `name` on PATH.
pub fn which(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

/// A plain HTTP/1.0 GET on loopback with a 1 s timeout: the body, if the answer is 200.
fn http_get(port: u16, path: &str) -> Option<String> {
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(1)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(1))).ok()?;
    s.set_write_timeout(Some(Duration::from_secs(1))).ok()?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    let (head, body) = out.split_once("\r\n\r\n")?;
    head.starts_with("HTTP/1.0 200")
        .then(|| body.to_string())
        .or_else(|| head.starts_with("HTTP/1.1 200").then(|| body.to_string()))
}
