//! The in-flight limit (upstream's `WithMaxInFlightLimit`): at most so many non-mutating and
//! so many mutating requests are served at once; beyond that a request is answered `429`
//! at once, with `Retry-After: 1`. Long-running requests are not counted, and members of
//! `system:masters` are never refused.

use std::sync::Arc;

use axum::body::Body;
use http::{HeaderValue, Response, StatusCode, header};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::step::{AfterResponse, Before, Step, StepLayer};
use crate::authz::{ParsedRequest, Request};
use crate::server::filters::long_running::{is_long_running, is_mutating};
use crate::user::UserInfo;

/// The group whose members the limit never refuses (upstream's `SystemPrivilegedGroup`).
const PRIVILEGED_GROUP: &str = "system:masters";

/// Counts the requests in flight against the two limits.
#[derive(Clone, Debug)]
pub(crate) struct MaxInFlight {
    read: Option<Arc<Semaphore>>,
    mutating: Option<Arc<Semaphore>>,
}

/// A request's place among those in flight; dropping it frees the place.
#[derive(Debug)]
pub struct InFlight(#[allow(dead_code)] Option<OwnedSemaphorePermit>);

impl MaxInFlight {
    /// At most `max_read` non-mutating and `max_mutating` mutating requests at once; 0 means
    /// no limit for that kind.
    pub fn new(max_read: usize, max_mutating: usize) -> Self {
        let limit = |n: usize| (n > 0).then(|| Arc::new(Semaphore::new(n)));
        MaxInFlight {
            read: limit(max_read),
            mutating: limit(max_mutating),
        }
    }

    /// Takes a place for `request` (as [`crate::authz::request_of`] reads it) of `user`;
    /// `None` when there is none (answer [`too_many_requests`]). The caller skips
    /// long-running requests.
    pub fn admit(&self, user: &UserInfo, request: &Request) -> Option<InFlight> {
        let pool = if is_mutating(request) {
            &self.mutating
        } else {
            &self.read
        };
        let Some(pool) = pool else {
            return Some(InFlight(None));
        };
        match pool.clone().try_acquire_owned() {
            Ok(permit) => Some(InFlight(Some(permit))),
            Err(_) if user.groups.iter().any(|g| g == PRIVILEGED_GROUP) => Some(InFlight(None)),
            Err(_) => {
                tracing::debug!(?request, "too many requests in flight");
                None
            }
        }
    }
}

/// The in-flight limit as a filter, behind authentication (it reads the user, whom
/// `system:masters` exempts). A request holds its place until its response is produced.
#[derive(Clone, Debug)]
pub(crate) struct MaxInFlightFilter(pub MaxInFlight);

/// The in-flight filter as a layer.
pub fn layer(limit: MaxInFlight) -> StepLayer<MaxInFlightFilter> {
    StepLayer(MaxInFlightFilter(limit))
}

impl Step for MaxInFlightFilter {
    type State = Option<InFlight>;

    fn before(&self, req: &mut http::Request<Body>) -> Before<Option<InFlight>> {
        let read;
        let parsed = match req.extensions().get::<ParsedRequest>() {
            Some(parsed) => parsed,
            None => {
                read = ParsedRequest::of_request(req);
                &read
            }
        };
        if is_long_running(parsed) {
            return Before::Continue(None);
        }
        let anonymous = UserInfo::default();
        let user = req.extensions().get::<UserInfo>().unwrap_or(&anonymous);
        match self.0.admit(user, parsed.request()) {
            Some(place) => Before::Continue(Some(place)),
            None => Before::Answer(too_many_requests()),
        }
    }
}

/// The place is freed once the response is produced.
impl AfterResponse for Option<InFlight> {
    fn after(self, res: Response<Body>) -> Response<Body> {
        res
    }
}

/// Upstream's answer beyond the limit: plain text written by Go's `http.Error`.
pub(crate) fn too_many_requests() -> Response<Body> {
    let mut res = crate::endpoints::response::plain_text(
        StatusCode::TOO_MANY_REQUESTS,
        "Too many requests, please try again later.\n",
    );
    res.headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    res
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::authz::request_of;
    use http::Method;

    const P: &str = "/apis/g/v1/namespaces/n/things";

    #[test]
    fn limits_each_kind_separately() {
        let limit = MaxInFlight::new(1, 1);
        let user = UserInfo::new("u", &["system:authenticated"]);
        let read = limit
            .admit(&user, &request_of(&Method::GET, P, None))
            .unwrap();
        assert!(
            limit
                .admit(&user, &request_of(&Method::GET, P, None))
                .is_none()
        );
        let write = limit
            .admit(&user, &request_of(&Method::POST, P, None))
            .unwrap();
        assert!(
            limit
                .admit(&user, &request_of(&Method::DELETE, P, None))
                .is_none()
        );
        let res = too_many_requests();
        assert_eq!(res.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(res.headers()[header::RETRY_AFTER], "1");
        let admin = UserInfo::new("a", &["system:masters"]);
        assert!(
            limit
                .admit(&admin, &request_of(&Method::GET, P, None))
                .is_some()
        );
        drop((read, write));
        assert!(
            limit
                .admit(&user, &request_of(&Method::GET, P, None))
                .is_some()
        );
        assert!(
            limit
                .admit(&user, &request_of(&Method::PUT, P, None))
                .is_some()
        );
    }

    #[test]
    fn zero_means_unlimited() {
        let limit = MaxInFlight::new(0, 0);
        let user = UserInfo::new("u", &[]);
        let held: Vec<_> = (0..1000)
            .map(|_| {
                limit
                    .admit(&user, &request_of(&Method::GET, P, None))
                    .unwrap()
            })
            .collect();
        assert_eq!(held.len(), 1000);
    }
}
