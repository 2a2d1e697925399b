//! Audit (upstream's `WithAudit`), behind authentication: each request is recorded as the
//! audit policy says ([`crate::audit::Auditor`]); without an auditor requests pass through.

use std::sync::Arc;

use axum::body::Body;
use http::{Request, Response};

use super::filter::{ChainInner, Filter, FilterLayer, Next};
use crate::audit::Auditor;
use crate::user::UserInfo;

/// Records requests with an auditor, if the server has one.
#[derive(Clone)]
pub struct AuditFilter(pub Option<Arc<Auditor>>);

/// The audit filter as a layer.
pub fn layer(auditor: Option<Arc<Auditor>>) -> FilterLayer<AuditFilter> {
    FilterLayer(AuditFilter(auditor))
}

impl Filter for AuditFilter {
    async fn filter<'a, S: ChainInner>(
        &'a self,
        req: Request<Body>,
        next: Next<'a, S>,
    ) -> Response<Body> {
        let Some(auditor) = &self.0 else {
            return next.run(req).await;
        };
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
