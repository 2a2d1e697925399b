//! What a run measures and at what sizes: the groups of scenarios `--only` chooses from, the
//! full and smoke plans, and the knobs of a full run.

use std::time::Duration;

use crate::watch::FanOut;

/// The groups of scenarios `--only` can choose, with what each measures.
pub const GROUPS: &[(&str, &str)] = &[
    ("get", "GET one object over HTTP/1.1 and over HTTP/2"),
    (
        "list",
        "LIST 500 objects (with and without gzip), LIST 10,000 unpaged",
    ),
    ("create", "CREATE on the embedded and memory stores"),
    (
        "encryption",
        "GET and CREATE with aesgcm encryption at rest against unencrypted wardle",
    ),
    (
        "etcd",
        "CREATE on etcd against raw puts; wardle's CPU per create",
    ),
    ("watch", "the watch fan-out"),
    ("sweep", "GET and CREATE at 1, 8, 64 and 256 clients"),
    (
        "watchers",
        "10,000 idle watchers' memory, then 1,000 events to them",
    ),
    (
        "aggregator",
        "GET and watch through the development host's aggregator",
    ),
    ("start", "start to ready"),
    (
        "peer",
        "wardle serve beside Kubernetes' sample-apiserver (one dev host, an etcd 3.6 each): GET (HTTP/1.1, HTTP/2), LIST 500, CREATE, UPDATE, apply, LIST 10,000, RssAnon idle and loaded, start to ready, the watch fan-out, RssAnon per stored object and the paged sweep of 100,000",
    ),
    (
        "memory",
        "idle RSS, RSS with 100,000 objects, the paged sweep of them",
    ),
];

/// The rows of the peer group `--rows` can choose (the group's other rows are skipped; both
/// servers are started and filled all the same), with what each measures.
pub const PEER_ROWS: &[(&str, &str)] = &[
    ("start", "start to ready, 10 starts each"),
    ("memory", "idle and loaded anonymous memory"),
    ("get", "GET one object over HTTP/1.1"),
    ("get-h2", "GET one object over HTTP/2"),
    ("list", "LIST 500 objects"),
    ("create", "CREATE"),
    ("update", "UPDATE"),
    ("apply", "server-side apply"),
    ("big-list", "LIST 10,000 objects, unpaged"),
    ("watch", "the watch fan-out to 1,000 watchers"),
    (
        "watch-10000-h2",
        "the watch fan-out to 10,000 watchers over HTTP/2, 100 to a connection",
    ),
    (
        "watch-10000",
        "the watch fan-out to 10,000 watchers over HTTP/1.1, a connection each",
    ),
    (
        "stored",
        "RssAnon per stored object over 100,000 Flunders, and the paged sweep of them",
    ),
];

/// The sizes of a run.
#[derive(Clone, Debug)]
pub struct Plan {
    /// `full` or `smoke`.
    pub mode: &'static str,
    /// Clients of the closed-loop scenarios.
    pub concurrency: usize,
    /// Unmeasured time before each measured load.
    pub warmup: Duration,
    /// Measured time of each load.
    pub measure: Duration,
    /// Clients to an HTTP/2 connection in the HTTP/2 scenarios.
    pub h2_streams: usize,
    /// Objects in the listed collection.
    pub list_size: u64,
    /// Objects in the big unpaged list.
    pub big_list_size: u64,
    /// Clients of the big unpaged list.
    pub big_list_clients: usize,
    /// `limit` of the paged sweep's pages.
    pub page_limit: u64,
    /// The watch fan-out.
    pub fan_out: FanOut,
    /// The peer group's fan-out to many watchers (HTTP/1.1, a connection each, as its
    /// fan-out to `fan_out.watchers`).
    pub peer_many_watchers: FanOut,
    /// The watch fan-outs through the aggregator (each also directly).
    pub aggregated_fan_outs: Vec<FanOut>,
    /// The fan-out to many watchers.
    pub many_watchers: FanOut,
    /// Watchers to an HTTP/2 connection in the fan-out to many watchers.
    pub many_watchers_streams: usize,
    /// Events of the baseline's fan-out to many watchers (fewer than wardle's, at the same
    /// rate, to keep the run short: its p99 is the machine's floor at that rate).
    pub many_watchers_baseline_events: usize,
    /// Clients at each step of the concurrency sweep.
    pub sweep_clients: Vec<usize>,
    /// Measured time of each step of the concurrency sweep.
    pub sweep_measure: Duration,
    /// Cold starts of each server.
    pub start_runs: usize,
    /// Objects stored for the memory figure (and paged through).
    pub memory_objects: u64,
    /// Points of the memory chart.
    pub memory_samples: u64,
    /// How long a server is left to settle before its memory is read.
    pub settle: Duration,
    /// The groups of scenarios to run ([`GROUPS`]); all when empty.
    pub only: Vec<String>,
    /// The rows of the peer group to run ([`PEER_ROWS`]); all when empty.
    pub rows: Vec<String>,
    /// Where the servers' CPU profiles are written, when they are taken (`--profile`).
    pub profile: Option<std::path::PathBuf>,
}

/// The knobs of a full run (`--help`).
#[derive(Clone, Debug)]
pub struct Knobs {
    /// Clients of the closed-loop scenarios.
    pub concurrency: usize,
    /// Measured seconds of each closed-loop comparison.
    pub measure: Duration,
    /// Creates per second of the watch fan-out's writer.
    pub watch_rate: f64,
    /// Creates per second of the writer of the fan-out to many watchers.
    pub many_watch_rate: f64,
    /// Events of the fan-out to many watchers on wardle (the baseline's run has a fifth).
    pub many_watch_events: usize,
    /// Clients to an HTTP/2 connection.
    pub h2_streams: usize,
}

impl Plan {
    /// The full run of the issue: 64 clients, 500 listed objects and 10,000 unpaged, 1,000 ×
    /// 1,000 watch, 10,000 watchers, 100,000 stored objects paged through 500 at a time.
    pub fn full(knobs: &Knobs) -> Self {
        Plan {
            mode: "full",
            concurrency: knobs.concurrency,
            warmup: Duration::from_secs(1),
            measure: knobs.measure,
            h2_streams: knobs.h2_streams,
            list_size: 500,
            big_list_size: 10_000,
            big_list_clients: 8,
            page_limit: 500,
            fan_out: FanOut {
                watchers: 1000,
                events: 1000,
                rate: knobs.watch_rate,
            },
            // 1,000 watchers as directly; 100, which fit in one HTTP/2 connection's default
            // limit of concurrent streams (200 in hyper) when the aggregator multiplexes them.
            // 10,000 watchers at a tenth of the rate: as many deliveries a second as the
            // 1,000-watcher row.
            peer_many_watchers: FanOut {
                watchers: 10_000,
                events: 200,
                rate: knobs.watch_rate / 10.0,
            },
            aggregated_fan_outs: [1000, 100]
                .map(|watchers| FanOut {
                    watchers,
                    events: 1000,
                    rate: knobs.watch_rate,
                })
                .to_vec(),
            many_watchers: FanOut {
                watchers: 10_000,
                events: knobs.many_watch_events,
                rate: knobs.many_watch_rate,
            },
            many_watchers_streams: 100,
            many_watchers_baseline_events: (knobs.many_watch_events / 5).max(1),
            sweep_clients: vec![1, 8, 64, 256],
            sweep_measure: Duration::from_secs(3),
            start_runs: 10,
            memory_objects: 100_000,
            memory_samples: 10,
            settle: Duration::from_secs(2),
            only: Vec::new(),
            rows: Vec::new(),
            profile: None,
        }
    }

    /// A run of a few seconds a scenario that goes through every scenario, for CI.
    pub fn smoke() -> Self {
        Plan {
            mode: "smoke",
            concurrency: 4,
            warmup: Duration::from_millis(100),
            measure: Duration::from_millis(300),
            h2_streams: 2,
            list_size: 20,
            big_list_size: 60,
            big_list_clients: 2,
            page_limit: 50,
            fan_out: FanOut {
                watchers: 10,
                events: 20,
                rate: 200.0,
            },
            peer_many_watchers: FanOut {
                watchers: 40,
                events: 10,
                rate: 100.0,
            },
            aggregated_fan_outs: vec![FanOut {
                watchers: 10,
                events: 20,
                rate: 200.0,
            }],
            many_watchers: FanOut {
                watchers: 40,
                events: 10,
                rate: 100.0,
            },
            many_watchers_streams: 20,
            many_watchers_baseline_events: 10,
            sweep_clients: vec![1, 4],
            sweep_measure: Duration::from_millis(300),
            start_runs: 2,
            memory_objects: 200,
            memory_samples: 2,
            settle: Duration::from_millis(200),
            only: Vec::new(),
            rows: Vec::new(),
            profile: None,
        }
    }

    /// Whether the group of scenarios `group` runs.
    pub fn runs(&self, group: &str) -> bool {
        self.only.is_empty() || self.only.iter().any(|g| g == group)
    }

    /// Whether the peer row `row` ([`PEER_ROWS`]) runs.
    pub fn runs_row(&self, row: &str) -> bool {
        self.rows.is_empty() || self.rows.iter().any(|r| r == row)
    }

    /// The same plan with another measured time (and a warm-up scaled with it).
    pub fn measuring(&self, measure: Duration) -> Plan {
        Plan {
            measure,
            warmup: self.warmup.min(measure / 3),
            ..self.clone()
        }
    }
}
