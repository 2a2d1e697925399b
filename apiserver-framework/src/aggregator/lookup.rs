//! The APIService of a request's group-version: read from storage at every request, a
//! consistent read served by the watch cache, but decoded only when its stored bytes changed.
//!
//! Every proxied request needs its APIService (whether it is remote, available, its service
//! and TLS settings). Reading it stays consistent with the API: a request after an update or
//! a delete sees it, as the availability condition a client just read. Decoding it (its JSON,
//! its base64 CA bundle, its condition times) is what is skipped: the last decoded version of
//! each APIService is kept with the bytes it came from (resource version included) and used
//! again while the stored bytes are the same.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use parking_lot::RwLock;

use super::apiservice::{self, APIService};
use super::available::prober;
use crate::admission::AdmissionChain;
use crate::registry::rest::{RequestContext, RestStorage};
use crate::registry::scheme::Registry;

/// The decoded APIServices, by name, with the stored bytes each was decoded from.
#[derive(Default)]
pub(crate) struct ServiceLookup {
    reader: OnceLock<(Arc<dyn RestStorage>, RequestContext)>,
    decoded: RwLock<HashMap<String, (Bytes, Arc<APIService>)>>,
}

impl ServiceLookup {
    /// The stored APIService `name` of `registry` (which must serve them), decoded.
    pub(crate) async fn get(
        &self,
        registry: &Arc<Registry>,
        name: &str,
    ) -> Option<Arc<APIService>> {
        let (storage, ctx) = match self.reader.get() {
            Some(reader) => reader,
            None => {
                let storage = registry
                    .find(apiservice::GROUP, "v1", "apiservices")?
                    .clone();
                let ctx = RequestContext {
                    namespace: None,
                    user: prober(),
                    admission: Arc::new(AdmissionChain::new(Vec::new())),
                    registry: registry.clone(),
                    request_resource: None,
                    notes: Default::default(),
                };
                self.reader.get_or_init(|| (storage, ctx))
            }
        };
        let bytes = storage.get(ctx, name).await.ok()?;
        if let Some((seen, service)) = self.decoded.read().get(name)
            && *seen == bytes
        {
            return Some(service.clone());
        }
        let service: Arc<APIService> = Arc::new(serde_json::from_slice(&bytes).ok()?);
        let mut decoded = self.decoded.write();
        decoded.insert(name.to_string(), (bytes, service.clone()));
        Some(service)
    }

    /// Forgets the APIServices whose name `keep` rejects.
    pub(crate) fn retain(&self, keep: impl Fn(&str) -> bool) {
        self.decoded.write().retain(|name, _| keep(name));
    }
}
