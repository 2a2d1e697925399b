//! The scenarios of a run, in order, each measured on wardle and on its baseline in the same
//! run.

use std::path::Path;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{Method, StatusCode, header};

use crate::baseline::{self, Recorded, Recordings};
use crate::client::{self, Error, Target};
use crate::etcd::{Etcd, RawPuts};
use crate::load::{self, Http, Stop};
use crate::report::{Measurement, Report, Row, Target as Goal, machine};
use crate::servers;
use crate::tls::Pki;
use crate::watch::{self, FanOut};
use crate::{aggregated, lists, memory, process, sweep, watchers};

/// The groups of scenarios `--only` can choose, with what each measures.
pub const GROUPS: &[(&str, &str)] = &[
    ("get", "GET one object over HTTP/1.1 and over HTTP/2"),
    (
        "list",
        "LIST 500 objects (with and without gzip), LIST 10,000 unpaged",
    ),
    ("create", "CREATE on the embedded and memory stores"),
    (
        "etcd",
        "CREATE on etcd against raw puts; wardle's CPU per create",
    ),
    ("watch", "the watch fan-out"),
    ("sweep", "GET and CREATE at 1, 8, 64 and 256 clients"),
    (
        "watchers",
        "10,000 idle watchers' memory, then 1,000 events to them",
    ),
    (
        "aggregator",
        "GET and watch through the development host's aggregator",
    ),
    ("start", "start to ready"),
    (
        "memory",
        "idle RSS, RSS with 100,000 objects, the paged sweep of them",
    ),
];

/// The sizes of a run.
#[derive(Clone, Debug)]
pub struct Plan {
    /// `full` or `smoke`.
    pub mode: &'static str,
    /// Clients of the closed-loop scenarios.
    pub concurrency: usize,
    /// Unmeasured time before each measured load.
    pub warmup: Duration,
    /// Measured time of each load.
    pub measure: Duration,
    /// Clients to an HTTP/2 connection in the HTTP/2 scenarios.
    pub h2_streams: usize,
    /// Objects in the listed collection.
    pub list_size: u64,
    /// Objects in the big unpaged list.
    pub big_list_size: u64,
    /// Clients of the big unpaged list.
    pub big_list_clients: usize,
    /// `limit` of the paged sweep's pages.
    pub page_limit: u64,
    /// The watch fan-out.
    pub fan_out: FanOut,
    /// The watch fan-outs through the aggregator (each also directly).
    pub aggregated_fan_outs: Vec<FanOut>,
    /// The fan-out to many watchers.
    pub many_watchers: FanOut,
    /// Watchers to an HTTP/2 connection in the fan-out to many watchers.
    pub many_watchers_streams: usize,
    /// Events of the baseline's fan-out to many watchers (fewer than wardle's, at the same
    /// rate, to keep the run short: its p99 is the machine's floor at that rate).
    pub many_watchers_baseline_events: usize,
    /// Clients at each step of the concurrency sweep.
    pub sweep_clients: Vec<usize>,
    /// Measured time of each step of the concurrency sweep.
    pub sweep_measure: Duration,
    /// Cold starts of each server.
    pub start_runs: usize,
    /// Objects stored for the memory figure (and paged through).
    pub memory_objects: u64,
    /// Points of the memory chart.
    pub memory_samples: u64,
    /// How long a server is left to settle before its memory is read.
    pub settle: Duration,
    /// The groups of scenarios to run ([`GROUPS`]); all when empty.
    pub only: Vec<String>,
}

/// The knobs of a full run (`--help`).
#[derive(Clone, Debug)]
pub struct Knobs {
    /// Clients of the closed-loop scenarios.
    pub concurrency: usize,
    /// Measured seconds of each closed-loop comparison.
    pub measure: Duration,
    /// Creates per second of the watch fan-out's writer.
    pub watch_rate: f64,
    /// Creates per second of the writer of the fan-out to many watchers.
    pub many_watch_rate: f64,
    /// Events of the fan-out to many watchers on wardle (the baseline's run has a fifth).
    pub many_watch_events: usize,
    /// Clients to an HTTP/2 connection.
    pub h2_streams: usize,
}

impl Plan {
    /// The full run of the issue: 64 clients, 500 listed objects and 10,000 unpaged, 1,000 ×
    /// 1,000 watch, 10,000 watchers, 100,000 stored objects paged through 500 at a time.
    pub fn full(knobs: &Knobs) -> Self {
        Plan {
            mode: "full",
            concurrency: knobs.concurrency,
            warmup: Duration::from_secs(1),
            measure: knobs.measure,
            h2_streams: knobs.h2_streams,
            list_size: 500,
            big_list_size: 10_000,
            big_list_clients: 8,
            page_limit: 500,
            fan_out: FanOut {
                watchers: 1000,
                events: 1000,
                rate: knobs.watch_rate,
            },
            // 1,000 watchers as directly; 100, which fit in one HTTP/2 connection's default
            // limit of concurrent streams (200 in hyper) when the aggregator multiplexes them.
            aggregated_fan_outs: [1000, 100]
                .map(|watchers| FanOut {
                    watchers,
                    events: 1000,
                    rate: knobs.watch_rate,
                })
                .to_vec(),
            many_watchers: FanOut {
                watchers: 10_000,
                events: knobs.many_watch_events,
                rate: knobs.many_watch_rate,
            },
            many_watchers_streams: 100,
            many_watchers_baseline_events: (knobs.many_watch_events / 5).max(1),
            sweep_clients: vec![1, 8, 64, 256],
            sweep_measure: Duration::from_secs(3),
            start_runs: 10,
            memory_objects: 100_000,
            memory_samples: 10,
            settle: Duration::from_secs(2),
            only: Vec::new(),
        }
    }

    /// A run of a few seconds a scenario that goes through every scenario, for CI.
    pub fn smoke() -> Self {
        Plan {
            mode: "smoke",
            concurrency: 4,
            warmup: Duration::from_millis(100),
            measure: Duration::from_millis(300),
            h2_streams: 2,
            list_size: 20,
            big_list_size: 60,
            big_list_clients: 2,
            page_limit: 50,
            fan_out: FanOut {
                watchers: 10,
                events: 20,
                rate: 200.0,
            },
            aggregated_fan_outs: vec![FanOut {
                watchers: 10,
                events: 20,
                rate: 200.0,
            }],
            many_watchers: FanOut {
                watchers: 40,
                events: 10,
                rate: 100.0,
            },
            many_watchers_streams: 20,
            many_watchers_baseline_events: 10,
            sweep_clients: vec![1, 4],
            sweep_measure: Duration::from_millis(300),
            start_runs: 2,
            memory_objects: 200,
            memory_samples: 2,
            settle: Duration::from_millis(200),
            only: Vec::new(),
        }
    }

    /// Whether the group of scenarios `group` runs.
    pub fn runs(&self, group: &str) -> bool {
        self.only.is_empty() || self.only.iter().any(|g| g == group)
    }

    /// The same plan with another measured time (and a warm-up scaled with it).
    pub fn measuring(&self, measure: Duration) -> Plan {
        Plan {
            measure,
            warmup: self.warmup.min(measure / 3),
            ..self.clone()
        }
    }
}

const GROUP_PATH: &str = "/apis/wardle.example.com/v1alpha1";

/// The collection of Flunders in `namespace`.
pub fn collection(namespace: &str) -> String {
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
pub fn create(
    target: &Target,
    namespace: &str,
    name: &str,
) -> http::Request<http_body_util::Full<Bytes>> {
    target.request(Method::POST, &collection(namespace), flunder(name))
}

/// Sends one request on a new connection and insists on `expect`.
pub async fn call(
    target: &Target,
    method: Method,
    path: &str,
    body: Bytes,
    expect: StatusCode,
) -> Result<Bytes, Error> {
    Ok(fetch(target, method, path, body, expect).await?.1)
}

/// Like [`call`], with the answer's headers.
pub async fn fetch(
    target: &Target,
    method: Method,
    path: &str,
    body: Bytes,
    expect: StatusCode,
) -> Result<(http::HeaderMap, Bytes), Error> {
    let mut sender = target.connect().await?;
    let (status, headers, body) =
        client::send_full(&mut sender, target.request(method.clone(), path, body)).await?;
    if status != expect {
        return Err(format!(
            "{method} {path}: {status}: {}",
            String::from_utf8_lossy(&body[..body.len().min(500)])
        )
        .into());
    }
    Ok((headers, body))
}

/// What the baseline answers for a recorded answer with `headers` and `body`.
pub fn recorded(status: StatusCode, headers: &http::HeaderMap, body: Bytes) -> Recorded {
    let text = |name| {
        headers
            .get(name)
            .and_then(|v: &http::HeaderValue| v.to_str().ok())
            .map(str::to_string)
    };
    Recorded {
        status: status.as_u16(),
        content_type: text(header::CONTENT_TYPE).unwrap_or_else(|| "application/json".into()),
        content_encoding: text(header::CONTENT_ENCODING),
        body: body.to_vec(),
    }
}

/// Writes `recordings` to `work/<name>` for a baseline.
pub fn write_recordings(
    work: &Path,
    name: &str,
    recordings: &Recordings,
) -> Result<std::path::PathBuf, Error> {
    let file = work.join(name);
    std::fs::write(&file, serde_json::to_vec(recordings)?)?;
    Ok(file)
}

/// Creates `count` Flunders `<prefix><i>` in `namespace` at the plan's concurrency.
pub async fn fill(
    plan: &Plan,
    target: &Target,
    namespace: &str,
    prefix: &str,
    count: u64,
    pids: &[u32],
) -> Result<load::LoadResult, Error> {
    fill_from(plan, target, namespace, prefix, 0..count, pids).await
}

/// Creates the Flunders `<prefix><i>` for `i` in `range` in `namespace`.
pub async fn fill_from(
    plan: &Plan,
    target: &Target,
    namespace: &str,
    prefix: &str,
    range: std::ops::Range<u64>,
    pids: &[u32],
) -> Result<load::LoadResult, Error> {
    let (ns, prefix, first) = (namespace.to_string(), prefix.to_string(), range.start);
    let work = Http {
        target: target.clone(),
        make: move |t: &Target, _c: usize, i: u64| {
            create(t, &ns, &format!("{prefix}{}", first + i))
        },
        expect: StatusCode::CREATED,
    };
    let count = range.end.saturating_sub(range.start);
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
pub const ROUNDS: u32 = 3;

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
pub async fn alternate<A, B, FA, FB>(plan: &Plan, mut a: A, mut b: B) -> (Measurement, Measurement)
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

/// A closed-loop load of GETs of `path` by `clients` clients.
pub async fn gets(
    target: &Target,
    path: &str,
    clients: usize,
    pids: &[u32],
    stop: Stop,
) -> load::LoadResult {
    let path = path.to_string();
    let work = Http {
        target: target.clone(),
        make: move |t: &Target, _c: usize, _i: u64| t.request(Method::GET, &path, Bytes::new()),
        expect: StatusCode::OK,
    };
    load::run(work, clients, stop, pids).await
}

/// A closed-loop load of creates of distinct Flunders in `namespace` at the plan's concurrency,
/// probing `pids`.
async fn creates(
    plan: &Plan,
    target: &Target,
    namespace: &str,
    pids: &[u32],
    stop: Stop,
) -> load::LoadResult {
    creates_by(plan.concurrency, target, namespace, pids, stop).await
}

/// A closed-loop load of creates of distinct Flunders in `namespace` by `clients` clients; each
/// load's names are its own.
pub async fn creates_by(
    clients: usize,
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
    load::run(work, clients, stop, pids).await
}

/// `a ÷ b`, when both are known and `b` is positive.
pub fn ratio(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    }
}

/// A row whose ratio compares requests per second.
pub fn throughput_row(
    scenario: &str,
    framework: Measurement,
    baseline_name: &str,
    baseline: Measurement,
    min_ratio: Option<f64>,
) -> Row {
    let r = ratio(framework.requests_per_second, baseline.requests_per_second);
    let row = Row::new(
        scenario,
        framework,
        baseline_name,
        baseline,
        "req/s, higher is better",
        r,
    );
    match min_ratio {
        Some(min) => row.target(Goal::at_least("ratio", r, min)),
        None => row,
    }
}

/// The namespaces whose creates the baseline answers with the recorded create.
pub const CREATE_NAMESPACES: &[&str] = &[
    "bench-create",
    "bench-watch",
    "bench-watchers",
    "bench-sweep",
    "bench-memory",
];

/// Creates the Flunder `get-me` in `namespace` through `target`, the object the GET
/// scenarios read; its path.
pub async fn create_get_me(target: &Target, namespace: &str) -> Result<String, Error> {
    let collection = collection(namespace);
    let created = StatusCode::CREATED;
    call(
        target,
        Method::POST,
        &collection,
        flunder("get-me"),
        created,
    )
    .await?;
    Ok(format!("{collection}/get-me"))
}

/// Runs every scenario of `plan` in `work` and reports.
pub async fn run(plan: &Plan, work: &Path) -> Result<Report, Error> {
    let began = Instant::now();
    let load_at_start = process::load_average();
    let cpu_at_start = process::MachineCpu::read();
    let pki = Pki::create(work)?;
    let mut rows = Vec::new();
    let say = |what: &str| eprintln!("[{:>6.1}s] {what}", began.elapsed().as_secs_f64());

    // wardle on its default, embedded store, with the objects the reads need.
    say("starting wardle (embedded store)");
    let wardle = servers::wardle(work, "wardle-embedded", &pki, &[]).await?;
    let pid = [wardle.pid()];
    let one = create_get_me(&wardle.target, "bench").await?;
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
    for path in [&one, &list] {
        let (headers, body) = fetch(
            &wardle.target,
            Method::GET,
            path,
            Bytes::new(),
            StatusCode::OK,
        )
        .await?;
        recordings.insert(
            baseline::key(&Method::GET, path),
            recorded(StatusCode::OK, &headers, body),
        );
    }
    let gzip = lists::record_gzip(&wardle.target, &list, plan.list_size).await?;
    recordings.insert(
        baseline::gzip_key(&Method::GET, &list),
        gzip.recorded.clone(),
    );
    let (created_headers, created) = fetch(
        &wardle.target,
        Method::POST,
        &collection("bench-record"),
        flunder("recorded"),
        StatusCode::CREATED,
    )
    .await?;
    for ns in CREATE_NAMESPACES {
        recordings.insert(
            baseline::key(&Method::POST, &collection(ns)),
            recorded(StatusCode::CREATED, &created_headers, created.clone()),
        );
    }
    let recordings_file = write_recordings(work, "recordings.json", &recordings)?;
    say("starting the baseline");
    let base = servers::baseline(work, "baseline", &pki, &recordings_file).await?;
    let base_pid = [base.pid()];

    if plan.runs("get") {
        say("GET one object (HTTP/1.1)");
        let (w, b) = alternate(
            plan,
            |stop| gets(&wardle.target, &one, plan.concurrency, &pid, stop),
            |stop| gets(&base.target, &one, plan.concurrency, &base_pid, stop),
        )
        .await;
        rows.push(throughput_row(
            "GET one object",
            w,
            "baseline",
            b,
            Some(0.9),
        ));

        say("GET one object (HTTP/2)");
        let (w2, b2) = (
            wardle.target.http2(plan.h2_streams),
            base.target.http2(plan.h2_streams),
        );
        let (w, b) = alternate(
            plan,
            |stop| gets(&w2, &one, plan.concurrency, &pid, stop),
            |stop| gets(&b2, &one, plan.concurrency, &base_pid, stop),
        )
        .await;
        rows.push(
            throughput_row(
                "GET one object, HTTP/2",
                w,
                "baseline over HTTP/2",
                b,
                Some(0.9),
            )
            .note(format!(
                "{} clients, {} to an HTTP/2 connection",
                plan.concurrency, plan.h2_streams
            )),
        );
    }

    if plan.runs("list") {
        say("LIST");
        let (w, b) = alternate(
            plan,
            |stop| gets(&wardle.target, &list, plan.concurrency, &pid, stop),
            |stop| gets(&base.target, &list, plan.concurrency, &base_pid, stop),
        )
        .await;
        let list_bytes = recordings[&baseline::key(&Method::GET, &list)].body.len();
        rows.push(
            throughput_row(
                &format!("LIST {} objects", plan.list_size),
                w,
                "baseline",
                b,
                Some(0.85),
            )
            .note(format!("{list_bytes} bytes a response")),
        );

        say("LIST, Accept-Encoding: gzip");
        let (wz, bz) = (
            wardle.target.with_header(header::ACCEPT_ENCODING, "gzip"),
            base.target.with_header(header::ACCEPT_ENCODING, "gzip"),
        );
        let (w, b) = alternate(
            plan,
            |stop| gets(&wz, &list, plan.concurrency, &pid, stop),
            |stop| gets(&bz, &list, plan.concurrency, &base_pid, stop),
        )
        .await;
        rows.push(
            throughput_row(
                &format!("LIST {} objects, Accept-Encoding: gzip", plan.list_size),
                w,
                "baseline (wardle's bytes)",
                b,
                None,
            )
            .note(gzip.describe()),
        );

        say("LIST, big and unpaged");
        rows.push(lists::big_list(plan, work, &pki, &wardle).await?);
    }

    if plan.runs("create") {
        say("CREATE (embedded)");
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
    }

    if plan.runs("create") || plan.runs("etcd") {
        say("CREATE (memory)");
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
            Some(0.5),
        ));
    }

    say("CREATE (etcd)");
    'etcd: {
        if !plan.runs("etcd") {
            break 'etcd;
        }
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

    if let Some(row) = etcd_cpu_row(&rows) {
        rows.push(row);
    }

    if plan.runs("watch") {
        say("WATCH fan-out");
        let shape = plan.fan_out;
        let path = format!("{}?watch=true", collection("bench-watch"));
        let make = |t: &Target, i: usize| create(t, "bench-watch", &watch::object_name(i));
        let w = watch::run(&wardle.target, shape, &path, make, &pid).await?;
        let b = watch::run(&base.target, shape, &path, make, &base_pid).await?;
        let r = ratio(w.p99_ms, b.p99_ms);
        rows.push(
            Row::new(
                format!("WATCH {} watchers × {} events", shape.watchers, shape.events),
                w.clone(),
                "baseline",
                b,
                "p99 delivery latency, lower is better",
                r,
            )
            .target(Goal::at_most("wardle p99 ms", w.p99_ms, 50.0))
            .note(format!(
                "one writer at {} creates/s; latency from the create's answer to each watcher's receipt; req/s counts deliveries",
                shape.rate
            )),
        );
    }

    if plan.runs("sweep") {
        say("concurrency sweep");
        rows.extend(sweep::run(plan, work, &pki, &base, &one, &say).await?);
    }
    drop(base);
    drop(wardle);

    if plan.runs("watchers") {
        say("many watchers");
        rows.extend(watchers::run(plan, work, &pki, &recordings_file).await?);
    }

    if plan.runs("aggregator") {
        say("through the aggregator");
        rows.extend(aggregated::run(plan, work, &say).await?);
    }

    if plan.runs("start") {
        say("cold start");
        rows.push(cold_starts(plan, work, &pki, &recordings_file).await?);
    }

    let mut memory_curve = Vec::new();
    if plan.runs("memory") {
        say("memory");
        let filled = memory::run(plan, work, &pki, &recordings_file, created.len(), &say).await?;
        rows.extend(filled.rows);
        memory_curve = filled.curve;
        say("paged sweep");
        rows.push(lists::paged_sweep(plan, work, &pki, &filled.server, "bench-memory").await?);
    }

    say("done");
    Ok(Report {
        mode: match process::baseline_batched() {
            false => plan.mode.into(),
            true => format!(
                "{} (the baseline batching its HTTP/2 writes as wardle does)",
                plan.mode
            ),
        },
        machine: machine(),
        concurrency: plan.concurrency,
        run_seconds: began.elapsed().as_secs_f64(),
        rows,
        memory_curve,
        load_average: [load_at_start, process::load_average()],
        stolen_percent: cpu_at_start
            .zip(process::MachineCpu::read())
            .and_then(|(start, end)| end.stolen_percent_since(&start)),
    })
}

/// wardle's own CPU per create on etcd (without etcd's) against the same on the memory store,
/// from the two CREATE rows.
fn etcd_cpu_row(rows: &[Row]) -> Option<Row> {
    let find = |name: &str| rows.iter().find(|r| r.scenario == name);
    let (on_etcd, in_memory) = (find("CREATE, etcd")?, find("CREATE, memory store")?);
    let mut framework = on_etcd.framework.clone();
    framework.cpu_seconds = framework.own_cpu_seconds.take();
    let baseline = in_memory.framework.clone();
    let (e, m) = (
        framework.own_cpu_micros_per_request(),
        baseline.own_cpu_micros_per_request(),
    );
    let r = ratio(e, m);
    let us = |v: Option<f64>| v.map_or("–".into(), |v| format!("{v:.0}"));
    Some(
        Row::new(
            "CREATE, etcd: wardle's own CPU per create",
            framework,
            "wardle on the memory store",
            baseline,
            "CPU µs per create ÷ the memory store's, lower is better",
            r,
        )
        .target(Goal::at_most("ratio", r, 1.5))
        .note(format!(
            "wardle's CPU (from /proc, without etcd's): {} µs per create on etcd, {} µs on the memory store",
            us(e),
            us(m)
        )),
    )
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
    Ok(Row::new(
        "Start to /readyz 200, embedded store",
        w.clone(),
        "baseline",
        b,
        "median ms, lower is better",
        r,
    )
    .target(Goal::at_most("wardle median ms", w.p50_ms, 150.0))
    .note(format!(
        "{} starts each on a fresh data directory; p50 is the median, p99 the slowest",
        plan.start_runs
    )))
}
