//! The audit id (upstream's `WithAuditInit`, the outermost filter): the caller's `Audit-ID`
//! header, or a new UUID when it sends none or an empty one, kept in the request extensions
//! ([`AuditId`]) and echoed on every response, refused and panicked ones included.
//!
//! Hand-written rather than tower-http's request-id layers: those keep an empty header as the
//! id and write the id into the request's headers, where upstream replaces an empty id and
//! leaves the request as it came.

use axum::body::Body;
use http::{HeaderName, HeaderValue, Request, Response};

use super::step::{AfterResponse, Before, Step, StepLayer};
use crate::audit::{AUDIT_ID_HEADER, AuditId};

/// Gives each request its audit id and echoes it on the response.
#[derive(Clone, Copy, Debug, Default)]
pub struct AuditIdFilter;

/// The audit-id filter as a layer.
pub fn layer() -> StepLayer<AuditIdFilter> {
    StepLayer(AuditIdFilter)
}

impl Step for AuditIdFilter {
    type State = EchoAuditId;

    fn before(&self, req: &mut Request<Body>) -> Before<EchoAuditId> {
        let audit_id = AuditId::of(req.headers());
        let header = HeaderValue::from_str(&audit_id.0).ok();
        req.extensions_mut().insert(audit_id);
        Before::Continue(EchoAuditId(header))
    }
}

/// The response header echoing the audit id, as a name made once: a header inserted by a
/// `&str` name has its name copied into a new allocation at every insert.
static ECHOED: HeaderName = HeaderName::from_static(AUDIT_ID_HEADER);

/// The audit id to echo on the response.
pub struct EchoAuditId(Option<HeaderValue>);

impl AfterResponse for EchoAuditId {
    fn after(self, mut res: Response<Body>) -> Response<Body> {
        if let Some(v) = self.0 {
            res.headers_mut().insert(ECHOED.clone(), v);
        }
        res
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tower::{Layer, ServiceExt};

    /// Answers with the audit id it was given, in the body.
    async fn echo(req: Request<Body>) -> Result<Response<Body>, std::convert::Infallible> {
        let id = req.extensions().get::<AuditId>().unwrap().0.clone();
        Ok(Response::new(Body::from(id)))
    }

    /// The filter's response to a request with `header` as its audit id header, if any.
    async fn response_to(header: Option<&str>) -> Response<Body> {
        let mut req = Request::new(Body::empty());
        if let Some(h) = header {
            req.headers_mut()
                .insert(AUDIT_ID_HEADER, HeaderValue::from_str(h).unwrap());
        }
        layer()
            .layer(tower::service_fn(echo))
            .oneshot(req)
            .await
            .unwrap()
    }

    async fn audit_id_of(header: Option<&str>) -> (String, String) {
        let res = response_to(header).await;
        let header = res.headers()[AUDIT_ID_HEADER].to_str().unwrap().to_string();
        let body = http_body_util::BodyExt::collect(res.into_body())
            .await
            .unwrap()
            .to_bytes();
        (header, String::from_utf8(body.to_vec()).unwrap())
    }

    #[tokio::test]
    async fn the_callers_id_or_a_new_one() {
        assert_eq!(
            audit_id_of(Some("abc")).await,
            ("abc".to_string(), "abc".to_string())
        );
        for header in [None, Some("")] {
            let (echoed, seen) = audit_id_of(header).await;
            assert_eq!(echoed, seen);
            assert_eq!(uuid::Uuid::parse_str(&echoed).unwrap().get_version_num(), 4);
        }
    }

    /// The echoed id is an ordinary header value: it shows in debug output of the headers
    /// (logs), where a value marked sensitive would print as `Sensitive`.
    #[tokio::test]
    async fn the_echoed_id_shows_in_header_logs() {
        for header in [Some("abc"), None] {
            let res = response_to(header).await;
            let value = &res.headers()[AUDIT_ID_HEADER];
            assert!(!value.is_sensitive(), "{header:?}");
            assert!(format!("{:?}", res.headers()).contains(value.to_str().unwrap()));
        }
    }
}
