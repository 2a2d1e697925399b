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
pub struct AuthorizationFilter {
    authorizer: Arc<dyn Authorizer>,
    /// Further verbs for handlers: built once with the filter, handed to each allowed request
    /// by reference count; a handler that asks builds the check from the request's extensions.
    also: AlsoAuthorize,
}

/// The authorization filter as a layer.
pub fn layer(authorizer: Arc<dyn Authorizer>) -> FilterLayer<AuthorizationFilter> {
    let also = AlsoAuthorize(Arc::new(ChainVerbAuthorizer {
        authorizer: authorizer.clone(),
    }));
    FilterLayer(AuthorizationFilter { authorizer, also })
}

impl Filter for AuthorizationFilter {
    async fn filter<'a, S: ChainInner>(
        &'a self,
        mut req: Request<Body>,
        next: Next<'a, S>,
    ) -> Response<Body> {
        // The user and what the request asks to do are lent to the authorizer, in place, and
        // put back for the handler: neither copied nor taken out of the extensions.
        let user = req
            .extensions_mut()
            .get_mut::<UserInfo>()
            .map(std::mem::take)
            .unwrap_or_default();
        let request = match req.extensions_mut().get_mut::<ParsedRequest>() {
            Some(parsed) => parsed.take_request(),
            None => {
                // Not read before (a chain without request info): read here, kept for after.
                let mut parsed = ParsedRequest::of_request(&req);
                let request = parsed.take_request();
                req.extensions_mut().insert(parsed);
                request
            }
        };
        let attrs = Attributes { user, request };
        let mut decision = self.authorizer.authorize(&attrs).await;
        audit::annotate_authorization(req.extensions(), &decision);
        // A WebSocket upgrade of a subresource must also be allowed to `create`.
        let mut create = None;
        if matches!(decision, Ok(Decision::Allow))
            && let Some(check) = authz::upgrade::create_check(&attrs, req.headers())
        {
            decision = self.authorizer.authorize(&check).await;
            create = Some(check);
        }
        match decision {
            Ok(Decision::Allow) => {
                let extensions = req.extensions_mut();
                extensions.insert(self.also.clone());
                if let Some(parsed) = extensions.get_mut::<ParsedRequest>() {
                    parsed.put_back(attrs.request);
                }
                match extensions.get_mut::<UserInfo>() {
                    Some(user) => *user = attrs.user,
                    None => {
                        extensions.insert(attrs.user);
                    }
                }
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
/// resource (upstream's handlers call the authorizer the same way): the user and the request
/// reading the filter authorized, read again from the request's extensions.
struct ChainVerbAuthorizer {
    authorizer: Arc<dyn Authorizer>,
}

#[async_trait::async_trait]
impl VerbAuthorizer for ChainVerbAuthorizer {
    async fn authorize_verb(&self, request: &http::Extensions, verb: &str) -> VerbDecision {
        let Some(parsed) = request.get::<ParsedRequest>() else {
            return VerbDecision::Refused("the request was not read".to_string());
        };
        let mut attrs = Attributes {
            user: request.get::<UserInfo>().cloned().unwrap_or_default(),
            request: parsed.0.as_ref().clone(),
        };
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
