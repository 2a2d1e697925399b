//! [`AdmissionNotes`]: what admission adds to a request besides its verdict, as upstream's
//! `warning.AddWarning` and `Attributes.AddAnnotation`: warnings for the response's `Warning`
//! headers and annotations for the request's audit event; and the time its webhooks took,
//! which the request's SLI latency leaves out (upstream's webhook latency trackers).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

use crate::validation::label_key_errors;

/// The warnings and audit annotations admission gave one request; cheap to clone (the clones
/// share them).
#[derive(Clone, Debug, Default)]
pub struct AdmissionNotes(Arc<Mutex<Notes>>);

#[derive(Debug, Default)]
struct Notes {
    warnings: Vec<String>,
    annotations: BTreeMap<String, String>,
    webhook_time: Duration,
}

impl AdmissionNotes {
    /// Adds a warning for the response (sent as a `Warning` header; repeated texts once).
    pub fn add_warning(&self, text: &str) {
        self.0.lock().warnings.push(text.to_owned());
    }

    /// Adds an annotation to the request's audit event. As upstream, the key is
    /// `<DNS subdomain>/<name>` (a qualified name such as `example.com/decision`), and a key
    /// already set keeps its value: setting it again to another value is an error.
    pub fn add_annotation(&self, key: &str, value: &str) -> Result<(), String> {
        if key.split('/').count() != 2 {
            return Err(
                "annotation key has invalid format, the right format is a DNS \
                 subdomain prefix and '/' and key name. (e.g. \
                 'podsecuritypolicy.admission.k8s.io/admit-policy')"
                    .into(),
            );
        }
        if !label_key_errors(key).is_empty() {
            return Err(format!(
                "annotation key has invalid format {key}. A qualified name like \
                 'podsecuritypolicy.admission.k8s.io/admit-policy' is required."
            ));
        }
        let mut notes = self.0.lock();
        match notes.annotations.get(key) {
            Some(old) if old != value => Err(format!(
                "admission annotations are not allowed to be overwritten, key:{key:?}, old \
                 value: {old:?}, new value: {value:?}"
            )),
            Some(_) => Ok(()),
            None => {
                notes.annotations.insert(key.to_owned(), value.to_owned());
                Ok(())
            }
        }
    }

    /// The warnings added, in order.
    pub fn warnings(&self) -> Vec<String> {
        self.0.lock().warnings.clone()
    }

    /// The annotations added, by key.
    pub fn annotations(&self) -> BTreeMap<String, String> {
        self.0.lock().annotations.clone()
    }

    /// Adds the time one admission webhook call took.
    pub(crate) fn add_webhook_time(&self, elapsed: Duration) {
        self.0.lock().webhook_time += elapsed;
    }

    /// The time the request's admission webhook calls took, in all.
    pub(crate) fn webhook_time(&self) -> Duration {
        self.0.lock().webhook_time
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn annotations_follow_upstream() {
        let notes = AdmissionNotes::default();
        notes
            .add_annotation("deny.example.com/why", "quota")
            .expect("a qualified key");
        notes
            .add_annotation("deny.example.com/why", "quota")
            .expect("the same value again");
        let overwrite = notes
            .add_annotation("deny.example.com/why", "other")
            .unwrap_err();
        assert!(
            overwrite.contains("not allowed to be overwritten"),
            "{overwrite}"
        );
        let bare = notes.add_annotation("why", "x").unwrap_err();
        assert!(bare.contains("DNS subdomain prefix and '/'"), "{bare}");
        let bad = notes.add_annotation("Bad_Prefix/why", "x").unwrap_err();
        assert!(bad.contains("A qualified name"), "{bad}");
        assert_eq!(
            notes.annotations(),
            BTreeMap::from([("deny.example.com/why".to_string(), "quota".to_string())])
        );
        notes.add_warning("first");
        notes.clone().add_warning("second");
        assert_eq!(notes.warnings(), ["first", "second"]);
    }
}
