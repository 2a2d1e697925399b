//! The HTTP handlers of resource paths: verbs, bodies, options and responses.

use std::sync::Arc;

use axum::body::Body;
use bytes::Bytes;
use http::{Method, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Limited};
use serde_json::Value;

use crate::endpoints::also_authorize;
use crate::endpoints::apply_patch;
use crate::endpoints::audit_hook::AuditHook;
use crate::endpoints::blocking;
use crate::endpoints::body_checks;
use crate::endpoints::field_manager;
use crate::endpoints::negotiation::{self, BodyFormat, Output};
use crate::endpoints::patch;
use crate::endpoints::query::Query;
use crate::endpoints::request_info::{ResourcePath, Verb};
use crate::endpoints::response;
use crate::endpoints::scale;
use crate::endpoints::warning;
use crate::error::ApiError;
use crate::registry::rest::options::DeleteOptions;
use crate::registry::rest::{DeleteOutcome, RequestContext, RestStorage};

/// The largest request body accepted (3 MiB, as upstream).
pub(crate) const MAX_BODY_BYTES: usize = 3 * 1024 * 1024;

/// Serves one request to a resource path, doing what `verb` says: the verb the request was
/// authorized for (see [`Verb`]), never one read again from the method or the query.
pub async fn handle(
    storage: Arc<dyn RestStorage>,
    mut ctx: RequestContext,
    mut req: Request<Body>,
    path: &ResourcePath,
    verb: Verb,
) -> Response<Body> {
    // Decoded once when the request arrived (the handler chain keeps it in the extensions).
    let query = match req.extensions_mut().remove::<Query>() {
        Some(query) => query,
        None => Query::parse(req.uri().query()),
    };
    let accept = req
        .headers()
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok());
    // The router's check first: an `Accept` of nothing any route produces never reaches the
    // handler (no deprecation warning either).
    if !negotiation::route_accepts(accept, negotiation::ROUTED_MEDIA_TYPES) {
        let produces = if path.name.is_none() && req.method() == Method::GET {
            negotiation::LIST_ROUTE_MEDIA_TYPES
        } else {
            negotiation::ROUTE_MEDIA_TYPES
        };
        return error_response(negotiation::route_not_acceptable(produces));
    }
    let output = match negotiation::negotiate(accept, query.get("includeObject")) {
        Ok(o) => o,
        Err(e) => {
            // The route matched: its deprecation warning comes with the 406, as upstream's
            // route handler adds it before negotiating.
            let mut res = error_response(e);
            add_warnings(
                &mut res,
                storage.deprecation_warning().map(str::to_string),
                Vec::new(),
            );
            return res;
        }
    };
    let info = storage.info();
    // An encoded slash in a name is a path separator to upstream's router, whose routes
    // then match nothing.
    if path
        .name
        .as_deref()
        .is_some_and(|n| n.contains("%2F") || n.contains("%2f"))
    {
        return error_response(ApiError::route_not_found());
    }
    // The path must fit the resource's scope.
    if info.namespaced() {
        ctx.namespace = path.namespace.clone();
    } else if path.namespace.is_some() {
        return error_response(ApiError::route_not_found());
    }
    let warnings = body_checks::Collected::default();
    let mut routed = true;
    let mut res = match dispatch(&storage, &ctx, req, path, verb, &query, &output, &warnings).await
    {
        Ok(res) => res,
        Err(e) => {
            routed = !is_route_miss(&e);
            response::error(&output, &e)
        }
    };
    let mut texts = warnings.texts();
    texts.extend(ctx.notes.warnings());
    // A path or method no route serves (404 and 405 of the router, as an unknown
    // subresource or a HEAD) never reached the version's handler: no deprecation warning,
    // as upstream's, whose warning belongs to the route.
    let deprecation = storage
        .deprecation_warning()
        .filter(|_| routed)
        .map(str::to_string);
    add_warnings(&mut res, deprecation, texts);
    res
}

/// Upstream's refusal of a read's `export` parameter (removed in 1.14): 400 when it is true,
/// 400 when it is no boolean, ignored when false (upstream's `GetResource`).
fn check_export(query: &Query) -> Result<(), ApiError> {
    let Some(value) = query.get("export") else {
        return Ok(());
    };
    match value {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Err(ApiError::bad_request(
            "the export parameter, deprecated since v1.14, is no longer supported",
        )),
        "" | "0" | "f" | "F" | "FALSE" | "false" | "False" => Ok(()),
        other => Err(ApiError::bad_request(format!(
            "the export parameter cannot be parsed: strconv.ParseBool: parsing {}: invalid syntax",
            crate::quote::go_quote(other)
        ))),
    }
}

/// Whether `e` is the router's answer to a path, method or body type it serves no route for.
fn is_route_miss(e: &ApiError) -> bool {
    *e == ApiError::route_not_found()
        || *e == ApiError::method_not_allowed()
        || *e == negotiation::route_unsupported_media_type()
}

/// Adds `Warning` headers: the deprecation warning first, then `texts`.
fn add_warnings(res: &mut Response<Body>, deprecation: Option<String>, mut texts: Vec<String>) {
    if let Some(text) = deprecation {
        texts.insert(0, text);
    }
    for value in warning::header_values(&texts) {
        res.headers_mut().append(header::WARNING, value);
    }
}

fn error_response(e: ApiError) -> Response<Body> {
    axum::response::IntoResponse::into_response(e)
}

#[allow(clippy::too_many_arguments)]
async fn dispatch(
    storage: &Arc<dyn RestStorage>,
    ctx: &RequestContext,
    req: Request<Body>,
    path: &ResourcePath,
    verb: Verb,
    query: &Query,
    output: &Output,
    warnings: &body_checks::Collected,
) -> Result<Response<Body>, ApiError> {
    // Borrowed for the request; only a watch stream, which outlives it, takes a copy.
    let info = storage.info();
    let name = path.name.as_deref();
    let sub = path.subresource.as_deref();
    if let (Some(s), Some(n)) = (sub, name)
        && !path.legacy_watch
        && let Some(custom) = storage
            .custom_subresources()
            .iter()
            .find(|c| c.info().name == s)
    {
        // Boxed, like `scale` below: a rare route's future would otherwise be part of every
        // request's future, which is moved into its box at each request.
        return Box::pin(super::subresource::serve(
            custom.as_ref(),
            ctx,
            req,
            n,
            verb,
            output,
        ))
        .await;
    }
    if let Some(s) = sub
        && !info.subresources().contains(&s)
    {
        return Err(ApiError::route_not_found());
    }
    let collection_allowed = info.namespaced() && path.namespace.is_some() || !info.namespaced();
    let watch = verb == Verb::Watch;
    if watch && sub.is_some() {
        // No subresource is watched (upstream has no such route).
        return Err(ApiError::route_not_found());
    }
    // Reads are GETs (upstream registers no HEAD), and the legacy `/watch/` prefix serves
    // nothing but a GET watch of a collection or an object: any other method there is
    // authorized as a `watch` (as upstream reads it) and refused here, as upstream's router
    // refuses it.
    if matches!(verb, Verb::Get | Verb::List | Verb::Watch) && req.method() != Method::GET {
        return Err(ApiError::method_not_allowed());
    }
    if path.legacy_watch && !watch {
        // The authorizer read the prefix as the verb; a reading that disagrees is served
        // nothing.
        return Err(ApiError::method_not_allowed());
    }
    if watch && matches!(output, Output::Yaml) {
        // Watch streams are JSON only.
        return Err(ApiError::not_acceptable(
            negotiation::SUPPORTED_STREAM_MEDIA_TYPES,
        ));
    }
    if watch && matches!(output, Output::PartialObjectMetadataList) {
        // Each event carries one object.
        return Err(negotiation::partial_metadata_mismatch(info, true));
    }
    if let (Some("scale"), Some(n), Some(paths)) = (sub, name, info.scale.as_ref()) {
        return Box::pin(scale(storage, ctx, req, verb, n, paths, query, output)).await;
    }
    match (verb, name) {
        (Verb::Watch, None) => {
            let mut opts = query.list_options(true)?;
            default_watch_timeout(&mut opts, &req);
            let stream = storage.watch(ctx, &opts).await?;
            Ok(watch_response(*output, info, stream))
        }
        (Verb::Watch, Some(n)) if path.legacy_watch => {
            let mut opts = query.list_options(true)?;
            default_watch_timeout(&mut opts, &req);
            opts.field_selector
                .requirements
                .push(crate::selector::FieldRequirement {
                    field: "metadata.name".into(),
                    negated: false,
                    value: n.to_string(),
                });
            let stream = storage.watch(ctx, &opts).await?;
            Ok(watch_response(*output, info, stream))
        }
        (Verb::List, None) => {
            let opts = query.list_options(false)?;
            let list = storage.list(ctx, &opts).await?;
            response::list(output, info, list)
        }
        (Verb::Get, Some(n)) => {
            check_export(query)?;
            // A read's resourceVersion must be a number when given (upstream fails it, as a
            // 500; a client's mistake is a 400 here), though any number reads the latest.
            if let Some(rv) = query.get("resourceVersion").filter(|rv| !rv.is_empty()) {
                crate::endpoints::query::parse_resource_version(rv)?;
            }
            let obj = storage.get(ctx, n).await?;
            response::object(StatusCode::OK, output, info, obj)
        }
        (Verb::Create, None) if collection_allowed => {
            let mut opts = query.write_options("CreateOptions")?;
            field_manager::check_write("CreateOptions", &mut opts, user_agent(&req))?;
            let audit = AuditHook::of(req.extensions());
            let body = read_write_body(req, storage.as_ref(), &opts, warnings).await?;
            audit_object(audit.as_ref(), &body);
            let obj = storage.create(ctx, body, &opts).await?;
            response::object(StatusCode::CREATED, output, info, obj)
        }
        (Verb::Update, Some(n)) => {
            let mut opts = query.write_options("UpdateOptions")?;
            field_manager::check_write("UpdateOptions", &mut opts, user_agent(&req))?;
            let audit = AuditHook::of(req.extensions());
            let body = read_write_body(req, storage.as_ref(), &opts, warnings).await?;
            audit_object(audit.as_ref(), &body);
            let obj = storage.update(ctx, n, sub, body, &opts).await?;
            response::object(StatusCode::OK, output, info, obj)
        }
        (Verb::Patch, Some(n)) => {
            let mut opts = query.write_options("PatchOptions")?;
            let kind = patch::PatchKind::from_content_type(&content_type(&req))?;
            field_manager::check_patch(kind, &mut opts, user_agent(&req))?;
            let audit = AuditHook::of(req.extensions());
            let body = read_body(req).await?;
            if kind == patch::PatchKind::Apply {
                let applied = apply_patch::apply(
                    storage,
                    ctx,
                    n,
                    sub,
                    &body,
                    &opts,
                    warnings,
                    audit.as_ref(),
                )
                .await?;
                let code = if applied.created {
                    StatusCode::CREATED
                } else {
                    StatusCode::OK
                };
                return response::object(code, output, info, applied.object);
            }
            let schema = storage.structural_schema();
            let doc = patch::PatchDocument::parse(kind, &body, schema.clone())?;
            audit_patch(audit.as_ref(), &body);
            let mode = opts.field_validation;
            let apply = move |current: Value| {
                let patched = doc.apply(current)?;
                body_checks::check_patch(&schema, mode, kind, &body, &patched, warnings)?;
                Ok(patched)
            };
            let obj = storage.patch(ctx, n, sub, &apply, &opts).await?;
            response::object(StatusCode::OK, output, info, obj)
        }
        (Verb::Delete, Some(n)) if sub.is_none() => {
            // Kept for the further check an unsafe delete needs (moved, not copied).
            let mut req = req;
            let mut extensions = std::mem::take(req.extensions_mut());
            let (query_opts, body) = (query.delete_options()?, read_body(req).await?);
            let opts = merge_delete_body(query_opts, &body)?;
            if opts.ignore_store_read_error_with_cluster_breaking_potential == Some(true) {
                // The user the request authenticated as, moved to the context by the server.
                extensions.insert(ctx.user.clone());
                also_authorize::unsafe_delete_allowed(&extensions, info, n).await?;
            }
            match storage.delete(ctx, n, &opts).await? {
                DeleteOutcome::Deleted(status) => {
                    Ok(response::status(StatusCode::OK, output, &status))
                }
                DeleteOutcome::Pending(obj) => response::object(StatusCode::OK, output, info, obj),
            }
        }
        (Verb::DeleteCollection, None) if collection_allowed => {
            let list_opts = query.list_options(false)?;
            let (query_opts, body) = (query.delete_options()?, read_body(req).await?);
            let opts = merge_delete_body(query_opts, &body)?;
            let list = storage.delete_collection(ctx, &list_opts, &opts).await?;
            response::list(output, info, list)
        }
        _ => Err(ApiError::method_not_allowed()),
    }
}

/// Serves the `scale` subresource: the object read and written as an `autoscaling/v1 Scale`.
#[allow(clippy::too_many_arguments)]
async fn scale(
    storage: &Arc<dyn RestStorage>,
    ctx: &RequestContext,
    req: Request<Body>,
    verb: Verb,
    name: &str,
    paths: &crate::resource::ScaleSubresource,
    query: &Query,
    output: &Output,
) -> Result<Response<Body>, ApiError> {
    let info = scale::scale_info(storage.info());
    let to_scale = |bytes: &Bytes| -> Result<Bytes, ApiError> {
        let object: Value = serde_json::from_slice(bytes).map_err(ApiError::internal)?;
        let s = scale::from_object(paths, &object)?;
        Ok(Bytes::from(
            serde_json::to_vec(&s).map_err(ApiError::internal)?,
        ))
    };
    let updated = match verb {
        Verb::Get => {
            let obj = storage.get(ctx, name).await?;
            return response::object(StatusCode::OK, output, &info, to_scale(&obj)?);
        }
        Verb::Update => {
            let mut opts = query.write_options("UpdateOptions")?;
            field_manager::check_write("UpdateOptions", &mut opts, user_agent(&req))?;
            let audit = AuditHook::of(req.extensions());
            let desired = read_object(req).await?;
            audit_object(audit.as_ref(), &desired);
            let write =
                move |current: Value| scale::apply_to_object(paths, name, &desired, current);
            storage
                .patch(ctx, name, Some("scale"), &write, &opts)
                .await?
        }
        Verb::Patch => {
            let mut opts = query.write_options("PatchOptions")?;
            let kind = patch::PatchKind::from_content_type(&content_type(&req))?;
            field_manager::check_patch(kind, &mut opts, user_agent(&req))?;
            let audit = AuditHook::of(req.extensions());
            let body = read_body(req).await?;
            if kind == patch::PatchKind::Apply {
                let updated = apply_patch::apply_scale(
                    storage,
                    ctx,
                    name,
                    paths,
                    &body,
                    &opts,
                    audit.as_ref(),
                )
                .await?;
                return response::object(StatusCode::OK, output, &info, to_scale(&updated)?);
            }
            // A Scale has no lists: strategic merge patches merge it as maps.
            let doc = patch::PatchDocument::parse(kind, &body, Default::default())?;
            audit_patch(audit.as_ref(), &body);
            let write = move |current: Value| {
                let desired = doc.apply(scale::from_object(paths, &current)?)?;
                scale::apply_to_object(paths, name, &desired, current)
            };
            storage
                .patch(ctx, name, Some("scale"), &write, &opts)
                .await?
        }
        _ => return Err(ApiError::method_not_allowed()),
    };
    response::object(StatusCode::OK, output, &info, to_scale(&updated)?)
}

/// The request's User-Agent, if readable.
fn user_agent(req: &Request<Body>) -> Option<&str> {
    req.headers()
        .get(header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
}

/// The request's Content-Type, or `""`.
fn content_type(req: &Request<Body>) -> String {
    req.headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string()
}

/// The storage's protobuf decoder, when the body is protobuf and the storage has one.
fn protobuf_decoder(
    storage: &dyn RestStorage,
    req: &Request<Body>,
) -> Option<crate::registry::rest::ProtobufDecoder> {
    let content_type = req.headers().get(header::CONTENT_TYPE)?.to_str().ok()?;
    let essence = content_type.split(';').next().unwrap_or("").trim();
    if essence.eq_ignore_ascii_case(negotiation::PROTOBUF) {
        storage.protobuf_decoder()
    } else {
        None
    }
}

/// Reads the object body of a create or update: protobuf when the request says so and the
/// storage decodes it (built-in kinds, as upstream accepts them from client-go's typed
/// clients), otherwise JSON or YAML with `fieldValidation` applied. Protobuf has no unknown
/// fields to report: fields it does not know are skipped, as upstream's decoder skips them.
async fn read_write_body(
    req: Request<Body>,
    storage: &dyn RestStorage,
    opts: &crate::registry::rest::options::WriteOptions,
    warnings: &body_checks::Collected,
) -> Result<Value, ApiError> {
    match protobuf_decoder(storage, &req) {
        Some(decode) => {
            let body = read_body(req).await?;
            blocking::run(body.len(), move || decode(&body)).await
        }
        None => read_checked_object(req, storage, opts, warnings).await,
    }
}

/// Reads the whole body, refusing more than [`MAX_BODY_BYTES`] with 413.
pub(crate) async fn read_body(req: Request<Body>) -> Result<Bytes, ApiError> {
    let limited = Limited::new(req.into_body(), MAX_BODY_BYTES);
    match limited.collect().await {
        Ok(c) => Ok(c.to_bytes()),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => {
            Err(ApiError::too_large(&format!("limit is {MAX_BODY_BYTES}")))
        }
        Err(e) => Err(ApiError::bad_request(format!(
            "failed to read the request body: {e}"
        ))),
    }
}

/// Hands the decoded object of a create or update to the request's audit event, if audited.
fn audit_object(audit: Option<&AuditHook>, object: &Value) {
    if let Some(hook) = audit {
        hook.0.object(object);
    }
}

/// Hands a (JSON, already validated) patch body to the request's audit event, if it records
/// bodies.
fn audit_patch(audit: Option<&AuditHook>, body: &[u8]) {
    if let Some(hook) = audit.filter(|h| h.0.records_body())
        && let Ok(patch) = serde_json::from_slice(body)
    {
        hook.0.patch(patch);
    }
}

/// The format of an object body, from the request's Content-Type.
fn object_body_format(req: &Request<Body>) -> Result<BodyFormat, ApiError> {
    negotiation::body_format(
        req.headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok()),
    )
}

/// Reads and decodes an object body (JSON or YAML by Content-Type); a large one is decoded
/// off the async workers.
async fn read_object(req: Request<Body>) -> Result<Value, ApiError> {
    let format = object_body_format(&req)?;
    let body = read_body(req).await?;
    blocking::run(body.len(), move || decode_object(format, &body)).await
}

/// Reads and decodes an object body of a create or update, applying `fieldValidation`; a
/// large one is decoded and checked off the async workers.
async fn read_checked_object(
    req: Request<Body>,
    storage: &dyn RestStorage,
    opts: &crate::registry::rest::options::WriteOptions,
    warnings: &body_checks::Collected,
) -> Result<Value, ApiError> {
    let format = object_body_format(&req)?;
    let body = read_body(req).await?;
    let mode = opts.field_validation;
    let (info, schema) = (storage.info(), storage.structural_schema());
    let decode = move |body: &[u8],
                       info: &crate::resource::ResourceInfo,
                       schema: &crate::schema::StructuralSchema,
                       warnings: &body_checks::Collected|
          -> Result<Value, ApiError> {
        decode_checked(format, mode, body, info, schema, warnings)
    };
    if body.len() <= blocking::INLINE_BODY_BYTES {
        return decode(&body, info, &schema, warnings);
    }
    let (info, warnings) = (info.clone(), warnings.clone());
    blocking::run(body.len(), move || decode(&body, &info, &schema, &warnings)).await
}

/// Decodes a create or update body and applies `fieldValidation` to it: a JSON body is
/// decoded and checked in one pass over its bytes, with the same value and errors as
/// [`decode_object`].
fn decode_checked(
    format: BodyFormat,
    mode: crate::registry::rest::options::FieldValidation,
    body: &[u8],
    info: &crate::resource::ResourceInfo,
    schema: &crate::schema::StructuralSchema,
    warnings: &body_checks::Collected,
) -> Result<Value, ApiError> {
    use crate::registry::field_validation::FieldIssues;
    use crate::registry::rest::options::FieldValidation;
    let (object, issues) = match (format, mode) {
        (_, FieldValidation::Ignore) => return decode_object(format, body),
        (BodyFormat::Json, _) => {
            let (object, issues) =
                FieldIssues::decode_json(body, schema).map_err(json_parse_error)?;
            (only_object(object)?, issues)
        }
        (BodyFormat::Yaml, _) => {
            let object = decode_object(format, body)?;
            let issues = FieldIssues::from_yaml(body, &object, schema);
            (object, issues)
        }
    };
    body_checks::answer(info, mode, issues, &object, warnings)?;
    Ok(object)
}

/// Decodes an object body; malformed input answers 400 as upstream.
pub fn decode_object(format: BodyFormat, body: &[u8]) -> Result<Value, ApiError> {
    let v: Value = match format {
        BodyFormat::Json => serde_json::from_slice(body).map_err(json_parse_error)?,
        BodyFormat::Yaml => crate::yaml_body::from_slice(body).map_err(|e| {
            ApiError::bad_request(format!("couldn't get version/kind; yaml parse error: {e}"))
        })?,
    };
    only_object(v)
}

/// Upstream's 400 for a body that is not JSON.
fn json_parse_error(e: serde_json::Error) -> ApiError {
    ApiError::bad_request(format!("couldn't get version/kind; json parse error: {e}"))
}

/// A decoded body that must be an object: anything else answers upstream's 400.
fn only_object(v: Value) -> Result<Value, ApiError> {
    if !v.is_object() {
        return Err(ApiError::bad_request(
            "couldn't get version/kind; json parse error: the body is not a JSON object",
        ));
    }
    Ok(v)
}

/// A DeleteOptions request body (`meta.k8s.io/v1` or the legacy `v1`).
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct DeleteOptionsBody {
    kind: Option<String>,
    api_version: Option<String>,
    grace_period_seconds: Option<i64>,
    propagation_policy: Option<String>,
    orphan_dependents: Option<bool>,
    #[serde(default)]
    dry_run: Vec<String>,
    preconditions: Option<PreconditionsBody>,
    ignore_store_read_error_with_cluster_breaking_potential: Option<bool>,
}

/// `preconditions` of a DeleteOptions body.
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct PreconditionsBody {
    uid: Option<String>,
    resource_version: Option<String>,
}

/// Merges a DeleteOptions body (if any) into the options from the query, then validates them
/// as upstream does (422 `DeleteOptions.meta.k8s.io`).
fn merge_delete_body(mut opts: DeleteOptions, body: &[u8]) -> Result<DeleteOptions, ApiError> {
    if !body.iter().all(u8::is_ascii_whitespace) {
        let b: DeleteOptionsBody = serde_json::from_slice(body)
            .map_err(|e| ApiError::bad_request(format!("invalid DeleteOptions body: {e}")))?;
        if let Some(kind) = b
            .kind
            .as_deref()
            .filter(|k| !k.is_empty() && *k != "DeleteOptions")
        {
            return Err(ApiError::bad_request(format!(
                "invalid DeleteOptions body: the kind is {kind:?}, not \"DeleteOptions\""
            )));
        }
        if let Some(v) = b
            .api_version
            .as_deref()
            .filter(|v| !matches!(*v, "" | "v1" | "meta.k8s.io/v1"))
        {
            return Err(ApiError::bad_request(format!(
                "invalid DeleteOptions body: apiVersion {v:?} is not served; use \"meta.k8s.io/v1\""
            )));
        }
        if b.grace_period_seconds.is_some() {
            opts.grace_period_seconds = b.grace_period_seconds;
        }
        if b.propagation_policy.is_some() {
            opts.propagation_policy = b.propagation_policy;
        }
        if b.orphan_dependents.is_some() {
            opts.orphan_dependents = b.orphan_dependents;
        }
        for d in &b.dry_run {
            if d == "All" {
                opts.dry_run = true;
            } else {
                return Err(ApiError::bad_request(format!(
                    "dryRun: Unsupported value: {d:?}: supported values: \"All\""
                )));
            }
        }
        if b.ignore_store_read_error_with_cluster_breaking_potential
            .is_some()
        {
            opts.ignore_store_read_error_with_cluster_breaking_potential =
                b.ignore_store_read_error_with_cluster_breaking_potential;
        }
        if let Some(p) = b.preconditions {
            opts.precondition_uid = p.uid;
            opts.precondition_resource_version = p.resource_version;
        }
    }
    opts.validate()?;
    Ok(opts)
}

/// A watch without `timeoutSeconds` lasts as `--min-request-timeout` says (carried by the
/// handler chain in the request's extensions).
fn default_watch_timeout(
    opts: &mut crate::registry::rest::options::ListOptions,
    req: &Request<Body>,
) {
    if opts.timeout_seconds.is_none()
        && let Some(min) = req
            .extensions()
            .get::<super::watch_timeout::MinRequestTimeout>()
    {
        opts.timeout_seconds = Some(min.pick_seconds());
    }
}

/// Streams watch events as newline-delimited JSON (`{"type":…,"object":…}`).
fn watch_response(
    output: Output,
    info: &crate::resource::ResourceInfo,
    stream: crate::registry::rest::EventStream,
) -> Response<Body> {
    let body = super::watch_body::WatchBody::new(stream, output, info);
    response::raw(StatusCode::OK, "application/json", Body::new(body))
}
