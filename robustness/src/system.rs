//! The system under test: the wardle process and what it stores in (the embedded store,
//! possibly on a size-limited filesystem, or an etcd cluster).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::api::Target;
use crate::disk::Tmpfs;
use crate::etcd::EtcdCluster;
use crate::server::WardleProcess;

/// Where objects are stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Store {
    /// The embedded store under `--data-dir`.
    Embedded {
        /// Put its directory on a tmpfs of this many bytes (for the full-disk fault).
        disk_size: Option<u64>,
    },
    /// An etcd cluster of this many members started by the harness.
    Etcd {
        /// 1 or 3.
        members: usize,
    },
}

/// The processes of a run; all killed (and the tmpfs unmounted) when dropped.
pub struct System {
    /// The server.
    pub server: WardleProcess,
    /// The etcd cluster, on etcd.
    pub etcd: Option<EtcdCluster>,
    /// The size-limited filesystem of the embedded store, when one could be mounted.
    pub disk: Option<Tmpfs>,
    /// Why there is none, when one was wanted.
    pub disk_unavailable: Option<String>,
    /// Where clients reach the server.
    pub target: Arc<Target>,
}

/// How to start the server.
#[derive(Clone, Debug)]
pub struct ServerOptions {
    /// The wardle binary.
    pub binary: PathBuf,
    /// `--compaction-interval`.
    pub compaction_interval: String,
    /// The bearer token.
    pub token: String,
}

impl System {
    /// Starts the store and the server, with their files under `dir`.
    pub fn start(dir: &Path, store: &Store, opts: &ServerOptions) -> Result<System, String> {
        // Absolute: the server runs in a directory of its own and must find its data there.
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let dir = &std::fs::canonicalize(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let mut args = vec![
            "--compaction-interval".to_string(),
            opts.compaction_interval.clone(),
        ];
        let (mut etcd, mut disk, mut disk_unavailable) = (None, None, None);
        match store {
            Store::Embedded { disk_size } => {
                let mut data = dir.join("data");
                if let Some(size) = disk_size {
                    match Tmpfs::mount(&dir.join("disk"), *size) {
                        Ok(t) => {
                            data = t.dir().join("data");
                            disk = Some(t);
                        }
                        Err(e) => disk_unavailable = Some(e),
                    }
                }
                args.push("--data-dir".into());
                args.push(data.display().to_string());
            }
            Store::Etcd { members } => {
                let cluster = EtcdCluster::start(&dir.join("etcd"), *members)?;
                args.push("--etcd-servers".into());
                args.push(cluster.urls().join(","));
                etcd = Some(cluster);
            }
        }
        let server = WardleProcess::start(&opts.binary, &dir.join("server"), args, &opts.token)?;
        let target = Arc::new(Target::new(
            server.url(),
            opts.token.clone(),
            server.ca_pem.clone(),
        ));
        Ok(System {
            server,
            etcd,
            disk,
            disk_unavailable,
            target,
        })
    }

    /// Brings everything back: etcd members resumed or restarted, the disk emptied, the server
    /// started if it is not running.
    pub fn heal(&mut self) -> Result<(), String> {
        if let Some(etcd) = &mut self.etcd {
            etcd.heal()?;
        }
        if let Some(disk) = &self.disk {
            disk.free()?;
        }
        if !self.server.running() {
            self.server.restart()?;
            self.target.set_url(self.server.url());
        }
        Ok(())
    }
}
