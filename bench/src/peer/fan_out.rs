//! The watch fan-out beside sample-apiserver: the same watchers of one collection on wardle,
//! on sample-apiserver and on the bare baseline, one writer creating the same Flunders at the
//! same rate, and the delay from each create's answer to each watcher's receipt of its event.

use std::time::Duration;

use crate::client::{Error, Target};
use crate::compare::ratio;
use crate::peer::versus::Versus;
use crate::peer::writes;
use crate::plan::Plan;
use crate::process::{cpu_seconds, rss_bytes};
use crate::profile::Profiles;
use crate::report::{Measurement, Row};
use crate::requests::collection;
use crate::watch::{self, FanOut};

/// The namespace the fan-out to `plan.fan_out` writes to and watches.
pub const NAMESPACE: &str = "peer-watch";

/// The namespace the fan-outs to `plan.peer_many_watchers` write to and watch, one for each
/// (HTTP/2, HTTP/1.1): a watch without a resourceVersion first gets every object already
/// there, so each starts empty.
pub const MANY_NAMESPACES: [&str; 2] = ["peer-watch-many-h2", "peer-watch-many"];

/// A server of the fan-out: its name, where it listens and the processes whose CPU it counts
/// (the server's own first).
pub type Side<'a> = (&'a str, &'a Target, &'a [u32]);

/// A server whose resident memory passes this during a fan-out is stopped (killed), and its
/// row says so: the machine is shared, and a server that buffers without bound would take it
/// all (sample-apiserver passed 19 GiB with 10,000 watchers over HTTP/1.1 in a first try).
const RSS_CAP: u64 = 6 << 30;

/// A guard of one server over a whole row (its turn and the others'): a server may go on
/// working for watches its turn gave up on.
type Guard = tokio::task::JoinHandle<(u64, Duration)>;

/// Why `name`'s guard stopped it, if it has; `m` is what its turn measured.
async fn stopped(guard: &mut Guard, name: &str, shape: FanOut, m: Measurement) -> Measurement {
    if !guard.is_finished() {
        return m;
    }
    match guard.await {
        Ok((rss, after)) => failed(
            shape,
            format!(
                "{name} was stopped when its RSS reached {:.1} GiB, {:.0} s into the row; its turn: {}",
                rss as f64 / (1u64 << 30) as f64,
                after.as_secs_f64(),
                m.first_error.as_deref().unwrap_or("no error")
            )
            .into(),
        ),
        Err(_) => m,
    }
}

/// Stops process `pid` once its resident memory passes [`RSS_CAP`]: how much it held and
/// after how long, if it did.
async fn guard(pid: u32) -> (u64, Duration) {
    let started = std::time::Instant::now();
    loop {
        let rss = rss_bytes(pid);
        if rss > RSS_CAP {
            let _ = std::process::Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
            return (rss, started.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// One server's fan-out, profiled when the plan takes profiles; a server that cannot open
/// every watch (or loses some) gives a row with no figures and the error, as measured. Also
/// the CPU seconds the bench itself (the watchers and the writer) spent.
async fn one(
    plan: &Plan,
    shape: FanOut,
    namespace: &str,
    side: Side<'_>,
    go: bool,
) -> (Measurement, f64) {
    let (name, target, pids) = side;
    let path = format!("{}?watch=true", collection(namespace));
    let make = |t: &Target, i: usize| writes::create(t, namespace, &watch::object_name(i));
    let label = format!(
        "watch-{}{}",
        shape.watchers,
        if target.streams > 1 { "-h2" } else { "" }
    );
    let me = std::process::id();
    let opened = match watch::open(target, shape.watchers, &path, watch::OPEN_WITHIN).await {
        Ok(opened) => opened,
        Err(e) => return (failed(shape, e), 0.0),
    };
    let length = Duration::from_secs_f64(shape.events as f64 / shape.rate);
    let profiles = Profiles::start(
        plan,
        &label,
        &[(name, pids[0]), (&format!("bench-{name}"), me)],
        go.then_some((target, length)),
    );
    let bench_cpu = cpu_seconds(me);
    let delivered = watch::deliver(opened, target, shape, make, pids).await;
    let bench_cpu = cpu_seconds(me) - bench_cpu;
    profiles.finish().await;
    match delivered {
        Ok(m) => (m, bench_cpu),
        Err(e) => (failed(shape, e), bench_cpu),
    }
}

/// A fan-out that did not run: every delivery counted as failed, and why.
fn failed(shape: FanOut, e: Error) -> Measurement {
    Measurement {
        errors: (shape.watchers * shape.events) as u64,
        ..Default::default()
    }
    .with_error(Some(e.to_string()))
}

/// `side` reached over HTTP/2 with `streams` to a connection, or as it is.
fn over(side: Side<'_>, streams: Option<usize>) -> (&str, Target, &[u32]) {
    let (name, target, pids) = side;
    let target = match streams {
        Some(n) => target.http2(n),
        None => target.clone(),
    };
    (name, target, pids)
}

/// The fan-out of `shape` on each server in turn: wardle, sample-apiserver, then the bare
/// baseline (which sends every watcher the posted object); over HTTP/1.1, a connection a
/// watcher, or with `streams`, over HTTP/2, that many watchers to a connection; in
/// `namespace`, empty before.
pub async fn row(
    plan: &Plan,
    shape: FanOut,
    namespace: &str,
    streams: Option<usize>,
    wardle: Side<'_>,
    sample: Side<'_>,
    bare: Side<'_>,
) -> Result<Row, Error> {
    let (wardle, sample, bare) = (
        over(wardle, streams),
        over(sample, streams),
        over(bare, streams),
    );
    let ns = namespace;
    let mut guards = [wardle.2[0], sample.2[0]].map(|pid| tokio::spawn(guard(pid)));
    let (w, w_bench) = one(plan, shape, ns, (wardle.0, &wardle.1, wardle.2), false).await;
    let (s, s_bench) = one(plan, shape, ns, (sample.0, &sample.1, sample.2), true).await;
    let (b, b_bench) = one(plan, shape, ns, (bare.0, &bare.1, bare.2), false).await;
    let w = stopped(&mut guards[0], wardle.0, shape, w).await;
    let s = stopped(&mut guards[1], sample.0, shape, s).await;
    for guard in &guards {
        guard.abort();
    }
    let r = ratio(w.p99_ms, b.p99_ms);
    let versus = Versus::throughput(&w, s, None);
    let limits = [&wardle, &sample]
        .map(|(name, _, pids)| {
            let limit = crate::process::open_files_limit(pids[0])
                .map_or("unknown".into(), |l| l.to_string());
            format!("{name} {limit}")
        })
        .join(", ");
    let (title, how) = match streams {
        Some(n) => (
            ", HTTP/2",
            format!("watchers over HTTP/2, {n} to a connection"),
        ),
        None => ("", "watchers over HTTP/1.1, a connection each".to_string()),
    };
    Ok(Row::new(
        format!(
            "peer: WATCH {} watchers × {} events{title}",
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
        "{how}; one writer at {} creates/s; latency from the create's answer to each watcher's receipt; req/s and req/CPU-s count deliveries; the bench's own CPU (watchers and writer) {w_bench:.1} s against wardle, {s_bench:.1} s against sample-apiserver, {b_bench:.1} s against the baseline; open-files limits {limits}",
        shape.rate
    )))
}
