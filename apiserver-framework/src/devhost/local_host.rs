//! The local host: what a cluster answers besides an extension server's own groups, for `local`
//! mode, where the server is the only cluster a developer has.
//!
//! It is the last server of the local chain (the app's server delegates to it), so a group the
//! app serves itself always wins. It serves:
//!
//! - `namespaces` of the core group (`/api/v1/namespaces`), with `default`, `kube-system` and
//!   `kube-public` created at start, so `/api` lists `v1` as every cluster's does (kube-rs'
//!   `Discovery::run` refuses a cluster without a core version, and kubectl 1.29 and older
//!   count a core version without resources as a discovery failure). As in a cluster, those
//!   three may not be deleted, and the app's server runs `NamespaceLifecycle` over them
//!   ([`lifecycle_plugins`]): an object may only be created in a namespace that exists and is
//!   not terminating. Deleting a namespace removes nothing else (there is no namespace
//!   controller);
//! - this machine as the one `Node` (`/api/v1/nodes`, [`crate::devhost::node`]), computed
//!   on each request, so that `kubectl top node` finds the node a metrics server reports on;
//! - `SelfSubjectReview`, `SelfSubjectAccessReview` and `SelfSubjectRulesReview`
//!   ([`crate::devhost::self_reviews`]), so `kubectl auth whoami` and `kubectl auth can-i`
//!   answer with the local user and the local authorizer's decisions.

use std::sync::Arc;

use serde_json::json;

use crate::admission::{AdmissionChain, AdmissionPlugin};
use crate::authz::Authorizer;
use crate::devhost::core::{self, Namespace};
use crate::devhost::protobuf;
use crate::devhost::self_reviews::{
    AUTHENTICATION_GROUP, AUTHORIZATION_GROUP, RulesResolver, SelfReviews,
};
use crate::error::ApiError;
use crate::registry::group::Group;
use crate::registry::rest::options::WriteOptions;
use crate::registry::rest::{RequestContext, RestStorage};
use crate::registry::scheme::Registry;
use crate::registry::store::Store;
use crate::registry::store::strategy::DefaultStrategy;
use crate::server::generic::GenericApiServer;
use crate::storage::Storage;
use crate::user::UserInfo;

/// The local host's server name (logs, OpenAPI titles).
pub const NAME: &str = "local-host";

/// The namespaces every cluster starts with.
pub(crate) const INITIAL_NAMESPACES: [&str; 3] = ["default", "kube-system", "kube-public"];

/// The local host on `storage` (the app's, so its namespaces last as long as its objects),
/// answering self reviews with `authorizer` (the one the local chain's request filter asks) and
/// `rules` (what that authorizer allows, for `can-i --list`). The [`INITIAL_NAMESPACES`] are
/// created (if missing) before it is returned, so the server is ready as soon as it listens.
pub async fn server(
    storage: Arc<dyn Storage>,
    authorizer: Arc<dyn Authorizer>,
    rules: Arc<dyn RulesResolver>,
) -> Result<GenericApiServer, ApiError> {
    let namespaces = Arc::new(
        Store::<Namespace>::new(storage.clone(), Arc::new(DefaultStrategy))
            .with_protobuf_decoder(protobuf::namespace),
    );
    create_initial_namespaces(namespaces.as_ref()).await?;
    let reviews = SelfReviews::new(authorizer, rules);
    let mut authentication = Group::new(AUTHENTICATION_GROUP);
    for storage in reviews.authentication {
        authentication = authentication.storage(storage);
    }
    let mut authorization = Group::new(AUTHORIZATION_GROUP);
    for storage in reviews.authorization {
        authorization = authorization.storage(storage);
    }
    Ok(GenericApiServer::builder(NAME)
        .admission_arc(core::namespace_lifecycle(storage.clone()))
        .storage(storage)
        .group(
            Group::new("")
                .storage(namespaces)
                .computed::<crate::devhost::node::Node>(crate::devhost::node::ThisMachine),
        )
        .group(authentication)
        .group(authorization)
        .build())
}

/// The admission plugins the app's server runs in front of its own in `local` mode, as in
/// production it runs those reading the host cluster: `NamespaceLifecycle` over the local
/// host's namespaces in `storage` (which must be the local host's).
pub fn lifecycle_plugins(storage: Arc<dyn Storage>) -> Vec<Arc<dyn AdmissionPlugin>> {
    vec![core::namespace_lifecycle(storage)]
}

/// Creates the [`INITIAL_NAMESPACES`] that do not exist yet.
async fn create_initial_namespaces(namespaces: &dyn RestStorage) -> Result<(), ApiError> {
    let ctx = RequestContext {
        namespace: None,
        user: UserInfo::new(NAME, &["system:masters", "system:authenticated"]),
        admission: Arc::new(AdmissionChain::new(Vec::new())),
        registry: Arc::new(Registry::default()),
        request_resource: None,
        notes: Default::default(),
    };
    for name in INITIAL_NAMESPACES {
        let object = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name},
                            "status": {"phase": "Active"}});
        match namespaces
            .create(&ctx, object, &WriteOptions::default())
            .await
        {
            Ok(_) => {}
            Err(e) if e.code == 409 => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
