//! Many watchers: the memory an idle watch costs a server, and the delivery of events to all
//! of them, on wardle and on the baseline. The watches share HTTP/2 connections, as the
//! aggregator and client-go's informers share them.

use std::path::Path;

use crate::client::Error;
use crate::compare::ratio;
use crate::plan::Plan;
use crate::process::{open_files_limit, rss_bytes};
use crate::report::{Measurement, Row, Target as Goal, mib};
use crate::requests::{collection, create};
use crate::servers::{self, Server};
use crate::tls::Pki;
use crate::watch::{self, FanOut, OPEN_WITHIN};

/// What one server did with the watchers.
struct Side {
    idle: Measurement,
    bytes_per_watcher: f64,
    delivery: Measurement,
    connections: usize,
    open_files: Option<u64>,
}

async fn measure(plan: &Plan, server: &Server, shape: FanOut) -> Result<Side, Error> {
    let namespace = "bench-watchers";
    let path = format!("{}?watch=true", collection(namespace));
    let target = server.target.http2(plan.many_watchers_streams);
    // The measured subject is memory: the server settles before its RSS is read.
    tokio::time::sleep(plan.settle).await;
    let before = rss_bytes(server.pid());
    let opened = watch::open(&target, shape.watchers, &path, OPEN_WITHIN).await?;
    let connections = opened.connections;
    // The measured subject is memory: it settles again with the watchers open.
    tokio::time::sleep(plan.settle).await;
    let after = rss_bytes(server.pid());
    let bytes_per_watcher = after.saturating_sub(before) as f64 / opened.len() as f64;
    let idle = Measurement {
        peak_rss_mib: Some(mib(after)),
        count: opened.len() as u64,
        ..Default::default()
    };
    let make = |t: &_, i: usize| create(t, namespace, &watch::object_name(i));
    let delivery = watch::deliver(opened, &server.target, shape, make, &[server.pid()]).await?;
    Ok(Side {
        idle,
        bytes_per_watcher,
        delivery,
        connections,
        open_files: open_files_limit(server.pid()),
    })
}

/// The rows: RSS per idle watcher, and the delivery of `plan.many_watchers.events` events to
/// every watcher, each on a fresh wardle (embedded store) and baseline.
pub async fn run(
    plan: &Plan,
    work: &Path,
    pki: &Pki,
    recordings: &Path,
) -> Result<Vec<Row>, Error> {
    let shape = plan.many_watchers;
    let w = {
        let wardle = servers::wardle(work, "wardle-watchers", pki, &[]).await?;
        measure(plan, &wardle, shape).await?
    };
    let b = {
        let base = servers::baseline(work, "baseline-watchers", pki, recordings).await?;
        let events = plan.many_watchers_baseline_events;
        measure(plan, &base, FanOut { events, ..shape }).await?
    };
    let (w_kib, b_kib) = (w.bytes_per_watcher / 1024.0, b.bytes_per_watcher / 1024.0);
    let per_watcher = ratio(Some(w.bytes_per_watcher), Some(b.bytes_per_watcher));
    let open_files = w
        .open_files
        .map_or("unknown".into(), |limit| limit.to_string());
    let rss_row = Row::new(
        format!("RSS per idle watcher, {} watchers", shape.watchers),
        w.idle,
        "baseline",
        b.idle,
        "RSS per watcher ÷ the baseline's, lower is better",
        per_watcher,
    )
    .target(Goal::at_most(
        "wardle KiB per watcher",
        Some(w_kib),
        10.0,
    ))
    .note(format!(
        "wardle {:.1} KiB per watcher, the baseline {:.1} KiB; {} watches to an HTTP/2 connection ({} connections); the servers' open-file limit {open_files}; peak RSS is with every watch open",
        w_kib,
        b_kib,
        plan.many_watchers_streams,
        w.connections,
    ));
    let r = ratio(w.delivery.p99_ms, b.delivery.p99_ms);
    let writes = (
        crate::report::per_delivery(w.delivery.writes_per_request().0),
        crate::report::per_delivery(b.delivery.writes_per_request().0),
    );
    let delivery_row = Row::new(
        format!(
            "WATCH {} watchers × {} events",
            shape.watchers, shape.events
        ),
        w.delivery.clone(),
        "baseline",
        b.delivery,
        "p99 delivery latency, lower is better",
        r,
    )
    .target(Goal::at_most("wardle p99 ms", w.delivery.p99_ms, 100.0))
    .note(format!(
        "one writer at {} creates/s over HTTP/1.1; the same watches as the row above; the baseline's run has {} events at the same rate; req/s counts deliveries; write system calls per delivery: wardle {}, the baseline {}",
        shape.rate,
        plan.many_watchers_baseline_events,
        writes.0,
        writes.1,
    ));
    Ok(vec![rss_row, delivery_row])
}
