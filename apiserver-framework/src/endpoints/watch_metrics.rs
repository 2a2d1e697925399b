//! The metrics of watch events, with upstream's names, labels and buckets
//! (`apiserver_watch_events_total` and `apiserver_watch_events_sizes`, by group, version and
//! resource): every event sent to a watcher is counted and its encoded size observed.
//!
//! As upstream's, the families are process-wide ([`global`]); the server's metrics registry
//! serves them (`crate::metrics`, a layer above, registers [`WatchMetrics::collectors`]).

use std::sync::OnceLock;

use prometheus::core::Collector;
use prometheus::{Histogram, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, Opts};

use crate::resource::ResourceInfo;

/// The watch event families.
pub struct WatchMetrics {
    events: IntCounterVec,
    sizes: HistogramVec,
}

/// The process's watch event metrics.
pub fn global() -> &'static WatchMetrics {
    static METRICS: OnceLock<WatchMetrics> = OnceLock::new();
    METRICS.get_or_init(|| {
        let labels = &["group", "version", "resource"];
        WatchMetrics {
            events: IntCounterVec::new(
                Opts::new(
                    "apiserver_watch_events_total",
                    "Number of events sent in watch clients",
                ),
                labels,
            )
            .expect("valid counter"),
            sizes: HistogramVec::new(
                HistogramOpts::new(
                    "apiserver_watch_events_sizes",
                    "Watch event size distribution in bytes",
                )
                // 1 KiB, 2 KiB, … 128 KiB.
                .buckets(prometheus::exponential_buckets(1024.0, 2.0, 8).expect("valid buckets")),
                labels,
            )
            .expect("valid histogram"),
        }
    })
}

impl WatchMetrics {
    /// The families, for a registry to serve.
    pub fn collectors(&self) -> Vec<Box<dyn Collector>> {
        vec![Box::new(self.events.clone()), Box::new(self.sizes.clone())]
    }

    /// The series of one watch of `info`'s resource, looked up once for the watch's life.
    pub(crate) fn of(&self, info: &ResourceInfo) -> WatchSeries {
        let labels = [
            info.group.as_str(),
            info.version.as_str(),
            info.plural.as_str(),
        ];
        WatchSeries {
            events: self.events.with_label_values(&labels),
            sizes: self.sizes.with_label_values(&labels),
        }
    }
}

/// The series one watch records its events into.
pub(crate) struct WatchSeries {
    events: IntCounter,
    sizes: Histogram,
}

impl WatchSeries {
    /// One event of `bytes` sent.
    pub(crate) fn sent(&self, bytes: usize) {
        self.events.inc();
        self.sizes.observe(bytes as f64);
    }
}
