//! Request info (upstream's `WithRequestInfo`): each request is read once on arrival, its
//! query decoded ([`Query`]) and its method and path read ([`ParsedRequest`]: what the
//! authorizer is asked, and what the router serves), and both are kept in its extensions.
//! Every later step (long-running, in-flight, metrics, audit, authorization, routing, the
//! handlers) takes them from there.

use axum::body::Body;
use http::Request;

use super::step::{Before, Step, StepLayer};
use crate::authz::ParsedRequest;
use crate::endpoints::query::Query;

/// Reads each request once.
#[derive(Clone, Copy, Debug, Default)]
pub struct RequestInfoFilter;

/// The request-info filter as a layer.
pub fn layer() -> StepLayer<RequestInfoFilter> {
    StepLayer(RequestInfoFilter)
}

/// Reads `req` and keeps the reading in its extensions, unless it was read already (the
/// connection reads it first, to tell watches apart).
pub fn read<B>(req: &mut Request<B>) {
    if req.extensions().get::<ParsedRequest>().is_some() {
        return;
    }
    let query = Query::parse(req.uri().query());
    let parsed = ParsedRequest::read(req.method(), req.uri().path(), &query);
    req.extensions_mut().insert(query);
    req.extensions_mut().insert(parsed);
}

impl Step for RequestInfoFilter {
    type State = ();

    fn before(&self, req: &mut Request<Body>) -> Before<()> {
        read(req);
        Before::Continue(())
    }
}
