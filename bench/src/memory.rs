//! Resident memory: a ready, idle server, and wardle as it fills with objects (with its watch
//! cache on, as it runs by default), read from `/proc`.

use std::path::Path;

use crate::client::Error;
use crate::compare::ratio;
use crate::load::LoadResult;
use crate::plan::Plan;
use crate::process::{Probe, anon_bytes, rss_bytes};
use crate::report::{Measurement, MemoryPoint, Row, Target as Goal, mib};
use crate::requests::fill_from;
use crate::servers::{self, Server};
use crate::tls::Pki;

/// What the memory scenario leaves: its rows, the chart's points, and the filled server.
pub struct Filled {
    /// Idle RSS, idle anonymous memory and RSS with the objects.
    pub rows: Vec<Row>,
    /// wardle's RSS at each step of the fill.
    pub curve: Vec<MemoryPoint>,
    /// wardle (embedded store) holding `plan.memory_objects` Flunders in `bench-memory`.
    pub server: Server,
}

/// Idle RSS of wardle and the baseline, then wardle's RSS as `plan.memory_objects` Flunders
/// are created in `plan.memory_samples` steps; `object_bytes` is one object's JSON.
pub async fn run(
    plan: &Plan,
    work: &Path,
    pki: &Pki,
    recordings: &Path,
    object_bytes: usize,
    say: &impl Fn(&str),
) -> Result<Filled, Error> {
    let idle = |server: &Server| Measurement {
        peak_rss_mib: Some(mib(rss_bytes(server.pid()))),
        count: 1,
        ..Default::default()
    };
    let (wardle, executable) =
        servers::wardle_executable(work, "wardle-memory-use", pki, &[]).await?;
    let base = servers::baseline(work, "baseline-memory-use", pki, recordings).await?;
    // The measured subject is memory: the servers settle before their RSS is read.
    tokio::time::sleep(plan.settle).await;
    let (w, b) = (idle(&wardle), idle(&base));
    let anon = |server: &Server| Measurement {
        peak_rss_mib: Some(mib(anon_bytes(server.pid()))),
        count: 1,
        ..Default::default()
    };
    let (wa, ba) = (anon(&wardle), anon(&base));
    drop(base);
    let idle_rss = rss_bytes(wardle.pid());
    let r = ratio(w.peak_rss_mib, b.peak_rss_mib);
    let idle_row = Row::new(
        "Idle RSS",
        w.clone(),
        "baseline",
        b,
        "RSS, lower is better",
        r,
    )
    .target(Goal::at_most("wardle MiB", w.peak_rss_mib, 20.0))
    .note(format!(
        "ready, before any request but the readiness probes; {executable}"
    ));

    let anon_ratio = ratio(wa.peak_rss_mib, ba.peak_rss_mib);
    let anon_row = Row::new(
        "Idle anonymous memory",
        wa,
        "baseline",
        ba,
        "RssAnon, lower is better",
        anon_ratio,
    )
    .note("the same moment as Idle RSS: heap and stacks, without the executable's pages");

    let n = plan.memory_objects;
    let pid = [wardle.pid()];
    let mut curve = vec![MemoryPoint {
        objects: 0,
        rss_mib: mib(idle_rss),
        json_mib: 0.0,
    }];
    let probe = Probe::start(&pid);
    let mut filled: Option<LoadResult> = None;
    let steps = plan.memory_samples.max(1);
    for step in 1..=steps {
        let range = (n * (step - 1) / steps)..(n * step / steps);
        let end = range.end;
        let result = fill_from(plan, &wardle.target, "bench-memory", "m-", range, &pid).await?;
        match filled.as_mut() {
            Some(f) => f.merge(result),
            None => filled = Some(result),
        }
        let settle = if step == steps {
            plan.settle
        } else {
            plan.settle / 4
        };
        // The measured subject is memory: it settles before each point of the curve is read.
        tokio::time::sleep(settle).await;
        curve.push(MemoryPoint {
            objects: end,
            rss_mib: mib(rss_bytes(wardle.pid())),
            json_mib: mib(object_bytes as u64 * end),
        });
        say(&format!("  {end} objects"));
    }
    let usage = probe.finish();
    let loaded = rss_bytes(wardle.pid());
    let per_object = loaded.saturating_sub(idle_rss) as f64 / n as f64;
    let mut framework = filled.map(|f| f.measurement()).unwrap_or_default();
    framework.cpu_seconds = Some(usage.cpu_seconds);
    framework.peak_rss_mib = Some(mib(loaded));
    let json = Measurement {
        peak_rss_mib: Some(mib(object_bytes as u64 * n)),
        count: n,
        ..Default::default()
    };
    let r = Some(per_object / object_bytes as f64);
    let rows = vec![
        idle_row,
        anon_row,
        Row::new(
            format!("RSS with {n} Flunders"),
            framework,
            "their JSON",
            json,
            "bytes per object ÷ JSON bytes per object, lower is better",
            r,
        )
        .target(Goal::at_most("ratio", r, 2.0))
        .note(format!(
            "{per_object:.0} bytes per object over idle; one object's JSON is {object_bytes} bytes; embedded store, watch cache on; req/s is the create rate while filling"
        )),
    ];
    Ok(Filled {
        rows,
        curve,
        server: wardle,
    })
}
