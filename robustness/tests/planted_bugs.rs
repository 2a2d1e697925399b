//! The checker catches bugs: wardle served in-process (its `app()`) on a storage wrapper that
//! plants one bug, with the harness's clients and watchers against it over HTTPS, must fail
//! naming the right property. A wrapper that plants nothing must pass.
//!
//! The wrapper sits on the framework's public `Storage` trait, given to the server through
//! `App::server_builder().storage(…)`, with no watch cache in front, so each bug reaches clients
//! as planted.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use apiserver_framework::cli::{LocalOptions, local};
use apiserver_framework::storage::memory::MemoryStorage;
use apiserver_framework::storage::{
    KeyValue, ListPage, ListRequest, Storage, StorageError, WatchStream,
};
use apiserver_robustness::api::Target;
use apiserver_robustness::checker::CheckOptions;
use apiserver_robustness::faults::FaultOptions;
use apiserver_robustness::report::RunReport;
use apiserver_robustness::run::{Backend, RunConfig, run};
use apiserver_robustness::violation::Property;
use bytes::Bytes;
use futures::StreamExt;

/// The bug a [`Planted`] storage has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Bug {
    /// None: the control.
    None,
    /// Every watch stream drops its third event.
    DropWatchEvent,
    /// Every watch stream delivers its third and fourth events swapped.
    ReorderWatchEvents,
    /// Every tenth update is acknowledged, then the previous value is silently put back.
    LoseAcknowledgedWrite,
    /// Updates and deletes ignore the revision they were asked to expect.
    IgnorePrecondition,
}

/// A storage that delegates to a memory store, except for its bug.
struct Planted {
    inner: MemoryStorage,
    bug: Bug,
    updates: AtomicU64,
}

#[async_trait::async_trait]
impl Storage for Planted {
    async fn get(&self, key: &str) -> Result<Option<KeyValue>, StorageError> {
        self.inner.get(key).await
    }

    async fn list(&self, req: ListRequest) -> Result<ListPage, StorageError> {
        self.inner.list(req).await
    }

    async fn create(&self, key: &str, value: Bytes) -> Result<u64, StorageError> {
        self.inner.create(key, value).await
    }

    async fn update(&self, key: &str, value: Bytes, expected: u64) -> Result<u64, StorageError> {
        match self.bug {
            Bug::LoseAcknowledgedWrite
                if self.updates.fetch_add(1, Ordering::Relaxed) % 10 == 9 =>
            {
                let before = self.inner.get(key).await?;
                let rev = self.inner.update(key, value, expected).await?;
                if let Some(before) = before {
                    // Acknowledged at `rev`, then lost.
                    let _ = self.inner.update(key, before.value, rev).await;
                }
                Ok(rev)
            }
            Bug::IgnorePrecondition => {
                // A little time between the caller's read and the write lets races happen.
                tokio::time::sleep(Duration::from_millis(5)).await;
                let current = self.inner.get(key).await?;
                let actual = current.map(|kv| kv.mod_revision).unwrap_or(expected);
                self.inner.update(key, value, actual).await
            }
            _ => self.inner.update(key, value, expected).await,
        }
    }

    async fn delete(
        &self,
        key: &str,
        expected: Option<u64>,
    ) -> Result<(u64, KeyValue), StorageError> {
        if self.bug == Bug::IgnorePrecondition {
            // The planted bug widens its own race window: the delay is the bug, not a wait.
            tokio::time::sleep(Duration::from_millis(5)).await;
            return self.inner.delete(key, None).await;
        }
        self.inner.delete(key, expected).await
    }

    async fn watch(&self, prefix: &str, after: u64) -> Result<WatchStream, StorageError> {
        let events = self.inner.watch(prefix, after).await?;
        Ok(match self.bug {
            Bug::DropWatchEvent => events
                .enumerate()
                .filter(|(i, _)| futures::future::ready(*i != 2))
                .map(|(_, e)| e)
                .boxed(),
            Bug::ReorderWatchEvents => events
                .enumerate()
                .scan(None, |held, (i, e)| {
                    let out = match i {
                        2 => {
                            *held = Some(e);
                            vec![]
                        }
                        3 => vec![e].into_iter().chain(held.take()).collect(),
                        _ => vec![e],
                    };
                    futures::future::ready(Some(futures::stream::iter(out)))
                })
                .flatten()
                .boxed(),
            _ => events,
        })
    }

    async fn current_revision(&self) -> Result<u64, StorageError> {
        self.inner.current_revision().await
    }

    async fn compact(&self, revision: u64) -> Result<(), StorageError> {
        self.inner.compact(revision).await
    }

    fn local_revision(&self) -> Option<u64> {
        self.inner.local_revision()
    }
}

/// Runs the harness for a few seconds against wardle on a storage with `bug`.
async fn run_against(bug: Bug) -> RunReport {
    let dir = tempfile::tempdir().unwrap();
    let storage = Arc::new(Planted {
        inner: MemoryStorage::new(),
        bug,
        updates: AtomicU64::new(0),
    });
    let server = wardle::app().server_builder().storage(storage).build();
    let opts = LocalOptions {
        secure_port: 0,
        cert_dir: dir.path().join("certs"),
        ..Default::default()
    };
    let server = local::start("wardle", Arc::new(server), &opts)
        .await
        .expect("start wardle in-process");
    let target = Arc::new(Target::new(
        server.url.clone(),
        server.token.clone(),
        server.ca_pem.clone(),
    ));
    let seed = 21;
    let report = run(RunConfig {
        backend: Backend::External(target),
        name: format!("{bug:?}"),
        duration: Duration::from_secs(4),
        seed,
        clients: 4,
        watchers: 3,
        keys: 2,
        faults: FaultOptions {
            kinds: Vec::new(),
            quiet: (Duration::ZERO, Duration::ZERO),
            hold: (Duration::ZERO, Duration::ZERO),
        },
        out_dir: dir.path().join("run"),
        request_timeout: Duration::from_secs(10),
        watch_timeout_seconds: (3, 6),
        check: CheckOptions::default(),
        log_exchanges: false,
    })
    .await
    .expect("the run completes");
    println!("{}", report.summary());
    if std::env::var_os("ROBUSTNESS_KEEP").is_some() {
        println!("kept {}", dir.keep().display());
        return report;
    }
    // The failing histories are on disk, named after the property.
    for v in &report.check.violations {
        let files: Vec<String> = std::fs::read_dir(dir.path().join("run/violations"))
            .expect("the violations are written")
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(
            files.iter().any(|f| f.contains(v.property.name())),
            "no file names {}: {files:?}",
            v.property
        );
    }
    report
}

fn properties(report: &RunReport) -> BTreeSet<Property> {
    report.check.properties()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_correct_storage_passes() {
    let report = run_against(Bug::None).await;
    assert!(report.passed(), "{}", report.summary());
    assert!(report.check.key_operations > 100, "{}", report.summary());
    assert!(report.events > 50, "{}", report.summary());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_watch_event_is_a_watch_gap() {
    let report = run_against(Bug::DropWatchEvent).await;
    assert_eq!(
        properties(&report),
        BTreeSet::from([Property::WatchGap]),
        "{}",
        report.summary()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reordered_watch_event_breaks_watch_order() {
    let report = run_against(Bug::ReorderWatchEvents).await;
    assert_eq!(
        properties(&report),
        BTreeSet::from([Property::WatchOrder]),
        "{}",
        report.summary()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_acknowledged_write_breaks_linearizability() {
    let report = run_against(Bug::LoseAcknowledgedWrite).await;
    assert_eq!(
        properties(&report),
        BTreeSet::from([Property::Linearizability]),
        "{}",
        report.summary()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ignored_precondition_breaks_linearizability() {
    let report = run_against(Bug::IgnorePrecondition).await;
    assert_eq!(
        properties(&report),
        BTreeSet::from([Property::Linearizability]),
        "{}",
        report.summary()
    );
}
