//! The query parameters each kind of operation accepts, as documented in the OpenAPI paths.

use std::borrow::Cow;

use super::routes::Action;

/// The OpenAPI type of a query parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ParamType {
    /// `boolean`.
    Boolean,
    /// `integer`.
    Integer,
    /// `string`.
    String,
}

impl ParamType {
    /// The OpenAPI type name.
    pub(crate) fn name(self) -> &'static str {
        match self {
            ParamType::Boolean => "boolean",
            ParamType::Integer => "integer",
            ParamType::String => "string",
        }
    }
}

/// A documented query parameter.
#[derive(Clone, Debug)]
pub(crate) struct QueryParam {
    /// Name in the query string.
    pub(crate) name: Cow<'static, str>,
    /// OpenAPI type.
    pub(crate) ty: ParamType,
    /// Human readable description.
    pub(crate) description: Cow<'static, str>,
}

const fn param(name: &'static str, ty: ParamType, description: &'static str) -> QueryParam {
    QueryParam {
        name: Cow::Borrowed(name),
        ty,
        description: Cow::Borrowed(description),
    }
}

/// The parameters of a custom subresource's options: one per property of their schema
/// (arrays are documented by their items' type), sorted by name, after `pretty`.
pub(crate) fn options_params(schema: &serde_json::Value) -> Vec<QueryParam> {
    let mut out = vec![PRETTY.clone()];
    if let Some(properties) = schema.get("properties").and_then(|p| p.as_object()) {
        for (name, prop) in properties {
            let ty_of = |s: &serde_json::Value| match s.get("type").and_then(|t| t.as_str()) {
                Some("boolean") => Boolean,
                Some("integer") | Some("number") => Integer,
                _ => Str,
            };
            let ty = match prop.get("items") {
                Some(items) => ty_of(items),
                None => ty_of(prop),
            };
            let description = prop
                .get("description")
                .and_then(|d| d.as_str())
                .unwrap_or("")
                .to_string();
            out.push(QueryParam {
                name: Cow::Owned(name.clone()),
                ty,
                description: Cow::Owned(description),
            });
        }
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

use ParamType::{Boolean, Integer, String as Str};

static PRETTY: QueryParam = param("pretty", Str, "If 'true', the output is pretty printed.");
static DRY_RUN: QueryParam = param(
    "dryRun",
    Str,
    "When present, the modification is validated and admitted but not persisted. The only valid value is \"All\".",
);
static FIELD_MANAGER: QueryParam = param(
    "fieldManager",
    Str,
    "Name of the actor making the change, recorded in managedFields. At most 128 printable characters. Required for apply patches.",
);
static FIELD_VALIDATION: QueryParam = param(
    "fieldValidation",
    Str,
    "How to treat unknown or duplicate fields in the request body: \"Ignore\" drops them silently, \"Warn\" drops them and returns a warning for each, \"Strict\" fails the request.",
);
static FORCE: QueryParam = param(
    "force",
    Boolean,
    "Take ownership of conflicting fields from other managers. Only valid for apply patches.",
);
static GRACE_PERIOD_SECONDS: QueryParam = param(
    "gracePeriodSeconds",
    Integer,
    "Seconds the object is given before it is deleted. Zero means delete immediately; unset means the resource's default.",
);
static IGNORE_STORE_READ_ERROR: QueryParam = param(
    "ignoreStoreReadErrorWithClusterBreakingPotential",
    Boolean,
    "Delete an object whose stored data cannot be read or decoded, bypassing finalizers and admission. Dangerous: use only to remove corrupt objects.",
);
static ORPHAN_DEPENDENTS: QueryParam = param(
    "orphanDependents",
    Boolean,
    "Deprecated: use propagationPolicy. Whether dependent objects are orphaned instead of deleted.",
);
static PROPAGATION_POLICY: QueryParam = param(
    "propagationPolicy",
    Str,
    "How dependents are garbage collected: \"Orphan\", \"Background\" or \"Foreground\". Cannot be combined with orphanDependents.",
);
static ALLOW_WATCH_BOOKMARKS: QueryParam = param(
    "allowWatchBookmarks",
    Boolean,
    "Ask for BOOKMARK events, which carry only a newer resourceVersion. Ignored for lists.",
);
static CONTINUE: QueryParam = param(
    "continue",
    Str,
    "The continue token of the previous page of a paginated list.",
);
static FIELD_SELECTOR: QueryParam = param(
    "fieldSelector",
    Str,
    "Restrict the results to objects whose fields match, such as metadata.name=foo. Defaults to everything.",
);
static LABEL_SELECTOR: QueryParam = param(
    "labelSelector",
    Str,
    "Restrict the results to objects whose labels match. Defaults to everything.",
);
static LIMIT: QueryParam = param(
    "limit",
    Integer,
    "The maximum number of items to return. When more remain, the list metadata carries a continue token for the next page.",
);
static RESOURCE_VERSION_LIST: QueryParam = param(
    "resourceVersion",
    Str,
    "Which version of the data to serve or to watch from. Unset means the most recent; \"0\" means any version; any other value is interpreted according to resourceVersionMatch.",
);
static RESOURCE_VERSION_MATCH: QueryParam = param(
    "resourceVersionMatch",
    Str,
    "How resourceVersion applies to a list: \"Exact\" or \"NotOlderThan\". Requires resourceVersion.",
);
static SEND_INITIAL_EVENTS: QueryParam = param(
    "sendInitialEvents",
    Boolean,
    "For watches: start with synthetic ADDED events for the current state, followed by a BOOKMARK annotated with k8s.io/initial-events-end. Requires resourceVersionMatch=NotOlderThan.",
);
static TIMEOUT_SECONDS: QueryParam = param(
    "timeoutSeconds",
    Integer,
    "Time limit for the list or watch call, regardless of activity.",
);
static WATCH: QueryParam = param(
    "watch",
    Boolean,
    "Watch for changes to the described objects and return them as a stream of events.",
);

/// Parameters of list and watch operations (besides `pretty`).
static LIST: [&QueryParam; 10] = [
    &ALLOW_WATCH_BOOKMARKS,
    &CONTINUE,
    &FIELD_SELECTOR,
    &LABEL_SELECTOR,
    &LIMIT,
    &RESOURCE_VERSION_LIST,
    &RESOURCE_VERSION_MATCH,
    &SEND_INITIAL_EVENTS,
    &TIMEOUT_SECONDS,
    &WATCH,
];

/// Parameters of delete operations (besides `pretty`).
static DELETE: [&QueryParam; 5] = [
    &DRY_RUN,
    &GRACE_PERIOD_SECONDS,
    &IGNORE_STORE_READ_ERROR,
    &ORPHAN_DEPENDENTS,
    &PROPAGATION_POLICY,
];

/// The query parameters of an action, sorted by name.
pub(crate) fn query_params(action: Action) -> Vec<QueryParam> {
    let mut out: Vec<&'static QueryParam> = vec![&PRETTY];
    match action {
        Action::Discovery => return Vec::new(),
        // Custom subresources document their own options (`options_params`).
        Action::GetWithOptions | Action::ConnectGet | Action::ConnectPost => {}
        // Upstream documents only `pretty` for a read of one object (its GetOptions'
        // resourceVersion is accepted but not published), so kubectl explain and generated
        // clients see the same operation.
        Action::Get => {}
        Action::List | Action::Watch | Action::WatchList => out.extend(LIST),
        Action::Create | Action::Replace => {
            out.extend([&DRY_RUN, &FIELD_MANAGER, &FIELD_VALIDATION]);
        }
        Action::Patch => out.extend([&DRY_RUN, &FIELD_MANAGER, &FIELD_VALIDATION, &FORCE]),
        Action::Delete => out.extend(DELETE),
        Action::DeleteCollection => {
            out.extend(DELETE);
            out.extend(
                LIST.iter()
                    .copied()
                    .filter(|p| p.name != "watch" && p.name != "allowWatchBookmarks"),
            );
        }
    }
    out.sort_by_key(|p| p.name.clone());
    out.into_iter().cloned().collect()
}
