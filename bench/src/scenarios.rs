//! The scenarios of a run, in order, each measured on wardle and on its baseline in the same
//! run.

use std::path::Path;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{Method, StatusCode, header};

use crate::baseline::{self, Recordings};
use crate::client::{Error, Target};
use crate::compare::{alternate, creates, gets, ratio, throughput_row};
use crate::etcd::{Etcd, RawPuts};
use crate::load;
use crate::plan::Plan;
use crate::report::{Measurement, Report, Row, Target as Goal, machine};
use crate::requests::{call, collection, create, fetch, fill, flunder, recorded, write_recordings};
use crate::servers;
use crate::tls::Pki;
use crate::watch;
use crate::{aggregated, lists, memory, process, sweep, watchers};

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

    if plan.runs("encryption") {
        say("GET and CREATE, encrypted at rest (aesgcm)");
        rows.extend(crate::encryption::rows(plan, work, &pki).await?);
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

    if plan.runs("peer") {
        // Chosen by name, it runs or fails; among all groups, it is left out where the
        // upstream programs are not built (CI's smoke run).
        match crate::peer::unavailable() {
            Some(why) if plan.only.is_empty() => {
                say(&format!("not beside sample-apiserver: {why}"))
            }
            _ => {
                say("beside sample-apiserver");
                rows.extend(crate::peer::run(plan, work, &say).await?);
            }
        }
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
pub fn start_times(times: &mut [Duration]) -> Measurement {
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
