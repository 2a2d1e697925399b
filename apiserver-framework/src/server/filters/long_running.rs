//! Which requests are long-running: exempt from the in-flight limit and the request timeout.

use crate::authz::Request;

/// Whether a request (as [`crate::authz::request_of`] reads it) is long-running: a watch
/// (`?watch=true`, or the legacy `/watch/` path), as upstream's default
/// `BasicLongRunningRequestCheck` of generic servers, which names only the `watch` verb.
pub fn is_long_running(request: &Request) -> bool {
    match request {
        Request::Resource(attrs) => attrs.verb == "watch",
        Request::NonResource(_) => false,
    }
}

/// Whether a request's verb (as [`crate::authz::request_of`] reads it) changes state: anything
/// but `get`, `list` and `watch`, as upstream's max-in-flight filter decides.
pub fn is_mutating(request: &Request) -> bool {
    let verb = match request {
        Request::Resource(attrs) => &attrs.verb,
        Request::NonResource(attrs) => &attrs.verb,
    };
    !matches!(verb.as_str(), "get" | "list" | "watch")
}

#[cfg(test)]
mod tests {
    use crate::authz::request_of;
    use http::Method;

    fn is_long_running(method: &Method, path: &str, query: Option<&str>) -> bool {
        super::is_long_running(&request_of(method, path, query))
    }

    fn is_mutating(method: &Method, path: &str, query: Option<&str>) -> bool {
        super::is_mutating(&request_of(method, path, query))
    }

    #[test]
    fn watches_are_long_running() {
        let get = Method::GET;
        let p = "/apis/wardle.example.com/v1alpha1/namespaces/ns/flunders";
        assert!(is_long_running(&get, p, Some("watch=true")));
        assert!(is_long_running(&get, p, Some("watch=1&timeoutSeconds=5")));
        assert!(!is_long_running(&get, p, Some("watch=false")));
        assert!(!is_long_running(&get, p, None));
        assert!(is_long_running(
            &get,
            "/apis/wardle.example.com/v1alpha1/watch/namespaces/ns/flunders",
            None
        ));
        assert!(!is_long_running(&get, "/readyz", Some("watch=true")));
        assert!(!is_long_running(&Method::POST, p, Some("watch=true")));
    }

    #[test]
    fn mutating_verbs() {
        let p = "/apis/wardle.example.com/v1alpha1/namespaces/ns/flunders";
        assert!(!is_mutating(&Method::GET, p, None));
        assert!(!is_mutating(&Method::GET, &format!("{p}/f1"), None));
        assert!(!is_mutating(&Method::GET, p, Some("watch=true")));
        for m in [Method::POST, Method::PUT, Method::PATCH, Method::DELETE] {
            assert!(is_mutating(&m, &format!("{p}/f1"), None), "{m}");
        }
        assert!(!is_mutating(&Method::GET, "/healthz", None));
        assert!(is_mutating(&Method::POST, "/healthz", None));
    }
}
