//! The recorder: every HTTP exchange and every watch line goes to a JSON-lines log as it
//! happens (`exchanges.jsonl`), and the operations and streams the checker reads are kept in
//! memory.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use serde_json::{Value, json};

use crate::history::{History, Operation, Time, WatchStream};

/// The run's clock: nanoseconds since its start, monotonic.
#[derive(Clone, Copy, Debug)]
pub struct Clock {
    start: Instant,
}

impl Clock {
    /// A clock starting now.
    pub fn new() -> Clock {
        Clock {
            start: Instant::now(),
        }
    }

    /// Nanoseconds since the start.
    pub fn now(&self) -> Time {
        self.start.elapsed().as_nanos() as Time
    }
}

impl Default for Clock {
    fn default() -> Self {
        Clock::new()
    }
}

/// Collects the history of a run.
pub struct Recorder {
    /// The run's clock.
    pub clock: Clock,
    next_id: AtomicU64,
    log: Mutex<Option<BufWriter<File>>>,
    operations: Mutex<Vec<Operation>>,
    streams: Mutex<Vec<WatchStream>>,
}

impl Recorder {
    /// A recorder logging exchanges to `log` (none: in memory only).
    pub fn new(log: Option<&Path>) -> std::io::Result<Recorder> {
        let log = match log {
            Some(path) => Some(BufWriter::new(File::create(path)?)),
            None => None,
        };
        Ok(Recorder {
            clock: Clock::new(),
            next_id: AtomicU64::new(1),
            log: Mutex::new(log),
            operations: Mutex::new(Vec::new()),
            streams: Mutex::new(Vec::new()),
        })
    }

    /// A new operation or stream number.
    pub fn next_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// Logs one record (an HTTP exchange, a watch line, a fault).
    pub fn log(&self, record: Value) {
        let mut log = self.log.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(w) = log.as_mut() {
            let _ = serde_json::to_writer(&mut *w, &record);
            let _ = w.write_all(b"\n");
        }
    }

    /// Logs an HTTP exchange of operation or stream `id`.
    #[allow(clippy::too_many_arguments)]
    pub fn exchange(
        &self,
        id: u64,
        method: &str,
        path: &str,
        body: Option<&str>,
        status: Option<u16>,
        response: &str,
        invoke: Time,
        ret: Time,
    ) {
        self.log(json!({
            "kind": "http",
            "id": id,
            "method": method,
            "path": path,
            "body": body,
            "status": status,
            "response": response,
            "invoke": invoke,
            "ret": ret,
        }));
    }

    /// Records a finished operation.
    pub fn operation(&self, op: Operation) {
        self.log(json!({"kind": "operation", "operation": &op}));
        self.operations
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(op);
    }

    /// Records a finished watch stream.
    pub fn stream(&self, stream: WatchStream) {
        self.log(json!({
            "kind": "stream",
            "id": stream.id,
            "watcher": stream.watcher,
            "start": stream.start,
            "from": stream.from,
            "end": stream.end,
            "events": stream.events.len(),
        }));
        self.streams
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(stream);
    }

    /// Flushes the log.
    pub fn flush(&self) {
        let mut log = self.log.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(w) = log.as_mut() {
            let _ = w.flush();
        }
    }

    /// The history so far.
    pub fn history(&self, keys: Vec<String>, start_rv: u64, final_list: Option<u64>) -> History {
        History {
            keys,
            start_rv,
            operations: self
                .operations
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone(),
            streams: self
                .streams
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone(),
            final_list,
        }
    }
}
