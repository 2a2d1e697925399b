//! Security issue 44: unauthenticated HTTP/2 streams must not pin wardle's memory. An
//! anonymous client opens 200 connections and on each many streams at once, every one only a
//! HEADERS frame announcing an 8 MiB body that never comes. Each is refused before any handler
//! runs; the answer must be sent at once and the stream reset (`RST_STREAM`, `NO_ERROR`) as
//! Go's server does, not held while the server waits for the body. Before the fix, wardle held
//! every such stream for 10 s (reading the body that never came before answering), 4.7 KB each:
//! 200 × 1,000 of them grew its memory from 13 MB to 951 MB, and since they counted as requests
//! in flight their connections were never closed to make room.
//!
//! wardle is the real `wardle serve` binary behind a dev host (`production/stack.rs`); its
//! anonymous resident memory (`RssAnon`) is sampled throughout the attack. The test runs 100
//! streams a connection (20,000 in all) against the debug build the tests use. The full
//! attack, 1,000 streams a connection, measures what a flood costs while it is being answered,
//! which on a debug build is mostly the streams waiting their turn (a debug build answers such
//! refusals about five times slower than a release build): run it against a release build with
//! `ATTACK_STREAMS=1000 ATTACK_WARDLE=target/release/wardle cargo test -p wardle --test
//! attack_early_answers` (after `cargo build --release -p wardle`).

#![allow(dead_code)]

#[path = "production/stack.rs"]
mod stack;

#[path = "production/raw_h2.rs"]
mod raw_h2;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use stack::{FLUNDERS, Stack};

/// The attacking connections.
const CONNECTIONS: usize = 200;
/// The streams opened on each (`ATTACK_STREAMS`, at most the 1,000 a connection may carry at
/// once).
fn streams() -> usize {
    std::env::var("ATTACK_STREAMS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100)
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
/// How long after its HEADERS a stream may stay open: the whole attack is answered within it
/// on a busy two-core machine, and the old server held every stream 10 s before answering.
const RESET_BOUND: Duration = Duration::from_secs(5);

/// A field of `/proc/<pid>/status`, in MiB.
fn status_mib(pid: u32, field: &str) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("/proc status");
    let kib: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("{field} in /proc/{pid}/status"));
    kib / 1024.0
}

/// What became of one stream.
#[derive(Debug)]
struct Outcome {
    /// The answer's status (0: none came).
    status: u16,
    /// From the stream's HEADERS to its answer.
    answered: Duration,
    /// From the answer to the reset, and the reset's reason (`None`: no reset came).
    reset: Option<(Duration, h2::Reason)>,
    /// From the stream's HEADERS to its reset.
    open: Duration,
}

/// Opens one stream on `send` announcing [`ANNOUNCED`] bytes and sending none of them, and
/// follows it in a task of its own until it is reset.
fn open_stream(
    send: &mut h2::client::SendRequest<Bytes>,
    path: &str,
) -> tokio::task::JoinHandle<Outcome> {
    let req = http::Request::post(path)
        .header("content-type", "application/json")
        .header("content-length", ANNOUNCED.to_string())
        .body(())
        .expect("a request");
    let (response, mut body) = send.send_request(req, false).expect("a stream");
    let sent = Instant::now();
    tokio::spawn(async move {
        let status = match response.await {
            Ok(res) => res.status().as_u16(),
            Err(e) => {
                eprintln!("a stream got no answer: {e:?}");
                0
            }
        };
        let answered = sent.elapsed();
        let at = Instant::now();
        let reset = std::future::poll_fn(|cx| body.poll_reset(cx))
            .await
            .ok()
            .map(|reason| (at.elapsed(), reason));
        Outcome {
            status,
            answered,
            reset,
            open: sent.elapsed(),
        }
    })
}

/// One attacking connection: `count` streams, opened as fast as the connection allows.
async fn attack(ca_pem: Arc<str>, addr: SocketAddr, path: Arc<str>, count: usize) -> Vec<Outcome> {
    let mut send = raw_h2::connect(&ca_pem, addr).await;
    let mut streams = Vec::with_capacity(count);
    for _ in 0..count {
        send = send.ready().await.expect("room for a stream");
        streams.push(open_stream(&mut send, &path));
    }
    let mut outcomes = Vec::with_capacity(count);
    for stream in streams {
        outcomes.push(stream.await.expect("a stream's task"));
    }
    outcomes
}

/// The largest anonymous memory of `pid` seen until `done`, in MiB, read every 20 ms (the
/// cadence of a measurement, not a wait for anything).
fn sample_peak(pid: u32, done: Arc<AtomicBool>) -> tokio::task::JoinHandle<f64> {
    tokio::spawn(async move {
        let mut peak: f64 = 0.0;
        while !done.load(Ordering::Acquire) {
            peak = peak.max(status_mib(pid, "RssAnon:"));
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        peak.max(status_mib(pid, "RssAnon:"))
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_http2_streams_are_answered_and_reset_at_once() {
    let stack = Stack::start_binary(wardle_binary(), &[]).await;
    let count = streams();
    let pid = stack.wardle_pid();
    let ca: Arc<str> = stack.host.files.ca_pem.clone().into();
    let addr: SocketAddr = ([127, 0, 0, 1], stack.backend_port).into();
    let path: Arc<str> = FLUNDERS.into();

    // Warm up (the allocator's pools, the authorizer's cache), then measure.
    let warm = attack(ca.clone(), addr, path.clone(), count).await;
    assert!(
        warm.iter().all(|o| o.reset.is_some()),
        "warm-up streams left open"
    );
    let before = status_mib(pid, "RssAnon:");
    let rss_before = status_mib(pid, "VmRSS:");

    let done = Arc::new(AtomicBool::new(false));
    let peak = sample_peak(pid, done.clone());
    let started = Instant::now();
    let connections = (0..CONNECTIONS)
        .map(|_| tokio::spawn(attack(ca.clone(), addr, path.clone(), count)))
        .collect::<Vec<_>>();
    let mut outcomes = Vec::with_capacity(CONNECTIONS * count);
    for connection in connections {
        outcomes.extend(connection.await.expect("an attacking connection"));
    }
    let took = started.elapsed();
    done.store(true, Ordering::Release);
    let peak = peak.await.expect("the sampler");
    let rss_after = status_mib(pid, "VmRSS:");

    let mut statuses = BTreeMap::new();
    for o in &outcomes {
        *statuses.entry(o.status).or_insert(0usize) += 1;
    }
    let mut answered: Vec<Duration> = outcomes.iter().map(|o| o.answered).collect();
    answered.sort();
    let mut resets: Vec<Duration> = outcomes
        .iter()
        .filter_map(|o| o.reset.map(|(after, _)| after))
        .collect();
    resets.sort();
    let quantile = |v: &[Duration], q: f64| v[((v.len() - 1) as f64 * q) as usize];
    eprintln!(
        "{} streams in {took:.1?}: statuses {statuses:?}; answered after p50 {:?} p99 {:?} \
         max {:?}; reset after the answer p50 {:?} p99 {:?} max {:?}; wardle's RssAnon \
         {before:.1} MiB, peak {peak:.1} MiB; VmRSS {rss_before:.1} -> {rss_after:.1} MiB",
        outcomes.len(),
        quantile(&answered, 0.5),
        quantile(&answered, 0.99),
        answered.last().unwrap(),
        quantile(&resets, 0.5),
        quantile(&resets, 0.99),
        resets.last().unwrap(),
    );

    assert_eq!(outcomes.len(), CONNECTIONS * count);
    assert!(
        statuses.keys().all(|s| matches!(s, 401 | 403 | 429)),
        "every stream is refused: {statuses:?}"
    );
    let unreset: Vec<&Outcome> = outcomes.iter().filter(|o| o.reset.is_none()).collect();
    assert!(unreset.is_empty(), "{} streams never reset", unreset.len());
    let not_clean: Vec<&Outcome> = outcomes
        .iter()
        .filter(|o| {
            o.reset
                .is_some_and(|(_, reason)| reason != h2::Reason::NO_ERROR)
        })
        .collect();
    assert!(
        not_clean.is_empty(),
        "{} streams reset with an error, e.g. {:?}",
        not_clean.len(),
        not_clean[0]
    );
    let longest = outcomes.iter().map(|o| o.open).max().unwrap();
    assert!(
        longest < RESET_BOUND,
        "a stream stayed open {longest:?} after its HEADERS"
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
