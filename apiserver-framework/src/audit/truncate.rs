//! Truncating audit events for the webhook (`--audit-webhook-truncate-*`, upstream's
//! `plugin/pkg/audit/truncate`): an event larger than `max_event_size` bytes of JSON loses its
//! request and response objects and gains the annotation `audit.k8s.io/truncated: "true"`
//! (when its level records them); one still too large is dropped and counted; a batch is split
//! so that each part stays within `max_batch_size` bytes.

use super::buffered::plugin_error;
use super::encoded::{Encoded, audit_ids};

/// Upstream's truncate `Config`; `None` when truncating is off.
#[derive(Clone, Debug, Default)]
pub(crate) struct Truncate {
    /// `(max_event_size, max_batch_size)` in bytes of JSON.
    pub limits: Option<(usize, usize)>,
}

impl Truncate {
    /// `batch` cut into the parts to send: every event within the event size (truncated if
    /// need be, dropped and counted if even that is too large), every part within the batch
    /// size. Without limits, the batch as it is.
    pub(crate) fn split(&self, batch: Vec<Encoded>) -> Vec<Vec<Encoded>> {
        let Some((max_event, max_batch)) = self.limits else {
            return vec![batch];
        };
        let mut parts = Vec::new();
        let (mut part, mut part_size) = (Vec::new(), 0);
        let mut dropped = Vec::new();
        for mut event in batch {
            if event.json.len() > max_event
                && let Some(truncated) = event.without_objects()
            {
                event = truncated;
            }
            let size = event.json.len();
            if size > max_event {
                dropped.push(event);
                continue;
            }
            if !part.is_empty() && part_size + size > max_batch {
                parts.push(std::mem::take(&mut part));
                part_size = 0;
            }
            part_size += size;
            part.push(event);
        }
        if !part.is_empty() {
            parts.push(part);
        }
        if !dropped.is_empty() {
            plugin_error(
                "truncate",
                "event is too large even after truncating",
                &audit_ids(&dropped),
            );
        }
        parts
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::audit::event::Event;

    /// An event of level Request with `audit_id` and a request object of `body` bytes.
    pub(crate) fn event(audit_id: &str, body: usize) -> Event {
        serde_json::from_value(serde_json::json!({
            "kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": "Request",
            "auditID": audit_id, "stage": "ResponseComplete", "requestURI": "/apis",
            "verb": "create", "user": {"username": "alice"},
            "requestObject": {"data": "x".repeat(body)},
            "requestReceivedTimestamp": "2026-12-07T00:00:00.000000Z",
            "stageTimestamp": "2026-12-07T00:00:00.000000Z",
        }))
        .expect("an event")
    }

    #[test]
    fn large_events_lose_their_objects_and_batches_are_split_by_size() {
        let encode = |id, body| Encoded::new(&event(id, body)).unwrap();
        let small = encode("s", 10).json.len();
        let truncate = Truncate {
            limits: Some((small + 100, 2 * small + 50)),
        };
        let parts = truncate.split(vec![
            encode("a", 10),
            encode("b", 10_000),
            encode("c", 10),
            encode("d", 10),
        ]);
        let ids: Vec<Vec<&str>> = parts
            .iter()
            .map(|p| p.iter().map(|e| e.audit_id.as_str()).collect())
            .collect();
        assert_eq!(ids, [vec!["a", "b"], vec!["c", "d"]]);
        let decode = |e: &Encoded| serde_json::from_slice::<Event>(&e.json).unwrap();
        let b = decode(&parts[0][1]);
        assert!(b.request_object.is_none());
        assert_eq!(b.annotations["audit.k8s.io/truncated"], "true");
        assert!(decode(&parts[0][0]).annotations.is_empty());
    }

    #[test]
    fn without_limits_the_batch_is_sent_whole() {
        let big = Encoded::new(&event("a", 100_000)).unwrap();
        let parts =
            Truncate::default().split(vec![big.clone(), Encoded::new(&event("b", 1)).unwrap()]);
        assert_eq!(parts.len(), 1);
        assert_eq!(parts[0][0].json, big.json, "sent as it came");
    }
}
