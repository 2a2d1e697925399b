//! The batch mode of the audit webhook (`--audit-webhook-mode=batch`, upstream's
//! `plugin/pkg/audit/buffered`): requests hand their events to a bounded buffer and go on; a
//! task sends them in batches of at most `max_batch_size`, at least every `max_batch_wait`,
//! throttled to `qps` batches a second with bursts of `burst`, each batch on its own task.
//!
//! A full buffer drops the event, counts it in `apiserver_audit_error_total{plugin="buffered"}`
//! and logs it, as upstream. Unlike upstream, which starts a sender per batch without a bound,
//! at most [`MAX_BATCHES_IN_FLIGHT`] batches are being sent at once: while a slow receiver holds
//! them, the buffer fills instead. And besides upstream's count of events, the events held
//! (buffered or in flight) are bounded in bytes of JSON ([`MAX_HELD_BYTES`]): an event at
//! `RequestResponse` level carries whole objects, so a count alone does not bound memory.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::{Semaphore, mpsc};
use tokio::time::Instant;

use super::backend::AuditBackend;
use super::encoded::{Encoded, audit_ids};
use super::event::Event;
use super::truncate::Truncate;
use super::webhook::WebhookClient;
use crate::metrics;

/// How many batches may be on their way to the receiver at once (each with its retries).
pub(crate) const MAX_BATCHES_IN_FLIGHT: usize = 8;

/// The most bytes (of the events' JSON) held at once, buffered or in flight.
pub(crate) const MAX_HELD_BYTES: usize = 256 * 1024 * 1024;

/// The bytes of one held event, given back when it is dropped (sent, or given up).
struct Held {
    bytes: usize,
    total: Arc<AtomicUsize>,
}

impl Drop for Held {
    fn drop(&mut self) {
        self.total.fetch_sub(self.bytes, Ordering::AcqRel);
    }
}

/// Upstream's `BatchConfig` for the webhook.
#[derive(Clone, Debug)]
pub(crate) struct BatchConfig {
    /// Events the buffer holds before it drops them.
    pub buffer_size: usize,
    /// Events in one batch at the most.
    pub max_batch_size: usize,
    /// The longest a batch waits to fill.
    pub max_batch_wait: Duration,
    /// Batches a second and their burst, when throttled.
    pub throttle: Option<(f64, u32)>,
}

/// The audit backend of batch mode: a bounded buffer in front of the batching task.
pub(crate) struct BufferedBackend {
    buffer: mpsc::Sender<(Encoded, Held)>,
    held: Arc<AtomicUsize>,
    max_held: usize,
}

impl BufferedBackend {
    /// Starts the batching task (on the current tokio runtime) sending through `truncate` to
    /// `client`.
    pub(crate) fn start(config: BatchConfig, truncate: Truncate, client: WebhookClient) -> Self {
        let (buffer, events) = mpsc::channel(config.buffer_size.max(1));
        tokio::spawn(run(events, config, truncate, Arc::new(client)));
        BufferedBackend {
            buffer,
            held: Arc::default(),
            max_held: MAX_HELD_BYTES,
        }
    }
}

impl AuditBackend for BufferedBackend {
    fn process(&self, event: &Event) {
        let encoded = match Encoded::new(event) {
            Ok(encoded) => encoded,
            Err(e) => {
                plugin_error("buffered", &e.to_string(), &[&event.audit_id]);
                return;
            }
        };
        let bytes = encoded.json.len();
        let before = self.held.fetch_add(bytes, Ordering::AcqRel);
        let held = Held {
            bytes,
            total: self.held.clone(),
        };
        let refused = if before + bytes > self.max_held {
            "audit buffer holds its most bytes"
        } else if self.buffer.try_send((encoded, held)).is_err() {
            "audit buffer queue blocked"
        } else {
            return;
        };
        plugin_error("buffered", refused, &[&event.audit_id]);
    }
}

/// Counts the events of `audit_ids` as failed in `apiserver_audit_error_total{plugin}` and
/// logs them, as upstream's `HandlePluginError`.
pub(crate) fn plugin_error(plugin: &str, error: &str, audit_ids: &[&str]) {
    metrics::global()
        .audit_errors
        .with_label_values(&[plugin])
        .inc_by(audit_ids.len() as u64);
    tracing::error!(
        plugin,
        error,
        events = audit_ids.len(),
        audit_ids = ?audit_ids,
        "Error in audit plugin '{plugin}' affecting {} audit events: {error}",
        audit_ids.len()
    );
}

/// Collects batches from `events` and sends each on a task of its own, until the buffer's
/// sender is gone and every event taken has been handed on.
async fn run(
    mut events: mpsc::Receiver<(Encoded, Held)>,
    config: BatchConfig,
    truncate: Truncate,
    client: Arc<WebhookClient>,
) {
    let in_flight = Arc::new(Semaphore::new(MAX_BATCHES_IN_FLIGHT));
    let mut throttle = config
        .throttle
        .map(|(qps, burst)| TokenBucket::new(qps, burst));
    loop {
        let (batch, open) =
            collect(&mut events, config.max_batch_size, config.max_batch_wait).await;
        if !batch.is_empty() {
            if let Some(bucket) = throttle.as_mut() {
                bucket.take().await;
            }
            let permit = in_flight
                .clone()
                .acquire_owned()
                .await
                .expect("the semaphore is never closed");
            let (client, truncate) = (client.clone(), truncate.clone());
            tokio::spawn(async move {
                // The bytes stay counted until the batch is sent or given up.
                let (batch, _held): (Vec<Encoded>, Vec<Held>) = batch.into_iter().unzip();
                for part in truncate.split(batch) {
                    if let Err(e) = client.send(&part).await {
                        plugin_error("webhook", &e.to_string(), &audit_ids(&part));
                    }
                }
                drop(permit);
            });
        }
        if !open {
            return;
        }
    }
}

/// Up to `max` events, waiting at most `wait` for them after the first call; whether the
/// buffer is still open.
async fn collect<T>(events: &mut mpsc::Receiver<T>, max: usize, wait: Duration) -> (Vec<T>, bool) {
    let mut batch = Vec::new();
    let deadline = tokio::time::sleep(wait);
    tokio::pin!(deadline);
    while batch.len() < max {
        tokio::select! {
            event = events.recv() => match event {
                Some(event) => batch.push(event),
                None => return (batch, false),
            },
            _ = &mut deadline => break,
        }
    }
    (batch, true)
}

/// A token bucket: `burst` tokens, refilled at `qps` a second. Written here because it is
/// a dozen lines and the rate limiters of the ecosystem (governor) bring far more than this
/// one queue needs.
struct TokenBucket {
    qps: f64,
    burst: f64,
    tokens: f64,
    last: Instant,
}

impl TokenBucket {
    fn new(qps: f64, burst: u32) -> Self {
        let burst = f64::from(burst.max(1));
        TokenBucket {
            qps: qps.max(f64::MIN_POSITIVE),
            burst,
            tokens: burst,
            last: Instant::now(),
        }
    }

    /// Waits for a token and takes it.
    async fn take(&mut self) {
        let now = Instant::now();
        self.tokens =
            (self.tokens + now.duration_since(self.last).as_secs_f64() * self.qps).min(self.burst);
        self.last = now;
        if self.tokens < 1.0 {
            let wait = Duration::from_secs_f64((1.0 - self.tokens) / self.qps);
            tokio::time::sleep(wait).await;
            self.tokens = 1.0;
            self.last = Instant::now();
        }
        self.tokens -= 1.0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn the_bucket_allows_its_burst_then_its_rate() {
        let mut bucket = TokenBucket::new(10.0, 3);
        let start = Instant::now();
        for _ in 0..3 {
            bucket.take().await;
        }
        assert_eq!(start.elapsed(), Duration::ZERO, "the burst is free");
        bucket.take().await;
        bucket.take().await;
        let waited = start.elapsed().as_secs_f64();
        assert!((0.19..0.21).contains(&waited), "two more at 10/s: {waited}");
    }

    #[test]
    fn the_buffer_is_bounded_in_events_and_in_bytes() {
        let dropped = || {
            metrics::global()
                .audit_errors
                .with_label_values(&["buffered"])
                .get()
        };
        let event = super::super::truncate::tests::event("big", 400);
        let (buffer, mut events) = mpsc::channel(10);
        let backend = BufferedBackend {
            buffer,
            held: Arc::default(),
            max_held: 1500,
        };
        let before = dropped();
        for _ in 0..3 {
            backend.process(&event);
        }
        assert_eq!(dropped() - before, 1, "the third event is over 1,500 bytes");
        // Bytes are given back once an event is done with.
        drop(events.try_recv().unwrap());
        backend.process(&event);
        assert_eq!(dropped() - before, 1);
        let (small, _receiver) = mpsc::channel(1);
        let backend = BufferedBackend {
            buffer: small,
            held: Arc::default(),
            max_held: MAX_HELD_BYTES,
        };
        backend.process(&event);
        backend.process(&event);
        assert_eq!(dropped() - before, 2, "a full buffer drops the event");
    }

    #[tokio::test(start_paused = true)]
    async fn a_batch_ends_at_its_size_or_its_wait() {
        let (tx, mut rx) = mpsc::channel(10);
        for n in 0..5 {
            tx.send(n).await.unwrap();
        }
        let (batch, open) = collect(&mut rx, 3, Duration::from_secs(30)).await;
        assert_eq!((batch.len(), open), (3, true));
        let start = Instant::now();
        let (batch, open) = collect(&mut rx, 3, Duration::from_secs(30)).await;
        assert_eq!((batch.len(), open), (2, true));
        assert_eq!(
            start.elapsed(),
            Duration::from_secs(30),
            "the rest waited for the timer"
        );
        drop(tx);
        let (batch, open) = collect(&mut rx, 3, Duration::from_secs(30)).await;
        assert_eq!((batch.len(), open), (0, false));
    }
}
