//! [`FrontHandler`]: what a server puts in front of its own routes, and what it adds to the
//! discovery and OpenAPI documents of the chain. The aggregator is one: it proxies the
//! group-versions of remote APIServices and lists them in the chain's documents.

use axum::body::Body;
use http::{Request, Response};
use serde_json::Value;

use crate::user::UserInfo;

/// Serves the requests that are its own before the server's routes see them, and adds its
/// group-versions to the documents the first server of a chain answers. Set with
/// [`GenericApiServerBuilder::aggregator`](super::generic::GenericApiServerBuilder::aggregator).
#[async_trait::async_trait]
pub trait FrontHandler: Send + Sync + 'static {
    /// Serves `req` (sent by `user`) when it is this handler's; otherwise hands it back.
    async fn handle(
        &self,
        req: Request<Body>,
        user: &UserInfo,
    ) -> Result<Response<Body>, Request<Body>>;

    /// A counter that changes whenever the documents this handler contributes change (the
    /// server computes its documents again then).
    fn generation(&self) -> u64;

    /// Adds this handler's group-versions to a legacy `APIGroupList`.
    fn merge_group_list(&self, list: &mut Value);

    /// Adds this handler's group-versions to an aggregated `APIGroupDiscoveryList`.
    fn merge_aggregated(&self, list: &mut Value);

    /// Adds this handler's paths and definitions to a Swagger 2.0 document.
    fn merge_openapi_v2(&self, doc: &mut Value);

    /// This handler's OpenAPI v3 documents, as `(apis/<g>/<v>, document)`.
    fn openapi_v3_documents(&self) -> Vec<(String, Vec<u8>)>;
}
