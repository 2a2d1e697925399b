//! Lists beyond the plain 500-object one: a gzip-accepting client, a big unpaged list, and a
//! sweep through a big collection page by page.

use std::io::Read as _;
use std::path::Path;
use std::time::{Duration, Instant};

use bytes::Bytes;
use hdrhistogram::Histogram;
use http::{Method, StatusCode, header};

use crate::baseline::{self, Recorded, Recordings};
use crate::client::{self, Error, Target};
use crate::compare::{ROUNDS, alternate, gets, throughput_row};
use crate::load::histogram;
use crate::plan::Plan;
use crate::process::Probe;
use crate::report::{Measurement, Row, Target as Goal};
use crate::requests::{collection, fetch, fill, recorded, write_recordings};
use crate::servers::{self, Server};
use crate::tls::Pki;

/// The answer to a list request that accepted gzip.
pub struct GzipAnswer {
    /// What the baseline answers such a request with.
    pub recorded: Recorded,
    /// The size of the same list unencoded.
    pub decoded_bytes: usize,
}

impl GzipAnswer {
    /// The encoding and sizes, for the report.
    pub fn describe(&self) -> String {
        match &self.recorded.content_encoding {
            Some(encoding) => format!(
                "wardle answered with Content-Encoding: {encoding}, {} bytes for {} bytes of JSON; the baseline sends those bytes",
                self.recorded.body.len(),
                self.decoded_bytes
            ),
            None => format!(
                "wardle answered unencoded ({} bytes): it does not compress this answer",
                self.recorded.body.len()
            ),
        }
    }
}

/// The number of items of a list answer, read in full.
fn items_of(body: &[u8]) -> Result<usize, Error> {
    let list: serde_json::Value = serde_json::from_slice(body)?;
    Ok(list["items"]
        .as_array()
        .ok_or("a list without items")?
        .len())
}

/// Asks wardle for `path` accepting gzip and checks that the answer (decoded, when encoded)
/// is the list of `items` objects.
pub async fn record_gzip(target: &Target, path: &str, items: u64) -> Result<GzipAnswer, Error> {
    let target = target.with_header(header::ACCEPT_ENCODING, "gzip");
    let (headers, body) = fetch(&target, Method::GET, path, Bytes::new(), StatusCode::OK).await?;
    let recorded = recorded(StatusCode::OK, &headers, body);
    let decoded = match recorded.content_encoding.as_deref() {
        None => recorded.body.clone(),
        Some("gzip") => {
            let mut decoded = Vec::new();
            flate2::read::GzDecoder::new(recorded.body.as_slice()).read_to_end(&mut decoded)?;
            decoded
        }
        Some(other) => return Err(format!("{path}: unexpected Content-Encoding {other}").into()),
    };
    let found = items_of(&decoded)?;
    if found as u64 != items {
        return Err(format!("{path} accepting gzip: {found} items, expected {items}").into());
    }
    Ok(GzipAnswer {
        recorded,
        decoded_bytes: decoded.len(),
    })
}

/// LIST of a collection of `plan.big_list_size` objects without paging, against a baseline
/// serving the same bytes, at `plan.big_list_clients` clients.
pub async fn big_list(plan: &Plan, work: &Path, pki: &Pki, wardle: &Server) -> Result<Row, Error> {
    let (namespace, n) = ("bench-big", plan.big_list_size);
    fill(plan, &wardle.target, namespace, "big-", n, &[wardle.pid()]).await?;
    let path = collection(namespace);
    let (headers, body) = fetch(
        &wardle.target,
        Method::GET,
        &path,
        Bytes::new(),
        StatusCode::OK,
    )
    .await?;
    let found = items_of(&body)?;
    if found as u64 != n {
        return Err(format!("{path}: {found} items, expected {n}").into());
    }
    let bytes = body.len();
    let mut recordings = Recordings::new();
    recordings.insert(
        baseline::key(&Method::GET, &path),
        recorded(StatusCode::OK, &headers, body),
    );
    let file = write_recordings(work, "recordings-big-list.json", &recordings)?;
    let base = servers::baseline(work, "baseline-big-list", pki, &file).await?;
    let clients = plan.big_list_clients;
    let (w_pid, b_pid) = ([wardle.pid()], [base.pid()]);
    let (w, b) = alternate(
        plan,
        |stop| gets(&wardle.target, &path, clients, &w_pid, stop),
        |stop| gets(&base.target, &path, clients, &b_pid, stop),
    )
    .await;
    Ok(throughput_row(
        &format!("LIST {n} objects, unpaged"),
        w,
        "baseline",
        b,
        Some(0.8),
    )
    .note(format!("{bytes} bytes a response; {clients} clients")))
}

/// The `continue` token of a list answer, read from its metadata (which comes before the
/// items) without parsing the rest.
fn continue_token(body: &[u8]) -> Option<String> {
    const NEEDLE: &[u8] = br#""continue":""#;
    let head = &body[..body.len().min(4096)];
    let items = head
        .windows(8)
        .position(|w| w == br#""items":"#)
        .unwrap_or(head.len());
    let at = head[..items]
        .windows(NEEDLE.len())
        .position(|w| w == NEEDLE)?
        + NEEDLE.len();
    let end = head[at..].iter().position(|b| *b == b'"')? + at;
    let token = std::str::from_utf8(&head[at..end]).ok()?;
    (!token.is_empty()).then(|| token.to_string())
}

/// The path of the page after `token` (the first page without one).
fn page_path(collection: &str, limit: u64, token: Option<&str>) -> String {
    let mut query = form_urlencoded::Serializer::new(String::new());
    query.append_pair("limit", &limit.to_string());
    if let Some(token) = token {
        query.append_pair("continue", token);
    }
    format!("{collection}?{}", query.finish())
}

/// One sweep through a collection.
pub struct Sweep {
    /// Pages read.
    pub pages: u64,
    /// How long the whole sweep took.
    pub elapsed: Duration,
    /// Each page's latency, in microseconds.
    pub latencies: Histogram<u64>,
}

/// Reads `collection` page by page, `limit` objects a page, following each page's `continue`
/// token, on one connection; with `record`, keeps every answer and checks that the pages
/// hold `expect` objects in all.
pub async fn sweep(
    target: &Target,
    collection: &str,
    limit: u64,
    mut record: Option<(&mut Recordings, u64)>,
) -> Result<Sweep, Error> {
    let mut sender = target.connect().await?;
    let mut latencies = histogram();
    let (mut token, mut pages, mut items) = (None::<String>, 0u64, 0u64);
    let began = Instant::now();
    loop {
        let path = page_path(collection, limit, token.as_deref());
        let sent = Instant::now();
        let (status, headers, body) = client::send_full(
            &mut sender,
            target.request(Method::GET, &path, Bytes::new()),
        )
        .await?;
        latencies.saturating_record((sent.elapsed().as_micros() as u64).max(1));
        if status != StatusCode::OK {
            return Err(format!(
                "{path}: {status}: {}",
                String::from_utf8_lossy(&body[..body.len().min(300)])
            )
            .into());
        }
        pages += 1;
        token = continue_token(&body);
        if let Some((recordings, _)) = record.as_mut() {
            items += items_of(&body)? as u64;
            recordings.insert(
                baseline::key(&Method::GET, &path),
                recorded(StatusCode::OK, &headers, body),
            );
        }
        if token.is_none() {
            break;
        }
    }
    if let Some((_, expect)) = record
        && items != expect
    {
        return Err(
            format!("{collection}: the pages held {items} objects, expected {expect}").into(),
        );
    }
    Ok(Sweep {
        pages,
        elapsed: began.elapsed(),
        latencies,
    })
}

/// Sweeps each side's server [`ROUNDS`] times, the sides in turns, probing each side's
/// process; each side's figures, its mean time of a sweep and its slowest page in ms.
pub async fn sweeps<const N: usize>(
    sides: [(&Target, u32); N],
    collection: &str,
    limit: u64,
) -> Result<[(Measurement, Duration, f64); N], Error> {
    let mut totals: [(u64, Duration, Histogram<u64>, f64, u64); N] =
        std::array::from_fn(|_| (0, Duration::ZERO, histogram(), 0.0, 0));
    for _ in 0..ROUNDS {
        for (side, (target, pid)) in sides.iter().enumerate() {
            let probe = Probe::start(&[*pid]);
            let one = sweep(target, collection, limit, None).await?;
            let usage = probe.finish();
            let total = &mut totals[side];
            total.0 += one.pages;
            total.1 += one.elapsed;
            total.2.add(one.latencies).expect("same histogram bounds");
            total.3 += usage.cpu_seconds;
            total.4 = total.4.max(usage.peak_rss);
        }
    }
    Ok(totals.map(|(pages, elapsed, latencies, cpu, rss)| {
        let slowest_ms = latencies.max() as f64 / 1000.0;
        let usage = crate::process::Usage {
            cpu_seconds: cpu,
            first_cpu_seconds: cpu,
            peak_rss: rss,
            ..Default::default()
        };
        (
            Measurement::of_latencies(pages, 0, elapsed, &latencies, usage),
            elapsed / ROUNDS,
            slowest_ms,
        )
    }))
}

/// A sweep through the `namespace` collection of `server` (holding `plan.memory_objects`
/// Flunders) `plan.page_limit` at a time, against the same pages from a baseline.
pub async fn paged_sweep(
    plan: &Plan,
    work: &Path,
    pki: &Pki,
    server: &Server,
    namespace: &str,
) -> Result<Row, Error> {
    let path = collection(namespace);
    let (n, limit) = (plan.memory_objects, plan.page_limit);
    let mut recordings = Recordings::new();
    let probe = Probe::start(&[server.pid()]);
    let first = sweep(&server.target, &path, limit, Some((&mut recordings, n))).await?;
    // The server's CPU only: the recording sweep's own client parses every page too.
    let first_cpu = probe.finish().cpu_seconds;
    let file = write_recordings(work, "recordings-pages.json", &recordings)?;
    drop(recordings);
    let base = servers::baseline(work, "baseline-pages", pki, &file).await?;
    let [(w, w_time, _), (b, b_time, _)] = sweeps(
        [(&server.target, server.pid()), (&base.target, base.pid())],
        &path,
        limit,
    )
    .await?;
    let r = ratio_of(w_time, b_time);
    Ok(Row::new(
        format!("Paged LIST of {n} objects, limit={limit}"),
        w,
        "baseline (the same pages)",
        b,
        "time of a whole sweep ÷ the baseline's, lower is better",
        r,
    )
    .target(Goal::at_most("ratio", r, 1.5))
    .note(format!(
        "{} pages a sweep on one connection, following each page's continue token; a sweep took {:.0} ms on wardle, {:.0} ms on the baseline (mean of {ROUNDS}); wardle's CPU in its first sweep, the first read of each object since its create (not in the ratio: the baseline records it), {:.0} µs a page; req/s counts pages",
        first.pages,
        w_time.as_secs_f64() * 1000.0,
        b_time.as_secs_f64() * 1000.0,
        first_cpu * 1e6 / first.pages.max(1) as f64
    )))
}

/// `a ÷ b`, when `b` is longer than nothing.
pub fn ratio_of(a: Duration, b: Duration) -> Option<f64> {
    (b > Duration::ZERO).then(|| a.as_secs_f64() / b.as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_continue_token_of_the_list_metadata() {
        let page = br#"{"kind":"FlunderList","apiVersion":"v1","metadata":{"resourceVersion":"9","continue":"abc=","remainingItemCount":3},"items":[{"metadata":{"continue":"no"}}]}"#;
        assert_eq!(continue_token(page).as_deref(), Some("abc="));
        let last = br#"{"kind":"FlunderList","metadata":{"resourceVersion":"9"},"items":[{"metadata":{"continue":"no"}}]}"#;
        assert_eq!(continue_token(last), None);
        assert_eq!(
            continue_token(br#"{"metadata":{"continue":""},"items":[]}"#),
            None
        );
    }

    #[test]
    fn encodes_the_token_in_the_page_path() {
        assert_eq!(page_path("/c", 500, None), "/c?limit=500");
        assert_eq!(
            page_path("/c", 500, Some("a+b/=")),
            "/c?limit=500&continue=a%2Bb%2F%3D"
        );
    }
}
