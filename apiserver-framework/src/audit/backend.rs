//! Where audit events go: the [`AuditBackend`] trait, the JSON-lines [`LogBackend`]
//! (`--audit-log-path`, upstream's `plugin/pkg/audit/log` in `json` format, blocking mode) and
//! the [`Union`] of several backends (the log and the webhook).

use std::io::Write;
use std::path::Path;

use futures::future::BoxFuture;
use parking_lot::Mutex;

use super::event::Event;
use super::rotation::RotatingFile;

/// Receives audit events.
pub trait AuditBackend: Send + Sync + 'static {
    /// Records one event; failures are the backend's to report (requests go on).
    fn process(&self, event: &Event);

    /// Whether the request waits for its events to be stored ([`AuditBackend::store`]), as
    /// upstream's blocking backends make it.
    fn blocks(&self) -> bool {
        false
    }

    /// Stores one event while the request waits: whether it counts as stored (a failure at
    /// the `RequestReceived` stage fails the request). By default, [`AuditBackend::process`].
    fn store<'a>(&'a self, event: &'a Event) -> BoxFuture<'a, bool> {
        self.process(event);
        Box::pin(std::future::ready(true))
    }
}

/// Writes each event as one line of JSON to a file (rotated by size) or to stdout.
pub struct LogBackend {
    out: Mutex<Box<dyn Write + Send>>,
}

impl LogBackend {
    /// A backend writing to `path`, rotated past `max_size_mb` (0: 100 MB) keeping
    /// `max_backups` backups (0: all) no older than `max_age_days` (0: any age). The path `-`
    /// means stdout.
    pub fn open(
        path: &str,
        max_size_mb: u64,
        max_backups: usize,
        max_age_days: u64,
    ) -> std::io::Result<Self> {
        let out: Box<dyn Write + Send> = if path == "-" {
            Box::new(std::io::stdout())
        } else {
            Box::new(RotatingFile::open(
                Path::new(path),
                max_size_mb,
                max_backups,
                max_age_days,
            )?)
        };
        Ok(Self::to_writer(out))
    }

    /// A backend writing to any writer.
    pub fn to_writer(out: Box<dyn Write + Send>) -> Self {
        LogBackend {
            out: Mutex::new(out),
        }
    }
}

impl AuditBackend for LogBackend {
    fn process(&self, event: &Event) {
        let mut line = match serde_json::to_vec(event) {
            Ok(line) => line,
            Err(e) => {
                tracing::error!(error = %e, "could not encode an audit event");
                return;
            }
        };
        line.push(b'\n');
        let mut out = self.out.lock();
        if let Err(e) = out.write_all(&line).and_then(|_| out.flush()) {
            tracing::error!(error = %e, "could not write an audit event");
        }
    }
}

/// Every event to each of several backends, in order (upstream's union backend).
pub(crate) struct Union(pub Vec<std::sync::Arc<dyn AuditBackend>>);

impl AuditBackend for Union {
    fn process(&self, event: &Event) {
        for backend in &self.0 {
            backend.process(event);
        }
    }

    fn blocks(&self) -> bool {
        self.0.iter().any(|b| b.blocks())
    }

    fn store<'a>(&'a self, event: &'a Event) -> BoxFuture<'a, bool> {
        Box::pin(async move {
            let mut stored = true;
            for backend in &self.0 {
                stored &= backend.store(event).await;
            }
            stored
        })
    }
}
