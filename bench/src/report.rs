//! The results of a run: one row per scenario, framework against baseline, written as a
//! markdown table and as JSON.

use std::fmt::Write as _;
use std::time::Duration;

use hdrhistogram::Histogram;
use serde::Serialize;

use crate::peer::versus::{self, PEER, Versus};
use crate::process::Usage;

/// A per-delivery figure for a note, with two decimals, or "–" when there is none.
pub fn per_delivery(figure: Option<f64>) -> String {
    figure.map_or("–".into(), |f| format!("{f:.2}"))
}

/// The figures of one server in one scenario; a figure that does not apply is `None`.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Measurement {
    /// Successful requests (or watch deliveries) per second.
    pub requests_per_second: Option<f64>,
    /// Median latency in milliseconds (for start-up: the median time to ready).
    pub p50_ms: Option<f64>,
    /// 99th-percentile latency in milliseconds (for start-up: the slowest start).
    pub p99_ms: Option<f64>,
    /// CPU seconds of the server processes over the measured time.
    pub cpu_seconds: Option<f64>,
    /// CPU seconds of the server under test alone, where `cpu_seconds` counts more processes
    /// (etcd, the development host).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub own_cpu_seconds: Option<f64>,
    /// The server's highest resident memory over the measured time, in MiB.
    pub peak_rss_mib: Option<f64>,
    /// Write system calls of the server processes over the measured time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub write_calls: Option<u64>,
    /// Write system calls of the server under test alone, where `write_calls` counts more
    /// processes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub own_write_calls: Option<u64>,
    /// Successful requests, deliveries or runs.
    pub count: u64,
    /// Failed ones.
    pub errors: u64,
    /// The first failure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_error: Option<String>,
}

impl Measurement {
    /// From a count over a time and a histogram of latencies in microseconds.
    pub fn of_latencies(
        count: u64,
        errors: u64,
        elapsed: Duration,
        latencies: &Histogram<u64>,
        usage: Usage,
    ) -> Self {
        let ms = |q: f64| {
            (!latencies.is_empty()).then(|| latencies.value_at_quantile(q) as f64 / 1000.0)
        };
        Measurement {
            requests_per_second: (elapsed > Duration::ZERO)
                .then(|| count as f64 / elapsed.as_secs_f64()),
            p50_ms: ms(0.50),
            p99_ms: ms(0.99),
            cpu_seconds: Some(usage.cpu_seconds),
            own_cpu_seconds: (usage.first_cpu_seconds != usage.cpu_seconds)
                .then_some(usage.first_cpu_seconds),
            peak_rss_mib: Some(mib(usage.peak_rss)),
            // A server that answered wrote at least once: none counted means not measured.
            write_calls: (usage.write_calls > 0).then_some(usage.write_calls),
            own_write_calls: (usage.write_calls > 0
                && usage.first_cpu_seconds != usage.cpu_seconds)
                .then_some(usage.first_write_calls),
            count,
            errors,
            first_error: None,
        }
    }

    /// Write system calls per counted request (or delivery) of all probed processes, and of
    /// the server under test alone when more were probed.
    pub fn writes_per_request(&self) -> (Option<f64>, Option<f64>) {
        let per = |n: Option<u64>| {
            n.filter(|_| self.count > 0)
                .map(|n| n as f64 / self.count as f64)
        };
        (per(self.write_calls), per(self.own_write_calls))
    }

    /// CPU microseconds per counted request (all probed processes).
    pub fn cpu_micros_per_request(&self) -> Option<f64> {
        let cpu = self.cpu_seconds?;
        (self.count > 0 && self.requests_per_second.is_some())
            .then(|| cpu * 1e6 / self.count as f64)
    }

    /// CPU microseconds per counted request of the server under test alone.
    pub fn own_cpu_micros_per_request(&self) -> Option<f64> {
        let cpu = self.own_cpu_seconds.or(self.cpu_seconds)?;
        (self.count > 0).then(|| cpu * 1e6 / self.count as f64)
    }

    /// With the first failure recorded.
    pub fn with_error(mut self, error: Option<String>) -> Self {
        self.first_error = error;
        self
    }
}

/// Bytes in MiB.
pub fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

/// One scenario's result.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    /// What was measured.
    pub scenario: String,
    /// wardle's figures.
    pub framework: Measurement,
    /// What wardle is compared with.
    pub baseline_name: String,
    /// Its figures.
    pub baseline: Measurement,
    /// The figure the ratio compares, and which way is better.
    pub compared: String,
    /// wardle's figure divided by the baseline's.
    pub ratio: Option<f64>,
    /// The target for this scenario, if it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<Target>,
    /// Extra figures (object counts, sizes).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// Where the row is a point of the concurrency sweep: the operation and the clients.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sweep: Option<SweepPoint>,
    /// Kubernetes' sample-apiserver in the same scenario, where the row has it (the peer
    /// group), and wardle's ratios to it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peer: Option<Versus>,
}

impl Row {
    /// A row comparing `framework` with `baseline` on the figure `compared`.
    pub fn new(
        scenario: impl Into<String>,
        framework: Measurement,
        baseline_name: impl Into<String>,
        baseline: Measurement,
        compared: impl Into<String>,
        ratio: Option<f64>,
    ) -> Self {
        Row {
            scenario: scenario.into(),
            framework,
            baseline_name: baseline_name.into(),
            baseline,
            compared: compared.into(),
            ratio,
            target: None,
            notes: Vec::new(),
            sweep: None,
            peer: None,
        }
    }

    /// With sample-apiserver's figures beside wardle's.
    pub fn peer(mut self, versus: Versus) -> Self {
        self.peer = Some(versus);
        self
    }

    /// With a target.
    pub fn target(mut self, target: Target) -> Self {
        self.target = Some(target);
        self
    }

    /// With a note.
    pub fn note(mut self, note: impl Into<String>) -> Self {
        self.notes.push(note.into());
        self
    }
}

/// A point of the concurrency sweep.
#[derive(Clone, Debug, Serialize)]
pub struct SweepPoint {
    /// `GET` or `CREATE`.
    pub operation: String,
    /// Closed-loop clients.
    pub clients: usize,
}

/// Resident memory of a server holding some objects.
#[derive(Clone, Debug, Serialize)]
pub struct MemoryPoint {
    /// Objects stored.
    pub objects: u64,
    /// The server's resident memory, in MiB.
    pub rss_mib: f64,
    /// The objects' JSON (one create answer's size each), in MiB.
    pub json_mib: f64,
}

/// A target, the value it judges and whether it was met.
#[derive(Clone, Debug, Serialize)]
pub struct Target {
    /// The target, e.g. `ratio ≥ 0.7`.
    pub text: String,
    /// The figure judged.
    pub value: Option<f64>,
    /// The bound.
    pub bound: f64,
    /// Whether a higher value is better (`≥`) or a lower (`≤`).
    pub higher_is_better: bool,
    /// Whether this run met it.
    pub met: bool,
}

impl Target {
    /// `value ≥ min`.
    pub fn at_least(what: &str, value: Option<f64>, min: f64) -> Self {
        Target {
            text: format!("{what} ≥ {min}"),
            value,
            bound: min,
            higher_is_better: true,
            met: value.is_some_and(|v| v >= min),
        }
    }

    /// `value ≤ max`.
    pub fn at_most(what: &str, value: Option<f64>, max: f64) -> Self {
        Target {
            text: format!("{what} ≤ {max}"),
            value,
            bound: max,
            higher_is_better: false,
            met: value.is_some_and(|v| v <= max),
        }
    }

    /// `met` or `missed`, with a mark.
    pub fn verdict(&self) -> &'static str {
        if self.met { "✅ met" } else { "❌ missed" }
    }

    /// The judged figure as the tables print it, with more decimals where the usual ones
    /// would round it onto the bound and so hide the side of it the value is on (2.004
    /// against `≤ 2` would read "2.00 ❌ missed").
    pub fn shown(&self) -> String {
        let usual = figure(self.value);
        match self.value {
            Some(v) if v != self.bound && usual.parse::<f64>() == Ok(self.bound) => (3..=9)
                .map(|decimals| format!("{v:.decimals$}"))
                .find(|s| s.parse::<f64>() != Ok(self.bound))
                .unwrap_or_else(|| v.to_string()),
            _ => usual,
        }
    }
}

/// A whole run.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// `full` or `smoke`.
    pub mode: String,
    /// The machine: CPU model, cores, memory, kernel.
    pub machine: String,
    /// Connections of the closed-loop scenarios.
    pub concurrency: usize,
    /// Seconds the whole run took.
    pub run_seconds: f64,
    /// The scenarios.
    pub rows: Vec<Row>,
    /// wardle's resident memory as it fills up (the memory chart).
    pub memory_curve: Vec<MemoryPoint>,
    /// The machine's load average (1, 5 and 15 minutes) when the run began and when it ended.
    pub load_average: [String; 2],
    /// The share of the machine's CPU time the hypervisor gave to other guests during the run
    /// (`steal` in `/proc/stat`), in percent; `None` where the kernel does not report it.
    pub stolen_percent: Option<f64>,
}

fn figure(v: Option<f64>) -> String {
    match v {
        None => "–".into(),
        Some(v) if v >= 1000.0 => format!("{v:.0}"),
        Some(v) if v >= 10.0 => format!("{v:.1}"),
        Some(v) => format!("{v:.2}"),
    }
}

impl Report {
    /// The markdown table: two lines a scenario, wardle then its baseline.
    pub fn markdown(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "| scenario | server | req/s | p50 ms | p99 ms | CPU s | CPU µs/req | peak RSS MiB | errors | ratio | target |"
        );
        let _ = writeln!(out, "|---|---|---:|---:|---:|---:|---:|---:|---:|---|---|");
        for row in &self.rows {
            let target = row.target.as_ref().map_or("–".to_string(), |t| {
                format!("{}: {} {}", t.text, t.shown(), t.verdict())
            });
            let ratio = format!("{} ({})", figure(row.ratio), row.compared);
            let mut lines = vec![
                ("wardle", &row.framework, ratio, target),
                (
                    row.baseline_name.as_str(),
                    &row.baseline,
                    String::new(),
                    String::new(),
                ),
            ];
            if let Some(v) = &row.peer {
                let (what, r) = match v.per_cpu_second_ratio {
                    Some(r) => ("req/CPU-s", Some(r)),
                    None if v.bytes_ratio.is_some() => ("bytes", v.bytes_ratio),
                    None => ("p50", v.p50_ratio),
                };
                let targets: Vec<String> = v
                    .targets
                    .iter()
                    .map(|t| format!("{}: {} {}", t.text, t.shown(), t.verdict()))
                    .collect();
                lines.push((
                    PEER,
                    &v.peer,
                    format!("wardle ÷ {PEER}: {} ({what})", figure(r)),
                    targets.join("; "),
                ));
            }
            for (server, m, ratio, target) in lines {
                let _ = writeln!(
                    out,
                    "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                    if server == "wardle" {
                        row.scenario.as_str()
                    } else {
                        ""
                    },
                    server,
                    figure(m.requests_per_second),
                    figure(m.p50_ms),
                    figure(m.p99_ms),
                    figure(m.cpu_seconds),
                    figure(m.cpu_micros_per_request()),
                    figure(m.peak_rss_mib),
                    m.errors,
                    ratio,
                    target,
                );
            }
        }
        let notes: Vec<String> = self
            .rows
            .iter()
            .flat_map(|r| {
                let errors = [
                    ("wardle", &r.framework),
                    (r.baseline_name.as_str(), &r.baseline),
                ]
                .into_iter()
                .chain(r.peer.as_ref().map(|v| (versus::PEER, &v.peer)))
                .filter(|(_, m)| m.errors > 0)
                .map(move |(server, m)| {
                    format!(
                        "- {} ({server}): {} errors, the first: {}",
                        r.scenario,
                        m.errors,
                        m.first_error.as_deref().unwrap_or("unknown")
                    )
                });
                r.notes
                    .iter()
                    .map(move |n| format!("- {}: {n}", r.scenario))
                    .chain(errors)
            })
            .collect();
        if !notes.is_empty() {
            let _ = writeln!(out, "\n{}", notes.join("\n"));
        }
        out.push_str(&versus::markdown(&self.rows));
        let targets: Vec<(&Row, &Target)> = self
            .rows
            .iter()
            .filter_map(|r| r.target.as_ref().map(|t| (r, t)))
            .collect();
        if !targets.is_empty() {
            let _ = writeln!(out, "\n| target | scenario | this run | |");
            let _ = writeln!(out, "|---|---|---:|---|");
            for (row, t) in targets {
                let _ = writeln!(
                    out,
                    "| {} | {} | {} | {} |",
                    t.text,
                    row.scenario,
                    t.shown(),
                    t.verdict()
                );
            }
        }
        out
    }
}

/// What this machine is, from `/proc`.
pub fn machine() -> String {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name"))
        .map(|m| m.trim_start_matches([' ', '\t', ':']).to_string())
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let mem_gib = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kib| kib / 1024.0 / 1024.0);
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    format!(
        "{model}, {cores} cores, {mem_gib:.0} GiB, Linux {}",
        kernel.trim()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_figure_rounded_onto_its_bound_shows_its_side() {
        // Rounded onto the bound: more decimals, on the side the verdict says.
        let missed = Target::at_most("ratio", Some(2.004), 2.0);
        assert!(!missed.met);
        assert_eq!(missed.shown(), "2.004");
        let short = Target::at_least("ratio", Some(0.8497), 0.85);
        assert!(!short.met);
        assert_eq!(short.shown(), "0.8497");
        let met = Target::at_least("ratio", Some(0.8503), 0.85);
        assert!(met.met);
        assert_eq!(met.shown(), "0.8503");
        let just = Target::at_most("ratio", Some(1.4951), 1.5);
        assert!(just.met);
        assert_eq!(just.shown(), "1.495");
        // Otherwise as every other figure.
        assert_eq!(Target::at_most("ratio", Some(2.0), 2.0).shown(), "2.00");
        assert_eq!(Target::at_most("ratio", Some(1.48), 1.5).shown(), "1.48");
        assert_eq!(Target::at_most("p99", Some(157.44), 100.0).shown(), "157.4");
        assert_eq!(Target::at_most("p99", None, 100.0).shown(), "–");
    }
}
