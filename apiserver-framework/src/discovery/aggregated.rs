//! Aggregated discovery (`apidiscovery.k8s.io/v2`): every group, version and resource in one
//! `APIGroupDiscoveryList` document served at `/apis` (the named groups) and at `/api` (the
//! core group, whose name is empty).
//!
//! Clients ask for it with an `Accept` header naming the kind (see [`wants_aggregated`]) and
//! fall back to the [legacy](super::legacy) documents when the response is plain JSON.

use serde_json::{Map, Value, json};
use sha2::{Digest, Sha512};

use super::legacy::sorted_verbs;
use super::{ServedGroup, ServedResource, ServedVersion};

/// `Content-Type` of an aggregated discovery response.
pub const AGGREGATED_CONTENT_TYPE: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

/// The `APIGroupDiscoveryList` served at `/apis`: the named groups of `groups` in the order
/// given (the core group belongs to `/api`, see `core_discovery_list`), versions in order of
/// preference (all `freshness: Current`), resources sorted by name.
pub fn group_discovery_list(groups: &[ServedGroup]) -> Value {
    discovery_list(groups.iter().filter(|g| !g.name.is_empty()))
}

/// The `APIGroupDiscoveryList` served at `/api`: the core group of `groups` (the one named `""`)
/// alone, or no item when it is not among them.
pub(crate) fn core_discovery_list(groups: &[ServedGroup]) -> Value {
    discovery_list(groups.iter().filter(|g| g.name.is_empty()))
}

/// An `APIGroupDiscoveryList` of the groups that serve at least one version.
fn discovery_list<'a>(groups: impl Iterator<Item = &'a ServedGroup>) -> Value {
    let items: Vec<Value> = groups
        .filter(|g| !g.versions.is_empty())
        .map(group_discovery)
        .collect();
    json!({
        "kind": "APIGroupDiscoveryList",
        "apiVersion": "apidiscovery.k8s.io/v2",
        "metadata": {},
        "items": items,
    })
}

/// Whether an `Accept` header asks for aggregated discovery v2.
///
/// Media ranges are ordered by quality (then by specificity, keeping the client's order
/// otherwise), and the first one this server can answer decides: a JSON range (or a
/// wildcard) with `g=apidiscovery.k8s.io`, `v=v2` and `as=APIGroupDiscoveryList` — in any
/// parameter order — selects aggregated discovery; a JSON range without conversion
/// parameters selects the legacy document. Ranges naming any other conversion (such as
/// `v=v2beta1`, which this server does not serve) or another media type are skipped.
/// Unknown parameters such as `profile=nopeer` are ignored, as upstream does.
pub fn wants_aggregated(accept: &str) -> bool {
    let mut ranges: Vec<MediaRange> = accept
        .split(',')
        .filter_map(MediaRange::parse)
        .filter(|r| r.q > 0.0)
        .collect();
    // `sort_by` is stable: equal ranges keep the client's order.
    ranges.sort_by(|a, b| {
        b.q.total_cmp(&a.q)
            .then_with(|| b.specificity().cmp(&a.specificity()))
    });
    for range in &ranges {
        if !range.is_json() {
            continue;
        }
        let (g, v, as_) = (range.param("g"), range.param("v"), range.param("as"));
        if g.is_none() && v.is_none() && as_.is_none() {
            return false;
        }
        if g == Some("apidiscovery.k8s.io")
            && v == Some("v2")
            && as_ == Some("APIGroupDiscoveryList")
        {
            return true;
        }
    }
    false
}

/// The `ETag` of a discovery document: the upper-case hex SHA-512 of its bytes, in quotes.
pub fn etag(body: &[u8]) -> String {
    let digest = Sha512::digest(body);
    let mut out = String::with_capacity(digest.len() * 2 + 2);
    out.push('"');
    for byte in digest {
        out.push_str(&format!("{byte:02X}"));
    }
    out.push('"');
    out
}

/// One media range of an `Accept` header.
struct MediaRange {
    type_: String,
    subtype: String,
    params: Vec<(String, String)>,
    q: f64,
}

impl MediaRange {
    /// Parses `type/subtype;k=v;...`; `None` when malformed.
    fn parse(text: &str) -> Option<Self> {
        let mut parts = text.split(';');
        let (type_, subtype) = parts.next()?.trim().split_once('/')?;
        let (type_, subtype) = (
            type_.trim().to_ascii_lowercase(),
            subtype.trim().to_ascii_lowercase(),
        );
        if type_.is_empty() || subtype.is_empty() {
            return None;
        }
        let mut params = Vec::new();
        let mut q = 1.0;
        for param in parts {
            let Some((key, value)) = param.split_once('=') else {
                continue;
            };
            let key = key.trim().to_ascii_lowercase();
            let value = value.trim().trim_matches('"').to_owned();
            if key == "q" {
                q = value.parse().unwrap_or(0.0);
            } else {
                params.push((key, value));
            }
        }
        Some(Self {
            type_,
            subtype,
            params,
            q,
        })
    }

    /// 2 for `type/subtype`, 1 for `type/*`, 0 for `*/*`.
    fn specificity(&self) -> u8 {
        u8::from(self.type_ != "*") + u8::from(self.subtype != "*")
    }

    /// Whether this range can be answered with JSON.
    fn is_json(&self) -> bool {
        matches!(
            (self.type_.as_str(), self.subtype.as_str()),
            ("application", "json" | "*") | ("*", "*")
        )
    }

    /// The value of a parameter.
    fn param(&self, key: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// One `APIGroupDiscovery`; its `metadata` has only the name, left out (as upstream's
/// `omitempty` does) for the core group.
fn group_discovery(group: &ServedGroup) -> Value {
    let versions: Vec<Value> = group
        .versions
        .iter()
        .map(|v| version_discovery(&group.name, v))
        .collect();
    let metadata = if group.name.is_empty() {
        json!({})
    } else {
        json!({"name": group.name})
    };
    json!({"metadata": metadata, "versions": versions})
}

/// One `APIVersionDiscovery`.
fn version_discovery(group: &str, version: &ServedVersion) -> Value {
    let mut resources: Vec<&ServedResource> = version.resources.iter().collect();
    resources.sort_by(|a, b| a.info.plural.cmp(&b.info.plural));
    let resources: Vec<Value> = resources
        .into_iter()
        .map(|r| resource_discovery(group, &version.version, r))
        .collect();
    json!({"version": version.version, "resources": resources, "freshness": "Current"})
}

/// One `APIResourceDiscovery`, with its status subresource when it serves any verb.
///
/// A `responseKind` in the resource's own group-version leaves its group and version empty, as
/// upstream converts the legacy `APIResource` (whose `group` and `version` are empty then).
fn resource_discovery(group: &str, version: &str, served: &ServedResource) -> Value {
    let info = &served.info;
    let response_kind = json!({"group": "", "version": "", "kind": info.kind});
    let mut out = Map::new();
    out.insert("resource".into(), info.plural.clone().into());
    out.insert("responseKind".into(), response_kind.clone());
    let scope = if info.namespaced() {
        "Namespaced"
    } else {
        "Cluster"
    };
    out.insert("scope".into(), scope.into());
    out.insert("singularResource".into(), info.singular.clone().into());
    out.insert("verbs".into(), sorted_verbs(&served.verbs).into());
    if !info.short_names.is_empty() {
        out.insert("shortNames".into(), info.short_names.clone().into());
    }
    if !info.categories.is_empty() {
        out.insert("categories".into(), info.categories.clone().into());
    }
    let mut subresources = Vec::new();
    if !served.scale_verbs.is_empty() {
        subresources.push(json!({
            "subresource": "scale",
            "responseKind": {"group": "autoscaling", "version": "v1", "kind": "Scale"},
            "verbs": sorted_verbs(&served.scale_verbs),
        }));
    }
    if !served.status_verbs.is_empty() {
        subresources.push(json!({
            "subresource": "status",
            "responseKind": response_kind,
            "verbs": sorted_verbs(&served.status_verbs),
        }));
    }
    for sub in &served.custom_subresources {
        let (sub_group, sub_version) = served.response_group_version(sub);
        let (sub_group, sub_version) = if sub_group == group && sub_version == version {
            ("", "")
        } else {
            (sub_group, sub_version)
        };
        let verbs: Vec<String> = sub.kind.verbs().iter().map(|v| v.to_string()).collect();
        subresources.push(json!({
            "subresource": sub.name,
            "responseKind": {"group": sub_group, "version": sub_version, "kind": sub.response_kind},
            "verbs": sorted_verbs(&verbs),
        }));
    }
    subresources.sort_by(|a, b| {
        let name = |v: &Value| v["subresource"].as_str().unwrap_or("").to_string();
        name(a).cmp(&name(b))
    });
    if !subresources.is_empty() {
        out.insert("subresources".into(), subresources.into());
    }
    Value::Object(out)
}
