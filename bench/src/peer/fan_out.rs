//! The watch fan-out beside sample-apiserver: the same watchers of one collection on wardle,
//! on sample-apiserver and on the bare baseline, one writer creating the same Flunders at the
//! same rate, and the delay from each create's answer to each watcher's receipt of its event.

use crate::client::{Error, Target};
use crate::compare::ratio;
use crate::peer::versus::Versus;
use crate::peer::writes;
use crate::plan::Plan;
use crate::report::Row;
use crate::requests::collection;
use crate::watch;

/// The namespace the fan-out writes to and watches.
pub const NAMESPACE: &str = "peer-watch";

/// A server of the fan-out: where it listens and the processes whose CPU it counts.
pub type Side<'a> = (&'a Target, &'a [u32]);

/// The fan-out of `plan.fan_out` on each server in turn: wardle, sample-apiserver, then the
/// bare baseline (which sends every watcher the posted object).
pub async fn row(
    plan: &Plan,
    wardle: Side<'_>,
    sample: Side<'_>,
    bare: Side<'_>,
) -> Result<Row, Error> {
    let shape = plan.fan_out;
    let path = format!("{}?watch=true", collection(NAMESPACE));
    let make = |t: &Target, i: usize| writes::create(t, NAMESPACE, &watch::object_name(i));
    let w = watch::run(wardle.0, shape, &path, make, wardle.1).await?;
    let s = watch::run(sample.0, shape, &path, make, sample.1).await?;
    let b = watch::run(bare.0, shape, &path, make, bare.1).await?;
    let r = ratio(w.p99_ms, b.p99_ms);
    let versus = Versus::throughput(&w, s, None);
    Ok(Row::new(
        format!(
            "peer: WATCH {} watchers × {} events",
            shape.watchers, shape.events
        ),
        w,
        "bare baseline",
        b,
        "p99 delivery latency, lower is better",
        r,
    )
    .peer(versus)
    .note(format!(
        "watchers over HTTP/1.1, a connection each; one writer at {} creates/s; latency from the create's answer to each watcher's receipt; req/s and req/CPU-s count deliveries",
        shape.rate
    )))
}
