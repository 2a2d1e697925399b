//! Authorization (upstream's `WithAuthorization`), the last filter: the request's user (after
//! impersonation) and its reading are put to the authorizer; the decision is recorded in the
//! audit event. A refusal answers upstream's `403` Status, a failed authorizer its plain-text
//! `500`; an allowed request goes on to the server.

use std::sync::Arc;

use axum::body::Body;
use http::{Request, Response};

use super::filter::{ChainInner, Filter, FilterLayer, Next};
use crate::audit;
use crate::authz::{self, Attributes, Authorizer, Decision, ParsedRequest};
use crate::endpoints::also_authorize::{AlsoAuthorize, VerbAuthorizer, VerbDecision};
use crate::user::UserInfo;

/// Authorizes requests.
#[derive(Clone)]
pub struct AuthorizationFilter(pub Arc<dyn Authorizer>);

/// The authorization filter as a layer.
pub fn layer(authorizer: Arc<dyn Authorizer>) -> FilterLayer<AuthorizationFilter> {
    FilterLayer(AuthorizationFilter(authorizer))
}

impl Filter for AuthorizationFilter {
    async fn filter<S: ChainInner>(self, mut req: Request<Body>, next: Next<S>) -> Response<Body> {
        let attrs = Attributes {
            user: req
                .extensions()
                .get::<UserInfo>()
                .cloned()
                .unwrap_or_default(),
            request: ParsedRequest::of_request(&req).0.as_ref().clone(),
        };
        let mut decision = self.0.authorize(&attrs).await;
        audit::annotate_authorization(req.extensions(), &decision);
        // A WebSocket upgrade of a subresource must also be allowed to `create`.
        let mut create = None;
        if matches!(decision, Ok(Decision::Allow))
            && let Some(check) = authz::upgrade::create_check(&attrs, req.headers())
        {
            decision = self.0.authorize(&check).await;
            create = Some(check);
        }
        match decision {
            Ok(Decision::Allow) => {
                let also = ChainVerbAuthorizer {
                    authorizer: self.0.clone(),
                    attrs,
                };
                req.extensions_mut()
                    .insert(AlsoAuthorize(std::sync::Arc::new(also)));
                next.run(req).await
            }
            Ok(Decision::Deny(reason) | Decision::NoOpinion(reason)) => {
                tracing::debug!(uri = %req.uri(), %reason, "forbidden");
                let accept = req
                    .headers()
                    .get(http::header::ACCEPT)
                    .and_then(|v| v.to_str().ok());
                authz::forbidden_response(create.as_ref().unwrap_or(&attrs), &reason, accept)
            }
            Err(e) => {
                tracing::error!(uri = %req.uri(), error = %e, "authorization failed");
                let uri = req
                    .uri()
                    .path_and_query()
                    .map_or_else(|| req.uri().path(), |p| p.as_str());
                authz::internal_error_response(uri, &e.0)
            }
        }
    }
}

/// Further verbs a handler asks about, put to the chain's authorizer for the request's user and
/// resource (upstream's handlers call the authorizer the same way).
struct ChainVerbAuthorizer {
    authorizer: Arc<dyn Authorizer>,
    attrs: Attributes,
}

#[async_trait::async_trait]
impl VerbAuthorizer for ChainVerbAuthorizer {
    async fn authorize_verb(&self, verb: &str) -> VerbDecision {
        let mut attrs = self.attrs.clone();
        match &mut attrs.request {
            authz::Request::Resource(r) => {
                r.verb = verb.to_string();
                // As upstream: the further verb is asked of the resource itself.
                r.subresource.clear();
            }
            authz::Request::NonResource(_) => {
                return VerbDecision::Refused("not allowed on a non-resource request".to_string());
            }
        }
        match self.authorizer.authorize(&attrs).await {
            Ok(Decision::Allow) => VerbDecision::Allowed,
            Ok(Decision::Deny(reason) | Decision::NoOpinion(reason)) => {
                VerbDecision::Refused(reason)
            }
            Err(e) => VerbDecision::Failed(e.0),
        }
    }
}
