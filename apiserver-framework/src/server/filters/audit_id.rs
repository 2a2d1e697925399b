//! The audit id (upstream's `WithAuditInit`, the outermost filter): the caller's `Audit-ID`
//! header, or a new UUID when it sends none or an empty one, kept in the request extensions
//! ([`AuditId`]) and echoed on every response, refused and panicked ones included.
//!
//! Hand-written rather than tower-http's request-id layers: those keep an empty header as the
//! id and write the id into the request's headers, where upstream replaces an empty id and
//! leaves the request as it came.

use axum::body::Body;
use http::{HeaderValue, Request, Response};

use super::filter::{ChainInner, Filter, FilterLayer, Next};
use crate::audit::{AUDIT_ID_HEADER, AuditId};

/// Gives each request its audit id and echoes it on the response.
#[derive(Clone, Copy, Debug, Default)]
pub struct AuditIdFilter;

/// The audit-id filter as a layer.
pub fn layer() -> FilterLayer<AuditIdFilter> {
    FilterLayer(AuditIdFilter)
}

impl Filter for AuditIdFilter {
    fn filter<S: ChainInner>(
        self,
        mut req: Request<Body>,
        next: Next<S>,
    ) -> impl Future<Output = Response<Body>> + Send + 'static {
        let audit_id = AuditId::of(req.headers());
        let header = HeaderValue::from_str(&audit_id.0).ok();
        req.extensions_mut().insert(audit_id);
        async move {
            let mut res = next.run(req).await;
            if let Some(v) = header {
                res.headers_mut().insert(AUDIT_ID_HEADER, v);
            }
            res
        }
    }
}
