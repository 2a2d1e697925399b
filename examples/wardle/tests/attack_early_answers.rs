//! Security issue 44: unauthenticated HTTP/2 streams must not pin wardle's memory. An
//! anonymous client opens 200 connections and on each 1,000 streams at once, every one only a
//! HEADERS frame announcing an 8 MiB body that never comes. Each is refused before any handler
//! runs; it must be answered and its stream reset (`RST_STREAM`, `NO_ERROR`) within a second
//! of the server reading it, and wardle's anonymous memory (`RssAnon`, sampled throughout)
//! must grow by less than 100 MiB.
//!
//! Before the fix, wardle held every such stream for 10 s (reading the body that never came
//! before answering), 4.7 KB each: 200 × 1,000 of them grew its memory from 13 MB to 951 MB.
//! Then answered within 100 ms, the streams were still all read at once and waited their
//! turn: 370 MB, each held up to 4 s. Now a connection reads no more while the requests it
//! sent wait to start (`server/connections/backlog.rs`), and the flood waits in the sockets.
//!
//! The attacker writes frames itself (`production/h2_frames.rs`): a client of the `h2` crate
//! spends more CPU than the server it attacks, and its timings measure mostly itself. When the
//! server read a stream is told by the answer to a `PING` written after it. wardle is the real
//! `wardle serve` binary behind a dev host (`production/stack.rs`): the tests' debug build, or
//! `ATTACK_WARDLE=target/release/wardle` (after `cargo build --release -p wardle`);
//! `ATTACK_STREAMS` sets the streams a connection (1,000).

#![allow(dead_code)]

#[path = "production/stack.rs"]
mod stack;

#[path = "support/proc_status.rs"]
mod proc_status;

#[path = "production/h2_frames.rs"]
mod h2_frames;

use proc_status::status_mib;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use stack::{FLUNDERS, Stack};

/// The attacking connections.
const CONNECTIONS: usize = 200;
/// The streams opened on each (`ATTACK_STREAMS`; the 1,000 a connection may carry at once).
fn streams() -> usize {
    std::env::var("ATTACK_STREAMS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000)
}

/// The wardle binary attacked (`ATTACK_WARDLE`): the tests' debug build by default.
fn wardle_binary() -> PathBuf {
    std::env::var_os("ATTACK_WARDLE")
        .map(PathBuf::from)
        .unwrap_or_else(|| env!("CARGO_BIN_EXE_wardle").into())
}
/// The body every stream announces and never sends.
const ANNOUNCED: usize = 8 * 1024 * 1024;
/// How much wardle's anonymous memory may grow during the attack.
const GROWTH_BOUND_MIB: f64 = 100.0;
/// How long the server may hold a stream, from reading its HEADERS to resetting it.
const HELD_BOUND: Duration = Duration::from_secs(1);
/// How long an attacking connection waits for a frame before giving up on its streams.
const PATIENCE: Duration = Duration::from_secs(30);

/// One attacking connection: `count` streams announcing [`ANNOUNCED`] bytes and sending none.
async fn attack(ca_pem: Arc<str>, addr: SocketAddr, count: usize) -> h2_frames::Connection {
    let block = h2_frames::header_block("POST", FLUNDERS, &addr.to_string(), ANNOUNCED);
    h2_frames::flood(&ca_pem, addr, &block, count, PATIENCE).await
}

/// The largest anonymous memory of `pid` seen until `done`, in MiB, read every 20 ms (the
/// cadence of a measurement, not a wait for anything).
fn sample_peak(pid: u32, done: Arc<AtomicBool>) -> tokio::task::JoinHandle<f64> {
    tokio::spawn(async move {
        let mut peak: f64 = 0.0;
        while !done.load(Ordering::Acquire) {
            peak = peak.max(status_mib(Some(pid), "RssAnon:"));
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        peak.max(status_mib(Some(pid), "RssAnon:"))
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_http2_streams_are_answered_and_reset_at_once() {
    let stack = Stack::start_binary(wardle_binary(), &[]).await;
    let count = streams();
    let pid = stack.wardle_pid();
    let ca: Arc<str> = stack.host.files.ca_pem.clone().into();
    let addr: SocketAddr = ([127, 0, 0, 1], stack.backend_port).into();

    // Warm up (the allocator's pools, the authorizer's cache), then measure.
    let warm = attack(ca.clone(), addr, count).await;
    assert!(
        warm.streams.iter().all(|o| o.reset.is_some()),
        "warm-up streams left open: {:?}",
        warm.goaway
    );
    let before = status_mib(Some(pid), "RssAnon:");
    let rss_before = status_mib(Some(pid), "VmRSS:");

    let done = Arc::new(AtomicBool::new(false));
    let peak = sample_peak(pid, done.clone());
    let started = Instant::now();
    let connections = (0..CONNECTIONS)
        .map(|_| tokio::spawn(attack(ca.clone(), addr, count)))
        .collect::<Vec<_>>();
    let mut outcomes = Vec::with_capacity(CONNECTIONS * count);
    let mut goaways = Vec::new();
    for connection in connections {
        let connection = connection.await.expect("an attacking connection");
        goaways.extend(connection.goaway);
        outcomes.extend(connection.streams);
    }
    let took = started.elapsed();
    done.store(true, Ordering::Release);
    let peak = peak.await.expect("the sampler");
    let rss_after = status_mib(Some(pid), "VmRSS:");

    let statuses = h2_frames::tally(outcomes.iter().map(|o| o.status));
    let reasons = h2_frames::tally(outcomes.iter().map(|o| o.reset.map(|(_, code)| code)));
    let mut answered: Vec<Duration> = outcomes.iter().filter_map(|o| o.answered).collect();
    answered.sort();
    let mut resets: Vec<Duration> = outcomes
        .iter()
        .filter_map(|o| o.reset.map(|(at, _)| at))
        .collect();
    resets.sort();
    let mut held: Vec<Duration> = outcomes.iter().filter_map(|o| o.held()).collect();
    held.sort();
    let quantile =
        |v: &[Duration], q: f64| v.get(((v.len().max(1) - 1) as f64 * q) as usize).copied();
    eprintln!(
        "{} streams in {took:.1?}: statuses {statuses:?}, resets {reasons:?}, GOAWAYs {goaways:?}; \
         answered after p50 {:?} p99 {:?} max {:?}; reset after p50 {:?} p99 {:?} max {:?} \
         (from the HEADERS' write); held from read to reset p50 {:?} p99 {:?} max {:?}; \
         wardle's RssAnon {before:.1} MiB, peak {peak:.1} MiB; VmRSS {rss_before:.1} -> \
         {rss_after:.1} MiB",
        outcomes.len(),
        quantile(&answered, 0.5),
        quantile(&answered, 0.99),
        answered.last(),
        quantile(&resets, 0.5),
        quantile(&resets, 0.99),
        resets.last(),
        quantile(&held, 0.5),
        quantile(&held, 0.99),
        held.last(),
    );

    assert_eq!(outcomes.len(), CONNECTIONS * count);
    assert!(goaways.is_empty(), "the server sent GOAWAY: {goaways:?}");
    let unread: Vec<usize> = outcomes
        .iter()
        .filter(|o| o.status == 0)
        .map(|o| o.body_bytes)
        .take(10)
        .collect();
    assert!(
        statuses.keys().all(|s| matches!(s, 401 | 403 | 429)),
        "every stream is refused: {statuses:?}; the body bytes of some unread: {unread:?}"
    );
    assert_eq!(
        reasons.keys().collect::<Vec<_>>(),
        [&Some(0)],
        "every stream is reset, with NO_ERROR: {reasons:?}"
    );
    let unread = outcomes.iter().filter(|o| o.read.is_none()).count();
    assert_eq!(unread, 0, "streams whose PING was never answered");
    let longest = held.last().copied().expect("held streams");
    assert!(
        longest < HELD_BOUND,
        "the server held a stream {longest:?} after reading its HEADERS"
    );
    assert!(
        peak - before < GROWTH_BOUND_MIB,
        "wardle's anonymous memory grew from {before:.1} MiB to {peak:.1} MiB"
    );

    // wardle still serves.
    let res = stack
        .client()
        .get(format!("{}{FLUNDERS}", stack.wardle_url()))
        .bearer_auth(stack.token("alice"))
        .send()
        .await
        .expect("an answer");
    assert_eq!(res.status(), 200);
}
