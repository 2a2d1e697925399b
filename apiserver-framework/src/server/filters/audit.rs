//! Audit (upstream's `WithAudit`), behind authentication: each request is recorded as the
//! audit policy says ([`crate::audit::Auditor`]); without an auditor the layer is not there.

use std::sync::Arc;

use axum::body::Body;
use http::{Request, Response};

use tower::layer::util::Identity;
use tower::util::Either;

use super::filter::{ChainInner, Filter, FilterLayer, Next};
use crate::audit::Auditor;
use crate::user::UserInfo;

/// Records requests with the server's auditor.
#[derive(Clone)]
pub struct AuditFilter(pub Arc<Auditor>);

/// The audit filter as a layer, when the server has an auditor.
pub fn layer(auditor: Option<Arc<Auditor>>) -> Either<FilterLayer<AuditFilter>, Identity> {
    match auditor {
        Some(auditor) => Either::Left(FilterLayer(AuditFilter(auditor))),
        None => Either::Right(Identity::new()),
    }
}

impl Filter for AuditFilter {
    async fn filter<'a, S: ChainInner>(
        &'a self,
        req: Request<Body>,
        next: Next<'a, S>,
    ) -> Response<Body> {
        let auditor = &self.0;
        let user = req
            .extensions()
            .get::<UserInfo>()
            .cloned()
            .unwrap_or_default();
        let (parts, body) = req.into_parts();
        auditor
            .serve(parts, body, &user, |parts, body| {
                next.run(Request::from_parts(parts, body))
            })
            .await
    }
}
