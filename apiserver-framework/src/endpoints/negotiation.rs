//! Content negotiation: which representation a response uses (`Accept`) and how a request body
//! is encoded (`Content-Type`).
//!
//! Mirrors `k8s.io/apiserver`'s negotiation for a server that serves JSON and YAML (no
//! protobuf, no CBOR): the `Accept` clauses are ordered by `q` (wildcards after specific types
//! of the same weight, otherwise in client order) and the first clause the server can honour
//! wins. Clauses may ask for a conversion with `as=<Kind>;g=meta.k8s.io;v=v1`: `Table`,
//! `PartialObjectMetadata` and `PartialObjectMetadataList` are supported (in JSON only);
//! `meta.k8s.io/v1beta1` conversions and any other clause the server cannot produce are
//! skipped. When no clause is usable the answer is `406 NotAcceptable`.

// `ApiError` is the crate-wide error type; its size is a deliberate trade-off.
#![allow(clippy::result_large_err)]

use crate::error::ApiError;
use crate::quote::go_quote;

/// `application/json`.
pub const JSON: &str = "application/json";
/// `application/yaml`.
pub const YAML: &str = "application/yaml";
/// Kubernetes' protobuf encoding: accepted only as the create or update body of storages that
/// decode it
/// ([`crate::registry::rest::RestStorage::protobuf_decoder`]), never answered.
pub(crate) const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";
/// The media types responses can be encoded in, as listed by `406` errors.
pub(crate) const SUPPORTED_MEDIA_TYPES: &[&str] = &[JSON, YAML];
/// The media types request bodies can be encoded in, as listed by `415` errors.
pub(crate) const SUPPORTED_BODY_MEDIA_TYPES: &[&str] = &[JSON, YAML];
/// The media types a watch stream can be encoded in, as listed by `406` errors on watches.
pub(crate) const SUPPORTED_STREAM_MEDIA_TYPES: &[&str] = &["application/json;stream=watch"];
/// The group of the conversion targets (`Table`, `PartialObjectMetadata`).
pub(crate) const META_GROUP: &str = "meta.k8s.io";
/// The only served version of [`META_GROUP`].
pub(crate) const META_VERSION: &str = "v1";

/// What a Table row carries in its `object` field (the `includeObject` query parameter).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum IncludeObject {
    /// No object (`includeObject=None`).
    None,
    /// A `PartialObjectMetadata` holding the object's metadata (the default).
    #[default]
    Metadata,
    /// The whole object (`includeObject=Object`, used by `kubectl get --sort-by`).
    Object,
}

impl IncludeObject {
    /// Parse the `includeObject` query value: `None`, `Metadata`, `Object` or empty (meaning
    /// `Metadata`); a missing parameter also means `Metadata`. Anything else is the `400`
    /// upstream gives:
    /// `Unable to convert to Table as requested: includeObject: Invalid value: "<v>": must be 'Metadata', 'Object', 'None', or empty`.
    pub fn from_query(value: Option<&str>) -> Result<Self, ApiError> {
        match value.unwrap_or("") {
            "" | "Metadata" => Ok(IncludeObject::Metadata),
            "None" => Ok(IncludeObject::None),
            "Object" => Ok(IncludeObject::Object),
            other => Err(ApiError::bad_request(format!(
                "Unable to convert to Table as requested: includeObject: Invalid value: {}: \
                 must be 'Metadata', 'Object', 'None', or empty",
                go_quote(other)
            ))),
        }
    }

    /// The query-parameter spelling: `None`, `Metadata` or `Object`.
    #[cfg(any(test, feature = "testing"))]
    pub fn as_str(self) -> &'static str {
        match self {
            IncludeObject::None => "None",
            IncludeObject::Metadata => "Metadata",
            IncludeObject::Object => "Object",
        }
    }
}

/// The representation chosen for a response.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Output {
    /// The object (or list) itself, as JSON.
    Json,
    /// The object (or list) itself, as YAML.
    Yaml,
    /// A `meta.k8s.io/v1` `Table`, as JSON.
    Table {
        /// What each row's `object` holds.
        include_object: IncludeObject,
    },
    /// A `meta.k8s.io/v1` `PartialObjectMetadata`, as JSON: for one object and for each
    /// event of a watch; a list answers 406, as upstream.
    PartialObjectMetadata,
    /// A `meta.k8s.io/v1` `PartialObjectMetadataList`, as JSON: for a list; anything else
    /// answers 406, as upstream.
    PartialObjectMetadataList,
}

/// The 406 for a `PartialObjectMetadata` form that does not fit the response: a list asked
/// for as `PartialObjectMetadata`, or an object (or a watch event) as
/// `PartialObjectMetadataList`. The type is named in Go's `%T` style, as upstream prints it.
pub(crate) fn partial_metadata_mismatch(
    info: &crate::resource::ResourceInfo,
    list_requested: bool,
) -> ApiError {
    let message = if list_requested {
        format!(
            "you requested PartialObjectMetadataList, but the requested object is not a list (*{}.{})",
            info.version, info.kind
        )
    } else {
        format!(
            "you requested PartialObjectMetadata, but the requested object is a list (*{}.{}List)",
            info.version, info.kind
        )
    };
    ApiError::new(406, "NotAcceptable", message)
}

/// The `Content-Type` of a response in the given representation.
#[cfg(any(test, feature = "testing"))]
pub fn content_type(output: Output) -> &'static str {
    match output {
        Output::Yaml => YAML,
        Output::Json
        | Output::Table { .. }
        | Output::PartialObjectMetadata
        | Output::PartialObjectMetadataList => JSON,
    }
}

/// One clause of an `Accept` header.
#[derive(Clone, Debug, PartialEq)]
pub struct MediaRange {
    /// Lower-cased type, e.g. `application` or `*`.
    pub type_: String,
    /// Lower-cased subtype, e.g. `json` or `*`.
    pub subtype: String,
    /// Parameters other than `q`, in header order; keys lower-cased, values unquoted.
    pub params: Vec<(String, String)>,
    /// The `q` weight (1 when absent, 0 when unparsable).
    pub q: f32,
}

impl MediaRange {
    /// The value of a parameter (the last one if repeated).
    pub fn param(&self, key: &str) -> Option<&str> {
        self.params
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// `type/subtype`.
    #[cfg(any(test, feature = "testing"))]
    pub fn essence(&self) -> String {
        format!("{}/{}", self.type_, self.subtype)
    }

    fn wildcard_rank(&self) -> u8 {
        u8::from(self.type_ == "*") + u8::from(self.subtype == "*")
    }
}

/// Split a header value at `sep`, ignoring separators inside double quotes.
fn split_unquoted(s: &str, sep: char) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut start = 0;
    let mut in_quotes = false;
    let mut escaped = false;
    for (i, ch) in s.char_indices() {
        if in_quotes {
            if escaped {
                escaped = false;
            } else if ch == '\\' {
                escaped = true;
            } else if ch == '"' {
                in_quotes = false;
            }
        } else if ch == '"' {
            in_quotes = true;
        } else if ch == sep {
            parts.push(&s[start..i]);
            start = i + ch.len_utf8();
        }
    }
    parts.push(&s[start..]);
    parts
}

fn unquote(v: &str) -> String {
    let v = v.trim();
    match v.strip_prefix('"').and_then(|r| r.strip_suffix('"')) {
        Some(inner) => {
            let mut out = String::with_capacity(inner.len());
            let mut chars = inner.chars();
            while let Some(c) = chars.next() {
                if c == '\\' {
                    if let Some(n) = chars.next() {
                        out.push(n);
                    }
                } else {
                    out.push(c);
                }
            }
            out
        }
        None => v.to_string(),
    }
}

/// Parse one media type (`type/subtype;k=v;...`); `None` if it has no `type/subtype`.
/// A bare `*` is read as `*/*`.
fn parse_media_range(part: &str) -> Option<MediaRange> {
    let mut pieces = split_unquoted(part, ';').into_iter();
    let essence = pieces.next()?.trim().to_ascii_lowercase();
    let (type_, subtype) = match essence.split_once('/') {
        Some((t, s)) => (t.trim().to_string(), s.trim().to_string()),
        None if essence == "*" => ("*".to_string(), "*".to_string()),
        None => return None,
    };
    if type_.is_empty() || subtype.is_empty() || subtype.contains('/') {
        return None;
    }
    let mut range = MediaRange {
        type_,
        subtype,
        params: Vec::new(),
        q: 1.0,
    };
    for param in pieces {
        let Some((k, v)) = param.split_once('=') else {
            continue;
        };
        let key = k.trim().to_ascii_lowercase();
        if key.is_empty() {
            continue;
        }
        if key == "q" {
            range.q = unquote(v)
                .parse::<f32>()
                .ok()
                .filter(|q| q.is_finite())
                .unwrap_or(0.0);
        } else {
            range.params.push((key, unquote(v)));
        }
    }
    Some(range)
}

/// Parse an `Accept` header into its clauses, ordered by preference: higher `q` first, then
/// specific types before `type/*` before `*/*`, otherwise in header order. Malformed clauses
/// are dropped.
pub fn parse_accept(header: &str) -> Vec<MediaRange> {
    let mut ranges: Vec<MediaRange> = split_unquoted(header, ',')
        .into_iter()
        .filter(|p| !p.trim().is_empty())
        .filter_map(parse_media_range)
        .collect();
    ranges.sort_by(|a, b| {
        b.q.total_cmp(&a.q)
            .then_with(|| a.wildcard_rank().cmp(&b.wildcard_rank()))
    });
    ranges
}

/// The encodings the server has, in preference order for wildcard clauses.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Encoding {
    Json,
    Yaml,
}

/// The encodings a clause's type/subtype can match.
fn candidates(range: &MediaRange) -> &'static [Encoding] {
    match (range.type_.as_str(), range.subtype.as_str()) {
        ("application", "json") => &[Encoding::Json],
        ("application", "yaml") => &[Encoding::Yaml],
        ("application", "*") | ("*", "*") => &[Encoding::Json, Encoding::Yaml],
        _ => &[],
    }
}

/// What a clause asks for, before `includeObject` is looked at.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Choice {
    Json,
    Yaml,
    Table,
    Partial,
    PartialList,
}

/// Whether the server can honour `range` with `encoding`, and how.
fn accept_with(range: &MediaRange, encoding: Encoding) -> Option<Choice> {
    // `stream=watch` is allowed where a stream serializer exists (JSON only here).
    if let Some(stream) = range.param("stream")
        && !stream.is_empty()
        && (stream != "watch" || encoding != Encoding::Json)
    {
        return None;
    }
    // `sv` selects the meta group version for generic output.
    if let Some(sv) = range.param("sv")
        && !sv.is_empty()
        && sv != META_VERSION
    {
        return None;
    }
    let (kind, group, version) = (range.param("as"), range.param("g"), range.param("v"));
    if kind.is_none() && group.is_none() && version.is_none() {
        return Some(match encoding {
            Encoding::Json => Choice::Json,
            Encoding::Yaml => Choice::Yaml,
        });
    }
    // A conversion: only meta.k8s.io/v1 targets, produced as JSON.
    if group != Some(META_GROUP) || version != Some(META_VERSION) || encoding != Encoding::Json {
        return None;
    }
    match kind {
        Some("Table") => Some(Choice::Table),
        Some("PartialObjectMetadata") => Some(Choice::Partial),
        Some("PartialObjectMetadataList") => Some(Choice::PartialList),
        _ => None,
    }
}

fn choose(accept: Option<&str>) -> Option<Choice> {
    let header = accept.map(str::trim).unwrap_or("");
    // What most clients send: one clause, no parameters. Reading it needs no parse.
    if header.is_empty() || header.eq_ignore_ascii_case(JSON) {
        return Some(Choice::Json);
    }
    choose_parsed(header)
}

/// The representation `header`'s clauses choose, read clause by clause.
fn choose_parsed(header: &str) -> Option<Choice> {
    parse_accept(header)
        .iter()
        .filter(|range| range.q > 0.0)
        .find_map(|range| {
            candidates(range)
                .iter()
                .find_map(|&encoding| accept_with(range, encoding))
        })
}

/// Whether `accept` names a media type a route producing `produces` serves, as upstream's
/// router (go-restful) reads it before any handler runs: some clause, parameters cut off, is
/// `*/*` or one of `produces` exactly (so `application/*` is not). A missing header is `*/*`.
pub fn route_accepts(accept: Option<&str>, produces: &[&str]) -> bool {
    let header = accept.unwrap_or("");
    if header.trim().is_empty() {
        return true;
    }
    header.split(',').any(|clause| {
        let media = clause.split(';').next().unwrap_or("").trim();
        media == "*/*" || produces.contains(&media)
    })
}

/// Upstream's router's 406 for an `Accept` no route of the path produces (go-restful's text,
/// listing what the routes produce), a Status with empty details.
pub fn route_not_acceptable(produces: &[&str]) -> ApiError {
    ApiError::new(
        406,
        crate::error::StatusReason::NotAcceptable.as_str(),
        format!(
            "406: Not Acceptable\n\nAvailable representations: {}",
            produces.join(", ")
        ),
    )
    .with_details(crate::error::StatusDetails::default())
}

/// Upstream's router's 415 for a body type no route of the path consumes (go-restful's
/// text), a Status with empty details.
pub fn route_unsupported_media_type() -> ApiError {
    ApiError::new(
        415,
        crate::error::StatusReason::UnsupportedMediaType.as_str(),
        "415: Unsupported Media Type",
    )
    .with_details(crate::error::StatusDetails::default())
}

/// What a resource route produces, as its 406 lists it.
pub const ROUTE_MEDIA_TYPES: &[&str] = &[JSON, YAML];

/// What a collection's GET route produces: the resource's types and the watch stream's.
pub const LIST_ROUTE_MEDIA_TYPES: &[&str] = &[JSON, YAML, "application/json;stream=watch"];

/// The media types the router lets through to a handler: what it produces and protobuf,
/// which upstream's routes produce (here the handler refuses it, as it refuses another
/// conversion, with its own 406).
pub const ROUTED_MEDIA_TYPES: &[&str] = &[JSON, YAML, PROTOBUF];

/// Choose the representation of a response from the `Accept` header and the `includeObject`
/// query parameter.
///
/// A missing or empty header means JSON. The `includeObject` value is only looked at (and
/// only rejected with `400`) when a Table is chosen. When no clause can be served the error
/// is `406`: `only the following media types are accepted: application/json, application/yaml`.
pub fn negotiate(
    accept: Option<&str>,
    include_object_query: Option<&str>,
) -> Result<Output, ApiError> {
    match choose(accept) {
        Some(Choice::Json) => Ok(Output::Json),
        Some(Choice::Yaml) => Ok(Output::Yaml),
        Some(Choice::Table) => Ok(Output::Table {
            include_object: IncludeObject::from_query(include_object_query)?,
        }),
        Some(Choice::Partial) => Ok(Output::PartialObjectMetadata),
        Some(Choice::PartialList) => Ok(Output::PartialObjectMetadataList),
        None => Err(ApiError::not_acceptable(SUPPORTED_MEDIA_TYPES)),
    }
}

/// Like [`negotiate`], for a watch: the chosen representation must be streamable, which YAML
/// is not. A watch whose preferred clause is YAML gets the `406` upstream gives:
/// `only the following media types are accepted: application/json;stream=watch`.
#[cfg(any(test, feature = "testing"))]
pub fn negotiate_watch(
    accept: Option<&str>,
    include_object_query: Option<&str>,
) -> Result<Output, ApiError> {
    match negotiate(accept, include_object_query) {
        Ok(Output::Yaml) | Err(ApiError { code: 406, .. }) => {
            Err(ApiError::not_acceptable(SUPPORTED_STREAM_MEDIA_TYPES))
        }
        other => other,
    }
}

/// The encoding of a request body.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BodyFormat {
    /// `application/json` (also the default when there is no `Content-Type`).
    Json,
    /// `application/yaml`.
    Yaml,
}

/// The encoding of a request body from its `Content-Type` (parameters such as `charset` are
/// ignored). A missing or empty header means JSON; anything but JSON or YAML is a `415`:
/// `the body of the request was in an unknown format - accepted media types include: application/json, application/yaml`.
pub fn body_format(content_type: Option<&str>) -> Result<BodyFormat, ApiError> {
    let value = content_type.map(str::trim).unwrap_or("");
    if value.is_empty() {
        return Ok(BodyFormat::Json);
    }
    let essence = value
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    match essence.as_str() {
        JSON => Ok(BodyFormat::Json),
        YAML => Ok(BodyFormat::Yaml),
        _ => Err(ApiError::unsupported_media_type(SUPPORTED_BODY_MEDIA_TYPES)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KUBECTL_GET: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
    const TABLE: Output = Output::Table {
        include_object: IncludeObject::Metadata,
    };

    fn neg(accept: &str) -> Result<Output, ApiError> {
        negotiate(Some(accept), None)
    }

    #[test]
    fn defaults_to_json() {
        assert_eq!(negotiate(None, None).unwrap(), Output::Json);
        assert_eq!(neg("").unwrap(), Output::Json);
        assert_eq!(neg("   ").unwrap(), Output::Json);
        assert_eq!(neg("*/*").unwrap(), Output::Json);
        assert_eq!(neg("*").unwrap(), Output::Json);
        assert_eq!(neg("application/*").unwrap(), Output::Json);
        assert_eq!(neg("application/json").unwrap(), Output::Json);
        assert_eq!(
            neg("application/json; charset=utf-8").unwrap(),
            Output::Json
        );
        assert_eq!(neg("Application/JSON").unwrap(), Output::Json);
        assert_eq!(neg("application/json;stream=watch").unwrap(), Output::Json);
        assert_eq!(
            neg("application/json;pretty=1;export=1").unwrap(),
            Output::Json
        );
    }

    #[test]
    fn yaml() {
        assert_eq!(neg("application/yaml").unwrap(), Output::Yaml);
        assert_eq!(
            neg("application/yaml, application/json").unwrap(),
            Output::Yaml
        );
        assert_eq!(
            neg("application/json, application/yaml").unwrap(),
            Output::Json
        );
        assert_eq!(content_type(Output::Yaml), "application/yaml");
    }

    #[test]
    fn tables() {
        assert_eq!(neg(KUBECTL_GET).unwrap(), TABLE);
        assert_eq!(
            neg("application/json;as=Table;g=meta.k8s.io;v=v1").unwrap(),
            TABLE
        );
        // Parameter order and whitespace do not matter.
        assert_eq!(
            neg("application/json ; g=meta.k8s.io ; v=v1 ; as=Table").unwrap(),
            TABLE
        );
        assert_eq!(
            neg("application/json;as=\"Table\";g=meta.k8s.io;v=v1").unwrap(),
            TABLE
        );
        assert_eq!(neg("*/*;as=Table;g=meta.k8s.io;v=v1").unwrap(), TABLE);
        assert_eq!(
            negotiate(Some(KUBECTL_GET), Some("Object")).unwrap(),
            Output::Table {
                include_object: IncludeObject::Object
            }
        );
        assert_eq!(
            negotiate(Some(KUBECTL_GET), Some("None")).unwrap(),
            Output::Table {
                include_object: IncludeObject::None
            }
        );
        assert_eq!(negotiate(Some(KUBECTL_GET), Some("")).unwrap(), TABLE);
        assert_eq!(
            negotiate(Some(KUBECTL_GET), Some("Metadata")).unwrap(),
            TABLE
        );
        assert_eq!(content_type(TABLE), "application/json");
    }

    #[test]
    fn unusable_conversions_are_skipped() {
        // v1beta1 tables are not served: fall through to the next clause.
        assert_eq!(
            neg("application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json").unwrap(),
            Output::Json
        );
        // Nothing else: 406.
        let err = neg("application/json;as=Table;v=v1beta1;g=meta.k8s.io").unwrap_err();
        assert_eq!(err.code, 406);
        assert_eq!(err.reason, "NotAcceptable");
        assert_eq!(
            err.message,
            "only the following media types are accepted: application/json, application/yaml"
        );
        assert_eq!(neg("application/json;as=Table").unwrap_err().code, 406);
        assert_eq!(
            neg("application/json;as=Table;g=other.io;v=v1")
                .unwrap_err()
                .code,
            406
        );
        assert_eq!(
            neg("application/json;as=Flunder;g=meta.k8s.io;v=v1")
                .unwrap_err()
                .code,
            406
        );
        assert_eq!(
            neg("application/json;g=meta.k8s.io;v=v1").unwrap_err().code,
            406
        );
        assert_eq!(
            neg("application/yaml;as=Table;g=meta.k8s.io;v=v1")
                .unwrap_err()
                .code,
            406
        );
        assert_eq!(neg("application/json;stream=other").unwrap_err().code, 406);
        assert_eq!(neg("application/yaml;stream=watch").unwrap_err().code, 406);
        assert_eq!(neg("application/json;sv=v2").unwrap_err().code, 406);
        assert_eq!(neg("application/json;sv=v1").unwrap(), Output::Json);
    }

    #[test]
    fn protobuf_and_cbor_are_not_served() {
        assert_eq!(
            neg("application/vnd.kubernetes.protobuf, application/json").unwrap(),
            Output::Json
        );
        assert_eq!(
            neg("application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1;g=meta.k8s.io")
                .unwrap(),
            TABLE
        );
        assert_eq!(neg("application/cbor,*/*").unwrap(), Output::Json);
        assert_eq!(
            neg("application/vnd.kubernetes.protobuf").unwrap_err().code,
            406
        );
        assert_eq!(neg("application/cbor").unwrap_err().code, 406);
        assert_eq!(neg("text/html").unwrap_err().code, 406);
        assert_eq!(neg("text/*").unwrap_err().code, 406);
        assert_eq!(neg("garbage").unwrap_err().code, 406);
    }

    #[test]
    fn partial_object_metadata() {
        for (kind, want) in [
            ("PartialObjectMetadata", Output::PartialObjectMetadata),
            (
                "PartialObjectMetadataList",
                Output::PartialObjectMetadataList,
            ),
        ] {
            let accept = format!("application/json;as={kind};g=meta.k8s.io;v=v1,application/json");
            assert_eq!(neg(&accept).unwrap(), want);
        }
        assert_eq!(
            neg("application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json")
                .unwrap(),
            Output::PartialObjectMetadataList
        );
        assert_eq!(
            neg(
                "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1beta1,application/yaml"
            )
            .unwrap(),
            Output::Yaml
        );
        assert_eq!(
            content_type(Output::PartialObjectMetadata),
            "application/json"
        );
        // includeObject is not looked at for anything but tables.
        assert_eq!(
            negotiate(
                Some("application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"),
                Some("bogus")
            )
            .unwrap(),
            Output::PartialObjectMetadata
        );
        assert_eq!(
            negotiate(Some("application/json"), Some("bogus")).unwrap(),
            Output::Json
        );
    }

    #[test]
    fn q_weights() {
        assert_eq!(
            neg("application/json;q=0.5, application/yaml").unwrap(),
            Output::Yaml
        );
        assert_eq!(
            neg("application/yaml;q=0.9, application/json;as=Table;g=meta.k8s.io;v=v1;q=0.95")
                .unwrap(),
            TABLE
        );
        // Equal weights keep client order.
        assert_eq!(
            neg("application/yaml;q=0.5, application/json;q=0.5").unwrap(),
            Output::Yaml
        );
        // q=0 means "not acceptable".
        assert_eq!(
            neg("application/yaml;q=0, application/json;q=0.1").unwrap(),
            Output::Json
        );
        assert_eq!(neg("application/json;q=0").unwrap_err().code, 406);
        // Unparsable q counts as 0.
        assert_eq!(
            neg("application/yaml;q=abc, application/json").unwrap(),
            Output::Json
        );
        // Wildcards come after specific types of the same weight.
        assert_eq!(neg("*/*, application/yaml").unwrap(), Output::Yaml);
        assert_eq!(
            neg("*/*;q=0.8, application/yaml;q=0.5").unwrap(),
            Output::Json
        );
    }

    #[test]
    fn a_plain_json_accept_chooses_what_its_parse_chooses() {
        for header in ["application/json", "Application/JSON", "APPLICATION/json"] {
            assert!(choose_parsed(header) == Some(Choice::Json), "{header}");
            assert!(choose(Some(header)) == choose_parsed(header), "{header}");
            assert!(
                choose(Some(&format!(" {header} "))) == Some(Choice::Json),
                "{header}"
            );
        }
        // Anything more is read in full.
        for header in [
            "application/json;as=Table;g=meta.k8s.io;v=v1",
            "application/json;q=0",
        ] {
            assert!(choose(Some(header)) == choose_parsed(header), "{header}");
        }
        assert!(choose(Some("application/json;q=0")).is_none());
    }

    #[test]
    fn parse_accept_details() {
        let ranges = parse_accept(
            " application/json ;as=Table; g=meta.k8s.io ;v=v1 , text/plain;q=0.1,bad,, */*;q=0.5",
        );
        let essences: Vec<String> = ranges.iter().map(MediaRange::essence).collect();
        assert_eq!(essences, ["application/json", "*/*", "text/plain"]);
        assert_eq!(ranges[0].param("as"), Some("Table"));
        assert_eq!(ranges[0].param("g"), Some("meta.k8s.io"));
        assert_eq!(ranges[0].param("v"), Some("v1"));
        assert_eq!(ranges[0].param("q"), None);
        assert_eq!(ranges[0].q, 1.0);
        assert_eq!(ranges[2].q, 0.1);
        let quoted = parse_accept("application/json;x=\"a,b;c\",application/yaml");
        assert_eq!(quoted.len(), 2);
        assert_eq!(quoted[0].param("x"), Some("a,b;c"));
    }

    #[test]
    fn include_object_errors() {
        let err = negotiate(Some(KUBECTL_GET), Some("Everything")).unwrap_err();
        assert_eq!(err.code, 400);
        assert_eq!(err.reason, "BadRequest");
        assert_eq!(
            err.message,
            "Unable to convert to Table as requested: includeObject: Invalid value: \"Everything\": must be 'Metadata', 'Object', 'None', or empty"
        );
        let err = IncludeObject::from_query(Some("a\"b")).unwrap_err();
        assert!(
            err.message.contains(r#"Invalid value: "a\"b""#),
            "{}",
            err.message
        );
        assert_eq!(
            IncludeObject::from_query(None).unwrap(),
            IncludeObject::Metadata
        );
        assert_eq!(IncludeObject::default().as_str(), "Metadata");
        assert_eq!(IncludeObject::None.as_str(), "None");
        assert_eq!(IncludeObject::Object.as_str(), "Object");
    }

    #[test]
    fn watch_negotiation() {
        assert_eq!(negotiate_watch(None, None).unwrap(), Output::Json);
        assert_eq!(negotiate_watch(Some(KUBECTL_GET), None).unwrap(), TABLE);
        assert_eq!(
            negotiate_watch(Some("application/json;stream=watch"), None).unwrap(),
            Output::Json
        );
        let err = negotiate_watch(Some("application/yaml"), None).unwrap_err();
        assert_eq!(err.code, 406);
        assert_eq!(
            err.message,
            "only the following media types are accepted: application/json;stream=watch"
        );
        assert_eq!(
            negotiate_watch(Some("text/plain"), None).unwrap_err().code,
            406
        );
        assert_eq!(
            negotiate_watch(Some(KUBECTL_GET), Some("x"))
                .unwrap_err()
                .code,
            400
        );
    }

    #[test]
    fn body_formats() {
        assert_eq!(body_format(None).unwrap(), BodyFormat::Json);
        assert_eq!(body_format(Some("")).unwrap(), BodyFormat::Json);
        assert_eq!(
            body_format(Some("application/json")).unwrap(),
            BodyFormat::Json
        );
        assert_eq!(
            body_format(Some("application/json; charset=utf-8")).unwrap(),
            BodyFormat::Json
        );
        assert_eq!(
            body_format(Some("Application/YAML")).unwrap(),
            BodyFormat::Yaml
        );
        assert_eq!(
            body_format(Some("application/yaml;charset=utf-8")).unwrap(),
            BodyFormat::Yaml
        );
        for bad in [
            "text/plain",
            "application/vnd.kubernetes.protobuf",
            "application/cbor",
            "application/merge-patch+json",
            "*/*",
        ] {
            let err = body_format(Some(bad)).unwrap_err();
            assert_eq!(err.code, 415, "{bad}");
            assert_eq!(err.reason, "UnsupportedMediaType");
            assert_eq!(
                err.message,
                "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml"
            );
        }
    }
}
