//! The closed-loop load generator: a fixed number of keep-alive connections, each sending its
//! next request as soon as the previous answer is read, with every latency in a histogram.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use http::StatusCode;

use crate::client::{self, Error, Target};
use crate::process::{Probe, Usage};
use crate::report::Measurement;

/// When a load ends.
#[derive(Clone, Copy, Debug)]
pub enum Stop {
    /// After a warm-up that is not measured, for this long.
    After {
        /// Unmeasured time first.
        warmup: Duration,
        /// Then the measured time.
        measure: Duration,
    },
    /// After this many requests, all measured.
    Count(u64),
}

/// Latencies in microseconds, from 1 µs to 100 s.
pub fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 100_000_000, 3).expect("valid histogram bounds")
}

/// What a load saw.
pub struct LoadResult {
    /// Requests answered with the expected status in the measured time.
    pub ok: u64,
    /// Other answers and failures in the measured time.
    pub errors: u64,
    /// The first failure, for the report.
    pub first_error: Option<String>,
    /// The measured time.
    pub elapsed: Duration,
    /// Latencies of the measured requests, in microseconds.
    pub latencies: Histogram<u64>,
    /// CPU and memory of the probed processes over the measured time.
    pub usage: Usage,
}

impl LoadResult {
    /// Adds the figures of another load of the same work (one more round).
    pub fn merge(&mut self, other: LoadResult) {
        self.ok += other.ok;
        self.errors += other.errors;
        if self.first_error.is_none() {
            self.first_error = other.first_error;
        }
        self.elapsed += other.elapsed;
        self.latencies
            .add(other.latencies)
            .expect("same histogram bounds");
        self.usage.cpu_seconds += other.usage.cpu_seconds;
        self.usage.first_cpu_seconds += other.usage.first_cpu_seconds;
        self.usage.peak_rss = self.usage.peak_rss.max(other.usage.peak_rss);
    }

    /// The figures of the report.
    pub fn measurement(&self) -> Measurement {
        Measurement::of_latencies(
            self.ok,
            self.errors,
            self.elapsed,
            &self.latencies,
            self.usage,
        )
        .with_error(self.first_error.clone())
    }
}

/// Something that sends the `i`-th request of connection `conn` and says whether it got the
/// expected answer.
pub trait Work: Send + Sync + 'static {
    /// The state of one connection.
    type Conn: Send;
    /// Opens a connection.
    fn connect(&self) -> impl Future<Output = Result<Self::Conn, Error>> + Send;
    /// How many clients share one connection (HTTP/2 streams); 1 by default.
    fn clients_per_connection(&self) -> usize {
        1
    }
    /// Another client's handle on the connection `conn`, where connections are shared.
    fn share(&self, _conn: &Self::Conn) -> Option<Self::Conn> {
        None
    }
    /// Sends request number `i` on `conn`.
    fn call(
        &self,
        conn: &mut Self::Conn,
        conn_index: usize,
        i: u64,
    ) -> impl Future<Output = Result<(), Error>> + Send;
}

/// HTTP requests made by a function, expecting one status.
pub struct Http<F> {
    /// The server.
    pub target: Target,
    /// The `i`-th request of connection `conn`.
    pub make: F,
    /// The status a success has.
    pub expect: StatusCode,
}

impl<F> Work for Http<F>
where
    F: Fn(&Target, usize, u64) -> http::Request<http_body_util::Full<bytes::Bytes>>
        + Send
        + Sync
        + 'static,
{
    type Conn = client::Sender;

    async fn connect(&self) -> Result<client::Sender, Error> {
        self.target.connect().await
    }

    fn clients_per_connection(&self) -> usize {
        self.target.streams
    }

    fn share(&self, conn: &client::Sender) -> Option<client::Sender> {
        conn.share()
    }

    async fn call(&self, conn: &mut client::Sender, c: usize, i: u64) -> Result<(), Error> {
        let (status, body) = client::send(conn, (self.make)(&self.target, c, i)).await?;
        if status == self.expect {
            Ok(())
        } else {
            let body = String::from_utf8_lossy(&body[..body.len().min(300)]).into_owned();
            Err(format!("{status}: {body}").into())
        }
    }
}

/// Runs `work` with `clients` closed-loop clients until `stop`, probing `pids` over the measured
/// time. Each client has a connection of its own, or shares one with the next clients where the
/// work multiplexes ([`Work::clients_per_connection`]).
pub async fn run<W: Work>(work: W, clients: usize, stop: Stop, pids: &[u32]) -> LoadResult {
    let work = Arc::new(work);
    let per_connection = work.clients_per_connection().max(1);
    let mut conns: Vec<W::Conn> = Vec::with_capacity(clients);
    for c in 0..clients {
        if c % per_connection != 0
            && let Some(shared) = conns.last().and_then(|last| work.share(last))
        {
            conns.push(shared);
            continue;
        }
        match work.connect().await {
            Ok(c) => conns.push(c),
            Err(e) => {
                return LoadResult {
                    ok: 0,
                    errors: 1,
                    first_error: Some(format!("connect: {e}")),
                    elapsed: Duration::ZERO,
                    latencies: histogram(),
                    usage: Usage::default(),
                };
            }
        }
    }
    let begin = Instant::now();
    let (measure_from, end) = match stop {
        Stop::After { warmup, measure } => (begin + warmup, Some(begin + warmup + measure)),
        Stop::Count(_) => (begin, None),
    };
    let limit = match stop {
        Stop::Count(n) => n,
        Stop::After { .. } => u64::MAX,
    };
    let next = Arc::new(AtomicU64::new(0));
    let probe_pids = pids.to_vec();
    let probe = tokio::spawn(async move {
        tokio::time::sleep_until(measure_from.into()).await;
        Probe::start(&probe_pids)
    });
    let mut tasks = Vec::new();
    for (c, mut conn) in conns.into_iter().enumerate() {
        let (work, next) = (work.clone(), next.clone());
        tasks.push(tokio::spawn(async move {
            let mut latencies = histogram();
            let (mut ok, mut errors, mut first_error) = (0u64, 0u64, None);
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= limit {
                    break;
                }
                let sent = Instant::now();
                if end.is_some_and(|end| sent >= end) {
                    break;
                }
                let result = work.call(&mut conn, c, i).await;
                if sent < measure_from {
                    if let Err(e) = result {
                        first_error.get_or_insert(format!("warm-up: {e}"));
                        errors += 1;
                        break;
                    }
                    continue;
                }
                match result {
                    Ok(()) => {
                        ok += 1;
                        let micros = sent.elapsed().as_micros() as u64;
                        latencies.saturating_record(micros.max(1));
                    }
                    Err(e) => {
                        errors += 1;
                        first_error.get_or_insert(e.to_string());
                        // A broken connection is replaced; a refused request is counted.
                        if let Ok(fresh) = work.connect().await {
                            conn = fresh;
                        }
                    }
                }
            }
            (latencies, ok, errors, first_error)
        }));
    }
    let mut result = LoadResult {
        ok: 0,
        errors: 0,
        first_error: None,
        elapsed: Duration::ZERO,
        latencies: histogram(),
        usage: Usage::default(),
    };
    for task in tasks {
        let (latencies, ok, errors, first_error) = task.await.expect("a load task");
        result
            .latencies
            .add(latencies)
            .expect("same histogram bounds");
        result.ok += ok;
        result.errors += errors;
        if result.first_error.is_none() {
            result.first_error = first_error;
        }
    }
    let probe = probe.await.expect("the probe");
    result.usage = probe.finish();
    result.elapsed = Instant::now().saturating_duration_since(measure_from);
    result
}
