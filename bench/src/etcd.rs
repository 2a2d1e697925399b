//! etcd for the etcd scenario: a single-member etcd from PATH on loopback ports with a data
//! directory of its own, and the raw etcd put loop it is compared with (through the framework's
//! etcd client, the one wardle's etcd store uses).

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use apiserver_framework::storage::etcd::{EtcdClient, EtcdOptions};
use apiserver_framework::testing::wait;
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
    /// Starts etcd from PATH in `dir` and waits until it answers.
    pub async fn start(dir: &Path) -> Result<Self, Error> {
        Self::start_program(dir, Path::new("etcd")).await
    }

    /// Starts the etcd executable `program` in `dir` and waits until it answers.
    pub async fn start_program(dir: &Path, program: &Path) -> Result<Self, Error> {
        let (listen, peer) = (free_addr(), free_addr());
        let data = dir.join("etcd-data");
        let url = format!("http://{listen}");
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
        let mut proc = Proc::spawn(Command::new(program), &args, dir, &dir.join("etcd.log"))
            .map_err(|e| {
                format!(
                    "cannot start {} (run scripts/install-test-deps): {e}",
                    program.display()
                )
            })?;
        let client = client(&url).await?;
        // Ok(Some(status)): etcd exited, which no more waiting mends.
        let answered = wait::poll("etcd to answer", Duration::from_secs(20), || {
            let exited = proc.exited();
            let status = client.status();
            async move {
                match exited {
                    Some(exited) => Ok(Some(exited)),
                    None => status.await.map(|_| None).map_err(|e| e.to_string()),
                }
            }
        })
        .await?;
        if let Some(status) = answered {
            return Err(format!(
                "etcd exited ({status}); see {}",
                dir.join("etcd.log").display()
            )
            .into());
        }
        Ok(Etcd { proc, url })
    }
}

/// A client of the etcd at `url`.
pub async fn client(url: &str) -> Result<EtcdClient, Error> {
    let opts = EtcdOptions {
        servers: vec![url.to_string()],
        ..Default::default()
    };
    Ok(EtcdClient::connect(&opts).await?)
}

/// Puts of `value` under distinct keys, through the etcd client, as fast as etcd answers.
pub struct RawPuts {
    /// A client (each connection of the load clones it; clones share its connection).
    pub client: EtcdClient,
    /// The value of every put: the bytes wardle stores for one object.
    pub value: Bytes,
    /// The keys' prefix (one per round, so that every put creates a key).
    pub prefix: String,
}

impl Work for RawPuts {
    type Conn = EtcdClient;

    async fn connect(&self) -> Result<EtcdClient, Error> {
        Ok(self.client.clone())
    }

    async fn call(&self, client: &mut EtcdClient, c: usize, i: u64) -> Result<(), Error> {
        client
            .put(format!("{}/{c}/{i}", self.prefix), self.value.clone())
            .await?;
        Ok(())
    }
}
