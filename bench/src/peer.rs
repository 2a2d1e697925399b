//! The benchmark's peer (issue 46): Kubernetes' sample-apiserver beside wardle in the same
//! run, both served the same way (`wardle serve` and sample-apiserver behind one development
//! host for delegated authentication and authorization, each storing in an etcd 3.6 of its
//! own, the two started alike), loaded at the same concurrency with the same bearer token sent to
//! each directly, and the same Flunders (with only the fields both servers' types have); each
//! row also has the bare baseline answering wardle's recorded bytes.

mod fan_out;
mod memory;
mod prepare;
mod stack;
mod stored;
pub mod versus;
mod writes;

use std::path::Path;

use crate::baseline::Recordings;
use crate::client::Error;
use crate::compare::{alternate3, gets, ratio, throughput_row};
use crate::plan::Plan;
use crate::report::{Measurement, Row};
use crate::requests::{collection, write_recordings};
use crate::scenarios::start_times;
use crate::servers;
use memory::{anon, memory_row};
use prepare::{Paths, prepare};
use stack::{SAMPLE_PREFIX, Stack, WARDLE_PREFIX};
use versus::{PEER, Versus};

/// The namespaces of the peer rows, created on the host; the first object's is last, so that
/// a server that sees it has seen the others.
const NAMESPACES: &[&str] = &[
    "peer-list",
    "peer-big",
    "peer-create",
    "peer-update",
    "peer-apply",
    fan_out::NAMESPACE,
    fan_out::MANY_NAMESPACES[0],
    fan_out::MANY_NAMESPACES[1],
    stored::NAMESPACE,
    "peer-get",
];

/// Why the peer group cannot run here, if it cannot: sample-apiserver or upstream's etcd not
/// built (`scripts/build-upstream sample-apiserver`, `scripts/build-upstream etcd`).
pub fn unavailable() -> Option<String> {
    stack::binaries().err().map(|e| e.to_string())
}

/// The rows of the peer group, in the order of priority: start to ready and idle
/// memory (taken first, on empty prefixes), GET one object over HTTP/1.1 and HTTP/2, LIST,
/// CREATE, UPDATE, server-side apply, the big LIST, memory once loaded; then the watch
/// fan-out, the memory a stored object takes and the paged sweep through them; last the
/// fan-outs to 10,000 watchers (over HTTP/2, then HTTP/1.1), which may stop a server. Only
/// the rows `plan.rows` names, when it names some.
pub async fn run(plan: &Plan, work: &Path, say: &impl Fn(&str)) -> Result<Vec<Row>, Error> {
    say("  etcd and the development host");
    let stack = Stack::start(work).await?;
    let pki = stack.host.backend_pki();
    let empty = write_recordings(stack.dir(), "recordings-empty.json", &Recordings::new())?;
    let mut rows = Vec::new();

    say("  start to ready");
    let mut wardle = stack.wardle().await?;
    let mut sample = stack.sample_apiserver().await?;
    let mut bare = servers::baseline(stack.dir(), "baseline-start", &pki, &empty).await?;
    let mut times = [
        vec![wardle.ready_after],
        vec![sample.ready_after],
        vec![bare.ready_after],
    ];
    let start_runs = if plan.runs_row("start") {
        plan.start_runs
    } else {
        1
    };
    for _ in 1..start_runs {
        drop(wardle);
        wardle = stack.wardle().await?;
        times[0].push(wardle.ready_after);
        drop(sample);
        sample = stack.sample_apiserver().await?;
        times[1].push(sample.ready_after);
        drop(bare);
        bare = servers::baseline(stack.dir(), "baseline-start", &pki, &empty).await?;
        times[2].push(bare.ready_after);
    }
    let [w, s, b] = times.map(|mut t| start_times(&mut t));
    let r = ratio(w.p50_ms, b.p50_ms);
    let v = Versus::start(&w, s);
    let start_row = plan.runs_row("start").then(|| {
        Row::new(
            "peer: start to /readyz 200",
            w,
            "bare baseline",
            b,
            "median ms, lower is better",
            r,
        )
        .peer(v)
        .note(format!(
            "{} starts each, in turns; p50 is the median, p99 the slowest; both servers against the running dev host and etcd",
            plan.start_runs
        ))
    });
    rows.extend(start_row);

    if plan.runs_row("memory") {
        // The measured subject is memory: the servers settle before it is read.
        tokio::time::sleep(plan.settle).await;
        rows.push(memory_row(
            "peer: idle anonymous memory",
            anon(wardle.pid()),
            anon(bare.pid()),
            anon(sample.pid()),
            "RssAnon from /proc/PID/status (heap and stacks, no file-backed pages), ready and idle, before any object",
        ));
    }
    drop(bare);

    say("  filling both servers");
    for ns in NAMESPACES {
        stack.host.namespace(ns).await?;
    }
    let paths = Paths {
        one: format!("{}/get-me", collection("peer-get")),
        list: collection("peer-list"),
        big_list: collection("peer-big"),
    };
    let (w_pids, s_pids) = (
        [wardle.pid(), stack.wardle_etcd.proc.pid],
        [sample.pid(), stack.sample_etcd.proc.pid],
    );
    let mut recordings = Recordings::new();
    let ws = prepare(
        plan,
        "wardle",
        &wardle,
        &w_pids,
        &paths,
        Some(&mut recordings),
    )
    .await?;
    let ss = prepare(plan, PEER, &sample, &s_pids, &paths, None).await?;
    let recordings_file = write_recordings(stack.dir(), "recordings.json", &recordings)?;
    let bare = servers::baseline(stack.dir(), "baseline", &pki, &recordings_file).await?;
    let b_pids = [bare.pid()];
    let conc = plan.concurrency;
    let setup = format!(
        "wardle serve and {PEER} behind one dev host (delegated authentication and authorization; the host admin's bearer token sent to each directly), each storing in an etcd 3.6 of its own (two members of one binary, the same flags; prefixes {WARDLE_PREFIX} and {SAMPLE_PREFIX}); req/CPU-s counts the server's own process (CPU s counts its etcd too)"
    );
    let (wt, st, bt) = (&wardle.target, &sample.target, &bare.target);

    let row = |scenario: &str, w: Measurement, b: Measurement, s, sizes: (usize, usize)| {
        let v = Versus::throughput(&w, s, Some(sizes));
        throughput_row(scenario, w, "bare baseline", b, None).peer(v)
    };

    if plan.runs_row("get") {
        say("  GET one object (HTTP/1.1)");
        let (w, s, b) = alternate3(
            plan,
            |stop| gets(wt, &paths.one, conc, &w_pids, stop),
            |stop| gets(st, &paths.one, conc, &s_pids, stop),
            |stop| gets(bt, &paths.one, conc, &b_pids, stop),
        )
        .await;
        rows.push(
            row("peer: GET one object", w, b, s, (ws.get, ss.get))
                .note(format!("{conc} clients over HTTP/1.1; {setup}")),
        );
    }

    if plan.runs_row("get-h2") {
        say("  GET one object (HTTP/2)");
        let (w2, s2, b2) = (
            wt.http2(plan.h2_streams),
            st.http2(plan.h2_streams),
            bt.http2(plan.h2_streams),
        );
        let (w, s, b) = alternate3(
            plan,
            |stop| gets(&w2, &paths.one, conc, &w_pids, stop),
            |stop| gets(&s2, &paths.one, conc, &s_pids, stop),
            |stop| gets(&b2, &paths.one, conc, &b_pids, stop),
        )
        .await;
        rows.push(
            row("peer: GET one object, HTTP/2", w, b, s, (ws.get, ss.get)).note(format!(
                "{conc} clients, {} to an HTTP/2 connection",
                plan.h2_streams
            )),
        );
    }

    if plan.runs_row("list") {
        say("  LIST");
        let (w, s, b) = alternate3(
            plan,
            |stop| gets(wt, &paths.list, conc, &w_pids, stop),
            |stop| gets(st, &paths.list, conc, &s_pids, stop),
            |stop| gets(bt, &paths.list, conc, &b_pids, stop),
        )
        .await;
        rows.push(row(
            &format!("peer: LIST {} objects", plan.list_size),
            w,
            b,
            s,
            (ws.list, ss.list),
        ));
    }

    if plan.runs_row("create") {
        say("  CREATE");
        let (w, s, b) = alternate3(
            plan,
            |stop| writes::creates(wt, "peer-create", conc, &w_pids, stop),
            |stop| writes::creates(st, "peer-create", conc, &s_pids, stop),
            |stop| writes::creates(bt, "peer-create", conc, &b_pids, stop),
        )
        .await;
        rows.push(row("peer: CREATE", w, b, s, (ws.create, ss.create)));
    }

    if plan.runs_row("update") {
        say("  UPDATE");
        let (w, s, b) = alternate3(
            plan,
            |stop| writes::updates(wt, "peer-update", "u-", conc, &w_pids, stop),
            |stop| writes::updates(st, "peer-update", "u-", conc, &s_pids, stop),
            |stop| writes::updates(bt, "peer-update", "u-", conc, &b_pids, stop),
        )
        .await;
        rows.push(
            row("peer: UPDATE", w, b, s, (ws.update, ss.update)).note(
                "PUT of each client's own Flunder with a new label value, its last resourceVersion as precondition",
            ),
        );
    }

    if plan.runs_row("apply") {
        say("  server-side apply");
        let (w, s, b) = alternate3(
            plan,
            |stop| writes::applies(wt, "peer-apply", "a-", conc, &w_pids, stop),
            |stop| writes::applies(st, "peer-apply", "a-", conc, &s_pids, stop),
            |stop| writes::applies(bt, "peer-apply", "a-", conc, &b_pids, stop),
        )
        .await;
        rows.push(
            row("peer: server-side apply", w, b, s, (ws.apply, ss.apply)).note(format!(
                "PATCH application/apply-patch+yaml of each client's own Flunder with a new label value, fieldManager {}, force",
                writes::MANAGER
            )),
        );
    }

    if plan.runs_row("big-list") {
        say("  LIST, big and unpaged");
        let clients = plan.big_list_clients;
        let (w, s, b) = alternate3(
            plan,
            |stop| gets(wt, &paths.big_list, clients, &w_pids, stop),
            |stop| gets(st, &paths.big_list, clients, &s_pids, stop),
            |stop| gets(bt, &paths.big_list, clients, &b_pids, stop),
        )
        .await;
        rows.push(
            row(
                &format!("peer: LIST {} objects, unpaged", plan.big_list_size),
                w,
                b,
                s,
                (ws.big_list, ss.big_list),
            )
            .note(format!("{clients} clients")),
        );
    }

    if plan.runs_row("memory") {
        tokio::time::sleep(plan.settle).await;
        rows.push(memory_row(
            "peer: loaded anonymous memory",
            anon(wardle.pid()),
            anon(bare.pid()),
            anon(sample.pid()),
            &format!(
                "RssAnon after the rows above, settled: each server holding {} Flunders and those the CREATE row made; the bare baseline holding wardle's recorded answers",
                1 + plan.list_size + plan.big_list_size + 2 * plan.concurrency as u64
            ),
        ));
    }

    let sides = (
        ("wardle", wt, &w_pids[..]),
        (PEER, st, &s_pids[..]),
        ("baseline", bt, &b_pids[..]),
    );
    if plan.runs_row("watch") {
        say(&format!(
            "  watch fan-out to {} watchers",
            plan.fan_out.watchers
        ));
        let (w, s, b) = sides;
        let ns = fan_out::NAMESPACE;
        rows.push(fan_out::row(plan, plan.fan_out, ns, None, w, s, b).await?);
    }

    if plan.runs_row("stored") {
        rows.extend(
            stored::rows(
                plan,
                stack.dir(),
                &pki,
                (&wardle, &w_pids),
                (&sample, &s_pids),
                ws.create,
                say,
            )
            .await?,
        );
    }

    // Last: a server that cannot take them is stopped (see `fan_out::row`).
    let many = plan.peer_many_watchers;
    for (row, streams, ns) in [
        (
            "watch-10000-h2",
            Some(plan.many_watchers_streams),
            fan_out::MANY_NAMESPACES[0],
        ),
        ("watch-10000", None, fan_out::MANY_NAMESPACES[1]),
    ] {
        if plan.runs_row(row) {
            say(&format!(
                "  watch fan-out to {} watchers ({row})",
                many.watchers
            ));
            let (w, s, b) = sides;
            rows.push(fan_out::row(plan, many, ns, streams, w, s, b).await?);
        }
    }
    drop(bare);
    Ok(rows)
}
