//! An audit event serialized once, as JSON: what the webhook's buffer holds, counts in bytes,
//! truncates and sends. The event is encoded when the request hands it over; its bytes are
//! then measured, batched and written into the `EventList` body as they are, so an event
//! costs one serialization on its way to the receiver (a truncated one costs two more).

use super::event::{Event, Level};

/// The annotation a truncated event carries.
const TRUNCATED: &str = "audit.k8s.io/truncated";

/// One event's JSON, with its audit ID for the log of a lost event.
#[derive(Clone, Debug)]
pub(crate) struct Encoded {
    /// The event's `auditID`.
    pub audit_id: String,
    /// The event as JSON.
    pub json: Vec<u8>,
}

impl Encoded {
    /// `event` as JSON.
    pub(crate) fn new(event: &Event) -> serde_json::Result<Encoded> {
        Ok(Encoded {
            audit_id: event.audit_id.clone(),
            json: serde_json::to_vec(event)?,
        })
    }

    /// The event without its request and response objects, annotated as truncated (upstream's
    /// `truncate` plugin); `None` when its level records no objects.
    pub(crate) fn without_objects(&self) -> Option<Encoded> {
        let mut event: Event = serde_json::from_slice(&self.json).ok()?;
        if event.level < Level::Request {
            return None;
        }
        event.request_object = None;
        event.response_object = None;
        event
            .annotations
            .insert(TRUNCATED.to_string(), "true".to_string());
        Encoded::new(&event).ok()
    }
}

/// The `audit.k8s.io/v1` `EventList` of `events`, as the body of one POST to the webhook.
pub(crate) fn event_list(events: &[Encoded]) -> Vec<u8> {
    const HEAD: &[u8] =
        br#"{"kind":"EventList","apiVersion":"audit.k8s.io/v1","metadata":{},"items":["#;
    let size = events.iter().map(|e| e.json.len() + 1).sum::<usize>();
    let mut body = Vec::with_capacity(HEAD.len() + size + 2);
    body.extend_from_slice(HEAD);
    for (n, event) in events.iter().enumerate() {
        if n > 0 {
            body.push(b',');
        }
        body.extend_from_slice(&event.json);
    }
    body.extend_from_slice(b"]}");
    body
}

/// The audit IDs of `events`, for the log of events lost.
pub(crate) fn audit_ids(events: &[Encoded]) -> Vec<&str> {
    events.iter().map(|e| e.audit_id.as_str()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::truncate::tests::event;

    #[test]
    fn the_event_list_is_valid_json_holding_each_event() {
        let events = [
            Encoded::new(&event("a", 3)).unwrap(),
            Encoded::new(&event("b", 4)).unwrap(),
        ];
        let list: serde_json::Value = serde_json::from_slice(&event_list(&events)).unwrap();
        assert_eq!(list["kind"], "EventList");
        assert_eq!(list["apiVersion"], "audit.k8s.io/v1");
        assert_eq!(list["items"][0]["auditID"], "a");
        assert_eq!(list["items"][1]["requestObject"]["data"], "xxxx");
        let empty: serde_json::Value = serde_json::from_slice(&event_list(&[])).unwrap();
        assert_eq!(empty["items"], serde_json::json!([]));
    }

    #[test]
    fn truncating_drops_the_objects_and_annotates() {
        let encoded = Encoded::new(&event("a", 1000)).unwrap();
        let truncated = encoded.without_objects().unwrap();
        assert!(truncated.json.len() < 500);
        let back: Event = serde_json::from_slice(&truncated.json).unwrap();
        assert!(back.request_object.is_none());
        assert_eq!(back.annotations[TRUNCATED], "true");
        let mut metadata = event("m", 10);
        metadata.level = Level::Metadata;
        assert!(Encoded::new(&metadata).unwrap().without_objects().is_none());
    }
}
