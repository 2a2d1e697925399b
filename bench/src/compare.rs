//! wardle against its baseline in the same run: loads taken in turns for a few rounds, the
//! closed-loop loads most comparisons use, and the rows that compare them.

use bytes::Bytes;
use http::{Method, StatusCode};

use crate::client::Target;
use crate::load::{self, Http, Stop};
use crate::plan::Plan;
use crate::report::{Measurement, Row, Target as Goal};
use crate::requests::create;

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

/// Runs `a`, `b` and `c` in turns for [`ROUNDS`] rounds and adds up each one's figures.
pub async fn alternate3<A, B, C, FA, FB, FC>(
    plan: &Plan,
    mut a: A,
    mut b: B,
    mut c: C,
) -> (Measurement, Measurement, Measurement)
where
    A: FnMut(Stop) -> FA,
    B: FnMut(Stop) -> FB,
    C: FnMut(Stop) -> FC,
    FA: std::future::Future<Output = load::LoadResult>,
    FB: std::future::Future<Output = load::LoadResult>,
    FC: std::future::Future<Output = load::LoadResult>,
{
    let mut first = a(round_stop(plan, 0)).await;
    let mut second = b(round_stop(plan, 0)).await;
    let mut third = c(round_stop(plan, 0)).await;
    for round in 1..ROUNDS {
        first.merge(a(round_stop(plan, round)).await);
        second.merge(b(round_stop(plan, round)).await);
        third.merge(c(round_stop(plan, round)).await);
    }
    (
        first.measurement(),
        second.measurement(),
        third.measurement(),
    )
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
pub async fn creates(
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
    creates_of(create, clients, target, namespace, pids, stop).await
}

/// The creates of [`creates_by`], each request made by `make(target, namespace, name)`.
pub async fn creates_of(
    make: fn(&Target, &str, &str) -> http::Request<http_body_util::Full<Bytes>>,
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
        make: move |t: &Target, _c: usize, i: u64| make(t, &ns, &format!("c-{round}-{i}")),
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
