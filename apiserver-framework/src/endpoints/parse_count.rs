//! How many times requests were read: the request-info reader
//! ([`crate::authz::ParsedRequest::read`]) and the query decoder
//! ([`crate::endpoints::query::Query::parse`]) each count their calls here, so that a test can
//! check that the handler chain reads each request once. Two relaxed atomic increments per
//! request; not a public API.

use std::sync::atomic::{AtomicU64, Ordering};

static REQUEST_INFO: AtomicU64 = AtomicU64::new(0);
static QUERY: AtomicU64 = AtomicU64::new(0);

/// Counts one reading of a request's method and path.
pub(crate) fn request_info_read() {
    REQUEST_INFO.fetch_add(1, Ordering::Relaxed);
}

/// Counts one decoding of a query string.
pub(crate) fn query_read() {
    QUERY.fetch_add(1, Ordering::Relaxed);
}

/// The readings so far: `(request info, query)`.
pub fn counts() -> (u64, u64) {
    (
        REQUEST_INFO.load(Ordering::Relaxed),
        QUERY.load(Ordering::Relaxed),
    )
}
