//! The blocking modes of the audit webhook (`--audit-webhook-mode=blocking` and
//! `blocking-strict`, upstream's webhook backend without the buffer): each event is sent to the
//! receiver, retries included, while the request waits.
//!
//! In `blocking` mode a failure is counted and logged and the request goes on (upstream's
//! `ignoreErrorsBackend`); in `blocking-strict` mode it is reported to the audit filter, which
//! fails a request whose `RequestReceived` event could not be stored. Where the filter cannot
//! wait (the end of a long-running request's body), the event is sent on a task of its own.

use std::sync::Arc;

use futures::future::BoxFuture;

use super::backend::AuditBackend;
use super::buffered::plugin_error;
use super::encoded::{Encoded, audit_ids};
use super::event::Event;
use super::truncate::Truncate;
use super::webhook::WebhookClient;

/// Sends each event to the webhook as the request waits.
pub(crate) struct BlockingBackend {
    client: Arc<WebhookClient>,
    truncate: Truncate,
    /// `blocking-strict`: a failure is reported (the event counts as not stored).
    strict: bool,
}

impl BlockingBackend {
    /// The backend of `blocking` mode, or of `blocking-strict` when `strict`.
    pub(crate) fn new(client: WebhookClient, truncate: Truncate, strict: bool) -> Self {
        BlockingBackend {
            client: Arc::new(client),
            truncate,
            strict,
        }
    }
}

/// Sends `event` through `truncate` to `client`: whether all of it reached the receiver (a
/// failure is counted and logged).
async fn send(client: &WebhookClient, truncate: &Truncate, event: &Event) -> bool {
    let encoded = match Encoded::new(event) {
        Ok(encoded) => encoded,
        Err(e) => {
            plugin_error("webhook", &e.to_string(), &[&event.audit_id]);
            return false;
        }
    };
    let mut stored = true;
    for part in truncate.split(vec![encoded]) {
        if let Err(e) = client.send(&part).await {
            plugin_error("webhook", &e.to_string(), &audit_ids(&part));
            stored = false;
        }
    }
    stored
}

impl AuditBackend for BlockingBackend {
    fn process(&self, event: &Event) {
        // Called where the filter cannot wait; sent on a task of its own.
        let (client, truncate, event) = (self.client.clone(), self.truncate.clone(), event.clone());
        tokio::spawn(async move { send(&client, &truncate, &event).await });
    }

    fn blocks(&self) -> bool {
        true
    }

    fn store<'a>(&'a self, event: &'a Event) -> BoxFuture<'a, bool> {
        Box::pin(async move { send(&self.client, &self.truncate, event).await || !self.strict })
    }
}
