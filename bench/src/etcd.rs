//! etcd for the etcd scenario: a single-member etcd from PATH on loopback ports with a data
//! directory of its own, and the raw etcd-client put loop it is compared with.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use bytes::Bytes;

use crate::client::Error;
use crate::load::Work;
use crate::process::{Proc, free_addr};

/// A running etcd, killed when dropped.
pub struct Etcd {
    /// The process.
    pub proc: Proc,
    /// Its client URL.
    pub url: String,
}

impl Etcd {
    /// Starts etcd in `dir` and waits until it answers.
    pub async fn start(dir: &Path) -> Result<Self, Error> {
        let (client, peer) = (free_addr(), free_addr());
        let data = dir.join("etcd-data");
        let url = format!("http://{client}");
        let peer_url = format!("http://{peer}");
        let args = [
            "--name=bench".to_string(),
            format!("--data-dir={}", data.display()),
            format!("--listen-client-urls={url}"),
            format!("--advertise-client-urls={url}"),
            format!("--listen-peer-urls={peer_url}"),
            format!("--initial-advertise-peer-urls={peer_url}"),
            format!("--initial-cluster=bench={peer_url}"),
            "--log-level=error".to_string(),
        ];
        let mut proc = Proc::spawn(Command::new("etcd"), &args, dir, &dir.join("etcd.log"))
            .map_err(|e| format!("cannot start etcd (run scripts/install-test-deps): {e}"))?;
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(status) = proc.exited() {
                return Err(format!(
                    "etcd exited ({status}); see {}",
                    dir.join("etcd.log").display()
                )
                .into());
            }
            if let Ok(mut c) = etcd_client::Client::connect([url.as_str()], None).await
                && c.status().await.is_ok()
            {
                return Ok(Etcd { proc, url });
            }
            if Instant::now() > deadline {
                return Err("etcd did not answer within 20 s".into());
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// Puts of `value` under distinct keys, through etcd-client, as fast as etcd answers.
pub struct RawPuts {
    /// A connected client (each connection of the load clones it).
    pub client: etcd_client::Client,
    /// The value of every put: the bytes wardle stores for one object.
    pub value: Bytes,
    /// The keys' prefix (one per round, so that every put creates a key).
    pub prefix: String,
}

impl Work for RawPuts {
    type Conn = etcd_client::Client;

    async fn connect(&self) -> Result<etcd_client::Client, Error> {
        Ok(self.client.clone())
    }

    async fn call(&self, client: &mut etcd_client::Client, c: usize, i: u64) -> Result<(), Error> {
        client
            .put(
                format!("{}/{c}/{i}", self.prefix),
                self.value.to_vec(),
                None,
            )
            .await?;
        Ok(())
    }
}
