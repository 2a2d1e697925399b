//! [`GenericApiServer`]: one server of a delegation chain, and its builder.
//!
//! A server answers for its own API groups and hands every other request to its delegate;
//! the last server of a chain answers 404. The first server of a chain (the one the listener
//! calls) also answers the documents that describe the whole chain: `/apis` discovery,
//! OpenAPI, health and `/version`.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use http::{HeaderValue, Method, Request, Response, StatusCode, header};
use serde_json::{Value, json};

use crate::admission::{AdmissionChain, AdmissionNotes};
use crate::audit::AuditContext;
use crate::authz::admission_checks::AdmissionChecks;
use crate::authz::{Authorizer, ParsedRequest};
use crate::discovery::{self, ServedGroup, aggregated, legacy};
use crate::endpoints::handlers;
use crate::endpoints::query::Query;
use crate::endpoints::request_info::{ApiPath, Verb};
use crate::endpoints::response::raw;
use crate::error::ApiError;
use crate::metrics::recorder::ServedRoute;
use crate::openapi;
use crate::registry::rest::RequestContext;
use crate::registry::scheme::Registry;
use crate::server::debug_flags;
use crate::server::filters::ChainLayers;
use crate::server::front::FrontHandler;
use crate::server::health::HealthChecks;
use crate::server::lifecycle::Lifecycle;
use crate::server::version::{self, VersionInfo};
use crate::user::UserInfo;

mod builder;
pub use builder::GenericApiServerBuilder;

/// One API server of a delegation chain.
pub struct GenericApiServer {
    name: String,
    registry: Arc<Registry>,
    admission: Arc<AdmissionChain>,
    delegate: Option<Arc<GenericApiServer>>,
    healthz: HealthChecks,
    livez: HealthChecks,
    readyz: HealthChecks,
    version: VersionInfo,
    aggregator: Option<Arc<dyn FrontHandler>>,
    lifecycle: Lifecycle,
    /// Users' layers for the handler chain in front of this server.
    layers: ChainLayers,
    /// The documents and the aggregator generation they were computed at.
    documents: parking_lot::RwLock<Option<(u64, Arc<Documents>)>>,
}

/// Discovery and OpenAPI documents of a chain, computed once (again whenever the
/// aggregator's state changes).
struct Documents {
    aggregated: Vec<u8>,
    aggregated_etag: String,
    group_list: Vec<u8>,
    openapi_v2: Vec<u8>,
    openapi_v2_etag: String,
    /// The v2 document in protobuf and its ETag, encoded when first asked for.
    openapi_v2_protobuf: std::sync::OnceLock<(Vec<u8>, String)>,
    openapi_v3: Vec<(String, Vec<u8>, String)>,
    openapi_v3_root: Vec<u8>,
}

impl crate::metrics::recorder::ServingChain for GenericApiServer {
    fn served_registry(&self) -> &Registry {
        &self.registry
    }

    fn next_server(&self) -> Option<&dyn crate::metrics::recorder::ServingChain> {
        self.delegate
            .as_deref()
            .map(|d| d as &dyn crate::metrics::recorder::ServingChain)
    }
}

impl GenericApiServer {
    /// A builder for a server named `name` (used in logs and OpenAPI titles).
    pub fn builder(name: impl Into<String>) -> GenericApiServerBuilder {
        GenericApiServerBuilder {
            name: name.into(),
            groups: Vec::new(),
            admission: Vec::new(),
            storage: None,
            delegate: None,
            health_checks: Vec::new(),
            healthz_checks: Vec::new(),
            readiness_checks: Vec::new(),
            version: VersionInfo::for_kubernetes("1", "33"),
            aggregator: None,
            lifecycle: Lifecycle::default(),
            layers: ChainLayers::default(),
        }
    }

    /// The users' layers for the handler chain in front of this server
    /// ([`GenericApiServerBuilder::layer`]).
    pub fn chain_layers(&self) -> &ChainLayers {
        &self.layers
    }

    /// The server's hooks and its `shutdown` readiness check.
    pub fn lifecycle(&self) -> &Lifecycle {
        &self.lifecycle
    }

    /// Starts the post-start hooks of this server and of every delegate after it (their
    /// checks are added to this server's `/readyz`).
    pub fn start_post_start_hooks(&self) {
        let mut server = Some(self);
        while let Some(s) = server {
            s.lifecycle.start_post_start_hooks(&self.readyz);
            server = s.delegate.as_deref();
        }
    }

    /// Gives the admission of this server and of every delegate after it `authorizer`, for
    /// the `authorizer` of admission's CEL expressions (the first one given stays).
    pub(crate) fn authorize_admission_with(&self, authorizer: &Arc<dyn Authorizer>) {
        let mut server = Some(self);
        while let Some(s) = server {
            s.admission
                .authorize_with(Arc::new(AdmissionChecks(authorizer.clone())));
            server = s.delegate.as_deref();
        }
    }

    /// This server, handing every request it does not serve to `delegate`.
    pub fn delegate_to(mut self, delegate: impl Into<Arc<GenericApiServer>>) -> Self {
        self.delegate = Some(delegate.into());
        self
    }

    /// The server requests go to when this one does not serve them, if any.
    pub fn delegate(&self) -> Option<&Arc<GenericApiServer>> {
        self.delegate.as_ref()
    }

    /// The server's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The resources this server (not its delegates) stores.
    pub fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }

    /// The groups served by this server and every delegate after it, in chain order.
    pub fn chain_groups(&self) -> Vec<ServedGroup> {
        let mut groups = discovery::served_groups(&self.registry);
        if let Some(d) = &self.delegate {
            for g in d.chain_groups() {
                if !groups.iter().any(|x| x.name == g.name) {
                    groups.push(g);
                }
            }
        }
        groups
    }

    fn serves(&self, group: &str, version: Option<&str>) -> bool {
        self.registry.serves(group, version)
    }

    /// Serves one authenticated request.
    pub async fn handle(self: &Arc<Self>, req: Request<Body>, user: UserInfo) -> Response<Body> {
        let req = match &self.aggregator {
            Some(aggregator) => match aggregator.handle(req, &user).await {
                Ok(res) => return res,
                Err(req) => req,
            },
            None => req,
        };
        if debug_flags::serves(req.uri().path()) {
            return debug_flags::respond(req).await;
        }
        let path = req.uri().path();
        let query = req.uri().query();
        match path {
            "/healthz" | "/livez" | "/readyz" => {
                return self.health(path, None, query).await;
            }
            p if p.starts_with("/healthz/")
                || p.starts_with("/livez/")
                || p.starts_with("/readyz/") =>
            {
                let (endpoint, check) = p[1..].split_once('/').unwrap_or((p, ""));
                return self
                    .health(&format!("/{endpoint}"), Some(check), query)
                    .await;
            }
            "/version" | "/version/" => return version::respond(&self.version),
            "/metrics" => return crate::metrics::global().respond(&req),
            "/" => return self.index(StatusCode::OK),
            "/openapi/v2" => return self.openapi_v2(&req),
            "/openapi/v3" | "/openapi/v3/" => return self.openapi_v3_root(),
            p if p.starts_with("/openapi/v3/") => {
                return self.openapi_v3(&req, &p["/openapi/v3/".len()..]);
            }
            _ => {}
        }
        // The reading is shared with the request's extensions: routed by reference, not
        // copied.
        let parsed = ParsedRequest::of_request(&req);
        // Discovery documents are read with GET only: another method is the router's 405.
        let read = req.method() == Method::GET;
        match parsed.api_path() {
            Some(ApiPath::Root | ApiPath::CoreRoot) if !read => {
                ApiError::method_not_allowed().into_response_now()
            }
            Some(ApiPath::Root) => self.apis_root(&req),
            Some(ApiPath::CoreRoot) => self.core_api(&req),
            Some(ApiPath::Group(g)) => {
                let groups = self.chain_groups();
                match groups.iter().find(|x| &x.name == g) {
                    Some(_) if !read => ApiError::method_not_allowed().into_response_now(),
                    Some(group) => discovery_response(&req, &legacy::api_group(group)),
                    None => self.unserved_group(),
                }
            }
            Some(api) => {
                let (group, version) = match api {
                    ApiPath::GroupVersion(g, v) | ApiPath::Unknown(g, v) => (g, v),
                    ApiPath::Resource(r) => (&r.group, &r.version),
                    ApiPath::Root | ApiPath::CoreRoot | ApiPath::Group(_) => {
                        return self.index(StatusCode::NOT_FOUND);
                    }
                };
                self.route(req, group, version, api, user).await
            }
            None => self.index(StatusCode::NOT_FOUND),
        }
    }

    /// Routes a request for `<group>/<version>` to the server of the chain that serves it.
    async fn route(
        self: &Arc<Self>,
        req: Request<Body>,
        group: &str,
        version: &str,
        api: &ApiPath,
        user: UserInfo,
    ) -> Response<Body> {
        let mut server = self;
        while !server.serves(group, Some(version)) {
            match &server.delegate {
                Some(d) => server = d,
                None => {
                    // A version the group does not serve is a route miss of the group's
                    // handler (a Status); a group nobody serves, the not-found handler's.
                    if self.aggregator.is_none()
                        && self.chain_groups().iter().any(|g| g.name == group)
                    {
                        return ApiError::route_not_found().into_response_now();
                    }
                    return self.unserved_group();
                }
            }
        }
        server.serve_own(req, api, user).await
    }

    async fn serve_own(&self, req: Request<Body>, api: &ApiPath, user: UserInfo) -> Response<Body> {
        match api {
            ApiPath::GroupVersion(g, v) => {
                if req.method() != Method::GET {
                    return ApiError::method_not_allowed().into_response_now();
                }
                let groups = discovery::served_groups(&self.registry);
                let version = groups
                    .iter()
                    .find(|x| &x.name == g)
                    .and_then(|x| x.versions.iter().find(|x| &x.version == v));
                match version {
                    Some(version) => {
                        discovery_response(&req, &legacy::api_resource_list(g, version))
                    }
                    None => ApiError::route_not_found().into_response_now(),
                }
            }
            ApiPath::Resource(path) => {
                let Some(storage) = self
                    .registry
                    .find(&path.group, &path.version, &path.resource)
                    .cloned()
                else {
                    return ApiError::route_not_found().into_response_now();
                };
                let notes = AdmissionNotes::default();
                let ctx = RequestContext {
                    // Set by the handler once the path is found to fit the resource's scope.
                    namespace: None,
                    user,
                    admission: self.admission.clone(),
                    registry: self.registry.clone(),
                    request_resource: None,
                    notes: notes.clone(),
                };
                // Admission's annotations go to the audit event (its warnings, the handler
                // sends).
                let audit = AuditContext::of(req.extensions()).cloned();
                // The handler does what the request was authorized for: the verb of the one
                // reading the authorizer used.
                let verb = ParsedRequest::of_request(&req)
                    .resource_verb()
                    .map_or(Verb::Other, Verb::from_name);
                let mut route = ServedRoute {
                    storage: storage.clone(),
                    subresource: path.subresource.as_deref().and_then(|s| {
                        storage
                            .info()
                            .subresources()
                            .into_iter()
                            .find(|served| *served == s)
                    }),
                    webhook_time: Duration::ZERO,
                };
                let mut res = handlers::handle(storage, ctx, req, path, verb).await;
                if let Some(audit) = audit {
                    for (key, value) in notes.annotations() {
                        audit.add_annotation(&key, &value);
                    }
                }
                route.webhook_time = notes.webhook_time();
                res.extensions_mut().insert(route);
                res
            }
            _ => ApiError::route_not_found().into_response_now(),
        }
    }

    async fn health(
        &self,
        endpoint: &str,
        check: Option<&str>,
        query: Option<&str>,
    ) -> Response<Body> {
        let checks = match endpoint {
            "/healthz" => &self.healthz,
            "/livez" => &self.livez,
            _ => &self.readyz,
        };
        // A check nobody registered is no route: a server of its own answers with its index
        // of paths and 404, as upstream's not-found handler does.
        if let Some(name) = check
            && self.aggregator.is_none()
            && !checks.contains(name)
        {
            return self.index(StatusCode::NOT_FOUND);
        }
        crate::server::health::respond(checks, check, query).await
    }

    /// The answer to a path under `/apis/<group>[/<version>]` that no server of the chain
    /// serves. Behind an aggregator (a host cluster's chain, as kube-apiserver's), Go's plain
    /// `404 page not found`, as kube-apiserver answers it: its not-found handler, not a
    /// Status. Otherwise the index of served paths with 404, as a generic server's not-found
    /// handler answers (sample-apiserver's).
    fn unserved_group(&self) -> Response<Body> {
        if self.aggregator.is_some() {
            raw(
                StatusCode::NOT_FOUND,
                "text/plain; charset=utf-8",
                "404 page not found\n",
            )
        } else {
            self.index(StatusCode::NOT_FOUND)
        }
    }

    /// The index of served paths (upstream answers unknown paths with it and 404).
    fn index(&self, code: StatusCode) -> Response<Body> {
        let groups = self.chain_groups();
        let mut paths: Vec<String> = [
            "/apis",
            "/healthz",
            "/livez",
            "/metrics",
            "/openapi/v2",
            "/openapi/v3",
            "/readyz",
            "/version",
        ]
        .iter()
        .map(|p| p.to_string())
        .collect();
        // `/api` only where the core group is served (sample-apiserver's index has none).
        if groups.iter().any(|g| g.name.is_empty()) {
            paths.push("/api".to_string());
        }
        for g in groups {
            if g.name.is_empty() {
                paths.extend(g.versions.iter().map(|v| format!("/api/{}", v.version)));
                continue;
            }
            paths.push(format!("/apis/{}", g.name));
            for v in &g.versions {
                paths.push(format!("/apis/{}/{}", g.name, v.version));
            }
        }
        paths.sort();
        let body = serde_json::to_vec_pretty(&json!({ "paths": paths })).unwrap_or_default();
        raw(code, "application/json", body)
    }

    fn documents(&self) -> Arc<Documents> {
        let generation = self.aggregator.as_ref().map_or(0, |a| a.generation());
        if let Some((g, docs)) = &*self.documents.read()
            && *g == generation
        {
            return docs.clone();
        }
        let docs = Arc::new(self.compute_documents());
        *self.documents.write() = Some((generation, docs.clone()));
        docs
    }

    fn compute_documents(&self) -> Documents {
        {
            let groups = self.chain_groups();
            let mut aggregated_doc = aggregated::group_discovery_list(&groups);
            let mut group_list_doc = legacy::api_group_list(&groups);
            let mut openapi_v2_doc =
                openapi::v2_document(&groups, &self.name, &self.version.git_version);
            if let Some(a) = &self.aggregator {
                a.merge_aggregated(&mut aggregated_doc);
                a.merge_group_list(&mut group_list_doc);
                a.merge_openapi_v2(&mut openapi_v2_doc);
            }
            let aggregated = serde_json::to_vec(&aggregated_doc).unwrap_or_default();
            let aggregated_etag = aggregated::etag(&aggregated);
            let group_list = serde_json::to_vec(&group_list_doc).unwrap_or_default();
            let openapi_v2 = serde_json::to_vec(&openapi_v2_doc).unwrap_or_default();
            let openapi_v2_etag = format!("\"{}\"", openapi::spec_hash(&openapi_v2));
            let mut openapi_v3 = Vec::new();
            for g in &groups {
                for v in &g.versions {
                    let doc =
                        serde_json::to_vec(&openapi::v3_group_version(g, v)).unwrap_or_default();
                    let hash = openapi::spec_hash(&doc);
                    openapi_v3.push((openapi::v3_key(&g.name, &v.version), doc, hash));
                }
            }
            if let Some(a) = &self.aggregator {
                for (key, doc) in a.openapi_v3_documents() {
                    if !openapi_v3.iter().any(|(k, _, _)| *k == key) {
                        let hash = openapi::spec_hash(&doc);
                        openapi_v3.push((key, doc, hash));
                    }
                }
            }
            let entries: Vec<(String, String)> = openapi_v3
                .iter()
                .map(|(k, _, h)| (k.clone(), h.clone()))
                .collect();
            let openapi_v3_root =
                serde_json::to_vec(&openapi::v3_root(&entries)).unwrap_or_default();
            Documents {
                aggregated,
                aggregated_etag,
                group_list,
                openapi_v2,
                openapi_v2_etag,
                openapi_v2_protobuf: std::sync::OnceLock::new(),
                openapi_v3,
                openapi_v3_root,
            }
        }
    }

    fn apis_root(&self, req: &Request<Body>) -> Response<Body> {
        let docs = self.documents();
        let accept = header_str(req, header::ACCEPT);
        if aggregated::wants_aggregated(accept) {
            return aggregated_response(req, &docs.aggregated, &docs.aggregated_etag);
        }
        // A server of its own groups names its address in each group (upstream's root
        // handler); an aggregator's list, like kube-aggregator's, does not.
        let mut list: Value = serde_json::from_slice(&docs.group_list).unwrap_or(Value::Null);
        if self.aggregator.is_none() {
            legacy::with_server_address(&mut list, request_authority(req));
        }
        let mut res = discovery_response(req, &list);
        res.headers_mut()
            .insert(header::VARY, HeaderValue::from_static("Accept"));
        res
    }

    /// `/api`: the core group's versions (aggregated: its `APIGroupDiscoveryList`).
    fn core_api(&self, req: &Request<Body>) -> Response<Body> {
        let groups = self.chain_groups();
        let accept = header_str(req, header::ACCEPT);
        if aggregated::wants_aggregated(accept) {
            let body =
                serde_json::to_vec(&aggregated::core_discovery_list(&groups)).unwrap_or_default();
            let etag = aggregated::etag(&body);
            return aggregated_response(req, &body, &etag);
        }
        match groups.iter().find(|g| g.name.is_empty()) {
            Some(core) => {
                let mut res = json_response(&legacy::api_versions(core, request_authority(req)));
                res.headers_mut()
                    .insert(header::VARY, HeaderValue::from_static("Accept"));
                res
            }
            // No core group is served here; like sample-apiserver, answer 404 (its not-found
            // handler's index of paths) so clients do not invent an empty core group.
            None => self.unserved_group(),
        }
    }

    fn openapi_v2(&self, req: &Request<Body>) -> Response<Body> {
        let docs = self.documents();
        if openapi::wants_v2_protobuf(header_str(req, header::ACCEPT)) {
            let (body, etag) = docs.openapi_v2_protobuf.get_or_init(|| {
                let doc: Value = serde_json::from_slice(&docs.openapi_v2).unwrap_or(Value::Null);
                let body = openapi::v2_protobuf(&doc);
                let etag = format!("\"{}\"", openapi::spec_hash(&body));
                (body, etag)
            });
            if header_str(req, header::IF_NONE_MATCH) == etag {
                return not_modified(etag);
            }
            let mut res = raw(StatusCode::OK, openapi::V2_PROTOBUF, body.clone());
            set_etag(&mut res, etag);
            return res;
        }
        if !accepts_json(header_str(req, header::ACCEPT)) {
            return raw(StatusCode::NOT_ACCEPTABLE, "text/plain", Vec::new());
        }
        if header_str(req, header::IF_NONE_MATCH) == docs.openapi_v2_etag {
            return not_modified(&docs.openapi_v2_etag);
        }
        let mut res = raw(StatusCode::OK, "application/json", docs.openapi_v2.clone());
        set_etag(&mut res, &docs.openapi_v2_etag);
        res
    }

    fn openapi_v3_root(&self) -> Response<Body> {
        raw(
            StatusCode::OK,
            "application/json",
            self.documents().openapi_v3_root.clone(),
        )
    }

    fn openapi_v3(&self, req: &Request<Body>, gv: &str) -> Response<Body> {
        let docs = self.documents();
        let Some((key, doc, hash)) = docs.openapi_v3.iter().find(|(k, _, _)| k == gv) else {
            return raw(StatusCode::NOT_FOUND, "text/plain", "404 page not found\n");
        };
        if !accepts_json(header_str(req, header::ACCEPT)) {
            return raw(StatusCode::NOT_ACCEPTABLE, "text/plain", Vec::new());
        }
        let parsed;
        let query = match req.extensions().get::<Query>() {
            Some(query) => query,
            None => {
                parsed = Query::parse(req.uri().query());
                &parsed
            }
        };
        let etag = format!("\"{hash}\"");
        if let Some(asked) = query.get("hash")
            && asked != hash
        {
            let mut res = raw(StatusCode::MOVED_PERMANENTLY, "text/plain", Vec::new());
            if let Ok(loc) = HeaderValue::from_str(&format!("/openapi/v3/{key}?hash={hash}")) {
                res.headers_mut().insert(header::LOCATION, loc);
            }
            return res;
        }
        if header_str(req, header::IF_NONE_MATCH) == etag {
            return not_modified(&etag);
        }
        let mut res = raw(StatusCode::OK, "application/json", doc.clone());
        set_etag(&mut res, &etag);
        if query.get("hash").is_some() {
            res.headers_mut().insert(
                header::CACHE_CONTROL,
                HeaderValue::from_static("public, immutable"),
            );
        }
        res
    }
}

trait IntoResponseNow {
    fn into_response_now(self) -> Response<Body>;
}

impl IntoResponseNow for ApiError {
    fn into_response_now(self) -> Response<Body> {
        axum::response::IntoResponse::into_response(self)
    }
}

fn header_str(req: &Request<Body>, name: header::HeaderName) -> &str {
    req.headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
}

/// The `host:port` the client addressed (HTTP/2 `:authority` or the `Host` header), or `""`.
fn request_authority(req: &Request<Body>) -> &str {
    match req.uri().authority() {
        Some(authority) => authority.as_str(),
        None => header_str(req, header::HOST),
    }
}

/// A legacy discovery document in the media type `Accept` asks for, as upstream's discovery
/// routes answer: its router's 406 for a type no route produces, the handler's 406 for one
/// it does not serve here (aggregated discovery below `/apis`, a conversion), else JSON or
/// YAML.
fn discovery_response(req: &Request<Body>, v: &Value) -> Response<Body> {
    use crate::endpoints::negotiation::{self, Output};
    let accept = req
        .headers()
        .get(header::ACCEPT)
        .and_then(|h| h.to_str().ok());
    if !negotiation::route_accepts(accept, negotiation::ROUTED_MEDIA_TYPES) {
        return negotiation::route_not_acceptable(negotiation::ROUTE_MEDIA_TYPES)
            .into_response_now();
    }
    match negotiation::negotiate(accept, None) {
        Ok(Output::Json) => json_response(v),
        Ok(Output::Yaml) => match serde_yaml_ng::to_string(v) {
            Ok(text) => raw(StatusCode::OK, "application/yaml", text),
            Err(e) => ApiError::internal(e).into_response_now(),
        },
        Ok(_) => ApiError::not_acceptable(negotiation::ROUTE_MEDIA_TYPES).into_response_now(),
        Err(e) => e.into_response_now(),
    }
}

fn json_response(v: &Value) -> Response<Body> {
    raw(
        StatusCode::OK,
        "application/json",
        serde_json::to_vec(v).unwrap_or_default(),
    )
}

fn aggregated_response(req: &Request<Body>, body: &[u8], etag: &str) -> Response<Body> {
    if header_str(req, header::IF_NONE_MATCH) == etag {
        return not_modified(etag);
    }
    let mut res = raw(
        StatusCode::OK,
        aggregated::AGGREGATED_CONTENT_TYPE,
        body.to_vec(),
    );
    set_etag(&mut res, etag);
    res.headers_mut()
        .insert(header::VARY, HeaderValue::from_static("Accept"));
    res.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("public"));
    res
}

fn set_etag(res: &mut Response<Body>, etag: &str) {
    if let Ok(v) = HeaderValue::from_str(etag) {
        res.headers_mut().insert(header::ETAG, v);
    }
    res.headers_mut()
        .insert(header::VARY, HeaderValue::from_static("Accept"));
}

/// A 304 carries no Content-Type: clients (kubectl's HTTP cache among them) merge the 304's
/// headers into the cached response, and a wrong type would relabel the cached body.
fn not_modified(etag: &str) -> Response<Body> {
    let mut res = Response::new(Body::empty());
    *res.status_mut() = StatusCode::NOT_MODIFIED;
    set_etag(&mut res, etag);
    res
}

/// Whether an OpenAPI request accepts JSON (no Accept header means anything).
fn accepts_json(accept: &str) -> bool {
    accept.is_empty()
        || accept.split(',').any(|r| {
            let base = r.split(';').next().unwrap_or("").trim();
            matches!(base, "application/json" | "*/*" | "application/*")
        })
}
