//! Through the aggregator: the development host (`wardle dev-host`: the framework's aggregator
//! with wardle registered as an APIService, the front-proxy client certificate, delegated
//! authentication and authorization) and `wardle serve` behind it, each a process of its own,
//! real TLS on both hops. Requests through the host are compared with the same requests sent
//! to wardle directly, over HTTP/2 on every hop.

use std::path::Path;
use std::time::Duration;

use apiserver_framework::testing::wait;
use bytes::Bytes;
use http::{Method, StatusCode};

use crate::client::{Error, Target};
use crate::compare::{alternate, gets, ratio};
use crate::devhost::{Host, fresh_dir, log_tail};
use crate::plan::Plan;
use crate::process::{Proc, connections_to, free_addr};
use crate::report::{Measurement, Row, Target as Goal};
use crate::requests::{call, collection, create, flunder};
use crate::scenarios::create_get_me;
use crate::watch::{self, FanOut, OPEN_WITHIN};

/// How long wardle and the APIService may take to become ready.
const READY_WITHIN: Duration = Duration::from_secs(60);

/// The host and wardle behind it.
struct Stack {
    // Dropped (killed) in this order: wardle, then the host.
    wardle: Proc,
    host: Host,
    /// The host, as its admin (`system:masters`).
    via: Target,
    /// wardle itself, as the same user (a bearer token wardle reviews with the host).
    direct: Target,
    backend_port: u16,
}

impl Stack {
    async fn start(work: &Path) -> Result<Stack, Error> {
        let dir = fresh_dir(work, "aggregated")?;
        let backend_addr = free_addr();
        let host = Host::start(&dir, backend_addr, "1s").await?;
        let mut wardle_args: Vec<String> = vec!["serve".into()];
        wardle_args.extend(host.serving_args(backend_addr.port()));
        wardle_args.extend(["--data-dir".into(), dir.join("data").display().to_string()]);
        let mut wardle = Proc::role("wardle", &wardle_args, &dir, &dir.join("wardle.log"))?;
        let direct = host.target(backend_addr);
        wardle
            .wait_ready(&direct, READY_WITHIN)
            .await
            .map_err(|e| {
                format!(
                    "wardle serve: {e}; its log ends with:\n{}",
                    log_tail(&dir.join("wardle.log"))
                )
            })?;
        let stack = Stack {
            wardle,
            via: host.via.clone(),
            host,
            direct,
            backend_port: backend_addr.port(),
        };
        stack.wait_available().await?;
        Ok(stack)
    }

    /// Waits until the host proxies wardle's group (its APIService is available).
    async fn wait_available(&self) -> Result<(), Error> {
        let path = collection("default");
        wait::poll("wardle's APIService to be available", READY_WITHIN, || {
            call(&self.via, Method::GET, &path, Bytes::new(), StatusCode::OK)
        })
        .await?;
        Ok(())
    }

    /// Creates the namespace `name` on the host, and waits until wardle accepts creates in it.
    async fn namespace(&self, name: &str) -> Result<(), Error> {
        self.host.namespace(name).await?;
        let path = collection(name);
        wait::poll(
            "wardle to accept creates in the namespace",
            READY_WITHIN,
            || {
                call(
                    &self.direct,
                    Method::POST,
                    &path,
                    flunder("first"),
                    StatusCode::CREATED,
                )
            },
        )
        .await?;
        Ok(())
    }
}

/// A fan-out whose watchers use `watchers` while the writer creates on wardle directly;
/// an error opening them is reported as the row's, not the run's. With `count`, also the
/// connections process `count.0` holds to port `count.1` once the watches are open.
async fn fan_out(
    watchers: &Target,
    writer: &Target,
    shape: FanOut,
    namespace: &str,
    pids: &[u32],
    count: Option<(u32, u16)>,
) -> (Measurement, Option<usize>) {
    let path = format!("{}?watch=true", collection(namespace));
    let make = |t: &Target, i: usize| create(t, namespace, &watch::object_name(i));
    let mut connections = None;
    let result = async {
        let opened = watch::open(watchers, shape.watchers, &path, OPEN_WITHIN).await?;
        connections = count.map(|(pid, port)| connections_to(pid, port));
        watch::deliver(opened, writer, shape, make, pids).await
    }
    .await;
    let measurement = result.unwrap_or_else(|e: Error| Measurement {
        errors: shape.watchers as u64,
        first_error: Some(e.to_string()),
        ..Default::default()
    });
    (measurement, connections)
}

/// The rows: GET through the host against GET from wardle directly, and a watch fan-out the
/// same two ways.
pub async fn run(plan: &Plan, work: &Path, say: &impl Fn(&str)) -> Result<Vec<Row>, Error> {
    let stack = Stack::start(work).await?;
    let (host_pid, wardle_pid) = (stack.host.proc.pid, stack.wardle.pid);
    let one = create_get_me(&stack.direct, "default").await?;
    let (via, direct) = (
        stack.via.http2(plan.h2_streams),
        stack.direct.http2(plan.h2_streams),
    );
    // Both ways answer the same object.
    let (a, b) = (
        call(&via, Method::GET, &one, Bytes::new(), StatusCode::OK).await?,
        call(&direct, Method::GET, &one, Bytes::new(), StatusCode::OK).await?,
    );
    if a != b {
        return Err("the aggregator answered other bytes than wardle".into());
    }

    say("  GET");
    let (both, wardle_only) = ([host_pid, wardle_pid], [wardle_pid]);
    let (w, d) = alternate(
        plan,
        |stop| gets(&via, &one, plan.concurrency, &both, stop),
        |stop| gets(&direct, &one, plan.concurrency, &wardle_only, stop),
    )
    .await;
    let backend_connections = connections_to(host_pid, stack.backend_port);
    let us = |m: &Measurement, cpu: Option<f64>| {
        cpu.filter(|_| m.count > 0)
            .map_or("–".into(), |c| format!("{:.0}", c * 1e6 / m.count as f64))
    };
    let host_us = us(&w, w.own_cpu_seconds);
    let wardle_behind_us = us(&w, w.cpu_seconds.zip(w.own_cpu_seconds).map(|(a, h)| a - h));
    let wardle_direct_us = us(&d, d.cpu_seconds);
    let mut rows = vec![
        crate::compare::throughput_row(
            "GET one object through the aggregator, HTTP/2",
            w,
            "direct to wardle, HTTP/2",
            d,
            Some(0.5),
        )
        .note(format!(
            "client → dev host → wardle serve, TLS on both hops, {} clients with {} to an HTTP/2 connection; the host held {backend_connections} connection(s) to wardle afterwards (one means HTTP/2 multiplexed); CPU per GET: the host {host_us} µs + wardle {wardle_behind_us} µs, direct wardle {wardle_direct_us} µs",
            plan.concurrency, plan.h2_streams
        )),
    ];

    say("  watch fan-outs");
    for (i, shape) in plan.aggregated_fan_outs.iter().copied().enumerate() {
        let (ns_via, ns_direct) = (format!("bench-via-{i}"), format!("bench-direct-{i}"));
        stack.namespace(&ns_via).await?;
        stack.namespace(&ns_direct).await?;
        let (through, held) = fan_out(
            &via,
            &stack.direct,
            shape,
            &ns_via,
            &[host_pid, wardle_pid],
            Some((host_pid, stack.backend_port)),
        )
        .await;
        let (straight, _) = fan_out(
            &direct,
            &stack.direct,
            shape,
            &ns_direct,
            &[wardle_pid],
            None,
        )
        .await;
        let r = ratio(through.p99_ms, straight.p99_ms);
        let (both_writes, host_writes) = through.writes_per_request();
        let wardle_writes = both_writes.zip(host_writes).map(|(a, h)| a - h);
        let writes = format!(
            "write system calls per delivery: the host {} + wardle {}, wardle directly {}",
            crate::report::per_delivery(host_writes),
            crate::report::per_delivery(wardle_writes),
            crate::report::per_delivery(straight.writes_per_request().0),
        );
        rows.push(
            Row::new(
                format!(
                    "WATCH {} watchers × {} events through the aggregator",
                    shape.watchers, shape.events
                ),
                through,
                "direct to wardle",
                straight,
                "p99 delivery latency ÷ direct, lower is better",
                r,
            )
            .target(Goal::at_most("ratio", r, 2.0))
            .note(format!(
                "watches over HTTP/2, {} to a connection; one writer at {} creates/s straight to wardle; with the watches open the host held {} connection(s) to wardle; {writes}",
                plan.h2_streams,
                shape.rate,
                held.map_or("–".into(), |n| n.to_string()),
            )),
        );
    }
    Ok(rows)
}
