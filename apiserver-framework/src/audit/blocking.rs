//! The blocking modes of the audit webhook (`--audit-webhook-mode=blocking` and
//! `blocking-strict`, upstream's webhook backend without the buffer): each event is sent to the
//! receiver, retries included, while the request waits.
//!
//! In `blocking` mode a failure is counted and logged and the request goes on (upstream's
//! `ignoreErrorsBackend`); in `blocking-strict` mode it is reported to the audit filter, which
//! fails a request whose `RequestReceived` event could not be stored. Where the filter cannot
//! wait (the end of a long-running request's body), the event is sent on a task of its own; at
//! most [`MAX_DETACHED_SENDS`] such sends are under way at once, and an event beyond them is
//! counted and logged as lost, so a slow receiver cannot make the server hold events without
//! bound.

use std::sync::Arc;

use futures::future::BoxFuture;
use tokio::sync::Semaphore;

use super::backend::AuditBackend;
use super::buffered::plugin_error;
use super::encoded::{Encoded, audit_ids};
use super::event::Event;
use super::truncate::Truncate;
use super::webhook::WebhookClient;

/// How many events sent on tasks of their own may be under way at once.
pub(crate) const MAX_DETACHED_SENDS: usize = 64;

/// Sends each event to the webhook as the request waits.
pub(crate) struct BlockingBackend {
    client: Arc<WebhookClient>,
    truncate: Truncate,
    /// `blocking-strict`: a failure is reported (the event counts as not stored).
    strict: bool,
    /// Permits of the sends on tasks of their own.
    detached: Arc<Semaphore>,
}

impl BlockingBackend {
    /// The backend of `blocking` mode, or of `blocking-strict` when `strict`.
    pub(crate) fn new(client: WebhookClient, truncate: Truncate, strict: bool) -> Self {
        BlockingBackend {
            client: Arc::new(client),
            truncate,
            strict,
            detached: Arc::new(Semaphore::new(MAX_DETACHED_SENDS)),
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
        // Called where the filter cannot wait; sent on a task of its own, within the bound.
        let Ok(permit) = self.detached.clone().try_acquire_owned() else {
            plugin_error(
                "webhook",
                "too many audit events being sent",
                &[&event.audit_id],
            );
            return;
        };
        let (client, truncate, event) = (self.client.clone(), self.truncate.clone(), event.clone());
        tokio::spawn(async move {
            send(&client, &truncate, &event).await;
            drop(permit);
        });
    }

    fn blocks(&self) -> bool {
        true
    }

    fn store<'a>(&'a self, event: &'a Event) -> BoxFuture<'a, bool> {
        Box::pin(async move { send(&self.client, &self.truncate, event).await || !self.strict })
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::audit::webhook::Backoff;

    #[tokio::test]
    async fn sends_on_tasks_of_their_own_are_bounded() {
        crate::tls::install_crypto_provider();
        let dir = tempfile::tempdir().unwrap();
        let ca = rcgen::generate_simple_self_signed(vec!["127.0.0.1".into()]).unwrap();
        let ca = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, ca.cert.pem());
        // Nothing listens on port 1: every send fails and waits a minute before trying again,
        // so each stays under way.
        let config = dir.path().join("kubeconfig");
        std::fs::write(
            &config,
            format!(
                "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:1/audit\n    certificate-authority-data: {ca}\ncontexts:\n- name: d\n  context:\n    cluster: c\ncurrent-context: d\n"
            ),
        )
        .unwrap();
        let client =
            WebhookClient::from_kubeconfig(&config, Backoff::from_initial(Duration::from_secs(60)))
                .unwrap();
        let backend = BlockingBackend::new(client, Truncate::default(), false);
        let lost = || {
            crate::metrics::global()
                .audit_errors
                .with_label_values(&["webhook"])
                .get()
        };
        let before = lost();
        let event = crate::audit::truncate::tests::event("e", 10);
        for _ in 0..MAX_DETACHED_SENDS {
            backend.process(&event);
        }
        assert_eq!(lost(), before, "within the bound every event is being sent");
        backend.process(&event);
        assert_eq!(lost(), before + 1, "past it the event is counted as lost");
    }
}
