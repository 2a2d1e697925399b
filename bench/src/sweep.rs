//! The concurrency sweep: GET and CREATE at each number of clients of the plan, over HTTP/2,
//! on wardle's memory store (so that the store's disk does not set CREATE's latency) and on
//! the baseline, in alternating rounds at each step.

use std::path::Path;

use bytes::Bytes;
use http::{Method, StatusCode};

use crate::client::Error;
use crate::compare::{alternate, creates_by, gets, throughput_row};
use crate::plan::Plan;
use crate::report::{Row, SweepPoint};
use crate::requests::call;
use crate::scenarios::create_get_me;
use crate::servers::{self, Server};
use crate::tls::Pki;

/// The rows of the sweep: one per operation and number of clients. `base` is the running
/// baseline, `one` the path of the object GET reads (created here too).
pub async fn run(
    plan: &Plan,
    work: &Path,
    pki: &Pki,
    base: &Server,
    one: &str,
    say: &impl Fn(&str),
) -> Result<Vec<Row>, Error> {
    let wardle = servers::wardle(
        work,
        "wardle-sweep",
        pki,
        &["--storage-backend".into(), "memory".into()],
    )
    .await?;
    create_get_me(&wardle.target, "bench").await?;
    call(
        &wardle.target,
        Method::GET,
        one,
        Bytes::new(),
        StatusCode::OK,
    )
    .await?;
    let (w_pid, b_pid) = ([wardle.pid()], [base.pid()]);
    let (w_target, b_target) = (
        wardle.target.http2(plan.h2_streams),
        base.target.http2(plan.h2_streams),
    );
    let step = plan.measuring(plan.sweep_measure);
    let mut rows = Vec::new();
    for operation in ["GET", "CREATE"] {
        for &clients in &plan.sweep_clients {
            say(&format!("  {operation}, {clients} clients"));
            let (w, b) = if operation == "GET" {
                alternate(
                    &step,
                    |stop| gets(&w_target, one, clients, &w_pid, stop),
                    |stop| gets(&b_target, one, clients, &b_pid, stop),
                )
                .await
            } else {
                alternate(
                    &step,
                    |stop| creates_by(clients, &w_target, "bench-sweep", &w_pid, stop),
                    |stop| creates_by(clients, &b_target, "bench-sweep", &b_pid, stop),
                )
                .await
            };
            let mut row = throughput_row(
                &format!(
                    "{operation}, {clients} client{}, HTTP/2",
                    if clients == 1 { "" } else { "s" }
                ),
                w,
                "baseline",
                b,
                None,
            )
            .note(format!(
                "{} HTTP/2 connection{}; wardle on the memory store",
                clients.div_ceil(plan.h2_streams),
                if clients <= plan.h2_streams { "" } else { "s" }
            ));
            row.sweep = Some(SweepPoint {
                operation: operation.into(),
                clients,
            });
            rows.push(row);
        }
    }
    Ok(rows)
}
