//! Server-side apply (`application/apply-patch+yaml`) on a resource and its `status` and
//! `scale` subresources: the configuration is merged into the live object by
//! [`crate::apply`], which keeps `metadata.managedFields`; an absent object is created.

use std::sync::Arc;

use bytes::Bytes;
use serde_json::{Value, json};

use crate::apply::{self, ManagedFields};
use crate::endpoints::audit_hook::AuditHook;
use crate::endpoints::blocking;
use crate::endpoints::body_checks::Collected;
use crate::endpoints::scale;
use crate::error::{ApiError, StatusReason};
use crate::registry::field_validation::{FieldIssues, unknown_fields};
use crate::registry::rest::options::{FieldValidation, WriteOptions};
use crate::registry::rest::{RequestContext, RestStorage};
use crate::registry::versions::VersionedStorage;
use crate::resource::{ResourceInfo, ScaleSubresource};
use crate::schema::{Field, SchemaNode, StructuralSchema};
use crate::yaml_body;

/// How many times an apply goes round when the object appears (or disappears again) between
/// its read and its write.
const APPLY_RETRIES: usize = 5;

/// What an apply did: `created` answers 201, otherwise 200.
pub struct Applied {
    /// The stored object.
    pub object: Bytes,
    /// Whether the apply created the object.
    pub created: bool,
}

/// Parses an apply body (YAML, or JSON read as YAML) into an object and applies
/// `fieldValidation`: duplicate keys and unknown fields are warnings (`Warn`) or a 400
/// (`Strict`); unknown fields are dropped before the merge, so nobody owns them. The whole
/// configuration is handed to the audit event, if it records bodies.
#[allow(clippy::too_many_arguments)]
fn read_config(
    info: &ResourceInfo,
    schema: &StructuralSchema,
    name: &str,
    namespace: Option<&str>,
    body: &[u8],
    mode: FieldValidation,
    warnings: &Collected,
    audit: Option<&AuditHook>,
) -> Result<Value, ApiError> {
    let mut config: Value = yaml_body::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))?;
    if !config.is_object() {
        return Err(ApiError::bad_request(
            "error decoding YAML: an apply patch must be an object",
        ));
    }
    if let Some(hook) = audit.filter(|h| h.0.records_body()) {
        hook.0.patch(config.clone());
    }
    let duplicates = FieldIssues::apply_patch(body);
    let unknown = unknown_fields(&config, schema);
    if mode == FieldValidation::Strict {
        if !duplicates.is_empty() {
            return Err(ApiError::bad_request(duplicates.apply_strict_message()));
        }
        if let Some(first) = unknown.first() {
            let ns = namespace.map(|n| format!("{n}/")).unwrap_or_default();
            return Err(ApiError::bad_request(format!(
                "failed to create typed patch object ({ns}{name}; {}, Kind={}): .{first}: field not declared in schema",
                info.api_version(),
                info.kind
            )));
        }
    } else if mode == FieldValidation::Warn {
        let mut texts = duplicates.warnings();
        texts.extend(unknown.iter().map(|f| format!("unknown field {f:?}")));
        warnings.set(texts);
    }
    prune(&mut config, schema.root(), true);
    Ok(config)
}

/// Removes the fields the schema does not keep: keys that are neither declared fields, map
/// entries nor preserved (`metadata` is left to the store).
fn prune(value: &mut Value, node: SchemaNode<'_>, top: bool) {
    match value {
        Value::Object(map) => {
            map.retain(|k, _| {
                (top && matches!(k.as_str(), "apiVersion" | "kind" | "metadata"))
                    || matches!(
                        node.field(k),
                        Field::Declared(_) | Field::Entry(_) | Field::Preserved
                    )
            });
            for (k, v) in map.iter_mut() {
                if top && k == "metadata" {
                    continue;
                }
                if let Some(child) = node.field(k).node() {
                    prune(v, child, false);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item) = node.items() {
                for value in items {
                    prune(value, item, false);
                }
            }
        }
        _ => {}
    }
}

/// The converter of a resource served in several versions, if it is one.
fn versions_of(storage: &Arc<dyn RestStorage>) -> Option<&dyn apply::VersionConverter> {
    storage
        .downcast_ref::<VersionedStorage>()
        .map(|v| v as &dyn apply::VersionConverter)
}

/// The apply of `config` to `live` (`None`: no object yet) as the options' manager; the
/// fields of managers of other versions are compared in their version (`versions`).
#[allow(clippy::too_many_arguments)]
fn apply_to(
    versions: Option<&dyn apply::VersionConverter>,
    info: &ResourceInfo,
    schema: &StructuralSchema,
    subresource: Option<&str>,
    live: Option<&Value>,
    config: &Value,
    opts: &WriteOptions,
) -> Result<Value, ApiError> {
    let api_version = info.api_version();
    check_object_type(config, &api_version, &info.kind)?;
    let ctx = apply::Context {
        schema,
        manager: &opts.field_manager,
        api_version: &api_version,
        subresource,
        reset_fields: apply::reset_fields(subresource, info.status_subresource),
        now: jiff::Timestamp::now(),
    };
    let managed = match live {
        Some(l) => ManagedFields::from_object(l).map_err(apply::ApplyError::from)?,
        None => ManagedFields::new(),
    };
    let force = opts.force.unwrap_or(false);
    let (mut object, managed) = apply::apply_across(&ctx, versions, live, config, managed, force)?;
    managed.write_to(&mut object);
    Ok(object)
}

/// Upstream's first check of an apply (its field manager's `versionCheckManager`): the
/// configuration's apiVersion and kind are the endpoint's, else 400
/// `invalid object type: <group>/<version>, Kind=<kind>` (Go's `GroupVersionKind` text).
fn check_object_type(config: &Value, api_version: &str, kind: &str) -> Result<(), ApiError> {
    let given_version = config
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    let given_kind = config.get("kind").and_then(Value::as_str).unwrap_or("");
    if given_version == api_version && given_kind == kind {
        return Ok(());
    }
    let (group, version) = given_version.split_once('/').unwrap_or(("", given_version));
    Err(ApiError::bad_request(format!(
        "invalid object type: {group}/{version}, Kind={given_kind}"
    )))
}

/// Applies `body` to object `name` (or its `status`); creates the object when absent. A large
/// body is decoded and checked off the async workers.
#[allow(clippy::too_many_arguments)]
pub async fn apply(
    storage: &Arc<dyn RestStorage>,
    ctx: &RequestContext,
    name: &str,
    subresource: Option<&str>,
    body: &Bytes,
    opts: &WriteOptions,
    warnings: &Collected,
    audit: Option<&AuditHook>,
) -> Result<Applied, ApiError> {
    let info = storage.info();
    let schema = storage.structural_schema();
    let namespace = ctx.namespace.as_deref();
    let mode = opts.field_validation;
    let config = if body.len() <= blocking::INLINE_BODY_BYTES {
        read_config(info, &schema, name, namespace, body, mode, warnings, audit)?
    } else {
        let (info, name, namespace) = (info.clone(), name.to_string(), ctx.namespace.clone());
        let (body, warnings, audit) = (body.clone(), warnings.clone(), audit.cloned());
        let schema = schema.clone();
        blocking::run(body.len(), move || {
            let namespace = namespace.as_deref();
            read_config(
                &info,
                &schema,
                &name,
                namespace,
                &body,
                mode,
                &warnings,
                audit.as_ref(),
            )
        })
        .await?
    };
    if let Some(n) = config.pointer("/metadata/name").and_then(Value::as_str)
        && !n.is_empty()
        && n != name
    {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({n}) does not match the name on the URL ({name})"
        )));
    }
    let opts = WriteOptions {
        apply: true,
        ..opts.clone()
    };
    let versions = versions_of(storage);
    let write = |live: Value| {
        apply_to(
            versions,
            info,
            &schema,
            subresource,
            Some(&live),
            &config,
            &opts,
        )
    };
    // Created by another client between the read that found no object and the create: apply
    // to the object that now exists, as upstream's patch handler does (its guaranteed update
    // reads the object again), conflicts computed against that object's managed fields.
    let mut attempt = 0;
    loop {
        match storage.patch(ctx, name, subresource, &write, &opts).await {
            Ok(object) => {
                return Ok(Applied {
                    object,
                    created: false,
                });
            }
            Err(e) if subresource.is_none() && e.is(StatusReason::NotFound) => {
                let mut object = apply_to(versions, info, &schema, None, None, &config, &opts)?;
                object["metadata"]["name"] = json!(name);
                match storage.create(ctx, object, &opts).await {
                    Ok(object) => {
                        return Ok(Applied {
                            object,
                            created: true,
                        });
                    }
                    Err(e) if e.is(StatusReason::AlreadyExists) && attempt < APPLY_RETRIES => {
                        attempt += 1;
                    }
                    Err(e) => return Err(e),
                }
            }
            Err(e) => return Err(e),
        }
    }
}

/// Applies a `Scale` configuration: its `spec.replicas` is applied to the object at the
/// scale's replicas path, owned by the manager with subresource `scale`. A large body is
/// decoded off the async workers.
pub async fn apply_scale(
    storage: &Arc<dyn RestStorage>,
    ctx: &RequestContext,
    name: &str,
    paths: &ScaleSubresource,
    body: &Bytes,
    opts: &WriteOptions,
    audit: Option<&AuditHook>,
) -> Result<Bytes, ApiError> {
    let info = storage.info();
    let desired: Value = {
        let body = body.clone();
        blocking::run(body.len(), move || {
            yaml_body::from_slice(&body)
                .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))
        })
        .await?
    };
    if let Some(hook) = audit.filter(|h| h.0.records_body()) {
        hook.0.patch(desired.clone());
    }
    let skeleton = json!({
        "apiVersion": info.api_version(),
        "kind": info.kind,
        "metadata": {"name": name},
    });
    let mut config = scale::apply_to_object(paths, name, &desired, skeleton)?;
    if let Some(meta) = config.get_mut("metadata").and_then(Value::as_object_mut) {
        // A resourceVersion in the Scale is a precondition the live object must meet.
        meta.remove("resourceVersion");
    }
    let precondition = desired
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .map(str::to_string);
    let schema = storage.structural_schema();
    let opts = WriteOptions {
        apply: true,
        ..opts.clone()
    };
    let write = |live: Value| {
        let mut object = apply_to(
            versions_of(storage),
            info,
            &schema,
            Some("scale"),
            Some(&live),
            &config,
            &opts,
        )?;
        if let Some(rv) = &precondition {
            object["metadata"]["resourceVersion"] = json!(rv);
        }
        Ok(object)
    };
    storage.patch(ctx, name, Some("scale"), &write, &opts).await
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};

    use super::*;

    #[test]
    fn prune_drops_undeclared_fields_only() {
        let schema = json!({"type": "object", "properties": {
            "spec": {"type": "object", "properties": {
                "a": {"type": "string"},
                "list": {"type": "array", "items": {"type": "object", "properties": {"n": {"type": "string"}}}},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}}
            }}
        }});
        let mut v = json!({"apiVersion": "g/v1", "kind": "K", "metadata": {"name": "x", "odd": 1},
            "spec": {"a": "1", "b": 2, "list": [{"n": "x", "m": 1}], "free": {"any": {"thing": 1}},
                     "labels": {"k": "v"}},
            "extra": true});
        prune(&mut v, StructuralSchema::from_openapi(&schema).root(), true);
        assert_eq!(
            v,
            json!({"apiVersion": "g/v1", "kind": "K", "metadata": {"name": "x", "odd": 1},
                "spec": {"a": "1", "list": [{"n": "x"}], "free": {"any": {"thing": 1}},
                         "labels": {"k": "v"}}})
        );
    }

    use crate::registry::rest::delegating::DelegatingStorage;
    use crate::registry::store::Store;
    use crate::registry::store::fixture::{self, Widget};

    /// A store that loses the create race once: just before its first create, another client
    /// creates the same object (red), so that create answers 409 `AlreadyExists`.
    struct Racing {
        inner: Store<Widget>,
        raced: AtomicBool,
    }

    #[async_trait::async_trait]
    impl DelegatingStorage for Racing {
        fn inner(&self) -> &dyn RestStorage {
            &self.inner
        }
        async fn create(
            &self,
            ctx: &RequestContext,
            body: Value,
            opts: &WriteOptions,
        ) -> Result<Bytes, ApiError> {
            if !self.raced.swap(true, Ordering::SeqCst) {
                let other = fixture::body(&Widget::new("w", "red"));
                let racer = WriteOptions {
                    field_manager: "racer".into(),
                    ..Default::default()
                };
                self.inner.create(ctx, other, &racer).await?;
            }
            self.inner.create(ctx, body, opts).await
        }
    }

    /// An apply that finds no object (404 `NotFound`), then loses the create to another client
    /// (409 `AlreadyExists`), applies to the object that now exists: both errors are told apart
    /// by their reason, so matching either wrongly fails this test with that error.
    #[tokio::test]
    async fn an_apply_that_loses_the_create_race_applies_to_the_winner() {
        let (inner, _) = fixture::store();
        let storage: Arc<dyn RestStorage> = Arc::new(Racing {
            inner,
            raced: AtomicBool::new(false),
        });
        let ctx = fixture::ctx();
        let body = Bytes::from_static(
            br#"{"apiVersion":"test.example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"color":"blue"}}"#,
        );
        let opts = WriteOptions {
            field_manager: "applier".into(),
            // The other client's create owns `spec.color`: take it over.
            force: Some(true),
            ..Default::default()
        };
        let applied = apply(
            &storage,
            &ctx,
            "w",
            None,
            &body,
            &opts,
            &Collected::default(),
            None,
        )
        .await
        .expect("the apply retries against the object the other client created");
        assert!(!applied.created, "the other client created the object");
        let stored = fixture::decode(&applied.object);
        assert_eq!(stored.spec.color, "blue");
        assert!(
            stored
                .metadata
                .managed_fields
                .is_some_and(|m| m.iter().any(|e| e.manager.as_deref() == Some("applier"))),
            "the apply's manager owns its fields"
        );
    }

    /// A 409 that is not `AlreadyExists` (a conflict) is not the create race: it is answered.
    #[test]
    fn only_already_exists_is_the_create_race() {
        let (store, _) = fixture::store();
        let info = store.info();
        assert!(ApiError::already_exists(info, "w").is(StatusReason::AlreadyExists));
        assert!(!ApiError::conflict(info, "w", "changed").is(StatusReason::AlreadyExists));
        assert!(ApiError::not_found(info, "w").is(StatusReason::NotFound));
        assert!(!ApiError::route_not_found().is(StatusReason::AlreadyExists));
    }
}
