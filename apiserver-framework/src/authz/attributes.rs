//! What a request asks to do, read from its method, path and query as upstream's
//! `RequestInfoFactory` reads it (`k8s.io/apiserver/pkg/endpoints/request/requestinfo.go`).
//!
//! Resource requests live under `/apis/<group>/<version>/…` and `/api/<version>/…` (the core
//! group `""`); everything else (`/apis`, `/apis/<group>`, `/apis/<group>/<version>`, `/api`,
//! `/api/<version>`, `/openapi/…`, `/version`, `/healthz`, …) is a non-resource request whose
//! verb is the lower-cased HTTP method.
//!
//! Path segments are taken as they are sent (not percent-decoded) and empty segments are
//! skipped, exactly as the server's router reads them, so that the request authorized is the
//! request served.

use std::sync::Arc;

use http::Method;

use super::{Attributes, NonResourceAttributes, Request, ResourceAttributes, SelectorRequirement};
use crate::endpoints::query::Query;
use crate::endpoints::request_info::{self, ApiPath};
use crate::selector::{FieldSelector, LabelSelector, Operator};
use crate::user::UserInfo;

/// Subresources of a namespace (`/namespaces/<name>/status`), which are not namespaced
/// resources of their own.
const NAMESPACE_SUBRESOURCES: &[&str] = &["status", "finalize"];

impl Attributes {
    /// The attributes of a request by `user`: method, raw path and raw query string.
    pub fn from_request(user: UserInfo, method: &Method, path: &str, query: Option<&str>) -> Self {
        Attributes {
            user,
            request: request_of(method, path, query),
        }
    }
}

/// What a request asks to do ([`request_of`]), read once when it arrives and kept in its
/// extensions, so that the filters (long-running, in-flight, metrics), the authorizer, the
/// audit, the router and the handlers share one reading: the verb authorized is the verb
/// served, and the path routed is the path authorized.
///
/// It also keeps the request's method, which the verb alone does not tell (a `watch` read
/// from the legacy `/watch/` prefix may come with any method, and only a GET is served), and
/// what the router serves the path as (`endpoints::request_info::ApiPath`).
#[derive(Clone, Debug)]
pub struct ParsedRequest(pub Arc<Request>, Method, Arc<Option<ApiPath>>);

impl ParsedRequest {
    /// Reads a request with this method, raw path and raw query string.
    pub fn of(method: &Method, path: &str, query: Option<&str>) -> Self {
        Self::read(method, path, &Query::parse(query))
    }

    /// Reads a request with this method and raw path whose query is already decoded: the
    /// path is split once, and both readings (the authorizer's and the router's) are taken
    /// from its segments.
    pub fn read(method: &Method, path: &str, query: &Query) -> Self {
        crate::endpoints::request_info::trace_reading("request_info");
        let segments = request_info::segments(path);
        let api = request_info::parse_segments(path, &segments);
        let request = request_of_segments(method, path, &segments, query);
        ParsedRequest(Arc::new(request), method.clone(), Arc::new(api))
    }

    /// What the request asks to do.
    pub fn request(&self) -> &Request {
        &self.0
    }

    /// What the request asks to do, by value: taken out of this reading when nothing else
    /// holds it (an empty request is left until [`ParsedRequest::put_back`]), copied
    /// otherwise. Lends it to an authorizer without copying it.
    pub(crate) fn take_request(&mut self) -> Request {
        match Arc::get_mut(&mut self.0) {
            Some(request) => std::mem::replace(
                request,
                Request::NonResource(NonResourceAttributes::default()),
            ),
            None => self.0.as_ref().clone(),
        }
    }

    /// Puts `request` (taken with [`ParsedRequest::take_request`]) back.
    pub(crate) fn put_back(&mut self, request: Request) {
        match Arc::get_mut(&mut self.0) {
            Some(slot) => *slot = request,
            None => self.0 = Arc::new(request),
        }
    }

    /// The request's HTTP method.
    pub fn method(&self) -> &Method {
        &self.1
    }

    /// What the router serves the path as: `None` for a path outside `/apis` and `/api`.
    pub(crate) fn api_path(&self) -> Option<&ApiPath> {
        self.2.as_ref().as_ref()
    }

    /// The verb of a resource request (`get`, `list`, `watch`, `create`, …; empty for a
    /// method with no verb), or `None` for a non-resource request.
    pub fn resource_verb(&self) -> Option<&str> {
        match self.request() {
            Request::Resource(attrs) => Some(&attrs.verb),
            Request::NonResource(_) => None,
        }
    }

    /// The reading kept in a request's extensions, or a new one when it has none.
    pub fn of_parts(parts: &http::request::Parts) -> Self {
        parts
            .extensions
            .get::<ParsedRequest>()
            .cloned()
            .unwrap_or_else(|| Self::of(&parts.method, parts.uri.path(), parts.uri.query()))
    }

    /// Like [`ParsedRequest::of_parts`], for a whole request.
    pub fn of_request<B>(req: &http::Request<B>) -> Self {
        req.extensions()
            .get::<ParsedRequest>()
            .cloned()
            .unwrap_or_else(|| Self::of(req.method(), req.uri().path(), req.uri().query()))
    }
}

/// What a request with this method, raw path and raw query string asks to do.
pub fn request_of(method: &Method, path: &str, query: Option<&str>) -> Request {
    Arc::unwrap_or_clone(ParsedRequest::of(method, path, query).0)
}

/// What a request with this method and raw path names, read without its query (so the verb of
/// a `GET` of a collection is `list` whatever `?watch` says) and not counted as a reading of
/// the request: for what outlives the request's own reading (its metrics' labels).
pub(crate) fn request_of_path(method: &Method, path: &str) -> Request {
    request_of_segments(
        method,
        path,
        &request_info::segments(path),
        &Query::default(),
    )
}

/// What a request with this method and raw path (split in its non-empty `segments`) and this
/// query asks to do.
fn request_of_segments(method: &Method, path: &str, segments: &[&str], query: &Query) -> Request {
    let non_resource = || {
        Request::NonResource(NonResourceAttributes {
            path: path.to_string(),
            verb: method.as_str().to_ascii_lowercase(),
        })
    };
    let (group, rest) = match segments {
        ["api", rest @ ..] if rest.len() >= 2 => ("", rest),
        ["apis", group, rest @ ..] if rest.len() >= 2 => (*group, rest),
        _ => return non_resource(),
    };
    let [version, rest @ ..] = rest else {
        return non_resource();
    };
    let mut attrs = ResourceAttributes {
        group: group.to_string(),
        version: version.to_string(),
        ..Default::default()
    };
    // The special verbs `watch` and `proxy` come first: `/watch/<resource>…`. As upstream,
    // the prefix is the verb whatever the method: a write sent there is authorized as a
    // `watch`, and the handlers, which dispatch on this same verb, answer it 405 (only a GET
    // is served under the prefix), so it never writes.
    let mut parts = rest;
    let mut verb_in_path = false;
    match parts {
        [special @ ("watch" | "proxy"), tail @ ..] if !tail.is_empty() => {
            attrs.verb = special.to_string();
            verb_in_path = true;
            parts = tail;
        }
        [special @ ("watch" | "proxy")] => {
            // Upstream cannot tell the kind and namespace and fails the request; here it is
            // a request for a resource named like the special verb, with no verb.
            attrs.verb = String::new();
            attrs.resource = special.to_string();
            return Request::Resource(attrs);
        }
        _ => attrs.verb = method_verb(method).to_string(),
    }
    if let ["namespaces", ns, tail @ ..] = parts {
        attrs.namespace = ns.to_string();
        if let [next, ..] = tail
            && !NAMESPACE_SUBRESOURCES.contains(next)
        {
            parts = tail;
        }
    }
    // resource/name/subresource/anything-else
    if let Some(resource) = parts.first() {
        attrs.resource = resource.to_string();
    }
    if let Some(name) = parts.get(1) {
        attrs.name = name.to_string();
    }
    if let Some(sub) = parts.get(2)
        && attrs.verb != "proxy"
    {
        attrs.subresource = sub.to_string();
    }
    if attrs.name.is_empty() && attrs.verb == "get" {
        let query = ListQuery::of(query);
        attrs.verb = if query.watch { "watch" } else { "list" }.to_string();
        if let Some(name) = query.name
            && is_valid_path_segment_name(&name)
        {
            attrs.name = name;
        }
    }
    if attrs.name.is_empty() && attrs.verb == "delete" {
        attrs.verb = "deletecollection".to_string();
    }
    // Selectors are authorized for the verbs that take them, but not when the verb came from
    // the legacy path prefix (whose single-object watch takes none).
    if !verb_in_path && ["list", "watch", "deletecollection"].contains(&attrs.verb.as_str()) {
        let (field, label) = selectors(query);
        attrs.field_selector = field;
        attrs.label_selector = label;
    }
    Request::Resource(attrs)
}

/// The first `fieldSelector` and `labelSelector` of a query as SubjectAccessReview
/// requirements (see [`field_requirements`] and [`label_requirements`]).
fn selectors(query: &Query) -> (Vec<SelectorRequirement>, Vec<SelectorRequirement>) {
    let field = query.get("fieldSelector").map(field_requirements);
    let label = query.get("labelSelector").map(label_requirements);
    (field.unwrap_or_default(), label.unwrap_or_default())
}

fn requirement(key: &str, operator: &str, values: Vec<String>) -> SelectorRequirement {
    SelectorRequirement {
        key: key.to_string(),
        operator: operator.to_string(),
        values,
    }
}

/// A field selector as SubjectAccessReview requirements: `=` and `==` become `In`, `!=`
/// `NotIn`. A selector that does not parse gives none (requirements are ANDed, so the check
/// is only broader).
pub(crate) fn field_requirements(selector: &str) -> Vec<SelectorRequirement> {
    FieldSelector::parse(selector)
        .map(|s| {
            s.requirements
                .iter()
                .map(|r| {
                    let op = if r.negated { "NotIn" } else { "In" };
                    requirement(&r.field, op, vec![r.value.clone()])
                })
                .collect()
        })
        .unwrap_or_default()
}

/// A label selector as SubjectAccessReview requirements: `=`, `==` and `in` become `In`, `!=`
/// and `notin` become `NotIn`; `Exists` and `DoesNotExist` stay; `>` and `<` are left out. A
/// selector that does not parse gives none.
pub(crate) fn label_requirements(selector: &str) -> Vec<SelectorRequirement> {
    LabelSelector::parse(selector)
        .map(|s| {
            s.requirements
                .iter()
                .filter_map(|r| {
                    let op = match r.op {
                        Operator::Equals | Operator::In => "In",
                        Operator::NotEquals | Operator::NotIn => "NotIn",
                        Operator::Exists => "Exists",
                        Operator::DoesNotExist => "DoesNotExist",
                        Operator::GreaterThan | Operator::LessThan => return None,
                    };
                    Some(requirement(&r.key, op, r.values.clone()))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The verb of a method on a resource path (before list/watch/deletecollection are told apart).
fn method_verb(method: &Method) -> &'static str {
    match *method {
        Method::POST => "create",
        Method::GET | Method::HEAD => "get",
        Method::PUT => "update",
        Method::PATCH => "patch",
        Method::DELETE => "delete",
        _ => "",
    }
}

/// What the list options of a collection GET say about the verb and the name.
struct ListQuery {
    watch: bool,
    name: Option<String>,
}

impl ListQuery {
    /// Reads `watch` (any first value but `0` or `false` is true, as upstream converts a
    /// boolean parameter) and the `metadata.name` a `fieldSelector` requires. A field selector
    /// that does not parse gives no name, as upstream, which then falls back to a plain list.
    fn of(query: &Query) -> Self {
        let watch = query
            .get("watch")
            .map(|v| !(v == "0" || v.eq_ignore_ascii_case("false")));
        let name = query
            .get("fieldSelector")
            .and_then(|s| FieldSelector::parse(s).ok())
            .and_then(|s| s.exact("metadata.name").map(str::to_string));
        ListQuery {
            watch: watch.unwrap_or(false),
            name,
        }
    }
}

/// Upstream's `IsValidPathSegmentName`: not `.` or `..`, and no `/` or `%`.
fn is_valid_path_segment_name(name: &str) -> bool {
    name != "." && name != ".." && !name.contains(['/', '%'])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn res(
        verb: &str,
        group: &str,
        version: &str,
        ns: &str,
        resource: &str,
        name: &str,
        sub: &str,
    ) -> Request {
        Request::Resource(ResourceAttributes {
            verb: verb.into(),
            group: group.into(),
            version: version.into(),
            resource: resource.into(),
            subresource: sub.into(),
            namespace: ns.into(),
            name: name.into(),
            ..Default::default()
        })
    }

    fn non(verb: &str, path: &str) -> Request {
        Request::NonResource(NonResourceAttributes {
            path: path.into(),
            verb: verb.into(),
        })
    }

    const G: &str = "wardle.example.com";

    #[test]
    fn request_table() {
        let get = Method::GET;
        let cases: Vec<(Method, &str, Option<&str>, Request)> = vec![
            // Non-resource requests: discovery, health, version, OpenAPI.
            (get.clone(), "/", None, non("get", "/")),
            (get.clone(), "/apis", None, non("get", "/apis")),
            (get.clone(), "/apis/", None, non("get", "/apis/")),
            (
                get.clone(),
                "/apis/wardle.example.com",
                None,
                non("get", "/apis/wardle.example.com"),
            ),
            (
                get.clone(),
                "/apis/wardle.example.com/v1alpha1",
                None,
                non("get", "/apis/wardle.example.com/v1alpha1"),
            ),
            (get.clone(), "/api", None, non("get", "/api")),
            (get.clone(), "/api/v1", None, non("get", "/api/v1")),
            (
                get.clone(),
                "/openapi/v3/apis/wardle.example.com/v1alpha1",
                None,
                non("get", "/openapi/v3/apis/wardle.example.com/v1alpha1"),
            ),
            (get.clone(), "/version", None, non("get", "/version")),
            (get.clone(), "/healthz", None, non("get", "/healthz")),
            (Method::HEAD, "/healthz", None, non("head", "/healthz")),
            (Method::POST, "/apis", None, non("post", "/apis")),
            (Method::PUT, "/version", None, non("put", "/version")),
            (Method::PATCH, "/apis", None, non("patch", "/apis")),
            (Method::DELETE, "/livez", None, non("delete", "/livez")),
            // Collections and objects, namespaced.
            (
                get.clone(),
                "/apis/wardle.example.com/v1alpha1/namespaces/ns/flunders",
                None,
                res("list", G, "v1alpha1", "ns", "flunders", "", ""),
            ),
            (
                Method::HEAD,
                "/apis/wardle.example.com/v1alpha1/namespaces/ns/flunders",
                None,
                res("list", G, "v1alpha1", "ns", "flunders", "", ""),
            ),
            (
                get.clone(),
                "/apis/wardle.example.com/v1alpha1/namespaces/ns/flunders/f1",
                None,
                res("get", G, "v1alpha1", "ns", "flunders", "f1", ""),
            ),
            (
                Method::HEAD,
                "/apis/wardle.example.com/v1alpha1/namespaces/ns/flunders/f1",
                None,
                res("get", G, "v1alpha1", "ns", "flunders", "f1", ""),
            ),
            (
                Method::POST,
                "/apis/wardle.example.com/v1alpha1/namespaces/ns/flunders",
                None,
                res("create", G, "v1alpha1", "ns", "flunders", "", ""),
            ),
            (
                Method::PUT,
                "/apis/wardle.example.com/v1alpha1/namespaces/ns/flunders/f1",
                None,
                res("update", G, "v1alpha1", "ns", "flunders", "f1", ""),
            ),
            (
                Method::PATCH,
                "/apis/wardle.example.com/v1alpha1/namespaces/ns/flunders/f1",
                None,
                res("patch", G, "v1alpha1", "ns", "flunders", "f1", ""),
            ),
            (
                Method::DELETE,
                "/apis/wardle.example.com/v1alpha1/namespaces/ns/flunders/f1",
                None,
                res("delete", G, "v1alpha1", "ns", "flunders", "f1", ""),
            ),
            (
                Method::DELETE,
                "/apis/wardle.example.com/v1alpha1/namespaces/ns/flunders",
                None,
                res("deletecollection", G, "v1alpha1", "ns", "flunders", "", ""),
            ),
            (
                Method::OPTIONS,
                "/apis/wardle.example.com/v1alpha1/namespaces/ns/flunders/f1",
                None,
                res("", G, "v1alpha1", "ns", "flunders", "f1", ""),
            ),
            // Subresources, and what lies beyond them.
            (
                Method::PUT,
                "/apis/wardle.example.com/v1alpha1/namespaces/ns/flunders/f1/status",
                None,
                res("update", G, "v1alpha1", "ns", "flunders", "f1", "status"),
            ),
            (
                get.clone(),
                "/apis/wardle.example.com/v1alpha1/namespaces/ns/flunders/f1/scale/extra",
                None,
                res("get", G, "v1alpha1", "ns", "flunders", "f1", "scale"),
            ),
            // Cluster scope, and lists across namespaces.
            (
                get.clone(),
                "/apis/wardle.example.com/v1alpha1/fischers",
                None,
                res("list", G, "v1alpha1", "", "fischers", "", ""),
            ),
            (
                Method::DELETE,
                "/apis/wardle.example.com/v1alpha1/fischers/x",
                None,
                res("delete", G, "v1alpha1", "", "fischers", "x", ""),
            ),
            (
                get.clone(),
                "/apis/wardle.example.com/v1alpha1/flunders",
                None,
                res("list", G, "v1alpha1", "", "flunders", "", ""),
            ),
            // Watch: by query or by the legacy prefix.
            (
                get.clone(),
                "/apis/wardle.example.com/v1alpha1/namespaces/ns/flunders",
                Some("watch=true"),
                res("watch", G, "v1alpha1", "ns", "flunders", "", ""),
            ),
            (
                get.clone(),
                "/apis/wardle.example.com/v1alpha1/namespaces/ns/flunders",
                Some("watch=1"),
                res("watch", G, "v1alpha1", "ns", "flunders", "", ""),
            ),
            (
                get.clone(),
                "/apis/wardle.example.com/v1alpha1/namespaces/ns/flunders",
                Some("watch="),
                res("watch", G, "v1alpha1", "ns", "flunders", "", ""),
            ),
            (
                get.clone(),
                "/apis/wardle.example.com/v1alpha1/namespaces/ns/flunders",
                Some("watch=false"),
                res("list", G, "v1alpha1", "ns", "flunders", "", ""),
            ),
            (
                get.clone(),
                "/apis/wardle.example.com/v1alpha1/namespaces/ns/flunders",
                Some("watch=0"),
                res("list", G, "v1alpha1", "ns", "flunders", "", ""),
            ),
            (
                get.clone(),
                "/apis/wardle.example.com/v1alpha1/namespaces/ns/flunders",
                Some("watch=FALSE&watch=true"),
                res("list", G, "v1alpha1", "ns", "flunders", "", ""),
            ),
            (
                get.clone(),
                "/apis/wardle.example.com/v1alpha1/watch/namespaces/ns/flunders",
                None,
                res("watch", G, "v1alpha1", "ns", "flunders", "", ""),
            ),
            (
                get.clone(),
                "/apis/wardle.example.com/v1alpha1/watch/namespaces/ns/flunders/f1",
                None,
                res("watch", G, "v1alpha1", "ns", "flunders", "f1", ""),
            ),
            (
                get.clone(),
                "/apis/wardle.example.com/v1alpha1/watch/fischers",
                None,
                res("watch", G, "v1alpha1", "", "fischers", "", ""),
            ),
            (
                get.clone(),
                "/apis/wardle.example.com/v1alpha1/watch",
                None,
                res("", G, "v1alpha1", "", "watch", "", ""),
            ),
            // Under the legacy prefix the verb is `watch` whatever the method, as upstream
            // reads it (the handlers serve only a GET there).
            (
                Method::POST,
                "/apis/wardle.example.com/v1alpha1/watch/namespaces/ns/flunders",
                None,
                res("watch", G, "v1alpha1", "ns", "flunders", "", ""),
            ),
            (
                Method::DELETE,
                "/apis/wardle.example.com/v1alpha1/watch/namespaces/ns/flunders/f1",
                None,
                res("watch", G, "v1alpha1", "ns", "flunders", "f1", ""),
            ),
            // A named GET is a `get`, whatever its query says.
            (
                get.clone(),
                "/apis/wardle.example.com/v1alpha1/namespaces/ns/flunders/f1",
                Some("watch=true"),
                res("get", G, "v1alpha1", "ns", "flunders", "f1", ""),
            ),
            // A name from the field selector of a list or watch.
            (
                get.clone(),
                "/apis/wardle.example.com/v1alpha1/namespaces/ns/flunders",
                Some("fieldSelector=metadata.name%3Df1"),
                res("list", G, "v1alpha1", "ns", "flunders", "f1", ""),
            ),
            (
                get.clone(),
                "/apis/wardle.example.com/v1alpha1/namespaces/ns/flunders",
                Some("watch=1&fieldSelector=metadata.name==f1,spec.x=y"),
                res("watch", G, "v1alpha1", "ns", "flunders", "f1", ""),
            ),
            (
                get.clone(),
                "/apis/wardle.example.com/v1alpha1/namespaces/ns/flunders",
                Some("fieldSelector=metadata.name!%3Df1"),
                res("list", G, "v1alpha1", "ns", "flunders", "", ""),
            ),
            (
                get.clone(),
                "/apis/wardle.example.com/v1alpha1/namespaces/ns/flunders",
                Some("fieldSelector=metadata.name%3D.."),
                res("list", G, "v1alpha1", "ns", "flunders", "", ""),
            ),
            (
                get.clone(),
                "/apis/wardle.example.com/v1alpha1/namespaces/ns/flunders",
                Some("fieldSelector=metadata.name%3Da%25b"),
                res("list", G, "v1alpha1", "ns", "flunders", "", ""),
            ),
            (
                get.clone(),
                "/apis/wardle.example.com/v1alpha1/namespaces/ns/flunders",
                Some("fieldSelector=bad"),
                res("list", G, "v1alpha1", "ns", "flunders", "", ""),
            ),
            // Only a GET on a collection takes the name from the selector.
            (
                Method::DELETE,
                "/apis/wardle.example.com/v1alpha1/namespaces/ns/flunders",
                Some("fieldSelector=metadata.name%3Df1"),
                res("deletecollection", G, "v1alpha1", "ns", "flunders", "", ""),
            ),
            // Namespaces themselves.
            (
                get.clone(),
                "/api/v1/namespaces",
                None,
                res("list", "", "v1", "", "namespaces", "", ""),
            ),
            (
                get.clone(),
                "/api/v1/namespaces/ns",
                None,
                res("get", "", "v1", "ns", "namespaces", "ns", ""),
            ),
            (
                Method::PUT,
                "/api/v1/namespaces/ns/status",
                None,
                res("update", "", "v1", "ns", "namespaces", "ns", "status"),
            ),
            (
                Method::PUT,
                "/api/v1/namespaces/ns/finalize",
                None,
                res("update", "", "v1", "ns", "namespaces", "ns", "finalize"),
            ),
            (
                get.clone(),
                "/apis/wardle.example.com/v1alpha1/namespaces/ns",
                None,
                res("get", G, "v1alpha1", "ns", "namespaces", "ns", ""),
            ),
            // The core group.
            (
                get.clone(),
                "/api/v1/namespaces/ns/pods/p/log",
                None,
                res("get", "", "v1", "ns", "pods", "p", "log"),
            ),
            (
                Method::POST,
                "/api/v1/nodes",
                None,
                res("create", "", "v1", "", "nodes", "", ""),
            ),
            // Proxy takes no subresource.
            (
                get.clone(),
                "/api/v1/proxy/namespaces/ns/pods/p/a/b",
                None,
                res("proxy", "", "v1", "ns", "pods", "p", ""),
            ),
            // Empty segments are skipped, as the router skips them.
            (
                get.clone(),
                "//apis//wardle.example.com/v1alpha1//fischers/",
                None,
                res("list", G, "v1alpha1", "", "fischers", "", ""),
            ),
        ];
        for (method, path, query, want) in cases {
            let mut got = request_of(&method, path, query);
            // Selectors have their own test.
            if let Request::Resource(r) = &mut got {
                r.field_selector.clear();
                r.label_selector.clear();
            }
            assert_eq!(got, want, "{method} {path}?{}", query.unwrap_or(""));
        }
    }

    fn req(key: &str, op: &str, values: &[&str]) -> SelectorRequirement {
        SelectorRequirement {
            key: key.into(),
            operator: op.into(),
            values: values.iter().map(|v| v.to_string()).collect(),
        }
    }

    fn selectors_of(
        method: Method,
        path: &str,
        query: &str,
    ) -> (Vec<SelectorRequirement>, Vec<SelectorRequirement>) {
        match request_of(&method, path, Some(query)) {
            Request::Resource(r) => (r.field_selector, r.label_selector),
            Request::NonResource(_) => panic!("{path}"),
        }
    }

    #[test]
    fn selector_requirements() {
        const C: &str = "/apis/wardle.example.com/v1alpha1/namespaces/ns/flunders";
        let (field, label) = selectors_of(
            Method::GET,
            C,
            "fieldSelector=spec.b%3D1,metadata.name!%3Dx&labelSelector=tier+in+(b,a),!gone,app,env!%3Dprod,n>3,k%3Dv",
        );
        assert_eq!(
            field,
            [
                req("metadata.name", "NotIn", &["x"]),
                req("spec.b", "In", &["1"])
            ]
        );
        assert_eq!(
            label,
            [
                req("app", "Exists", &[]),
                req("env", "NotIn", &["prod"]),
                req("gone", "DoesNotExist", &[]),
                req("k", "In", &["v"]),
                req("tier", "In", &["a", "b"]),
            ]
        );
        // Watches and deletecollections too; only the first of each parameter counts.
        let (field, label) = selectors_of(
            Method::DELETE,
            C,
            "labelSelector=a%3D1&labelSelector=b%3D2&fieldSelector=",
        );
        assert_eq!((field, label), (vec![], vec![req("a", "In", &["1"])]));
        let (_, label) = selectors_of(Method::GET, C, "watch=1&labelSelector=a");
        assert_eq!(label, [req("a", "Exists", &[])]);
        // Not for other verbs, nor for the legacy watch path, nor when they do not parse.
        let (_, label) = selectors_of(Method::GET, &format!("{C}/f1"), "labelSelector=a");
        assert!(label.is_empty());
        let (_, label) = selectors_of(
            Method::GET,
            "/apis/wardle.example.com/v1alpha1/watch/namespaces/ns/flunders",
            "labelSelector=a",
        );
        assert!(label.is_empty());
        let (field, label) = selectors_of(Method::GET, C, "labelSelector=a%3D(&fieldSelector=x");
        assert!(field.is_empty() && label.is_empty());
    }

    #[test]
    fn attributes_carry_the_user() {
        let user = UserInfo::new("alice", &["g"]);
        let a = Attributes::from_request(user.clone(), &Method::GET, "/apis", None);
        assert_eq!(a.user, user);
        assert_eq!(a.request, non("get", "/apis"));
    }
}
