//! The plugins a production server puts in front of the application's own, in upstream's
//! recommended order: `NamespaceLifecycle`, `MutatingAdmissionPolicy` (off unless enabled),
//! `MutatingAdmissionWebhook`, `ValidatingAdmissionPolicy`, `ValidatingAdmissionWebhook`, all
//! reading the host cluster.

use std::sync::Arc;

use crate::admission::AdmissionPlugin;
use crate::admission::host::HostObjects;
use crate::admission::lifecycle::NamespaceLifecycle;
use crate::admission::policy::ValidatingAdmissionPolicyPlugin;
use crate::admission::policy::mutating::MutatingAdmissionPolicyPlugin;
use crate::admission::webhook::client::DnsServiceResolver;
use crate::admission::webhook::{MutatingAdmissionWebhook, ValidatingAdmissionWebhook};

/// The host plugins reading the host cluster through `client` (watches start now).
pub fn host_plugins(client: kube::Client) -> Vec<Arc<dyn AdmissionPlugin>> {
    let host = HostObjects::start(client);
    let resolver = Arc::new(DnsServiceResolver);
    vec![
        Arc::new(NamespaceLifecycle::new(host.clone())),
        Arc::new(MutatingAdmissionPolicyPlugin::new(host.clone())),
        Arc::new(MutatingAdmissionWebhook::new(
            host.clone(),
            resolver.clone(),
        )),
        Arc::new(ValidatingAdmissionPolicyPlugin::new(host.clone())),
        Arc::new(ValidatingAdmissionWebhook::new(host, resolver)),
    ]
}
