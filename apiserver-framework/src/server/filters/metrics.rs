//! Metrics (upstream's `MonitorRequest` around the chain): each request is counted in flight
//! while it is served and recorded with its response code and latency, under the labels of
//! the route the router chose (`crate::metrics::RequestRecorder`).

use std::sync::Arc;

use axum::body::Body;
use http::{Request, Response};

use super::filter::{ChainInner, Filter, FilterLayer, Next};
use crate::metrics::RequestRecorder;
use crate::metrics::recorder::ServingChain;

/// Records requests into the global metrics.
#[derive(Clone)]
pub struct MetricsFilter {
    chain: Arc<dyn ServingChain + Send + Sync>,
}

/// The metrics filter as a layer; `chain` tells which labels name what it serves, for the
/// requests answered before the router chose a route.
pub fn layer(chain: Arc<dyn ServingChain + Send + Sync>) -> FilterLayer<MetricsFilter> {
    FilterLayer(MetricsFilter { chain })
}

impl Filter for MetricsFilter {
    fn filter<'a, S: ChainInner>(
        &'a self,
        req: Request<Body>,
        next: Next<'a, S>,
    ) -> impl Future<Output = Response<Body>> + Send + 'a {
        let (parts, body) = req.into_parts();
        let recorder = RequestRecorder::start(&parts);
        async move {
            let res = next.run(Request::from_parts(parts, body)).await;
            recorder.finish(self.chain.as_ref(), res)
        }
    }
}
