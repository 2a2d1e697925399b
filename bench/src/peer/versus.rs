//! wardle beside Kubernetes' sample-apiserver in one scenario: the peer's figures, the ratios
//! the issue asks for (throughput per CPU-second of the server process, p99 latency, bytes) and
//! their targets, and the table that shows them beside the ratio to the bare baseline.

use std::fmt::Write as _;

use serde::Serialize;

use crate::compare::ratio;
use crate::report::{Measurement, Row, Target};

/// The peer's name in the tables.
pub const PEER: &str = "sample-apiserver";

/// wardle's figures beside sample-apiserver's in one scenario.
#[derive(Clone, Debug, Serialize)]
pub struct Versus {
    /// sample-apiserver's figures.
    pub peer: Measurement,
    /// wardle's requests per CPU-second of its own process.
    pub framework_per_cpu_second: Option<f64>,
    /// sample-apiserver's requests per CPU-second of its own process.
    pub peer_per_cpu_second: Option<f64>,
    /// wardle's per CPU-second ÷ sample-apiserver's (higher is better).
    pub per_cpu_second_ratio: Option<f64>,
    /// wardle's p50 ÷ sample-apiserver's (lower is better).
    pub p50_ratio: Option<f64>,
    /// wardle's p99 ÷ sample-apiserver's (lower is better).
    pub p99_ratio: Option<f64>,
    /// What the bytes are: a response's body, or anonymous resident memory.
    pub bytes_are: String,
    /// wardle's bytes.
    pub framework_bytes: Option<f64>,
    /// sample-apiserver's bytes.
    pub peer_bytes: Option<f64>,
    /// wardle's bytes ÷ sample-apiserver's (lower is better).
    pub bytes_ratio: Option<f64>,
    /// The targets of this row.
    pub targets: Vec<Target>,
}

/// Requests per CPU-second of the server under test's own process.
pub fn per_cpu_second(m: &Measurement) -> Option<f64> {
    let cpu = m.own_cpu_seconds.or(m.cpu_seconds)?;
    (m.count > 0 && cpu > 0.0 && m.requests_per_second.is_some()).then(|| m.count as f64 / cpu)
}

impl Versus {
    /// A load: throughput per CPU-second (target ≥ 2×), p99 (target ≤ 0.5×), and the bytes
    /// of one answer each where `bytes` has them (wardle's, sample-apiserver's).
    pub fn throughput(
        framework: &Measurement,
        peer: Measurement,
        bytes: Option<(usize, usize)>,
    ) -> Self {
        let (f, p) = (per_cpu_second(framework), per_cpu_second(&peer));
        let per_cpu_second_ratio = ratio(f, p);
        let p99_ratio = ratio(framework.p99_ms, peer.p99_ms);
        let (fb, pb) = (bytes.map(|b| b.0 as f64), bytes.map(|b| b.1 as f64));
        Versus {
            p50_ratio: ratio(framework.p50_ms, peer.p50_ms),
            peer,
            framework_per_cpu_second: f,
            peer_per_cpu_second: p,
            per_cpu_second_ratio,
            p99_ratio,
            bytes_are: match bytes {
                Some(_) => "bytes of an answer's body".into(),
                None => String::new(),
            },
            framework_bytes: fb,
            peer_bytes: pb,
            bytes_ratio: ratio(fb, pb),
            targets: vec![
                Target::at_least("req/CPU-s ÷ peer", per_cpu_second_ratio, 2.0),
                Target::at_most("p99 ÷ peer", p99_ratio, 0.5),
            ],
        }
    }

    /// Anonymous resident memory in MiB (`RssAnon`), target ≤ 0.5×.
    pub fn memory(framework_mib: f64, peer_mib: f64) -> Self {
        Self::anonymous(framework_mib, peer_mib, "RssAnon, MiB")
    }

    /// Anonymous resident memory a stored object (bytes of `RssAnon` gained over the
    /// objects stored), target ≤ 0.5×.
    pub fn per_object(framework_bytes: f64, peer_bytes: f64) -> Self {
        Self::anonymous(framework_bytes, peer_bytes, "RssAnon bytes an object")
    }

    /// A figure of anonymous memory, `what`, target ≤ 0.5×.
    fn anonymous(framework: f64, peer: f64, what: &str) -> Self {
        let r = ratio(Some(framework), Some(peer));
        Versus {
            peer: Measurement {
                peak_rss_mib: (what == "RssAnon, MiB").then_some(peer),
                count: 1,
                ..Default::default()
            },
            framework_per_cpu_second: None,
            peer_per_cpu_second: None,
            per_cpu_second_ratio: None,
            p50_ratio: None,
            p99_ratio: None,
            bytes_are: what.into(),
            framework_bytes: Some(framework),
            peer_bytes: Some(peer),
            bytes_ratio: r,
            targets: vec![Target::at_most("RssAnon ÷ peer", r, 0.5)],
        }
    }

    /// Times to ready: the median (p50) and the slowest (p99) compared; no target.
    pub fn start(framework: &Measurement, peer: Measurement) -> Self {
        Versus {
            p50_ratio: ratio(framework.p50_ms, peer.p50_ms),
            p99_ratio: ratio(framework.p99_ms, peer.p99_ms),
            peer,
            framework_per_cpu_second: None,
            peer_per_cpu_second: None,
            per_cpu_second_ratio: None,
            bytes_are: String::new(),
            framework_bytes: None,
            peer_bytes: None,
            bytes_ratio: None,
            targets: Vec::new(),
        }
    }
}

fn figure(v: Option<f64>) -> String {
    match v {
        None => "–".into(),
        Some(v) if v >= 1000.0 => format!("{v:.0}"),
        Some(v) if v >= 10.0 => format!("{v:.1}"),
        Some(v) => format!("{v:.2}"),
    }
}

/// The table of the rows that have a peer: each figure of wardle and of sample-apiserver with
/// their ratio, the ratio to the bare baseline beside them, and the targets; empty when no row
/// has a peer.
pub fn markdown(rows: &[Row]) -> String {
    let rows: Vec<(&Row, &Versus)> = rows
        .iter()
        .filter_map(|r| r.peer.as_ref().map(|p| (r, p)))
        .collect();
    if rows.is_empty() {
        return String::new();
    }
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\n### wardle ÷ {PEER}\n\n| scenario | req/CPU-s wardle | {PEER} | ÷ | p50 ms wardle | {PEER} | ÷ | p99 ms wardle | {PEER} | ÷ | bytes wardle | {PEER} | ÷ | ÷ bare baseline | targets |"
    );
    let _ = writeln!(
        out,
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|"
    );
    for (row, v) in rows {
        let targets: Vec<String> = v
            .targets
            .iter()
            .map(|t| format!("{}: {} {}", t.text, t.shown(), t.verdict()))
            .collect();
        let bytes_are = if v.bytes_are.is_empty() {
            String::new()
        } else {
            format!(" ({})", v.bytes_are)
        };
        let bare = match row.ratio {
            Some(_) => format!("{} ({})", figure(row.ratio), row.compared),
            None => "–".into(),
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {}{bytes_are} | {} | {} | {bare} | {} |",
            row.scenario,
            figure(v.framework_per_cpu_second),
            figure(v.peer_per_cpu_second),
            figure(v.per_cpu_second_ratio),
            figure(row.framework.p50_ms),
            figure(v.peer.p50_ms),
            figure(v.p50_ratio),
            figure(row.framework.p99_ms),
            figure(v.peer.p99_ms),
            figure(v.p99_ratio),
            figure(v.framework_bytes),
            figure(v.peer_bytes),
            figure(v.bytes_ratio),
            if targets.is_empty() {
                "–".into()
            } else {
                targets.join("; ")
            },
        );
    }
    out
}

/// The bars of the peer chart: one per ratio of each row that has a peer (requests per
/// CPU-second, p99, anonymous memory; the median start where there is nothing else), each with
/// its target.
pub fn chart_rows(rows: &[Row]) -> Vec<Row> {
    let mut bars = Vec::new();
    for row in rows {
        let Some(v) = &row.peer else { continue };
        let bar = |what: &str, r: Option<f64>, better: &str| {
            Row::new(
                format!("{}: {what}", row.scenario),
                Measurement::default(),
                PEER,
                Measurement::default(),
                better,
                r,
            )
        };
        if v.per_cpu_second_ratio.is_some() {
            let r = v.per_cpu_second_ratio;
            bars.push(
                bar("req/CPU-s", r, "higher is better").target(Target::at_least("ratio", r, 2.0)),
            );
            bars.push(
                bar("p99", v.p99_ratio, "lower is better").target(Target::at_most(
                    "ratio",
                    v.p99_ratio,
                    0.5,
                )),
            );
        } else if v.peer_per_cpu_second.is_none() && v.bytes_are.starts_with("RssAnon") {
            bars.push(
                bar("RssAnon", v.bytes_ratio, "lower is better").target(Target::at_most(
                    "ratio",
                    v.bytes_ratio,
                    0.5,
                )),
            );
        } else if v.p50_ratio.is_some() {
            bars.push(bar("median", v.p50_ratio, "lower is better"));
        }
    }
    bars
}
