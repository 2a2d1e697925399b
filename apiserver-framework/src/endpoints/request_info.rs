//! What a request path under `/apis/<group>/<version>/` addresses.

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

/// What a path under `/apis` addresses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ApiPath {
    /// `/apis`.
    Root,
    /// `/apis/<group>`.
    Group(String),
    /// `/apis/<group>/<version>`.
    GroupVersion(String, String),
    /// A resource, collection or subresource.
    Resource(ResourcePath),
    /// Something under a group-version that is no resource path.
    Unknown(String, String),
}

/// Parses a path starting with `/apis`; `None` for other paths.
pub fn parse(path: &str) -> Option<ApiPath> {
    let rest = path.strip_prefix("/apis")?;
    if !(rest.is_empty() || rest.starts_with('/')) {
        return None;
    }
    let parts: Vec<&str> = rest.split('/').filter(|p| !p.is_empty()).collect();
    Some(match parts.as_slice() {
        [] => ApiPath::Root,
        [g] => ApiPath::Group(g.to_string()),
        [g, v] => ApiPath::GroupVersion(g.to_string(), v.to_string()),
        [g, v, rest @ ..] => match resource_path(g, v, rest) {
            Some(r) => ApiPath::Resource(r),
            None => ApiPath::Unknown(g.to_string(), v.to_string()),
        },
    })
}

fn resource_path(group: &str, version: &str, parts: &[&str]) -> Option<ResourcePath> {
    let (legacy_watch, parts) = match parts {
        ["watch", rest @ ..] => (true, rest),
        _ => (false, parts),
    };
    let (namespace, parts) = match parts {
        ["namespaces", ns, rest @ ..] if !rest.is_empty() => (Some(ns.to_string()), rest),
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
}
