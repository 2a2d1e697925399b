//! A real etcd cluster of one or three members on free loopback ports: the framework's test
//! kit ([`apiserver_framework::testing::etcd::EtcdCluster`]), with the leader found through each
//! member's `/metrics` (`etcd_server_is_leader`) without waiting, as a fault picks its victim.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::Duration;

use apiserver_framework::testing::etcd;

/// An etcd cluster; every member is killed when it is dropped.
pub struct EtcdCluster {
    cluster: etcd::EtcdCluster,
}

impl EtcdCluster {
    /// Starts `size` members with their data under `dir` and waits until all serve clients.
    pub fn start(dir: &Path, size: usize) -> Result<EtcdCluster, String> {
        let cluster = etcd::EtcdCluster::start_in(dir, size)?;
        Ok(EtcdCluster { cluster })
    }

    /// How many members it has.
    pub fn size(&self) -> usize {
        self.cluster.size()
    }

    /// The client URLs of all members.
    pub fn urls(&self) -> Vec<String> {
        self.cluster.urls()
    }

    /// Kills member `i` (SIGKILL), keeping its data directory and ports.
    pub fn kill(&mut self, i: usize) {
        self.cluster.kill(i);
    }

    /// Starts member `i` again after [`kill`](Self::kill) and waits until it serves clients.
    pub fn restart(&mut self, i: usize) -> Result<(), String> {
        Ok(self.cluster.restart(i)?)
    }

    /// Freezes member `i` (SIGSTOP): its connections stay open but nothing answers.
    pub fn pause(&mut self, i: usize) -> Result<(), String> {
        Ok(self.cluster.pause(i)?)
    }

    /// Lets a frozen member `i` run again (SIGCONT).
    pub fn resume(&mut self, i: usize) -> Result<(), String> {
        Ok(self.cluster.resume(i)?)
    }

    /// Brings every member back: resumes paused ones, restarts killed ones.
    pub fn heal(&mut self) -> Result<(), String> {
        Ok(self.cluster.heal()?)
    }

    /// The member that says it leads, asking the running, unpaused ones.
    pub fn leader(&self) -> Option<usize> {
        let urls = self.cluster.urls();
        (0..self.size()).find(|&i| {
            self.cluster.is_healthy(i)
                && http_get(&urls[i], "/metrics")
                    .is_some_and(|m| m.lines().any(|l| l.trim() == "etcd_server_is_leader 1"))
        })
    }
}

/// A plain HTTP/1.0 GET on loopback with a 1 s timeout: the body, if the answer is 200.
fn http_get(url: &str, path: &str) -> Option<String> {
    let addr: std::net::SocketAddr = url.strip_prefix("http://")?.parse().ok()?;
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
