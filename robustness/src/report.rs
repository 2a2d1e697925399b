//! The report of a run: operations by kind and outcome, faults injected (and not run), watch
//! streams, throughput with and without a fault in progress, and what the checker found.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

use crate::checker::CheckReport;
use crate::faults::FaultRecord;
use crate::history::{History, Outcome, Time};

/// Counts of one kind of operation.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Counts {
    /// Answered 2xx.
    pub ok: u64,
    /// Refused (4xx).
    pub refused: u64,
    /// Unknown outcome (no answer, or a 5xx).
    pub unknown: u64,
}

/// Operations answered per second.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Throughput {
    /// Over the whole run.
    pub overall: f64,
    /// While a fault was in progress (from its start until everything was back).
    pub under_faults: f64,
    /// While none was.
    pub without_faults: f64,
    /// Seconds with a fault in progress.
    pub fault_seconds: f64,
}

/// What a run did and found.
#[derive(Clone, Debug, Serialize)]
pub struct RunReport {
    /// The run's name (the backend).
    pub name: String,
    /// Its seed.
    pub seed: u64,
    /// How long the clients ran.
    pub seconds: f64,
    /// Client operations (including watchers' lists and the harness's own).
    pub operations: u64,
    /// By kind.
    pub by_kind: BTreeMap<String, Counts>,
    /// Watch streams opened.
    pub streams: u64,
    /// Watch events delivered.
    pub events: u64,
    /// Streams that ended in 410 Expired.
    pub expired_streams: u64,
    /// Faults injected, by kind.
    pub faults: BTreeMap<String, u64>,
    /// Faults that could not run, by kind, with the reason.
    pub faults_not_run: BTreeMap<String, String>,
    /// Every fault.
    pub fault_log: Vec<FaultRecord>,
    /// The server exiting by itself (never expected).
    pub server_exits: Vec<String>,
    /// Faults after which the server did not take a write again until it was restarted.
    pub unrecovered: Vec<String>,
    /// Whether every watcher reached the marker written after the run.
    pub watchers_caught_up: bool,
    /// Answered operations per second.
    pub throughput: Throughput,
    /// What the checker found.
    pub check: CheckReport,
    /// Where the history and logs are.
    pub out_dir: PathBuf,
}

impl RunReport {
    /// The report of a run.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        name: &str,
        seed: u64,
        ran: Duration,
        history: &History,
        fault_log: Vec<FaultRecord>,
        server_exits: Vec<String>,
        unrecovered: Vec<String>,
        watchers_caught_up: bool,
        check: CheckReport,
        out_dir: &Path,
    ) -> RunReport {
        let mut by_kind: BTreeMap<String, Counts> = BTreeMap::new();
        for op in &history.operations {
            let c = by_kind.entry(op.request.name().to_string()).or_default();
            match op.outcome {
                Outcome::Error { .. } => c.refused += 1,
                Outcome::Unknown { .. } => c.unknown += 1,
                _ => c.ok += 1,
            }
        }
        let mut faults = BTreeMap::new();
        let mut faults_not_run = BTreeMap::new();
        for f in &fault_log {
            if f.injected {
                *faults.entry(f.kind.name().to_string()).or_insert(0) += 1;
            } else {
                faults_not_run.insert(f.kind.name().to_string(), f.detail.clone());
            }
        }
        // Throughput: answers (2xx or 4xx) that came back in and out of fault windows.
        let windows: Vec<(Time, Time)> = fault_log
            .iter()
            .filter(|f| f.injected)
            .map(|f| (f.start, f.end))
            .collect();
        let in_fault = |t: Time| windows.iter().any(|&(s, e)| s <= t && t <= e);
        let fault_nanos: u64 = merged(&windows).iter().map(|(s, e)| e - s).sum();
        let answered = history
            .operations
            .iter()
            .filter(|o| !o.outcome.is_unknown());
        let (mut during, mut outside) = (0u64, 0u64);
        for op in answered {
            if in_fault(op.ret) {
                during += 1;
            } else {
                outside += 1;
            }
        }
        let secs = ran.as_secs_f64().max(1e-9);
        let fault_secs = fault_nanos as f64 / 1e9;
        let rate = |n: u64, s: f64| if s > 0.0 { n as f64 / s } else { 0.0 };
        RunReport {
            name: name.to_string(),
            seed,
            seconds: ran.as_secs_f64(),
            operations: history.operations.len() as u64,
            by_kind,
            streams: history.streams.len() as u64,
            events: history.streams.iter().map(|s| s.events.len() as u64).sum(),
            expired_streams: history
                .streams
                .iter()
                .filter(|s| matches!(s.end, crate::history::StreamEnd::Expired { .. }))
                .count() as u64,
            faults,
            faults_not_run,
            fault_log,
            server_exits,
            unrecovered,
            watchers_caught_up,
            throughput: Throughput {
                overall: rate(during + outside, secs),
                under_faults: rate(during, fault_secs),
                without_faults: rate(outside, (secs - fault_secs).max(0.0)),
                fault_seconds: fault_secs,
            },
            check,
            out_dir: out_dir.to_path_buf(),
        }
    }

    /// Whether the run passed: no violation, every check conclusive, no server crash, the server
    /// back after every fault, and every watcher caught up.
    pub fn passed(&self) -> bool {
        self.check.passed()
            && self.server_exits.is_empty()
            && self.unrecovered.is_empty()
            && self.watchers_caught_up
    }

    /// A few lines for people.
    pub fn summary(&self) -> String {
        let mut s = String::new();
        let ok: u64 = self.by_kind.values().map(|c| c.ok).sum();
        let refused: u64 = self.by_kind.values().map(|c| c.refused).sum();
        let unknown: u64 = self.by_kind.values().map(|c| c.unknown).sum();
        let _ = writeln!(
            s,
            "{}: seed {} — {:.0} s, {} operations ({ok} ok, {refused} refused, {unknown} unknown), {} watch streams ({} expired), {} events",
            self.name,
            self.seed,
            self.seconds,
            self.operations,
            self.streams,
            self.expired_streams,
            self.events
        );
        let injected: u64 = self.faults.values().sum();
        let _ = writeln!(
            s,
            "  faults injected: {injected} {:?}{}",
            self.faults,
            if self.faults_not_run.is_empty() {
                String::new()
            } else {
                format!("; NOT RUN: {:?}", self.faults_not_run)
            }
        );
        let _ = writeln!(
            s,
            "  throughput: {:.1} answered ops/s overall, {:.1} under faults ({:.0} s of faults), {:.1} without",
            self.throughput.overall,
            self.throughput.under_faults,
            self.throughput.fault_seconds,
            self.throughput.without_faults
        );
        let c = &self.check;
        let _ = writeln!(
            s,
            "  checked: {} key operations, {} committed changes ({} revisions unobserved), unknown outcomes: {} committed, {} not, {} open",
            c.key_operations,
            c.committed_changes,
            c.unobserved_revisions,
            c.unknown_committed,
            c.unknown_not_committed,
            c.unknown_open
        );
        let _ = writeln!(
            s,
            "  violations: {}{}{}{}{}",
            c.violations.len(),
            if c.inconclusive.is_empty() {
                String::new()
            } else {
                format!("; INCONCLUSIVE: {:?}", c.inconclusive)
            },
            if self.server_exits.is_empty() {
                String::new()
            } else {
                format!("; SERVER EXITED {} time(s)", self.server_exits.len())
            },
            if self.unrecovered.is_empty() {
                String::new()
            } else {
                format!(
                    "; NO RECOVERY after {} fault(s) until a restart",
                    self.unrecovered.len()
                )
            },
            if self.watchers_caught_up {
                ""
            } else {
                "; a watcher never reached the final marker"
            }
        );
        for v in &c.violations {
            let _ = writeln!(s, "    {}: {}", v.property, v.message);
        }
        for u in &self.unrecovered {
            let first = u.lines().next().unwrap_or_default();
            let _ = writeln!(s, "    no recovery {first}");
        }
        let _ = write!(s, "  history and logs: {}", self.out_dir.display());
        s
    }
}

/// Overlapping windows merged.
fn merged(windows: &[(Time, Time)]) -> Vec<(Time, Time)> {
    let mut w = windows.to_vec();
    w.sort();
    let mut out: Vec<(Time, Time)> = Vec::new();
    for (s, e) in w {
        match out.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => out.push((s, e)),
        }
    }
    out
}
