//! The scenarios of a run, in order, each measured on wardle and on its baseline in the same
//! run.

use std::path::Path;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{Method, StatusCode};

use crate::baseline::{self, Recorded, Recordings};
use crate::client::{self, Error, Target};
use crate::etcd::{Etcd, RawPuts};
use crate::load::{self, Http, Stop};
use crate::process::{Probe, rss_bytes};
use crate::report::{Measurement, Report, Row, Target as Goal, machine, mib};
use crate::servers::{self, Server};
use crate::tls::Pki;
use crate::watch::{self, FanOut};

/// The sizes of a run.
#[derive(Clone, Debug)]
pub struct Plan {
    /// `full` or `smoke`.
    pub mode: &'static str,
    /// Connections of the closed-loop scenarios.
    pub concurrency: usize,
    /// Unmeasured time before each measured load.
    pub warmup: Duration,
    /// Measured time of each load.
    pub measure: Duration,
    /// Objects in the listed collection.
    pub list_size: u64,
    /// The watch fan-out.
    pub fan_out: FanOut,
    /// Cold starts of each server.
    pub start_runs: usize,
    /// Objects stored for the memory figure.
    pub memory_objects: u64,
}

impl Plan {
    /// The full run of the issue: concurrency 64, 500 listed objects, 1,000 × 1,000 watch,
    /// 100,000 stored objects.
    pub fn full(concurrency: usize, measure: Duration, watch_rate: f64) -> Self {
        Plan {
            mode: "full",
            concurrency,
            warmup: Duration::from_secs(1),
            measure,
            list_size: 500,
            fan_out: FanOut {
                watchers: 1000,
                events: 1000,
                rate: watch_rate,
            },
            start_runs: 10,
            memory_objects: 100_000,
        }
    }

    /// A run of a few seconds that goes through every scenario, for CI.
    pub fn smoke() -> Self {
        Plan {
            mode: "smoke",
            concurrency: 4,
            warmup: Duration::from_millis(100),
            measure: Duration::from_millis(300),
            list_size: 20,
            fan_out: FanOut {
                watchers: 10,
                events: 20,
                rate: 200.0,
            },
            start_runs: 2,
            memory_objects: 200,
        }
    }
}

const GROUP_PATH: &str = "/apis/wardle.example.com/v1alpha1";

/// The collection of Flunders in `namespace`.
fn collection(namespace: &str) -> String {
    format!("{GROUP_PATH}/namespaces/{namespace}/flunders")
}

/// The Flunder every create sends: labels, a reference, replicas and two toppings.
pub fn flunder(name: &str) -> Bytes {
    Bytes::from(
        serde_json::to_vec(&serde_json::json!({
            "apiVersion": "wardle.example.com/v1alpha1",
            "kind": "Flunder",
            "metadata": {
                "name": name,
                "labels": {"app": "bench", "tier": "backend"},
            },
            "spec": {
                "reference": "fischer-1",
                "referenceType": "Fischer",
                "replicas": 3,
                "toppings": [{"name": "cheese", "amount": 2}, {"name": "olives", "amount": 1}],
            },
        }))
        .expect("JSON"),
    )
}

/// A create of the Flunder `name` in `namespace`.
fn create(
    target: &Target,
    namespace: &str,
    name: &str,
) -> http::Request<http_body_util::Full<Bytes>> {
    target.request(Method::POST, &collection(namespace), flunder(name))
}

/// Sends one request and insists on `expect`.
async fn call(
    target: &Target,
    method: Method,
    path: &str,
    body: Bytes,
    expect: StatusCode,
) -> Result<Bytes, Error> {
    let mut sender = target.connect().await?;
    let (status, body) =
        client::send(&mut sender, target.request(method.clone(), path, body)).await?;
    if status != expect {
        return Err(format!(
            "{method} {path}: {status}: {}",
            String::from_utf8_lossy(&body)
        )
        .into());
    }
    Ok(body)
}

/// Creates `count` Flunders `<prefix><i>` in `namespace` at the plan's concurrency.
async fn fill(
    plan: &Plan,
    target: &Target,
    namespace: &str,
    prefix: &str,
    count: u64,
    pids: &[u32],
) -> Result<load::LoadResult, Error> {
    let (ns, prefix) = (namespace.to_string(), prefix.to_string());
    let work = Http {
        target: target.clone(),
        make: move |t: &Target, _c: usize, i: u64| create(t, &ns, &format!("{prefix}{i}")),
        expect: StatusCode::CREATED,
    };
    let result = load::run(work, plan.concurrency, Stop::Count(count), pids).await;
    if result.errors > 0 {
        return Err(format!(
            "filling {namespace}: {}",
            result.first_error.unwrap_or_default()
        )
        .into());
    }
    Ok(result)
}

/// Rounds of each comparison: wardle and its baseline take turns, so that a noisy machine's
/// drift falls on both alike.
const ROUNDS: u32 = 3;

/// The load of round `round`: the plan's warm-up before the first (a fifth of it before the
/// others, for the new connections), then a third of the measured time.
fn round_stop(plan: &Plan, round: u32) -> Stop {
    Stop::After {
        warmup: if round == 0 {
            plan.warmup
        } else {
            plan.warmup / 5
        },
        measure: plan.measure / ROUNDS,
    }
}

/// Runs `a` and `b` in turns for [`ROUNDS`] rounds and adds up each side's figures.
async fn alternate<A, B, FA, FB>(plan: &Plan, mut a: A, mut b: B) -> (Measurement, Measurement)
where
    A: FnMut(Stop) -> FA,
    B: FnMut(Stop) -> FB,
    FA: std::future::Future<Output = load::LoadResult>,
    FB: std::future::Future<Output = load::LoadResult>,
{
    let mut first = a(round_stop(plan, 0)).await;
    let mut second = b(round_stop(plan, 0)).await;
    for round in 1..ROUNDS {
        first.merge(a(round_stop(plan, round)).await);
        second.merge(b(round_stop(plan, round)).await);
    }
    (first.measurement(), second.measurement())
}

/// A closed-loop load of GETs of `path`.
async fn gets(plan: &Plan, server: &Server, path: &str, stop: Stop) -> load::LoadResult {
    let path = path.to_string();
    let work = Http {
        target: server.target.clone(),
        make: move |t: &Target, _c: usize, _i: u64| t.request(Method::GET, &path, Bytes::new()),
        expect: StatusCode::OK,
    };
    load::run(work, plan.concurrency, stop, &[server.pid()]).await
}

/// A closed-loop load of creates of distinct Flunders in `namespace`, probing `pids`; `round`
/// keeps the names of each round apart.
async fn creates(
    plan: &Plan,
    target: &Target,
    namespace: &str,
    pids: &[u32],
    stop: Stop,
) -> load::LoadResult {
    static ROUND: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let round = ROUND.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let ns = namespace.to_string();
    let work = Http {
        target: target.clone(),
        make: move |t: &Target, _c: usize, i: u64| create(t, &ns, &format!("c-{round}-{i}")),
        expect: StatusCode::CREATED,
    };
    load::run(work, plan.concurrency, stop, pids).await
}

fn ratio(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    }
}

/// A row whose ratio compares requests per second.
fn throughput_row(
    scenario: &str,
    framework: Measurement,
    baseline_name: &str,
    baseline: Measurement,
    min_ratio: Option<f64>,
) -> Row {
    let r = ratio(framework.requests_per_second, baseline.requests_per_second);
    Row {
        scenario: scenario.into(),
        framework,
        baseline_name: baseline_name.into(),
        baseline,
        compared: "req/s, higher is better".into(),
        ratio: r,
        target: min_ratio.map(|min| Goal::at_least("ratio", r, min)),
        notes: Vec::new(),
    }
}

/// Runs every scenario of `plan` in `work` and reports.
pub async fn run(plan: &Plan, work: &Path) -> Result<Report, Error> {
    let began = Instant::now();
    let pki = Pki::create(work)?;
    let mut rows = Vec::new();
    let say = |what: &str| eprintln!("[{:>6.1}s] {what}", began.elapsed().as_secs_f64());

    // wardle on its default, embedded store, with the objects the reads need.
    say("starting wardle (embedded store)");
    let wardle = servers::wardle(work, "wardle-embedded", &pki, &[]).await?;
    let pid = [wardle.pid()];
    let one = format!("{}/get-me", collection("bench"));
    call(
        &wardle.target,
        Method::POST,
        &collection("bench"),
        flunder("get-me"),
        StatusCode::CREATED,
    )
    .await?;
    fill(
        plan,
        &wardle.target,
        "bench-list",
        "item-",
        plan.list_size,
        &pid,
    )
    .await?;
    let list = collection("bench-list");

    // What the baseline answers: wardle's own bytes.
    let mut recordings = Recordings::new();
    let record = |body: Bytes, status: StatusCode| Recorded {
        status: status.as_u16(),
        content_type: "application/json".into(),
        body: String::from_utf8_lossy(&body).into_owned(),
    };
    for path in [&one, &list] {
        let body = call(
            &wardle.target,
            Method::GET,
            path,
            Bytes::new(),
            StatusCode::OK,
        )
        .await?;
        recordings.insert(
            baseline::key(&Method::GET, path),
            record(body, StatusCode::OK),
        );
    }
    let created = call(
        &wardle.target,
        Method::POST,
        &collection("bench-record"),
        flunder("recorded"),
        StatusCode::CREATED,
    )
    .await?;
    for ns in ["bench-create", "bench-watch"] {
        recordings.insert(
            baseline::key(&Method::POST, &collection(ns)),
            record(created.clone(), StatusCode::CREATED),
        );
    }
    let recordings_file = work.join("recordings.json");
    std::fs::write(&recordings_file, serde_json::to_vec(&recordings)?)?;
    say("starting the baseline");
    let base = servers::baseline(work, "baseline", &pki, &recordings_file).await?;

    say("GET one object");
    let (w, b) = alternate(
        plan,
        |stop| gets(plan, &wardle, &one, stop),
        |stop| gets(plan, &base, &one, stop),
    )
    .await;
    rows.push(throughput_row(
        "GET one object",
        w,
        "baseline",
        b,
        Some(0.7),
    ));

    say("LIST");
    let (w, b) = alternate(
        plan,
        |stop| gets(plan, &wardle, &list, stop),
        |stop| gets(plan, &base, &list, stop),
    )
    .await;
    let mut row = throughput_row(
        &format!("LIST {} objects", plan.list_size),
        w,
        "baseline",
        b,
        Some(0.5),
    );
    let list_bytes = recordings[&baseline::key(&Method::GET, &list)].body.len();
    row.notes.push(format!("{list_bytes} bytes a response"));
    rows.push(row);

    say("CREATE (embedded)");
    let base_pid = [base.pid()];
    let (w, b) = alternate(
        plan,
        |stop| creates(plan, &wardle.target, "bench-create", &pid, stop),
        |stop| creates(plan, &base.target, "bench-create", &base_pid, stop),
    )
    .await;
    rows.push(throughput_row(
        "CREATE, embedded store",
        w,
        "baseline",
        b,
        None,
    ));

    say("CREATE (memory)");
    {
        let memory = servers::wardle(
            work,
            "wardle-memory",
            &pki,
            &["--storage-backend".into(), "memory".into()],
        )
        .await?;
        let memory_pid = [memory.pid()];
        let (w, b) = alternate(
            plan,
            |stop| creates(plan, &memory.target, "bench-create", &memory_pid, stop),
            |stop| creates(plan, &base.target, "bench-create", &base_pid, stop),
        )
        .await;
        rows.push(throughput_row(
            "CREATE, memory store",
            w,
            "baseline",
            b,
            None,
        ));
    }

    say("CREATE (etcd)");
    {
        let etcd_dir = work.join("etcd");
        std::fs::create_dir_all(&etcd_dir)?;
        let etcd = Etcd::start(&etcd_dir).await?;
        let client = crate::etcd::client(&etcd.url).await?;
        let on_etcd = servers::wardle(
            work,
            "wardle-etcd",
            &pki,
            &["--etcd-servers".into(), etcd.url.clone()],
        )
        .await?;
        let (both, etcd_only) = ([on_etcd.pid(), etcd.proc.pid], [etcd.proc.pid]);
        let mut round = 0;
        let (w, b) = alternate(
            plan,
            |stop| creates(plan, &on_etcd.target, "bench-create", &both, stop),
            |stop| {
                round += 1;
                let raw = RawPuts {
                    client: client.clone(),
                    value: created.clone(),
                    prefix: format!("/raw/{round}"),
                };
                load::run(raw, plan.concurrency, stop, &etcd_only)
            },
        )
        .await;
        let mut row = throughput_row("CREATE, etcd", w, "raw etcd puts", b, Some(0.7));
        row.notes.push(format!(
            "raw puts of {} bytes (wardle's create response) at the same concurrency; CPU counts etcd too",
            created.len()
        ));
        rows.push(row);
    }

    say("WATCH fan-out");
    {
        let shape = plan.fan_out;
        let path = format!("{}?watch=true", collection("bench-watch"));
        let make = |t: &Target, i: usize| create(t, "bench-watch", &watch::object_name(i));
        let w = watch::run(&wardle.target, shape, &path, make, &pid).await?;
        let b = watch::run(&base.target, shape, &path, make, &[base.pid()]).await?;
        let r = ratio(w.p99_ms, b.p99_ms);
        rows.push(Row {
            scenario: format!("WATCH {} watchers × {} events", shape.watchers, shape.events),
            target: Some(Goal::at_most("wardle p99 ms", w.p99_ms, 50.0)),
            framework: w,
            baseline_name: "baseline".into(),
            baseline: b,
            compared: "p99 delivery latency, lower is better".into(),
            ratio: r,
            notes: vec![format!(
                "one writer at {} creates/s; latency from the create's answer to each watcher's receipt; req/s counts deliveries",
                shape.rate
            )],
        });
    }
    drop(base);
    drop(wardle);

    say("cold start");
    rows.push(cold_starts(plan, work, &pki, &recordings_file).await?);

    say("memory");
    rows.extend(memory(plan, work, &pki, &recordings_file, created.len()).await?);

    say("done");
    Ok(Report {
        mode: plan.mode.into(),
        machine: machine(),
        concurrency: plan.concurrency,
        run_seconds: began.elapsed().as_secs_f64(),
        rows,
    })
}

/// Start-up times, `runs` each: the median as p50, the slowest as p99.
fn start_times(times: &mut [Duration]) -> Measurement {
    times.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    Measurement {
        p50_ms: times.get(times.len() / 2).map(|d| ms(*d)),
        p99_ms: times.last().map(|d| ms(*d)),
        count: times.len() as u64,
        ..Default::default()
    }
}

/// From spawn to `/readyz` 200, on a fresh embedded store each time, against the baseline's.
async fn cold_starts(plan: &Plan, work: &Path, pki: &Pki, recordings: &Path) -> Result<Row, Error> {
    let (mut w, mut b) = (Vec::new(), Vec::new());
    for _ in 0..plan.start_runs {
        w.push(
            servers::wardle(work, "wardle-start", pki, &[])
                .await?
                .ready_after,
        );
        b.push(
            servers::baseline(work, "baseline-start", pki, recordings)
                .await?
                .ready_after,
        );
    }
    let (w, b) = (start_times(&mut w), start_times(&mut b));
    let r = ratio(w.p50_ms, b.p50_ms);
    Ok(Row {
        scenario: "Start to /readyz 200, embedded store".into(),
        target: Some(Goal::at_most("wardle median ms", w.p50_ms, 150.0)),
        framework: w,
        baseline_name: "baseline".into(),
        baseline: b,
        compared: "median ms, lower is better".into(),
        ratio: r,
        notes: vec![format!(
            "{} starts each on a fresh data directory; p50 is the median, p99 the slowest",
            plan.start_runs
        )],
    })
}

/// Resident memory idle, and with `memory_objects` Flunders stored.
async fn memory(
    plan: &Plan,
    work: &Path,
    pki: &Pki,
    recordings: &Path,
    object_bytes: usize,
) -> Result<Vec<Row>, Error> {
    let settle = if plan.mode == "full" {
        Duration::from_secs(2)
    } else {
        Duration::from_millis(200)
    };
    let idle = |server: &Server| Measurement {
        peak_rss_mib: Some(mib(rss_bytes(server.pid()))),
        count: 1,
        ..Default::default()
    };
    let wardle = servers::wardle(work, "wardle-memory-use", pki, &[]).await?;
    let base = servers::baseline(work, "baseline-memory-use", pki, recordings).await?;
    tokio::time::sleep(settle).await;
    let (w, b) = (idle(&wardle), idle(&base));
    drop(base);
    let idle_rss = rss_bytes(wardle.pid());
    let r = ratio(w.peak_rss_mib, b.peak_rss_mib);
    let idle_row = Row {
        scenario: "Idle RSS".into(),
        target: Some(Goal::at_most("wardle MiB", w.peak_rss_mib, 20.0)),
        framework: w,
        baseline_name: "baseline".into(),
        baseline: b,
        compared: "RSS, lower is better".into(),
        ratio: r,
        notes: vec!["ready, before any request but the readiness probes".into()],
    };

    let n = plan.memory_objects;
    let probe = Probe::start(&[wardle.pid()]);
    let filled = fill(
        plan,
        &wardle.target,
        "bench-memory",
        "m-",
        n,
        &[wardle.pid()],
    )
    .await?;
    tokio::time::sleep(settle).await;
    let usage = probe.finish();
    let loaded = rss_bytes(wardle.pid());
    let per_object = loaded.saturating_sub(idle_rss) as f64 / n as f64;
    let mut framework = filled.measurement();
    framework.cpu_seconds = Some(usage.cpu_seconds);
    framework.peak_rss_mib = Some(mib(loaded));
    let json = Measurement {
        peak_rss_mib: Some(mib(object_bytes as u64 * n)),
        count: n,
        ..Default::default()
    };
    Ok(vec![
        idle_row,
        Row {
            scenario: format!("RSS with {n} Flunders"),
            framework,
            baseline_name: "their JSON".into(),
            baseline: json,
            compared: "bytes per object ÷ JSON bytes per object".into(),
            ratio: Some(per_object / object_bytes as f64),
            target: None,
            notes: vec![format!(
                "{per_object:.0} bytes per object over idle; one object's JSON is {object_bytes} bytes; req/s is the create rate while filling"
            )],
        },
    ])
}
