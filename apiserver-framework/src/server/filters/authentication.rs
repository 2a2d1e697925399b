//! Authentication (upstream's `WithAuthentication` and, on failure,
//! `WithFailedAuthenticationAudit` and `Unauthorized`): the request's credentials name its
//! user, kept in the request extensions as a [`UserInfo`] for the filters behind; the
//! credentials are then removed from the request, so nothing behind this filter sees them.
//!
//! Invalid credentials are refused everywhere (`401` Status, recorded by the audit); a caller
//! without any may reach the anonymous paths (by default `/healthz`, `/readyz`, `/livez`) as
//! `system:anonymous`, still subject to the authorizer.

use std::sync::Arc;

use axum::body::Body;
use http::{Request, Response};

use super::filter::{ChainInner, Filter, FilterLayer, Next};
use crate::audit::Auditor;
use crate::authn::{self, Authenticated, Authenticator, DelegatedAuthConfig};
use crate::authz::PathAuthorizer;
use crate::error::ApiError;
use crate::user::UserInfo;

/// Authenticates requests.
#[derive(Clone)]
pub(crate) struct AuthenticationFilter {
    /// Who the credentials name.
    pub authenticator: Arc<dyn Authenticator>,
    /// The paths callers without credentials may reach as `system:anonymous`.
    pub anonymous_paths: Arc<PathAuthorizer>,
    /// The front-proxy headers to remove besides the default `X-Remote-*` ones.
    pub credentials: Option<Arc<DelegatedAuthConfig>>,
    /// Records failed authentications.
    pub auditor: Option<Arc<Auditor>>,
}

impl AuthenticationFilter {
    /// This filter as a layer.
    pub fn layer(self) -> FilterLayer<Self> {
        FilterLayer(self)
    }
}

/// The user of callers without credentials on the anonymous paths.
fn anonymous() -> UserInfo {
    UserInfo::new("system:anonymous", &["system:unauthenticated"])
}

impl Filter for AuthenticationFilter {
    async fn filter<'a, S: ChainInner>(
        &'a self,
        req: Request<Body>,
        next: Next<'a, S>,
    ) -> Response<Body> {
        let (mut parts, body) = req.into_parts();
        let user = match self.authenticator.authenticate(&parts).await {
            Authenticated::User(u) => u,
            Authenticated::NoCredentials if self.anonymous_paths.allows(parts.uri.path()) => {
                anonymous()
            }
            _ => {
                if let Some(auditor) = &self.auditor {
                    auditor.failed_authentication(&parts, 401);
                }
                return axum::response::IntoResponse::into_response(ApiError::unauthorized());
            }
        };
        match &self.credentials {
            Some(config) => authn::strip_credentials(&mut parts.headers, &config.current()),
            None => authn::strip_default_credentials(&mut parts.headers),
        }
        parts.extensions.insert(user);
        next.run(Request::from_parts(parts, body)).await
    }
}
