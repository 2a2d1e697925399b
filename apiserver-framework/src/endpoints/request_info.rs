//! What a request path under `/apis/<group>/<version>/` (or, for the core group,
//! `/api/<version>/`) addresses.

/// The parts of a resource request path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResourcePath {
    /// The API group.
    pub group: String,
    /// The API version.
    pub version: String,
    /// The namespace segment, if the path has one.
    pub namespace: Option<String>,
    /// The plural resource name.
    pub resource: String,
    /// The object name, if the path addresses one object.
    pub name: Option<String>,
    /// The subresource, e.g. `status`.
    pub subresource: Option<String>,
    /// Whether the path used the legacy `/watch/` prefix.
    pub legacy_watch: bool,
}

/// The verb of a resource request: what the authorizer was asked about, which is what the
/// handlers do (upstream's `RequestInfo.Verb`, read from the method, the legacy `/watch/`
/// prefix, whether the path names an object, and `?watch` on a collection).
///
/// The handlers dispatch on it rather than on the method and query again, so that what is
/// authorized and what is served cannot differ: a named GET with `?watch=true` is a `get`
/// and answers the object; a write under `/watch/` is a `watch` and answers 405.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verb {
    /// `get`: read one object (or subresource).
    Get,
    /// `list`: read a collection.
    List,
    /// `watch`: stream the changes of a collection or (legacy prefix) of one object.
    Watch,
    /// `create`: POST to a collection.
    Create,
    /// `update`: PUT to an object.
    Update,
    /// `patch`: PATCH an object.
    Patch,
    /// `delete`: DELETE an object.
    Delete,
    /// `deletecollection`: DELETE a collection.
    DeleteCollection,
    /// Anything else (a method no verb stands for, or a verb the handlers do not serve).
    Other,
}

impl Verb {
    /// The verb named `name` (`get`, `list`, …), [`Verb::Other`] for any other name.
    pub fn from_name(name: &str) -> Verb {
        match name {
            "get" => Verb::Get,
            "list" => Verb::List,
            "watch" => Verb::Watch,
            "create" => Verb::Create,
            "update" => Verb::Update,
            "patch" => Verb::Patch,
            "delete" => Verb::Delete,
            "deletecollection" => Verb::DeleteCollection,
            _ => Verb::Other,
        }
    }
}

/// What a path under `/apis` or `/api` addresses.
///
/// Paths under `/api` name the core group, whose name is empty: `/api/v1` is
/// `GroupVersion("", "v1")` and `/api/v1/namespaces/ns/configmaps` a resource path of group `""`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ApiPath {
    /// `/apis`.
    Root,
    /// `/api`: the versions of the core group.
    CoreRoot,
    /// `/apis/<group>`.
    Group(String),
    /// `/apis/<group>/<version>`.
    GroupVersion(String, String),
    /// A resource, collection or subresource.
    Resource(ResourcePath),
    /// Something under a group-version that is no resource path.
    Unknown(String, String),
}

/// Records one reading of a request (`what`: `request_info` for its method and path, `query`
/// for its query string) as a `trace` event of target `apiserver_framework::reading`, field
/// `reading`: a subscriber can count them (the handler chain's tests check that each request
/// is read once); with none interested, the event costs a check of its callsite.
pub(crate) fn trace_reading(what: &'static str) {
    tracing::trace!(target: "apiserver_framework::reading", reading = what);
}

/// Parses a path starting with `/apis` or `/api`; `None` for other paths.
///
/// The handler chain reads each request once on arrival (see
/// [`crate::authz::ParsedRequest::read`], which keeps this reading with the authorizer's), so
/// that the router takes it from there rather than calling this again.
#[cfg(any(test, feature = "testing"))]
pub fn parse(path: &str) -> Option<ApiPath> {
    trace_reading("request_info");
    parse_segments(path, &segments(path))
}

/// Like [`parse`], for a path already split into its non-empty segments ([`segments`]).
pub(crate) fn parse_segments(path: &str, segments: &[&str]) -> Option<ApiPath> {
    if under(path, "/apis").is_some() {
        return Some(parse_apis(segments.get(1..).unwrap_or_default()));
    }
    under(path, "/api")?;
    Some(match segments.get(1..).unwrap_or_default() {
        [] => ApiPath::CoreRoot,
        [v] => ApiPath::GroupVersion(String::new(), v.to_string()),
        [v, rest @ ..] => match resource_path("", v, rest) {
            Some(r) => ApiPath::Resource(r),
            None => ApiPath::Unknown(String::new(), v.to_string()),
        },
    })
}

/// What follows `prefix` in `path`, when `path` is `prefix` or lies under it.
fn under<'a>(path: &'a str, prefix: &str) -> Option<&'a str> {
    let rest = path.strip_prefix(prefix)?;
    (rest.is_empty() || rest.starts_with('/')).then_some(rest)
}

/// The non-empty `/`-separated segments of a path, as the router and the authorizer read
/// them (not percent-decoded).
pub fn segments(rest: &str) -> Vec<&str> {
    // One pass over the bytes (`/` is ASCII, so every cut is at a character boundary), into
    // room for the nine segments of the longest resource path (a legacy watch of a namespaced
    // subresource).
    let mut segments = Vec::with_capacity(9);
    let mut start = 0;
    for (i, byte) in rest.bytes().enumerate() {
        if byte == b'/' {
            if i > start {
                segments.push(&rest[start..i]);
            }
            start = i + 1;
        }
    }
    if start < rest.len() {
        segments.push(&rest[start..]);
    }
    segments
}

/// What the segments after `/apis` address.
fn parse_apis(parts: &[&str]) -> ApiPath {
    match parts {
        [] => ApiPath::Root,
        [g] => ApiPath::Group(g.to_string()),
        [g, v] => ApiPath::GroupVersion(g.to_string(), v.to_string()),
        [g, v, rest @ ..] => match resource_path(g, v, rest) {
            Some(r) => ApiPath::Resource(r),
            None => ApiPath::Unknown(g.to_string(), v.to_string()),
        },
    }
}

/// Subresources of a namespace: `namespaces/<name>/<sub>` addresses the namespace itself, not a
/// resource `<sub>` inside it (as upstream's `RequestInfoFactory` reads paths).
const NAMESPACE_SUBRESOURCES: &[&str] = &["status", "finalize"];

fn resource_path(group: &str, version: &str, parts: &[&str]) -> Option<ResourcePath> {
    let (legacy_watch, parts) = match parts {
        ["watch", rest @ ..] => (true, rest),
        _ => (false, parts),
    };
    let (namespace, parts) = match parts {
        ["namespaces", ns, rest @ ..]
            if !rest.is_empty() && !NAMESPACE_SUBRESOURCES.contains(&rest[0]) =>
        {
            (Some(ns.to_string()), rest)
        }
        _ => (None, parts),
    };
    let (resource, name, subresource) = match parts {
        [r] => (r, None, None),
        [r, n] => (r, Some(n.to_string()), None),
        [r, n, s] => (r, Some(n.to_string()), Some(s.to_string())),
        _ => return None,
    };
    Some(ResourcePath {
        group: group.to_string(),
        version: version.to_string(),
        namespace,
        resource: resource.to_string(),
        name,
        subresource,
        legacy_watch,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_are_the_non_empty_parts_between_slashes() {
        let paths = [
            "",
            "/",
            "//",
            "a",
            "/a",
            "a/",
            "/apis/g/v1/namespaces/ns/flunders/f1/status",
            "//apis///g/v1//",
            "/api/v1/watch/namespaces/ns/pods/p/status/x/y/z",
            "/é/ü/日本/",
            "/%2F/a%20b/",
        ];
        for path in paths {
            let expected: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
            assert_eq!(segments(path), expected, "{path:?}");
        }
    }

    #[test]
    fn paths() {
        assert_eq!(parse("/apis"), Some(ApiPath::Root));
        assert_eq!(parse("/apis/"), Some(ApiPath::Root));
        assert_eq!(parse("/apisx"), None);
        assert_eq!(parse("/apis/g"), Some(ApiPath::Group("g".into())));
        let Some(ApiPath::Resource(r)) = parse("/apis/g/v1/namespaces/ns/flunders/a/status") else {
            panic!()
        };
        assert_eq!(r.namespace.as_deref(), Some("ns"));
        assert_eq!(r.resource, "flunders");
        assert_eq!(r.name.as_deref(), Some("a"));
        assert_eq!(r.subresource.as_deref(), Some("status"));
        let Some(ApiPath::Resource(r)) = parse("/apis/g/v1/fischers") else {
            panic!()
        };
        assert_eq!(r.namespace, None);
        assert_eq!(r.name, None);
        let Some(ApiPath::Resource(r)) = parse("/apis/g/v1/namespaces/ns") else {
            panic!()
        };
        assert_eq!(
            (r.resource.as_str(), r.name.as_deref()),
            ("namespaces", Some("ns"))
        );
        let Some(ApiPath::Resource(r)) = parse("/apis/g/v1/watch/namespaces/ns/flunders") else {
            panic!()
        };
        assert!(r.legacy_watch);
        assert_eq!(
            parse("/apis/g/v1/a/b/c/d"),
            Some(ApiPath::Unknown("g".into(), "v1".into()))
        );
    }

    fn resource(path: &str) -> ResourcePath {
        match parse(path) {
            Some(ApiPath::Resource(r)) => r,
            other => panic!("{path}: {other:?}"),
        }
    }

    #[test]
    fn core_paths() {
        assert_eq!(parse("/api"), Some(ApiPath::CoreRoot));
        assert_eq!(parse("/api/"), Some(ApiPath::CoreRoot));
        assert_eq!(parse("/apix"), None);
        assert_eq!(
            parse("/api/v1"),
            Some(ApiPath::GroupVersion(String::new(), "v1".into()))
        );
        assert_eq!(
            parse("/api/v1/"),
            Some(ApiPath::GroupVersion(String::new(), "v1".into()))
        );
        let r = resource("/api/v1/namespaces/kube-system/configmaps/x");
        assert_eq!(r.group, "");
        assert_eq!(r.version, "v1");
        assert_eq!(r.namespace.as_deref(), Some("kube-system"));
        assert_eq!(r.resource, "configmaps");
        assert_eq!(r.name.as_deref(), Some("x"));
        let r = resource("/api/v1/watch/namespaces/kube-system/configmaps");
        assert!(r.legacy_watch);
        assert_eq!(
            (r.namespace.as_deref(), r.resource.as_str()),
            (Some("kube-system"), "configmaps")
        );
        let r = resource("/api/v1/configmaps");
        assert_eq!((r.namespace, r.resource.as_str()), (None, "configmaps"));
        assert_eq!(
            parse("/api/v1/a/b/c/d"),
            Some(ApiPath::Unknown(String::new(), "v1".into()))
        );
    }

    #[test]
    fn namespace_resource() {
        let r = resource("/api/v1/namespaces");
        assert_eq!(
            (r.namespace, r.resource.as_str(), r.name),
            (None, "namespaces", None)
        );
        let r = resource("/api/v1/namespaces/kube-system");
        assert_eq!(
            (r.namespace, r.resource.as_str(), r.name.as_deref()),
            (None, "namespaces", Some("kube-system"))
        );
        for sub in ["status", "finalize"] {
            let r = resource(&format!("/api/v1/namespaces/kube-system/{sub}"));
            assert_eq!(
                (
                    r.namespace,
                    r.resource.as_str(),
                    r.name.as_deref(),
                    r.subresource.as_deref()
                ),
                (None, "namespaces", Some("kube-system"), Some(sub))
            );
        }
        let r = resource("/api/v1/watch/namespaces/kube-system");
        assert!(r.legacy_watch);
        assert_eq!(
            (r.resource.as_str(), r.name.as_deref()),
            ("namespaces", Some("kube-system"))
        );
    }
}
