//! Metrics (upstream's `MonitorRequest` around the chain): each request is counted in flight
//! while it is served and recorded with its response code and latency, under the labels of
//! the route the router chose (`crate::metrics::RequestRecorder`).

use std::sync::Arc;

use axum::body::Body;
use http::{Request, Response};

use super::step::{AfterResponse, Before, Step, StepLayer};
use crate::metrics::RequestRecorder;
use crate::metrics::recorder::ServingChain;

/// The chain of servers the metrics name requests after.
type Chain = Arc<dyn ServingChain + Send + Sync>;

/// Records requests into the global metrics.
#[derive(Clone)]
pub struct MetricsFilter {
    chain: Chain,
}

/// The metrics filter as a layer; `chain` tells which labels name what it serves, for the
/// requests answered before the router chose a route.
pub fn layer(chain: Chain) -> StepLayer<MetricsFilter> {
    StepLayer(MetricsFilter { chain })
}

impl Step for MetricsFilter {
    type State = Recording;

    fn before(&self, req: &mut Request<Body>) -> Before<Recording> {
        Before::Continue(Recording {
            recorder: RequestRecorder::start(req),
            chain: self.chain.clone(),
        })
    }
}

/// A request being recorded.
pub struct Recording {
    recorder: RequestRecorder,
    chain: Chain,
}

impl AfterResponse for Recording {
    fn after(self, res: Response<Body>) -> Response<Body> {
        self.recorder.finish(self.chain.as_ref(), res)
    }
}
