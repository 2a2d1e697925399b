//! The watch fan-out: many watchers on one collection, one writer creating objects at a steady
//! rate, and the delay from each create's acknowledgement to each watcher's receipt of its event.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::StreamExt as _;
use http::{Method, StatusCode};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use tokio::sync::Semaphore;

use crate::client::{self, Error, Target};
use crate::load::histogram;
use crate::process::Probe;
use crate::report::Measurement;

/// The shape of a fan-out.
#[derive(Clone, Copy, Debug)]
pub struct FanOut {
    /// Watch connections.
    pub watchers: usize,
    /// Objects created, each one event to every watcher.
    pub events: usize,
    /// Creates per second.
    pub rate: f64,
}

/// Events carry objects named `w-<index>`.
pub fn object_name(index: usize) -> String {
    format!("w-{index}")
}

/// The index of the object an event line is about: the digits after its first `"name":"w-`.
fn event_index(line: &[u8]) -> Option<usize> {
    const NEEDLE: &[u8] = br#""name":"w-"#;
    let at = line.windows(NEEDLE.len()).position(|w| w == NEEDLE)? + NEEDLE.len();
    let digits = line[at..].iter().take_while(|b| b.is_ascii_digit()).count();
    std::str::from_utf8(&line[at..at + digits])
        .ok()?
        .parse()
        .ok()
}

/// Watches whose answers' heads have arrived, each with the connection it streams on.
pub struct Opened {
    watches: Vec<(client::Sender, Incoming)>,
    /// Connections they use (fewer than watches over HTTP/2).
    pub connections: usize,
}

impl Opened {
    /// How many watches are open.
    pub fn len(&self) -> usize {
        self.watches.len()
    }
}

/// Opens `watchers` watches of `watch_path` on `target` (over HTTP/2, `target.streams` to a
/// connection), a few handshakes at a time, and waits for each one's head. A watch whose head
/// has not come `within`, or while no other watch opened for [`STALLED_AFTER`], is an error
/// (e.g. a limit of concurrent streams that holds it back).
pub async fn open(
    target: &Target,
    watchers: usize,
    watch_path: &str,
    within: Duration,
) -> Result<Opened, Error> {
    let streams = target.streams.max(1);
    let connections = watchers.div_ceil(streams);
    let handshakes = Arc::new(Semaphore::new(32));
    let mut connecting = Vec::with_capacity(connections);
    for _ in 0..connections {
        let (target, handshakes) = (target.clone(), handshakes.clone());
        connecting.push(tokio::spawn(async move {
            let _permit = handshakes.acquire().await;
            target.connect().await
        }));
    }
    let mut senders = Vec::with_capacity(connections);
    for task in connecting {
        senders.push(Some(task.await??));
    }
    let deadline = tokio::time::Instant::now() + within;
    let mut opening = Vec::with_capacity(watchers);
    for i in 0..watchers {
        let slot = &mut senders[i / streams];
        let sender = match slot.as_ref().and_then(client::Sender::share) {
            Some(shared) => shared,
            None => slot
                .take()
                .ok_or("an HTTP/1.1 connection carries one watch")?,
        };
        let target = target.clone();
        let path = watch_path.to_string();
        opening.push(tokio::spawn(async move {
            let mut sender = sender;
            let request = target.request(Method::GET, &path, Bytes::new());
            let response = tokio::time::timeout_at(deadline, client::start(&mut sender, request))
                .await
                .map_err(|_| Error::from("no answer"))??;
            if response.status() != StatusCode::OK {
                return Err(Error::from(format!("watch answered {}", response.status())));
            }
            Ok::<_, Error>((sender, response.into_body()))
        }));
    }
    let mut watches = Vec::with_capacity(watchers);
    let (mut failed, mut first_error) = (0usize, None);
    let mut pending: futures::stream::FuturesUnordered<_> = opening.into_iter().collect();
    loop {
        match tokio::time::timeout(STALLED_AFTER, pending.next()).await {
            Ok(Some(opened)) => match opened? {
                Ok(watch) => watches.push(watch),
                Err(e) => {
                    failed += 1;
                    first_error.get_or_insert(e.to_string());
                }
            },
            Ok(None) => break,
            Err(_) => {
                // No watch has opened for a while: the rest are held back (e.g. by a limit of
                // concurrent streams); stop waiting for them.
                failed += pending.len();
                first_error.get_or_insert(format!("none opened for {STALLED_AFTER:?}"));
                for task in pending.iter() {
                    task.abort();
                }
                break;
            }
        }
    }
    if failed > 0 {
        return Err(format!(
            "{failed} of {watchers} watches did not open ({} open on {connections} connections): {}",
            watches.len(),
            first_error.unwrap_or_default()
        )
        .into());
    }
    Ok(Opened {
        watches,
        connections,
    })
}

/// Runs a fan-out against `target`: watchers of `watch_path`, creates made by `create`.
pub async fn run(
    target: &Target,
    shape: FanOut,
    watch_path: &str,
    create: impl Fn(&Target, usize) -> http::Request<http_body_util::Full<Bytes>>,
    pids: &[u32],
) -> Result<Measurement, Error> {
    let opened = open(target, shape.watchers, watch_path, OPEN_WITHIN).await?;
    deliver(opened, target, shape, create, pids).await
}

/// How long a watcher waits for its events after the writer's last create.
const GRACE: Duration = Duration::from_secs(30);

/// How long opening the watches of a fan-out may take.
pub const OPEN_WITHIN: Duration = Duration::from_secs(120);

/// Opening stops when no watch has opened for this long.
const STALLED_AFTER: Duration = Duration::from_secs(10);

/// Creates `shape.events` objects on `writer` at `shape.rate` and measures the delay from each
/// create's answer to each open watch's receipt of its event.
pub async fn deliver(
    opened: Opened,
    writer_target: &Target,
    shape: FanOut,
    create: impl Fn(&Target, usize) -> http::Request<http_body_util::Full<Bytes>>,
    pids: &[u32],
) -> Result<Measurement, Error> {
    let origin = Instant::now();
    let nanos = move || origin.elapsed().as_nanos() as u64;
    let events = shape.events;
    // Each watcher waits for its events until GRACE after the writer's last create (however
    // long the creates took: a server whose creates slow down under the fan-out still has
    // every event counted, late).
    let (writer_done, done) = tokio::sync::watch::channel(false);
    let mut watchers = Vec::with_capacity(opened.watches.len());
    for (sender, mut body) in opened.watches {
        let mut done = done.clone();
        watchers.push(tokio::spawn(async move {
            let _keep = sender;
            let mut received = vec![u64::MAX; events];
            let (mut count, mut pending) = (0usize, Vec::<u8>::new());
            let grace_over = async move {
                let _ = done.wait_for(|d| *d).await;
                tokio::time::sleep(GRACE).await;
            };
            tokio::pin!(grace_over);
            let mut ended = None;
            while count < events {
                let frame = tokio::select! {
                    frame = body.frame() => frame,
                    () = &mut grace_over => {
                        ended = Some(format!(
                            "nothing more came within {GRACE:?} of the last create"
                        ));
                        break;
                    }
                };
                let frame = match frame {
                    Some(Ok(frame)) => frame,
                    Some(Err(e)) => {
                        ended = Some(format!("its stream failed: {e}"));
                        break;
                    }
                    None => {
                        ended = Some("its stream ended".to_string());
                        break;
                    }
                };
                let Ok(data) = frame.into_data() else {
                    continue;
                };
                let at = nanos();
                pending.extend_from_slice(&data);
                while let Some(newline) = pending.iter().position(|b| *b == b'\n') {
                    let line = &pending[..newline];
                    if let Some(i) = event_index(line)
                        && i < events
                        && received[i] == u64::MAX
                    {
                        received[i] = at;
                        count += 1;
                    } else if line.starts_with(br#"{"type":"ERROR""#) {
                        ended = Some(String::from_utf8_lossy(line).into_owned());
                    }
                    pending.drain(..=newline);
                }
            }
            (received, ended)
        }));
    }

    let probe = Probe::start(pids);
    let started = Instant::now();
    let target = writer_target;
    let mut writer = target.connect().await?;
    let mut acked = vec![u64::MAX; events];
    let mut ticks = tokio::time::interval(Duration::from_secs_f64(1.0 / shape.rate));
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut write_errors = 0u64;
    let mut first_error = None;
    for (i, ack) in acked.iter_mut().enumerate() {
        ticks.tick().await;
        match client::send(&mut writer, create(target, i)).await {
            Ok((StatusCode::CREATED, _)) => *ack = nanos(),
            Ok((status, body)) => {
                write_errors += 1;
                first_error.get_or_insert(format!(
                    "create: {status}: {}",
                    String::from_utf8_lossy(&body)
                ));
            }
            Err(e) => {
                write_errors += 1;
                first_error.get_or_insert(format!("create: {e}"));
            }
        }
    }

    let _ = writer_done.send(true);
    let mut latencies = histogram();
    let (mut delivered, mut missed) = (0u64, 0u64);
    let mut last = 0u64;
    let (mut cut_short, mut first_cut) = (0usize, None);
    for watcher in watchers {
        let (received, ended) = watcher.await?;
        if let Some(why) = ended {
            cut_short += 1;
            first_cut.get_or_insert(why);
        }
        for (r, a) in received.iter().zip(&acked) {
            if *a == u64::MAX {
                continue;
            }
            if *r == u64::MAX {
                missed += 1;
                continue;
            }
            delivered += 1;
            last = last.max(*r);
            // An event may arrive before its create's answer: that is a delay of zero.
            latencies.saturating_record((r.saturating_sub(*a) / 1000).max(1));
        }
    }
    let usage = probe.finish();
    let elapsed = Duration::from_nanos(last).saturating_sub(started - origin);
    if missed > 0 {
        first_error.get_or_insert(format!(
            "{missed} events never arrived; {cut_short} watchers stopped short, the first because {}",
            first_cut.unwrap_or_default()
        ));
    }
    Ok(
        Measurement::of_latencies(delivered, missed + write_errors, elapsed, &latencies, usage)
            .with_error(first_error),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_index_of_an_event() {
        let line = br#"{"type":"ADDED","object":{"kind":"Flunder","metadata":{"name":"w-42","namespace":"x"}}}"#;
        assert_eq!(event_index(line), Some(42));
        assert_eq!(event_index(br#"{"type":"BOOKMARK"}"#), None);
    }
}
