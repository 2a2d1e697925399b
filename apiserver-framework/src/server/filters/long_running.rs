//! Which requests are long-running: exempt from the in-flight limit and the request timeout.

use http::Method;

use crate::authz::{ParsedRequest, Request};

/// Whether a request (as [`crate::authz::ParsedRequest`] reads it) is long-running: a GET
/// whose verb is `watch` (`?watch=true` on a collection, or the legacy `/watch/` path), as
/// upstream's default `BasicLongRunningRequestCheck` of generic servers names the `watch` verb.
///
/// Only a GET: a write sent under the `/watch/` prefix is authorized as a `watch` (as upstream
/// reads it) but served a 405 at once, and must stay bounded by the in-flight limit and the
/// request timeout like any other short request.
pub(crate) fn is_long_running(parsed: &ParsedRequest) -> bool {
    parsed.method() == Method::GET && parsed.resource_verb() == Some("watch")
}

/// Whether a request's verb (as [`crate::authz::request_of`] reads it) changes state: anything
/// but `get`, `list` and `watch`, as upstream's max-in-flight filter decides.
pub(crate) fn is_mutating(request: &Request) -> bool {
    let verb = match request {
        Request::Resource(attrs) => &attrs.verb,
        Request::NonResource(attrs) => &attrs.verb,
    };
    !matches!(verb.as_str(), "get" | "list" | "watch")
}

#[cfg(test)]
mod tests {
    use crate::authz::{ParsedRequest, request_of};
    use http::Method;

    fn is_long_running(method: &Method, path: &str, query: Option<&str>) -> bool {
        super::is_long_running(&ParsedRequest::of(method, path, query))
    }

    fn is_mutating(method: &Method, path: &str, query: Option<&str>) -> bool {
        super::is_mutating(&request_of(method, path, query))
    }

    #[test]
    fn watches_are_long_running() {
        let get = Method::GET;
        let p = "/apis/wardle.example.com/v1alpha1/namespaces/ns/flunders";
        let legacy = "/apis/wardle.example.com/v1alpha1/watch/namespaces/ns/flunders";
        assert!(is_long_running(&get, p, Some("watch=true")));
        assert!(is_long_running(&get, p, Some("watch=1&timeoutSeconds=5")));
        assert!(!is_long_running(&get, p, Some("watch=false")));
        assert!(!is_long_running(&get, p, None));
        assert!(is_long_running(&get, legacy, None));
        assert!(is_long_running(&get, &format!("{legacy}/f1"), None));
        assert!(!is_long_running(&get, "/readyz", Some("watch=true")));
        assert!(!is_long_running(&Method::POST, p, Some("watch=true")));
        // A named GET is a get, whatever its query says.
        assert!(!is_long_running(
            &get,
            &format!("{p}/f1"),
            Some("watch=true")
        ));
        // Writes under the legacy prefix are not watches to serve, whatever their verb.
        for m in [
            Method::POST,
            Method::PUT,
            Method::PATCH,
            Method::DELETE,
            Method::HEAD,
        ] {
            assert!(!is_long_running(&m, legacy, None), "{m}");
            assert!(!is_long_running(&m, &format!("{legacy}/f1"), None), "{m}");
        }
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
