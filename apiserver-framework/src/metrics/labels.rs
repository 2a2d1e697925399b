//! The labels a request is recorded under, read as upstream's `MonitorRequest` reads them:
//! the upper-case HTTP method made canonical (`GET` of a collection is `LIST`, a `watch`
//! query or the legacy `/watch/` prefix is `WATCH`, an apply patch is `APPLY`, connect
//! subresources are `CONNECT`, anything else unknown is `other`), the scope
//! (`resource|namespace|cluster`, empty for non-resource requests) and `dry_run`.
//!
//! Non-resource requests have empty group, version and resource and their path as
//! subresource (as upstream's health checks are recorded). These are the labels as the
//! request names them; the recorder keeps only those naming what the server serves.

use std::borrow::Cow;

use http::{HeaderMap, Method, header};

use crate::authz::{self, Request as AuthzRequest};
use crate::endpoints::query::Query;

/// The component label of resource requests.
pub const COMPONENT: &str = "apiserver";

/// Upstream's `validRequestMethods`: the verbs reported as they are.
const VALID_VERBS: &[&str] = &[
    "APPLY",
    "CONNECT",
    "CREATE",
    "DELETE",
    "DELETECOLLECTION",
    "GET",
    "LIST",
    "PATCH",
    "POST",
    "PROXY",
    "PUT",
    "UPDATE",
    "WATCH",
    "WATCHLIST",
];

/// Subresources reported as `CONNECT` (upstream's `validConnectRequests`).
const CONNECT_SUBRESOURCES: &[&str] = &["log", "exec", "portforward", "attach", "proxy"];

/// Subresources whose requests are long-running (upstream's default `LongRunningFunc`).
const LONG_RUNNING_SUBRESOURCES: &[&str] = &["attach", "exec", "proxy", "log", "portforward"];

/// The verbs of read-only requests (upstream's `nonMutatingRequestVerbs`).
const READ_ONLY_VERBS: &[&str] = &["get", "list", "watch"];

/// What a request is recorded as, apart from the parts of its path ([`PathLabels`]).
///
/// Every value comes from a fixed set, so these are `'static` strings and flags: reading them
/// allocates nothing. The path's parts are named when the request is recorded, by the route
/// that served it or, for a request no route served, by its path read again.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RequestLabels {
    /// The reported verb, e.g. `LIST`, `POST`, `WATCH`, `APPLY`.
    pub verb: &'static str,
    /// The `dryRun` values, sorted and deduplicated (`All`), `invalid`, or empty.
    pub dry_run: &'static str,
    /// `resource`, `namespace`, `cluster`, or empty for non-resource requests.
    pub scope: &'static str,
    /// `apiserver` for resource requests, empty for non-resource ones.
    pub component: &'static str,
    /// Whether this is a resource request.
    pub is_resource: bool,
    /// Whether the request is long-running (watch, proxy, connect subresources).
    pub long_running: bool,
    /// Whether the request's verb in authorization terms only reads (`get`, `list`, `watch`):
    /// its `request_kind` in `apiserver_current_inflight_requests` is `readOnly`, else
    /// `mutating`.
    pub read_only: bool,
    /// Whether the request's verb in authorization terms is `watch`.
    pub watch: bool,
}

/// The parts of a request's path it is recorded under: owned (`PathLabels<String>`, read
/// from a request) or borrowed (`PathLabels<&str>`, from a route or an owned reading).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PathLabels<S> {
    /// The API group (empty for the core group and non-resource requests).
    pub group: S,
    /// The API version (empty for non-resource requests).
    pub version: S,
    /// The resource (empty for non-resource requests).
    pub resource: S,
    /// The subresource; for non-resource requests, the path.
    pub subresource: S,
}

impl PathLabels<String> {
    /// The path parts a request names (copied from its reading).
    pub fn of(request: &AuthzRequest) -> Self {
        match request {
            AuthzRequest::Resource(a) => PathLabels {
                group: a.group.clone(),
                version: a.version.clone(),
                resource: a.resource.clone(),
                subresource: a.subresource.clone(),
            },
            AuthzRequest::NonResource(n) => PathLabels {
                subresource: n.path.clone(),
                ..Default::default()
            },
        }
    }

    /// These parts, borrowed.
    pub fn as_str(&self) -> PathLabels<&str> {
        PathLabels {
            group: &self.group,
            version: &self.version,
            resource: &self.resource,
            subresource: &self.subresource,
        }
    }
}

impl RequestLabels {
    /// The labels of a request.
    ///
    /// The request's reading and its decoded query are taken from its extensions, where the
    /// handler chain keeps them; a request without them is read here.
    pub fn of<B>(req: &http::Request<B>) -> Self {
        let read;
        let parsed = match req.extensions().get::<authz::ParsedRequest>() {
            Some(parsed) => parsed,
            None => {
                read = authz::ParsedRequest::of_request(req);
                &read
            }
        };
        match req.extensions().get::<Query>() {
            Some(query) => Self::from_query(req.method(), query, req.headers(), &parsed.0),
            None => Self::from_parsed(req.method(), req.uri().query(), req.headers(), &parsed.0),
        }
    }

    /// The labels of a request already read ([`authz::request_of`]).
    pub fn from_parsed(
        method: &Method,
        query: Option<&str>,
        headers: &HeaderMap,
        request: &AuthzRequest,
    ) -> Self {
        Self::from_query(method, &Query::parse(query), headers, request)
    }

    /// The labels of a request already read, with its decoded query.
    pub fn from_query(
        method: &Method,
        query: &Query,
        headers: &HeaderMap,
        request: &AuthzRequest,
    ) -> Self {
        let upper = upper_case(method);
        let dry_run = clean_dry_run(query);
        match request {
            AuthzRequest::Resource(a) => {
                let scope = if !a.name.is_empty() || a.verb == "create" {
                    "resource"
                } else if !a.namespace.is_empty() {
                    "namespace"
                } else {
                    "cluster"
                };
                let mut verb = canonical_verb(&upper, scope);
                if a.verb == "watch" || watch_query(&upper, query) {
                    verb = "WATCH";
                }
                if verb == "WATCHLIST" {
                    verb = "WATCH";
                }
                if verb == "PATCH" && content_type(headers) == Some("application/apply-patch+yaml")
                {
                    verb = "APPLY";
                }
                if CONNECT_SUBRESOURCES.contains(&a.subresource.as_str()) {
                    verb = "CONNECT";
                }
                let long_running = ["watch", "proxy"].contains(&a.verb.as_str())
                    || LONG_RUNNING_SUBRESOURCES.contains(&a.subresource.as_str());
                RequestLabels {
                    verb: clean(verb),
                    dry_run,
                    scope,
                    component: COMPONENT,
                    is_resource: true,
                    long_running,
                    read_only: READ_ONLY_VERBS.contains(&a.verb.as_str()),
                    watch: a.verb == "watch",
                }
            }
            AuthzRequest::NonResource(n) => RequestLabels {
                verb: clean(canonical_verb(&upper, "")),
                dry_run,
                read_only: READ_ONLY_VERBS.contains(&n.verb.as_str()),
                ..Default::default()
            },
        }
    }

    /// The values of `apiserver_request_duration_seconds`'s labels, in order.
    pub fn duration_values<'a>(&self, path: &PathLabels<&'a str>) -> [&'a str; 8] {
        [
            self.verb,
            self.dry_run,
            path.group,
            path.version,
            path.resource,
            path.subresource,
            self.scope,
            self.component,
        ]
    }

    /// The values of `apiserver_longrunning_requests`'s labels, in order (`apiserver_response_sizes`' too).
    pub fn longrunning_values<'a>(&self, path: &PathLabels<&'a str>) -> [&'a str; 7] {
        [
            self.verb,
            path.group,
            path.version,
            path.resource,
            path.subresource,
            self.scope,
            self.component,
        ]
    }
}

/// The method in upper case (upstream's `strings.ToUpper`), copied only when it has a lower
/// case letter (the standard methods have none).
fn upper_case(method: &Method) -> Cow<'_, str> {
    let name = method.as_str();
    if name.bytes().any(|b| b.is_ascii_lowercase()) {
        Cow::Owned(name.to_ascii_uppercase())
    } else {
        Cow::Borrowed(name)
    }
}

/// Upstream's `CanonicalVerb`: `GET` and `HEAD` of anything but one object are `LIST`.
fn canonical_verb<'a>(upper: &'a str, scope: &str) -> &'a str {
    match upper {
        "GET" | "HEAD" if scope != "resource" && !scope.is_empty() => "LIST",
        "GET" | "HEAD" => "GET",
        other => other,
    }
}

/// The reported verb: one of upstream's valid verbs, `other` for any other.
fn clean(verb: &str) -> &'static str {
    VALID_VERBS
        .iter()
        .find(|v| **v == verb)
        .copied()
        .unwrap_or("other")
}

/// Upstream's `getVerbIfWatch`: a `GET` whose first `watch` value is neither `0` nor `false`.
fn watch_query(upper: &str, query: &Query) -> bool {
    if upper != "GET" && upper != "LIST" {
        return false;
    }
    query.get("watch").is_some_and(|v| {
        let v = v.to_ascii_lowercase();
        v != "0" && v != "false"
    })
}

/// Upstream's `cleanDryRun`: the sorted, deduplicated `dryRun` values, `invalid` when any is
/// not `All` (so that the values, sorted and deduplicated, are `All` or none).
fn clean_dry_run(query: &Query) -> &'static str {
    let mut values = query.all("dryRun").peekable();
    if values.peek().is_none() {
        ""
    } else if values.all(|v| v == "All") {
        "All"
    } else {
        "invalid"
    }
}

fn content_type(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(method: Method, uri: &str) -> RequestLabels {
        labels_with(method, uri, HeaderMap::new())
    }

    fn labels_with(method: Method, uri: &str, headers: HeaderMap) -> RequestLabels {
        let uri: http::Uri = uri.parse().unwrap();
        let request = authz::request_of(&method, uri.path(), uri.query());
        RequestLabels::from_parsed(&method, uri.query(), &headers, &request)
    }

    fn path_of(uri: &str) -> PathLabels<String> {
        let uri: http::Uri = uri.parse().unwrap();
        PathLabels::of(&authz::request_of(&Method::GET, uri.path(), uri.query()))
    }

    const NS: &str = "/apis/wardle.example.com/v1alpha1/namespaces/ns1/flunders";

    #[test]
    fn verbs_and_scopes_follow_upstream() {
        let cases = [
            (Method::POST, NS.to_string(), "POST", "resource"),
            (Method::GET, NS.to_string(), "LIST", "namespace"),
            (
                Method::GET,
                format!("{NS}?watch=true"),
                "WATCH",
                "namespace",
            ),
            (
                Method::GET,
                format!("{NS}?watch=false"),
                "LIST",
                "namespace",
            ),
            (Method::GET, format!("{NS}/f1"), "GET", "resource"),
            (Method::HEAD, format!("{NS}/f1"), "GET", "resource"),
            (Method::PUT, format!("{NS}/f1"), "PUT", "resource"),
            (Method::PATCH, format!("{NS}/f1"), "PATCH", "resource"),
            (Method::DELETE, format!("{NS}/f1"), "DELETE", "resource"),
            (Method::DELETE, NS.to_string(), "DELETE", "namespace"),
            (Method::OPTIONS, NS.to_string(), "other", "namespace"),
            (
                Method::GET,
                "/apis/wardle.example.com/v1alpha1/flunders".to_string(),
                "LIST",
                "cluster",
            ),
            (
                Method::GET,
                "/apis/wardle.example.com/v1alpha1/watch/namespaces/ns1/flunders".to_string(),
                "WATCH",
                "namespace",
            ),
            (
                Method::GET,
                "/api/v1/namespaces/ns1/pods/p/log".to_string(),
                "CONNECT",
                "resource",
            ),
        ];
        for (method, uri, verb, scope) in cases {
            let l = labels(method.clone(), &uri);
            assert_eq!((l.verb, l.scope), (verb, scope), "{method} {uri}");
            assert_eq!(l.component, "apiserver");
        }
    }

    #[test]
    fn resource_parts_are_labels() {
        let l = labels(Method::PUT, &format!("{NS}/f1/status"));
        let path = path_of(&format!("{NS}/f1/status"));
        assert_eq!(path.group, "wardle.example.com");
        assert_eq!(path.version, "v1alpha1");
        assert_eq!(path.resource, "flunders");
        assert_eq!(path.subresource, "status");
        assert_eq!(
            l.duration_values(&path.as_str()),
            [
                "PUT",
                "",
                "wardle.example.com",
                "v1alpha1",
                "flunders",
                "status",
                "resource",
                "apiserver"
            ]
        );
        assert!(!l.read_only);
        assert!(!l.long_running && !l.watch);
        let core = labels(Method::GET, "/api/v1/namespaces/ns1/configmaps/c");
        let core_path = path_of("/api/v1/namespaces/ns1/configmaps/c");
        assert_eq!(
            (core_path.group.as_str(), core_path.resource.as_str()),
            ("", "configmaps")
        );
        assert!(core.read_only);
    }

    #[test]
    fn apply_patches_are_apply() {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::CONTENT_TYPE,
            "application/apply-patch+yaml".parse().unwrap(),
        );
        let l = labels_with(Method::PATCH, &format!("{NS}/f1"), headers);
        assert_eq!(l.verb, "APPLY");
    }

    #[test]
    fn watches_are_long_running_and_read_only() {
        let l = labels(Method::GET, &format!("{NS}?watch=1"));
        assert!(l.long_running && l.watch);
        assert!(l.read_only);
        assert!(!labels(Method::GET, NS).long_running);
    }

    #[test]
    fn dry_run_is_cleaned() {
        assert_eq!(labels(Method::POST, NS).dry_run, "");
        assert_eq!(
            labels(Method::POST, &format!("{NS}?dryRun=All")).dry_run,
            "All"
        );
        assert_eq!(
            labels(Method::POST, &format!("{NS}?dryRun=All&dryRun=All")).dry_run,
            "All"
        );
        assert_eq!(
            labels(Method::POST, &format!("{NS}?dryRun=Some")).dry_run,
            "invalid"
        );
    }

    #[test]
    fn non_resource_requests_have_their_path_as_subresource() {
        let l = labels(Method::GET, "/healthz");
        assert_eq!(l.verb, "GET");
        assert_eq!(l.scope, "");
        assert_eq!(l.component, "");
        let path = path_of("/healthz");
        assert_eq!(
            (
                path.group.as_str(),
                path.version.as_str(),
                path.resource.as_str()
            ),
            ("", "", "")
        );
        assert_eq!(path.subresource, "/healthz");
        assert!(!l.is_resource);
        assert!(l.read_only);
        let discovery = labels(Method::GET, "/apis/wardle.example.com/v1alpha1");
        assert_eq!(
            path_of("/apis/wardle.example.com/v1alpha1").subresource,
            "/apis/wardle.example.com/v1alpha1"
        );
        assert_eq!(discovery.verb, "GET");
        assert_eq!(labels(Method::POST, "/metrics").verb, "POST");
    }
}
