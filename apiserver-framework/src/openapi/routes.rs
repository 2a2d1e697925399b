//! The operations a group-version serves, independent of the OpenAPI dialect.
//!
//! This mirrors the routes `k8s.io/apiserver`'s installer registers for a resource: the
//! collection path, the item path, the status subresource, the all-namespaces list path and
//! the deprecated `watch/` paths, each only for the verbs the storage supports.

use crate::discovery::{ServedResource, ServedVersion};
use crate::resource::ResourceInfo;

use super::names::{self, list_definition_name, meta, operation_id, resource_definition_name};
use super::params::{QueryParam, options_params, query_params};
use crate::registry::rest::subresource::{SubresourceInfo, SubresourceKind};

/// What an operation does (upstream's `x-kubernetes-action`, plus discovery documents).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Action {
    /// A discovery document (`/apis/<g>/`, `/apis/<g>/<v>/`); no `x-kubernetes-action`.
    Discovery,
    /// Read one object.
    Get,
    /// List (or watch, with `?watch=true`) a collection.
    List,
    /// Create an object.
    Create,
    /// Replace an object.
    Replace,
    /// Patch an object.
    Patch,
    /// Delete an object.
    Delete,
    /// Delete a collection.
    DeleteCollection,
    /// Watch one object (deprecated `watch/` path).
    Watch,
    /// Watch a collection (deprecated `watch/` path).
    WatchList,
    /// Read a custom subresource with options (`x-kubernetes-action: get`).
    GetWithOptions,
    /// Open a connect subresource with GET.
    ConnectGet,
    /// Open a connect subresource with POST.
    ConnectPost,
}

impl Action {
    /// The HTTP method, lower case (the key of the operation in a path item).
    pub(crate) fn method(self) -> &'static str {
        match self {
            Action::Discovery
            | Action::Get
            | Action::List
            | Action::Watch
            | Action::WatchList
            | Action::GetWithOptions
            | Action::ConnectGet => "get",
            Action::Create | Action::ConnectPost => "post",
            Action::Replace => "put",
            Action::Patch => "patch",
            Action::Delete | Action::DeleteCollection => "delete",
        }
    }

    /// The value of `x-kubernetes-action`.
    pub(crate) fn x_action(self) -> Option<&'static str> {
        Some(match self {
            Action::Discovery => return None,
            Action::Get | Action::GetWithOptions => "get",
            Action::ConnectGet | Action::ConnectPost => "connect",
            Action::List => "list",
            Action::Create => "post",
            Action::Replace => "put",
            Action::Patch => "patch",
            Action::Delete => "delete",
            Action::DeleteCollection => "deletecollection",
            Action::Watch => "watch",
            Action::WatchList => "watchlist",
        })
    }

    /// Whether the response may be a stream of watch events.
    pub(crate) fn streams(self) -> bool {
        matches!(self, Action::List | Action::Watch | Action::WatchList)
    }
}

/// A group/version/kind, as in `x-kubernetes-group-version-kind`.
#[derive(Clone, Debug)]
pub(crate) struct Gvk {
    pub(crate) group: String,
    pub(crate) version: String,
    pub(crate) kind: String,
}

/// A path parameter (`namespace` or `name`).
#[derive(Clone, Debug)]
pub(crate) struct PathParam {
    pub(crate) name: &'static str,
    pub(crate) description: String,
}

/// The request body of an operation.
#[derive(Clone, Debug)]
pub(crate) struct Body {
    /// Definition key of the body's schema.
    pub(crate) schema: String,
    /// Whether the body must be present.
    pub(crate) required: bool,
}

/// A documented response.
#[derive(Clone, Debug)]
pub(crate) struct Response {
    /// Status code, as the key of the responses object.
    pub(crate) code: &'static str,
    /// Description (the reason phrase).
    pub(crate) description: &'static str,
    /// Definition key of the response's schema; `None` for a body-less description.
    pub(crate) schema: Option<String>,
}

/// One operation on a path.
#[derive(Clone, Debug)]
pub(crate) struct Operation {
    pub(crate) action: Action,
    pub(crate) operation_id: String,
    pub(crate) description: String,
    pub(crate) tag: String,
    pub(crate) path_params: Vec<PathParam>,
    pub(crate) query: Vec<QueryParam>,
    pub(crate) body: Option<Body>,
    pub(crate) responses: Vec<Response>,
    pub(crate) gvk: Option<Gvk>,
}

/// A path and its operations.
#[derive(Clone, Debug)]
pub(crate) struct PathItem {
    /// The path, with a leading `/`.
    pub(crate) path: String,
    pub(crate) operations: Vec<Operation>,
}

/// The URL prefix of a group-version: `/apis/<g>/<v>`, or `/api/<v>` for the core group.
pub(crate) fn group_version_prefix(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("/api/{version}")
    } else {
        format!("/apis/{group}/{version}")
    }
}

/// Media types an operation's response may have.
pub(crate) fn produces(action: Action) -> Vec<&'static str> {
    let mut out = vec!["application/json", "application/yaml"];
    if action.streams() {
        out.push("application/json;stream=watch");
    }
    out
}

/// Media types a patch accepts: exactly those the patch handler serves, so that kubectl
/// picks a patch type the server understands.
pub(crate) use crate::endpoints::patch::PATCH_TYPES;

/// Media types an operation's request body may have.
pub(crate) fn consumes(action: Action) -> Vec<&'static str> {
    match action {
        Action::Patch => PATCH_TYPES.to_vec(),
        // Upstream's discovery routes list the types they produce (here JSON and YAML).
        Action::Discovery => vec!["application/json", "application/yaml"],
        _ => vec!["*/*"],
    }
}

/// The `/apis/<group>/` path serving the group's `APIGroup` (Swagger 2 documents only; it
/// belongs to no group-version). `None` for the core group, whose `/api` is not ours.
pub(crate) fn group_path(group: &str) -> Option<PathItem> {
    if group.is_empty() {
        return None;
    }
    Some(PathItem {
        path: format!("/apis/{group}/"),
        operations: vec![Operation {
            action: Action::Discovery,
            operation_id: operation_id("get", group, None, "APIGroup"),
            description: "Get information of a group.".into(),
            tag: names::tag(group, None),
            path_params: Vec::new(),
            query: Vec::new(),
            body: None,
            responses: with_unauthorized(vec![ok(meta("APIGroup"))]),
            gvk: None,
        }],
    })
}

/// Every path a group-version serves: its `APIResourceList` and the resources' paths, sorted
/// by path.
pub(crate) fn group_version_paths(group: &str, version: &ServedVersion) -> Vec<PathItem> {
    let prefix = group_version_prefix(group, &version.version);
    let mut paths = vec![PathItem {
        path: format!("{prefix}/"),
        operations: vec![Operation {
            action: Action::Discovery,
            operation_id: operation_id("get", group, Some(&version.version), "APIResources"),
            description: "Get available resources.".into(),
            tag: names::tag(group, Some(&version.version)),
            path_params: Vec::new(),
            query: Vec::new(),
            body: None,
            responses: with_unauthorized(vec![ok(meta("APIResourceList"))]),
            gvk: None,
        }],
    }];
    for served in &version.resources {
        let builder = ResourceRoutes::new(group, &version.version, served);
        paths.extend(
            builder
                .paths()
                .into_iter()
                .filter(|p| !p.operations.is_empty()),
        );
    }
    paths.sort_by(|a, b| a.path.cmp(&b.path));
    paths
}

/// `200 OK` with a schema.
fn ok(schema: String) -> Response {
    Response {
        code: "200",
        description: "OK",
        schema: Some(schema),
    }
}

/// Appends `401 Unauthorized`, which every operation may answer.
fn with_unauthorized(mut responses: Vec<Response>) -> Vec<Response> {
    responses.push(Response {
        code: "401",
        description: "Unauthorized",
        schema: None,
    });
    responses
}

/// `a` or `an`, for descriptions.
fn article(noun: &str) -> &'static str {
    match noun.chars().next().map(|c| c.to_ascii_lowercase()) {
        Some('a' | 'e' | 'i' | 'o' | 'u') => "an",
        _ => "a",
    }
}

/// Builds the paths of one resource.
struct ResourceRoutes<'a> {
    group: &'a str,
    version: &'a str,
    served: &'a ServedResource,
    prefix: String,
    tag: String,
}

/// Where an operation's path sits, which decides its path parameters and id suffixes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Place {
    /// In one namespace (namespaced resources) or at the cluster scope (cluster-scoped ones).
    Scoped,
    /// Across all namespaces (namespaced resources only).
    AllNamespaces,
}

impl<'a> ResourceRoutes<'a> {
    fn new(group: &'a str, version: &'a str, served: &'a ServedResource) -> Self {
        Self {
            group,
            version,
            served,
            prefix: group_version_prefix(group, version),
            tag: names::tag(group, Some(version)),
        }
    }

    fn info(&self) -> &ResourceInfo {
        &self.served.info
    }

    fn has(&self, verb: &str) -> bool {
        self.served.verbs.iter().any(|v| v == verb)
    }

    fn has_status(&self, verb: &str) -> bool {
        self.served.status_verbs.iter().any(|v| v == verb)
    }

    fn has_scale(&self, verb: &str) -> bool {
        self.served.scale_verbs.iter().any(|v| v == verb)
    }

    /// All paths of the resource (some may have no operations).
    fn paths(&self) -> Vec<PathItem> {
        let info = self.info();
        let plural = &info.plural;
        let namespaced = info.namespaced();
        let scope = if namespaced {
            "namespaces/{namespace}/"
        } else {
            ""
        };
        let collection = format!("{}/{scope}{plural}", self.prefix);
        let item = format!("{collection}/{{name}}");
        let can_watch_list = self.has("list") && self.has("watch");

        let mut paths = Vec::new();

        let mut ops = Vec::new();
        if self.has("list") {
            ops.push(self.operation(Action::List, Place::Scoped, false, ""));
        }
        if self.has("create") {
            ops.push(self.operation(Action::Create, Place::Scoped, false, ""));
        }
        if self.has("deletecollection") {
            ops.push(self.operation(Action::DeleteCollection, Place::Scoped, false, ""));
        }
        paths.push(PathItem {
            path: collection,
            operations: ops,
        });

        let mut ops = Vec::new();
        for (verb, action) in [
            ("get", Action::Get),
            ("update", Action::Replace),
            ("patch", Action::Patch),
            ("delete", Action::Delete),
        ] {
            if self.has(verb) {
                ops.push(self.operation(action, Place::Scoped, true, ""));
            }
        }
        paths.push(PathItem {
            path: item.clone(),
            operations: ops,
        });

        let mut ops = Vec::new();
        for (verb, action) in [
            ("get", Action::Get),
            ("update", Action::Replace),
            ("patch", Action::Patch),
        ] {
            if self.has_status(verb) {
                ops.push(self.operation(action, Place::Scoped, true, "status"));
            }
        }
        paths.push(PathItem {
            path: format!("{item}/status"),
            operations: ops,
        });

        let mut ops = Vec::new();
        for (verb, action) in [
            ("get", Action::Get),
            ("update", Action::Replace),
            ("patch", Action::Patch),
        ] {
            if self.has_scale(verb) {
                ops.push(self.operation(action, Place::Scoped, true, "scale"));
            }
        }
        if !ops.is_empty() {
            paths.push(PathItem {
                path: format!("{item}/scale"),
                operations: ops,
            });
        }

        for sub in &self.served.custom_subresources {
            paths.push(PathItem {
                path: format!("{item}/{}", sub.name),
                operations: self.custom_operations(sub),
            });
        }

        if can_watch_list {
            paths.push(PathItem {
                path: format!("{}/watch/{scope}{plural}", self.prefix),
                operations: vec![self.operation(Action::WatchList, Place::Scoped, false, "")],
            });
        }
        if self.has("watch") {
            paths.push(PathItem {
                path: format!("{}/watch/{scope}{plural}/{{name}}", self.prefix),
                operations: vec![self.operation(Action::Watch, Place::Scoped, true, "")],
            });
        }

        if namespaced {
            if self.has("list") {
                paths.push(PathItem {
                    path: format!("{}/{plural}", self.prefix),
                    operations: vec![self.operation(Action::List, Place::AllNamespaces, false, "")],
                });
            }
            if can_watch_list {
                paths.push(PathItem {
                    path: format!("{}/watch/{plural}", self.prefix),
                    operations: vec![self.operation(
                        Action::WatchList,
                        Place::AllNamespaces,
                        false,
                        "",
                    )],
                });
            }
        }
        paths
    }

    /// One operation. `named` says whether the path ends in (or contains) `{name}`;
    /// `subresource` is `""`, `"status"` or `"scale"`.
    fn operation(&self, action: Action, place: Place, named: bool, subresource: &str) -> Operation {
        let info = self.info();
        let kind = &info.kind;
        let in_namespace = info.namespaced() && place == Place::Scoped;

        let mut rest = String::new();
        if action == Action::DeleteCollection {
            rest.push_str("Collection");
        }
        if in_namespace {
            rest.push_str("Namespaced");
        }
        rest.push_str(kind);
        rest.push_str(&names::to_valid_operation_id(subresource, true));
        if action == Action::WatchList {
            rest.push_str("List");
        }
        if place == Place::AllNamespaces {
            rest.push_str("ForAllNamespaces");
        }
        let verb = match action {
            Action::Discovery => "get",
            Action::Get | Action::GetWithOptions => "read",
            Action::ConnectGet => "connectGet",
            Action::ConnectPost => "connectPost",
            Action::List => "list",
            Action::Create => "create",
            Action::Replace => "replace",
            Action::Patch => "patch",
            Action::Delete | Action::DeleteCollection => "delete",
            Action::Watch | Action::WatchList => "watch",
        };

        let mut path_params = Vec::new();
        if named {
            path_params.push(PathParam {
                name: "name",
                description: format!("name of the {kind}"),
            });
        }
        if in_namespace {
            path_params.push(PathParam {
                name: "namespace",
                description: "object name and auth scope, such as for teams and projects".into(),
            });
        }

        // The scale subresource reads and writes `autoscaling/v1 Scale`.
        let (object, gvk) = if subresource == "scale" {
            (
                SCALE_DEFINITION.to_string(),
                Gvk {
                    group: "autoscaling".into(),
                    version: "v1".into(),
                    kind: "Scale".into(),
                },
            )
        } else {
            (
                resource_definition_name(info),
                Gvk {
                    group: info.group.clone(),
                    version: info.version.clone(),
                    kind: kind.clone(),
                },
            )
        };
        let status = meta("Status");
        let (body, responses) = match action {
            Action::Discovery | Action::Get | Action::GetWithOptions => (None, vec![ok(object)]),
            Action::ConnectGet | Action::ConnectPost => (None, vec![ok_string()]),
            Action::List => (None, vec![ok(list_definition_name(info))]),
            Action::Create => (
                Some(Body {
                    schema: object.clone(),
                    required: true,
                }),
                vec![
                    ok(object.clone()),
                    created(object.clone()),
                    accepted(object),
                ],
            ),
            Action::Replace => (
                Some(Body {
                    schema: object.clone(),
                    required: true,
                }),
                vec![ok(object.clone()), created(object)],
            ),
            Action::Patch => (
                Some(Body {
                    schema: meta("Patch"),
                    required: true,
                }),
                vec![ok(object.clone()), created(object)],
            ),
            Action::Delete => (
                Some(Body {
                    schema: meta("DeleteOptions"),
                    required: false,
                }),
                vec![ok(status.clone()), accepted(status)],
            ),
            Action::DeleteCollection => (
                Some(Body {
                    schema: meta("DeleteOptions"),
                    required: false,
                }),
                vec![ok(status)],
            ),
            Action::Watch | Action::WatchList => (None, vec![ok(meta("WatchEvent"))]),
        };

        Operation {
            action,
            operation_id: operation_id(verb, self.group, Some(self.version), &rest),
            description: self.description(action, subresource),
            tag: self.tag.clone(),
            path_params,
            query: query_params(action),
            body,
            responses: with_unauthorized(responses),
            gvk: Some(gvk),
        }
    }

    /// The operations of a custom subresource: a read, a create, or the two connects, each
    /// with its own body, answer and options, as upstream documents `pods/log`,
    /// `pods/eviction` and `pods/exec`.
    fn custom_operations(&self, sub: &SubresourceInfo) -> Vec<Operation> {
        let actions: &[Action] = match sub.kind {
            SubresourceKind::GetWithOptions => &[Action::GetWithOptions],
            SubresourceKind::Action => &[Action::Create],
            SubresourceKind::Connect => &[Action::ConnectGet, Action::ConnectPost],
        };
        let (group, version) = self.served.response_group_version(sub);
        let gvk = Gvk {
            group: group.to_string(),
            version: version.to_string(),
            kind: sub.response_kind.clone(),
        };
        let definition = |kind: &str| names::definition_name(group, version, kind);
        actions
            .iter()
            .map(|&action| {
                let mut op = self.operation(action, Place::Scoped, true, &sub.name);
                let answer = sub.response.as_ref().map(|r| definition(&r.name));
                match action {
                    Action::GetWithOptions => {
                        op.responses = with_unauthorized(vec![match answer {
                            Some(a) => ok(a),
                            None => ok_string(),
                        }]);
                    }
                    Action::Create => {
                        if let Some(body) = &sub.body {
                            op.body = Some(Body {
                                schema: definition(&body.name),
                                required: true,
                            });
                        }
                        if let Some(a) = answer {
                            op.responses = with_unauthorized(vec![
                                ok(a.clone()),
                                created(a.clone()),
                                accepted(a),
                            ]);
                        }
                    }
                    _ => {}
                }
                if let Some(options) = &sub.options {
                    op.query = options_params(&options.schema);
                }
                if !sub.description.is_empty() {
                    op.description = sub.description.clone();
                }
                op.gvk = Some(gvk.clone());
                op
            })
            .collect()
    }

    /// A one-line description of an operation.
    fn description(&self, action: Action, subresource: &str) -> String {
        let kind = &self.info().kind;
        let a = article(kind);
        let of = if subresource.is_empty() {
            String::new()
        } else {
            format!("{subresource} of ")
        };
        match action {
            Action::Discovery => "Get available resources.".into(),
            Action::Get | Action::GetWithOptions => format!("Read {of}the specified {kind}."),
            Action::ConnectGet | Action::ConnectPost => {
                format!(
                    "Connect {method} requests to {subresource} of {kind}",
                    method = action.method().to_uppercase()
                )
            }
            Action::List if self.has("watch") => format!("List or watch objects of kind {kind}."),
            Action::List => format!("List objects of kind {kind}."),
            Action::Create => format!("Create {a} {kind}."),
            Action::Replace => format!("Replace {of}the specified {kind}."),
            Action::Patch => format!("Partially update {of}the specified {kind}."),
            Action::Delete => format!("Delete {a} {kind}."),
            Action::DeleteCollection => format!("Delete a collection of {kind} objects."),
            Action::Watch => format!(
                "Watch changes to an object of kind {kind}. Deprecated: list with the 'watch' parameter and a 'fieldSelector' on metadata.name instead."
            ),
            Action::WatchList => format!(
                "Watch changes to a list of {kind}. Deprecated: list with the 'watch' parameter instead."
            ),
        }
    }
}

/// The definition name of `autoscaling/v1 Scale`.
const SCALE_DEFINITION: &str = "io.k8s.api.autoscaling.v1.Scale";

/// `200 OK` with a plain string (the answer of a connection, as upstream documents it).
fn ok_string() -> Response {
    Response {
        code: "200",
        description: "OK",
        schema: Some(STRING_SCHEMA.to_string()),
    }
}

/// The marker [`Response::schema`] holds for a plain `type: string` answer.
pub(crate) const STRING_SCHEMA: &str = "string";

/// `201 Created` with a schema.
fn created(schema: String) -> Response {
    Response {
        code: "201",
        description: "Created",
        schema: Some(schema),
    }
}

/// `202 Accepted` with a schema.
fn accepted(schema: String) -> Response {
    Response {
        code: "202",
        description: "Accepted",
        schema: Some(schema),
    }
}
