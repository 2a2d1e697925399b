//! What admission reads from the host cluster: its namespaces, webhook configurations and
//! validating admission policies with their bindings, each kept by a `kube` reflector (list,
//! then watch) through the host client.

use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding,
    ValidatingWebhookConfiguration,
};
use k8s_openapi::api::core::v1::Namespace;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};

use crate::admission::AdmissionAttributes;
use crate::error::ApiError;

/// How long a request waits for a reflector's first list before it is refused.
pub const SYNC_TIMEOUT: Duration = Duration::from_secs(10);

/// The host's objects admission reads, kept up to date in the background; the watches stop
/// when the last clone is dropped.
#[derive(Clone)]
pub struct HostObjects {
    /// The client of the host cluster.
    pub client: kube::Client,
    /// The host's namespaces.
    pub namespaces: Store<Namespace>,
    /// The host's mutating webhook configurations.
    pub mutating: Store<MutatingWebhookConfiguration>,
    /// The host's validating webhook configurations.
    pub validating: Store<ValidatingWebhookConfiguration>,
    /// The host's validating admission policies.
    pub policies: Store<ValidatingAdmissionPolicy>,
    /// The host's bindings of validating admission policies.
    pub policy_bindings: Store<ValidatingAdmissionPolicyBinding>,
    _tasks: std::sync::Arc<AbortOnDrop>,
}

/// Tasks aborted when the last handle is dropped.
pub(crate) struct AbortOnDrop(pub(crate) Vec<tokio::task::JoinHandle<()>>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        for t in &self.0 {
            t.abort();
        }
    }
}

/// A reflector of `api`'s objects: the store, and the task that keeps it.
pub(crate) fn reflect<K>(api: kube::Api<K>) -> (Store<K>, tokio::task::JoinHandle<()>)
where
    K: kube::Resource<DynamicType = ()>
        + Clone
        + std::fmt::Debug
        + serde::de::DeserializeOwned
        + Send
        + Sync
        + 'static,
{
    let (store, writer) = reflector::store();
    let stream = watcher(api, watcher::Config::default())
        .default_backoff()
        .reflect(writer);
    let task = tokio::spawn(async move {
        stream
            .for_each(|event| async move {
                if let Err(e) = event {
                    tracing::warn!("admission: watching the host failed: {e}");
                }
            })
            .await;
    });
    (store, task)
}

impl HostObjects {
    /// Starts watching the host's namespaces and webhook configurations through `client`.
    pub fn start(client: kube::Client) -> Self {
        let (namespaces, a) = reflect(kube::Api::<Namespace>::all(client.clone()));
        let (mutating, b) = reflect(kube::Api::all(client.clone()));
        let (validating, c) = reflect(kube::Api::all(client.clone()));
        let (policies, d) = reflect(kube::Api::all(client.clone()));
        let (policy_bindings, e) = reflect(kube::Api::all(client.clone()));
        HostObjects {
            client,
            namespaces,
            mutating,
            validating,
            policies,
            policy_bindings,
            _tasks: std::sync::Arc::new(AbortOnDrop(vec![a, b, c, d, e])),
        }
    }

    /// The namespace `name` from the cache.
    pub fn cached_namespace(&self, name: &str) -> Option<std::sync::Arc<Namespace>> {
        self.namespaces.get(&ObjectRef::new(name))
    }

    /// The namespace `name`, read from the host when the cache does not have it (`Ok(None)`
    /// when the host does not either).
    pub async fn namespace(&self, name: &str) -> Result<Option<Namespace>, ApiError> {
        if let Some(ns) = self.cached_namespace(name) {
            return Ok(Some((*ns).clone()));
        }
        let api = kube::Api::<Namespace>::all(self.client.clone());
        api.get_opt(name).await.map_err(ApiError::internal)
    }
}

/// Waits (up to [`SYNC_TIMEOUT`]) until `store` has listed once; refuses the request with
/// upstream's `not yet ready to handle request` otherwise.
pub async fn wait_synced<K>(
    store: &Store<K>,
    attrs: &AdmissionAttributes<'_>,
) -> Result<(), ApiError>
where
    K: kube::Resource<DynamicType = ()> + Clone + 'static,
{
    match tokio::time::timeout(SYNC_TIMEOUT, store.wait_until_ready()).await {
        Ok(Ok(())) => Ok(()),
        _ => Err(attrs.forbidden("not yet ready to handle request")),
    }
}
