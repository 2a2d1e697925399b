//! The generic REST store: Kubernetes semantics for any `#[derive(ApiResource)]` type on any
//! [`Storage`] backend.

use std::any::Any;
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use rand::Rng;
use serde_json::Value;

use crate::apply;
use crate::error::{ApiError, FieldError, Status, StatusDetails};
use crate::registry::admission::{AdmissionAttributes, Operation};
use crate::registry::continue_token;
use crate::registry::encoded_events::EncodedEvents;
use crate::registry::encoding::with_resource_version;
use crate::registry::options::{DeleteOptions, ListOptions, WriteOptions};
use crate::registry::rest::{
    DeleteOutcome, EventStream, ObjectList, RequestContext, RestStorage, WatchEventType,
};
use crate::registry::strategy::Strategy;
use crate::registry::watch;
use crate::resource::{ApiResource, ResourceInfo};
use crate::schema::StructuralSchema;
use crate::storage::{KeyValue, ListRequest, Storage, StorageError};
use crate::validation;

/// The 410 message of a continue token whose revision was compacted away, as upstream's.
const INCONSISTENT_CONTINUE: &str = "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.";

/// How many times a patch is retried when a concurrent write changed the object meanwhile.
const PATCH_RETRIES: usize = 5;

/// How many times a delete reads the object again when a concurrent write changed it between
/// the read and the delete (upstream retries without a bound; each retry reads the latest
/// state, so running out takes that many writes landing in that many short windows).
const DELETE_RETRIES: usize = 16;

/// The generic store of resource `T`: decoding, metadata rules, strategy, admission, storage.
pub struct Store<T: ApiResource> {
    info: ResourceInfo,
    storage: Arc<dyn Storage>,
    strategy: Arc<dyn Strategy<T>>,
    prefix: String,
    /// Recent changes encoded once for all watchers.
    encoded: Arc<EncodedEvents>,
    /// The model of the resource's schema: patches, apply and field validation follow it.
    schema: StructuralSchema,
    _marker: PhantomData<fn() -> T>,
}

impl<T: ApiResource> Store<T> {
    /// A store of `T` on `storage`, driven by `strategy`.
    pub fn new(storage: Arc<dyn Storage>, strategy: Arc<dyn Strategy<T>>) -> Self {
        let info = T::resource_info();
        let schema = StructuralSchema::from_openapi(&info.schema);
        // As kube-apiserver: `/<resource>/` for the core group, `/<group>/<resource>/` otherwise.
        let prefix = if info.group.is_empty() {
            format!("/{}/", info.plural)
        } else {
            format!("/{}/{}/", info.group, info.plural)
        };
        Store {
            info,
            storage,
            strategy,
            prefix,
            encoded: Arc::default(),
            schema,
            _marker: PhantomData,
        }
    }

    fn key(&self, namespace: Option<&str>, name: &str) -> String {
        match namespace {
            Some(ns) if self.info.namespaced() => format!("{}{ns}/{name}", self.prefix),
            _ => format!("{}{name}", self.prefix),
        }
    }

    fn collection_prefix(&self, namespace: Option<&str>) -> String {
        match namespace {
            Some(ns) if self.info.namespaced() => format!("{}{ns}/", self.prefix),
            _ => self.prefix.clone(),
        }
    }

    fn namespace<'a>(&self, ctx: &'a RequestContext) -> Result<Option<&'a str>, ApiError> {
        if !self.info.namespaced() {
            return Ok(None);
        }
        match ctx.namespace.as_deref() {
            Some(ns) if !ns.is_empty() => Ok(Some(ns)),
            _ => Err(ApiError::bad_request("Namespace parameter required.")),
        }
    }

    /// Maps a storage error of operation `op` (`get`, `list`, `create`…) on object `name` to
    /// the Status upstream answers.
    fn storage_error(&self, op: &str, name: &str, err: StorageError) -> ApiError {
        match err {
            StorageError::NotFound(_) => ApiError::not_found(&self.info, name),
            StorageError::AlreadyExists(_) => ApiError::already_exists(&self.info, name),
            StorageError::Conflict { .. } => ApiError::stale(&self.info, name),
            StorageError::Compacted { .. } => {
                ApiError::expired("The resourceVersion for the provided list is too old.")
            }
            StorageError::FutureRevision { requested, current } => {
                let mut e = ApiError::new(
                    504,
                    "Timeout",
                    format!("Timeout: Too large resource version: {requested}, current: {current}"),
                );
                e.details = Some(Box::new(StatusDetails {
                    retry_after_seconds: 1,
                    causes: vec![crate::error::StatusCause {
                        reason: "ResourceVersionTooLarge".into(),
                        message: "Too large resource version".into(),
                        field: String::new(),
                    }],
                    ..Default::default()
                }));
                e
            }
            StorageError::Unavailable(msg) => {
                let mut e = ApiError::new(
                    500,
                    "ServerTimeout",
                    format!(
                        "The {op} operation against {} could not be completed at this time, please try again.",
                        self.info.group_resource()
                    ),
                );
                e.details = Some(Box::new(StatusDetails {
                    name: op.into(),
                    group: self.info.group.clone(),
                    kind: self.info.plural.clone(),
                    retry_after_seconds: 2,
                    ..Default::default()
                }));
                tracing::warn!(error = %msg, "storage unavailable");
                e
            }
            StorageError::Internal(msg) => {
                tracing::warn!(error = %msg, "storage failed");
                ApiError::internal(msg)
            }
        }
    }

    /// Decodes a request body into `T`, checking `apiVersion` and `kind`.
    fn decode_body(&self, mut body: Value) -> Result<T, ApiError> {
        let expected_gv = self.info.api_version();
        let Some(map) = body.as_object_mut() else {
            return Err(ApiError::bad_request(format!(
                "{} in version {:?} cannot be handled as a {}: the request body must be a JSON object",
                self.info.kind, self.info.version, self.info.kind
            )));
        };
        match map.get("apiVersion") {
            Some(Value::String(gv)) if gv != &expected_gv => {
                return Err(ApiError::bad_request(format!(
                    "the API version in the data ({gv}) does not match the expected API version ({expected_gv})"
                )));
            }
            Some(Value::String(_)) | None => {}
            Some(_) => {
                return Err(ApiError::bad_request(format!(
                    "{} in version {:?} cannot be handled as a {}: apiVersion must be a string",
                    self.info.kind, self.info.version, self.info.kind
                )));
            }
        }
        match map.get("kind") {
            Some(Value::String(k)) if k != &self.info.kind => {
                return Err(ApiError::bad_request(format!(
                    "the kind in the data ({k}) does not match the expected kind ({})",
                    self.info.kind
                )));
            }
            _ => {}
        }
        serde_json::from_value::<T>(body).map_err(|e| {
            ApiError::bad_request(format!(
                "{} in version {:?} cannot be handled as a {}: {e}",
                self.info.kind, self.info.version, self.info.kind
            ))
        })
    }

    fn encode(&self, obj: &mut T) -> Result<Bytes, ApiError> {
        normalize_meta(obj.meta_mut());
        serde_json::to_vec(obj)
            .map(Bytes::from)
            .map_err(ApiError::internal)
    }

    fn decode_stored(&self, kv: &KeyValue) -> Result<T, ApiError> {
        let mut obj: T = serde_json::from_slice(&kv.value).map_err(ApiError::internal)?;
        obj.meta_mut().resource_version = Some(kv.mod_revision.to_string());
        Ok(obj)
    }

    fn to_value(obj: &T) -> Result<Value, ApiError> {
        serde_json::to_value(obj).map_err(ApiError::internal)
    }

    fn decode_value(&self, v: Value) -> Result<T, ApiError> {
        serde_json::from_value(v).map_err(|e| {
            ApiError::bad_request(format!(
                "{} in version {:?} cannot be handled as a {}: {e}",
                self.info.kind, self.info.version, self.info.kind
            ))
        })
    }

    /// The server-side apply context of a write by `manager` to `subresource`.
    fn apply_context<'a>(
        &'a self,
        manager: &'a str,
        api_version: &'a str,
        subresource: Option<&'a str>,
    ) -> apply::Context<'a> {
        apply::Context {
            schema: &self.schema,
            manager,
            api_version,
            subresource,
            reset_fields: apply::reset_fields(subresource, self.info.status_subresource),
            now: jiff::Timestamp::now(),
        }
    }

    /// Records a write other than an apply in `new`'s `metadata.managedFields`: the fields
    /// it changes from `old` (`None` on create) join the writer's `Update` entry.
    fn track_update(
        &self,
        old: Option<&T>,
        new: &mut T,
        subresource: Option<&str>,
        opts: &WriteOptions,
    ) -> Result<(), ApiError> {
        if opts.apply {
            return Ok(());
        }
        let old_value = old.map(Self::to_value).transpose()?;
        let new_value = Self::to_value(new)?;
        let managed =
            apply::ManagedFields::for_update(old_value.as_ref(), &new_value, subresource.is_some());
        let api_version = self.info.api_version();
        let ctx = self.apply_context(&opts.field_manager, &api_version, subresource);
        let managed = apply::update(&ctx, old_value.as_ref(), &new_value, managed)?;
        new.meta_mut().managed_fields = managed.encode_typed();
        Ok(())
    }

    fn validate_name(&self, name: &str) -> Vec<FieldError> {
        let mut errs = Vec::new();
        for msg in validation::dns1123_subdomain(name) {
            errs.push(FieldError::invalid("metadata.name", name, msg));
        }
        errs
    }

    /// Runs one phase of the admission chain on `obj`.
    #[allow(clippy::too_many_arguments)]
    async fn admit(
        &self,
        phase: Phase,
        ctx: &RequestContext,
        operation: Operation,
        subresource: Option<&str>,
        obj: &mut T,
        old: Option<&T>,
        dry_run: bool,
    ) -> Result<(), ApiError> {
        // No plugin wants the request: spare the object's round trip through JSON.
        if !ctx.admission.handles(&self.info, operation) {
            return Ok(());
        }
        let mut value = Self::to_value(obj)?;
        let old_value = old.map(Self::to_value).transpose()?;
        let name = obj.meta().name.clone().unwrap_or_default();
        let namespace = obj.meta().namespace.clone();
        let mut attrs = AdmissionAttributes {
            operation,
            resource: &self.info,
            subresource,
            namespace: namespace.as_deref(),
            name: &name,
            object: Some(&mut value),
            old_object: old_value.as_ref(),
            user: &ctx.user,
            dry_run,
            registry: &ctx.registry,
        };
        match phase {
            Phase::Mutating => {
                ctx.admission.mutate(&mut attrs).await?;
                *obj = self.decode_value(value)?;
            }
            Phase::Validating => ctx.admission.validate(&attrs).await?,
        }
        Ok(())
    }

    /// Every object of the resource in `namespace` (all namespaces with `None`), decoded: a
    /// consistent read (with etcd, one round trip to learn its current revision).
    pub async fn list_objects(&self, namespace: Option<&str>) -> Result<Vec<T>, ApiError> {
        self.objects(namespace, false).await
    }

    /// Every object of the resource in `namespace` as the watch cache holds it, decoded:
    /// what admission plugins and controllers read, like upstream's informer listers. It
    /// includes every write this server has acknowledged and costs no storage round trip;
    /// another server's write of the last moment may be missing.
    pub async fn cached_objects(&self, namespace: Option<&str>) -> Result<Vec<T>, ApiError> {
        self.objects(namespace, true).await
    }

    async fn objects(&self, namespace: Option<&str>, from_cache: bool) -> Result<Vec<T>, ApiError> {
        let page = self
            .storage
            .list(ListRequest {
                prefix: self.collection_prefix(namespace),
                from_cache,
                ..Default::default()
            })
            .await
            .map_err(|e| self.storage_error("list", "", e))?;
        page.items.iter().map(|kv| self.decode_stored(kv)).collect()
    }

    /// One object, decoded.
    pub async fn get_object(&self, namespace: Option<&str>, name: &str) -> Result<T, ApiError> {
        let kv = self
            .storage
            .get(&self.key(namespace, name))
            .await
            .map_err(|e| self.storage_error("get", name, e))?
            .ok_or_else(|| ApiError::not_found(&self.info, name))?;
        self.decode_stored(&kv)
    }

    async fn create_typed(
        &self,
        ctx: &RequestContext,
        mut obj: T,
        opts: &WriteOptions,
    ) -> Result<Bytes, ApiError> {
        let namespace = self.namespace(ctx)?;
        {
            let meta = obj.meta_mut();
            match (&meta.namespace, namespace) {
                (Some(body_ns), Some(path_ns)) if !body_ns.is_empty() && body_ns != path_ns => {
                    return Err(ApiError::bad_request(
                        "the namespace of the provided object does not match the namespace sent on the request",
                    ));
                }
                _ => {}
            }
            meta.namespace = namespace.map(str::to_string);
            if meta.name.as_deref().unwrap_or("").is_empty() {
                match meta.generate_name.as_deref() {
                    Some(prefix) if !prefix.is_empty() => {
                        meta.name = Some(generate_name(prefix));
                    }
                    _ => {
                        return Err(ApiError::invalid(
                            &self.info,
                            "",
                            &[FieldError::required(
                                "metadata.name",
                                "name or generateName is required",
                            )],
                        ));
                    }
                }
            }
            meta.uid = Some(uuid::Uuid::new_v4().to_string());
            // Whole seconds, cut as upstream's RFC 3339 encoding cuts them.
            let now = jiff::Timestamp::now();
            meta.creation_timestamp = Some(Time(
                now.round(
                    jiff::TimestampRound::new()
                        .smallest(jiff::Unit::Second)
                        .mode(jiff::RoundMode::Trunc),
                )
                .unwrap_or(now),
            ));
            meta.resource_version = None;
            meta.generation = Some(1);
            meta.deletion_timestamp = None;
            meta.deletion_grace_period_seconds = None;
        }
        if T::has_status() {
            obj.clear_status();
        }
        self.admit(
            Phase::Mutating,
            ctx,
            Operation::Create,
            None,
            &mut obj,
            None,
            opts.dry_run,
        )
        .await?;
        self.strategy.prepare_for_create(&mut obj);
        self.strategy.default(&mut obj);
        let name = obj.meta().name.clone().unwrap_or_default();
        let mut errs = self.validate_name(&name);
        errs.extend(validation::object_meta(obj.meta()));
        errs.extend(self.strategy.validate(&obj));
        if !errs.is_empty() {
            return Err(ApiError::invalid(&self.info, &name, &errs));
        }
        self.admit(
            Phase::Validating,
            ctx,
            Operation::Create,
            None,
            &mut obj,
            None,
            opts.dry_run,
        )
        .await?;
        self.track_update(None, &mut obj, None, opts)?;
        let bytes = self.encode(&mut obj)?;
        if opts.dry_run {
            if self
                .storage
                .get(&self.key(namespace, &name))
                .await
                .map_err(|e| self.storage_error("get", &name, e))?
                .is_some()
            {
                return Err(ApiError::already_exists(&self.info, &name));
            }
            return Ok(bytes);
        }
        let rev = self
            .storage
            .create(&self.key(namespace, &name), bytes.clone())
            .await
            .map_err(|e| self.storage_error("create", &name, e))?;
        Ok(with_resource_version(&bytes, rev))
    }

    /// The update path shared by PUT and PATCH: `new` replaces the stored object `current`.
    async fn update_typed(
        &self,
        ctx: &RequestContext,
        name: &str,
        subresource: Option<&str>,
        mut new: T,
        current: &KeyValue,
        opts: &WriteOptions,
    ) -> Result<Bytes, ApiError> {
        let namespace = self.namespace(ctx)?;
        let old = self.decode_stored(current)?;
        match new.meta().name.as_deref() {
            Some(n) if n == name => {}
            Some(n) if !n.is_empty() => {
                return Err(ApiError::bad_request(format!(
                    "the name of the object ({n}) does not match the name on the URL ({name})"
                )));
            }
            _ => new.meta_mut().name = Some(name.to_string()),
        }
        if let (Some(body_ns), Some(path_ns)) = (new.meta().namespace.as_deref(), namespace)
            && !body_ns.is_empty()
            && body_ns != path_ns
        {
            return Err(ApiError::bad_request(
                "the namespace of the provided object does not match the namespace sent on the request",
            ));
        }
        let rv = new.meta().resource_version.clone().unwrap_or_default();
        if rv.is_empty() {
            let mut e = ApiError::invalid(
                &self.info,
                name,
                &[FieldError::invalid(
                    "metadata.resourceVersion",
                    0,
                    "must be specified for an update",
                )],
            );
            // Upstream names the plural resource here, not the kind.
            e.message = e
                .message
                .replacen(&self.info.group_kind(), &self.info.group_resource(), 1);
            if let Some(d) = e.details.as_mut() {
                d.kind = self.info.plural.clone();
            }
            return Err(e);
        }
        let expected: u64 = rv
            .parse()
            .map_err(|_| ApiError::bad_request(format!("invalid resource version: {rv:?}")))?;
        if expected != current.mod_revision {
            return Err(ApiError::stale(&self.info, name));
        }
        self.admit(
            Phase::Mutating,
            ctx,
            Operation::Update,
            subresource,
            &mut new,
            Some(&old),
            opts.dry_run,
        )
        .await?;
        let mut errs = Vec::new();
        if subresource == Some("status") {
            // The status subresource changes the status and nothing else.
            let mut merged = old.clone();
            merged.copy_status_from(&new);
            if opts.apply {
                // The apply computed the managers of this write.
                merged.meta_mut().managed_fields = new.meta_mut().managed_fields.take();
            }
            merged.meta_mut().resource_version = new.meta().resource_version.clone();
            new = merged;
        } else {
            if T::has_status() {
                new.copy_status_from(&old);
            }
            let new_meta = new.meta_mut();
            let old_meta = old.meta();
            if let Some(uid) = new_meta.uid.as_deref()
                && !uid.is_empty()
                && Some(uid) != old_meta.uid.as_deref()
            {
                errs.push(FieldError::invalid(
                    "metadata.uid",
                    uid,
                    "field is immutable",
                ));
            }
            new_meta.uid = old_meta.uid.clone();
            new_meta.namespace = old_meta.namespace.clone();
            new_meta.creation_timestamp = old_meta.creation_timestamp.clone();
            new_meta.deletion_timestamp = old_meta.deletion_timestamp.clone();
            new_meta.deletion_grace_period_seconds = old_meta.deletion_grace_period_seconds;
            new_meta.generation = old_meta.generation;
            if new.spec_differs(&old) {
                let g = new.meta().generation.unwrap_or(0) + 1;
                new.meta_mut().generation = Some(g);
            }
            self.strategy.prepare_for_update(&mut new, &old);
            self.strategy.default(&mut new);
        }
        errs.extend(validation::object_meta(new.meta()));
        if old.meta().deletion_timestamp.is_some() {
            let had = old.meta().finalizers.clone().unwrap_or_default();
            if new
                .meta()
                .finalizers
                .iter()
                .flatten()
                .any(|f| !had.contains(f))
            {
                errs.push(FieldError::forbidden(
                    "metadata.finalizers",
                    "no new finalizers can be added if the object is being deleted",
                ));
            }
        }
        errs.extend(self.strategy.validate_update(&new, &old));
        if !errs.is_empty() {
            return Err(ApiError::invalid(&self.info, name, &errs));
        }
        self.admit(
            Phase::Validating,
            ctx,
            Operation::Update,
            subresource,
            &mut new,
            Some(&old),
            opts.dry_run,
        )
        .await?;
        self.track_update(Some(&old), &mut new, subresource, opts)?;
        new.meta_mut().resource_version = None;
        let bytes = self.encode(&mut new)?;
        if bytes == current.value {
            // Nothing changed: no write, same resourceVersion (as upstream).
            return Ok(with_resource_version(&current.value, current.mod_revision));
        }
        let key = self.key(namespace, name);
        let pending_delete = new.meta().deletion_timestamp.is_some()
            && new.meta().finalizers.as_ref().is_none_or(|f| f.is_empty());
        if opts.dry_run {
            return Ok(with_resource_version(&bytes, current.mod_revision));
        }
        if pending_delete {
            // The last finalizer is gone from an object being deleted: it disappears now.
            let rev = self
                .storage
                .update(&key, bytes.clone(), current.mod_revision)
                .await
                .map_err(|e| self.storage_error("update", name, e))?;
            let (_, last) = self
                .storage
                .delete(&key, Some(rev))
                .await
                .map_err(|e| self.storage_error("delete", name, e))?;
            return Ok(with_resource_version(&last.value, rev));
        }
        let rev = self
            .storage
            .update(&key, bytes.clone(), current.mod_revision)
            .await
            .map_err(|e| self.storage_error("update", name, e))?;
        Ok(with_resource_version(&bytes, rev))
    }

    async fn current(&self, namespace: Option<&str>, name: &str) -> Result<KeyValue, ApiError> {
        self.storage
            .get(&self.key(namespace, name))
            .await
            .map_err(|e| self.storage_error("get", name, e))?
            .ok_or_else(|| ApiError::not_found(&self.info, name))
    }

    fn check_field_selector(&self, opts: &ListOptions) -> Result<(), ApiError> {
        opts.field_selector
            .check_supported(&self.info.field_selector_labels())
            .map_err(ApiError::bad_request)
    }

    /// A read at a revision the storage has not reached answers upstream's 504 `Timeout`
    /// (`Too large resource version`); the storage is consistent, so there is nothing to wait
    /// for.
    async fn check_not_future(&self, op: &str, rv: u64) -> Result<(), ApiError> {
        let current = self
            .storage
            .current_revision()
            .await
            .map_err(|e| self.storage_error(op, "", e))?;
        if rv > current {
            return Err(self.storage_error(
                op,
                "",
                StorageError::FutureRevision {
                    requested: rv,
                    current,
                },
            ));
        }
        Ok(())
    }

    fn parse_rv(rv: &str) -> Result<u64, ApiError> {
        rv.parse::<u64>()
            .map_err(|_| ApiError::bad_request(format!("invalid resource version: {rv:?}")))
    }
}

/// The two phases of admission: mutating plugins run before the strategy's defaulting and
/// validation, validating plugins right before the write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Mutating,
    Validating,
}

/// `generateName` plus five random characters from upstream's alphabet (no vowels).
fn generate_name(prefix: &str) -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    const MAX_PREFIX: usize = 63 - 5;
    // Cut at a character boundary: a client's prefix may hold multi-byte characters (the
    // name then fails validation, as upstream's byte cut does).
    let mut end = prefix.len().min(MAX_PREFIX);
    while !prefix.is_char_boundary(end) {
        end -= 1;
    }
    let prefix = &prefix[..end];
    let mut rng = rand::rng();
    let suffix: String = (0..5)
        .map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())] as char)
        .collect();
    format!("{prefix}{suffix}")
}

/// The longest a watch lasts (ten years): longer `timeoutSeconds` are cut to it.
pub const MAX_WATCH_TIMEOUT: Duration = Duration::from_secs(10 * 365 * 24 * 3600);

/// How long a watch lasts without `timeoutSeconds`: 30 minutes times a random factor in
/// [1, 2), as upstream spreads reconnects.
fn default_watch_timeout() -> Duration {
    let factor: f64 = rand::rng().random_range(1.0..2.0);
    Duration::from_secs_f64(1800.0 * factor)
}

#[async_trait::async_trait]
impl<T: ApiResource> RestStorage for Store<T> {
    fn info(&self) -> &ResourceInfo {
        &self.info
    }

    fn verbs(&self) -> Vec<&'static str> {
        vec![
            "create",
            "delete",
            "deletecollection",
            "get",
            "list",
            "patch",
            "update",
            "watch",
        ]
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn structural_schema(&self) -> StructuralSchema {
        self.schema.clone()
    }

    async fn get(&self, ctx: &RequestContext, name: &str) -> Result<Bytes, ApiError> {
        let namespace = self.namespace(ctx)?;
        let kv = self.current(namespace, name).await?;
        Ok(with_resource_version(&kv.value, kv.mod_revision))
    }

    async fn list(&self, ctx: &RequestContext, opts: &ListOptions) -> Result<ObjectList, ApiError> {
        self.check_field_selector(opts)?;
        let namespace = if self.info.namespaced() {
            ctx.namespace.as_deref()
        } else {
            None
        };
        let prefix = self.collection_prefix(namespace);
        // resourceVersion=0 ("any"): what the watch cache holds, as upstream serves it.
        let from_cache = opts.continue_token.is_empty() && opts.resource_version == "0";
        let (revision, mut start_after) = if !opts.continue_token.is_empty() {
            let (rev, key) = continue_token::decode(&opts.continue_token)
                .map_err(|e| ApiError::bad_request(format!("invalid continue token: {e}")))?;
            if !key.starts_with(&prefix) {
                return Err(ApiError::bad_request(
                    "invalid continue token: continue key is not valid: the key is outside the requested collection",
                ));
            }
            (rev, Some(key))
        } else {
            let exact = opts.resource_version_match == "Exact"
                || (opts.resource_version_match.is_empty() && opts.limit > 0);
            match opts.resource_version.as_str() {
                "" | "0" => (None, None),
                rv => {
                    let rv = Self::parse_rv(rv)?;
                    self.check_not_future("list", rv).await?;
                    (exact.then_some(rv), None)
                }
            }
        };
        let filtering = !opts.label_selector.is_empty() || !opts.field_selector.is_empty();
        let continue_key = start_after
            .clone()
            .filter(|_| !opts.continue_token.is_empty());
        let mut items = Vec::new();
        let mut read_revision = revision;
        let (more, remaining, last_key) = loop {
            let want = if opts.limit > 0 {
                opts.limit - items.len()
            } else {
                0
            };
            let page = self
                .storage
                .list(ListRequest {
                    prefix: prefix.clone(),
                    start_after: start_after.clone(),
                    limit: want,
                    revision: read_revision,
                    from_cache,
                })
                .await
                .map_err(|e| match (e, &continue_key) {
                    (StorageError::Compacted { .. }, Some(key)) => {
                        // As upstream: the list cannot continue consistently; a token that
                        // continues at the latest revision is offered in the Status.
                        let mut e = ApiError::expired(INCONSISTENT_CONTINUE);
                        e.continue_token = Some(continue_token::encode_latest(key));
                        e
                    }
                    (e, _) => self.storage_error("list", "", e),
                })?;
            read_revision = Some(page.revision);
            let last = page.items.last().map(|kv| kv.key.clone());
            for kv in &page.items {
                if watch::matches(opts, &kv.value) {
                    items.push(with_resource_version(&kv.value, kv.mod_revision));
                }
            }
            if !page.more || (opts.limit > 0 && items.len() >= opts.limit) {
                break (page.more, page.remaining, last);
            }
            start_after = last;
        };
        let revision = read_revision.unwrap_or(0);
        Ok(ObjectList {
            resource_version: revision.to_string(),
            continue_token: match (more, last_key) {
                (true, Some(k)) => Some(continue_token::encode(revision, &k)),
                _ => None,
            },
            remaining_item_count: (more && !filtering).then_some(remaining as i64),
            items,
        })
    }

    async fn watch(
        &self,
        ctx: &RequestContext,
        opts: &ListOptions,
    ) -> Result<EventStream, ApiError> {
        self.check_field_selector(opts)?;
        let namespace = if self.info.namespaced() {
            ctx.namespace.as_deref()
        } else {
            None
        };
        let prefix = self.collection_prefix(namespace);
        let timeout = opts
            .timeout_seconds
            .map(Duration::from_secs)
            .unwrap_or_else(default_watch_timeout);
        let now = tokio::time::Instant::now();
        let deadline = now.checked_add(timeout).unwrap_or(now + MAX_WATCH_TIMEOUT);
        // Where the watch starts: with the current state as ADDED events (legacy watches from
        // "" or "0", and `sendInitialEvents=true`), or after a given revision.
        let requested = match opts.resource_version.as_str() {
            "" | "0" => None,
            rv => Some(Self::parse_rv(rv)?),
        };
        let send_initial = opts.send_initial_events.unwrap_or(requested.is_none());
        let mut initial = Vec::new();
        let after = if send_initial {
            if let Some(rv) = requested {
                self.check_not_future("watch", rv).await?;
            }
            let page = self
                .storage
                .list(ListRequest {
                    prefix: prefix.clone(),
                    ..Default::default()
                })
                .await
                .map_err(|e| self.storage_error("watch", "", e))?;
            for kv in &page.items {
                if watch::matches(opts, &kv.value) {
                    initial.push(watch::event(WatchEventType::Added, kv));
                }
            }
            if opts.send_initial_events == Some(true) && opts.allow_watch_bookmarks {
                initial.push(watch::bookmark(&self.info, page.revision, true));
            }
            page.revision
        } else {
            match requested {
                Some(rv) => rv,
                None => self
                    .storage
                    .current_revision()
                    .await
                    .map_err(|e| self.storage_error("watch", "", e))?,
            }
        };
        let live = match self.storage.watch(&prefix, after).await {
            Ok(s) => s,
            Err(StorageError::Compacted { compacted, .. }) => {
                let err = watch::too_old(after, compacted);
                return Ok(futures::stream::iter([watch::error_event(&err)]).boxed());
            }
            Err(e) => return Err(self.storage_error("watch", "", e)),
        };
        Ok(watch::run(
            &self.info,
            opts,
            initial,
            after,
            live,
            deadline,
            self.encoded.clone(),
        ))
    }

    async fn create(
        &self,
        ctx: &RequestContext,
        body: Value,
        opts: &WriteOptions,
    ) -> Result<Bytes, ApiError> {
        let obj = self.decode_body(body)?;
        self.create_typed(ctx, obj, opts).await
    }

    async fn update(
        &self,
        ctx: &RequestContext,
        name: &str,
        subresource: Option<&str>,
        body: Value,
        opts: &WriteOptions,
    ) -> Result<Bytes, ApiError> {
        if subresource.is_some() && (subresource != Some("status") || !T::has_status()) {
            return Err(ApiError::route_not_found());
        }
        let namespace = self.namespace(ctx)?;
        let new = self.decode_body(body)?;
        let current = self.current(namespace, name).await?;
        self.update_typed(ctx, name, subresource, new, &current, opts)
            .await
    }

    async fn patch(
        &self,
        ctx: &RequestContext,
        name: &str,
        subresource: Option<&str>,
        patch: &(dyn Fn(Value) -> Result<Value, ApiError> + Send + Sync),
        opts: &WriteOptions,
    ) -> Result<Bytes, ApiError> {
        // A write through `scale` changes the object itself, admitted as a `scale` write.
        let scale = subresource == Some("scale") && self.info.scale.is_some();
        if subresource.is_some() && !scale && (subresource != Some("status") || !T::has_status()) {
            return Err(ApiError::route_not_found());
        }
        let namespace = self.namespace(ctx)?;
        let mut attempt = 0;
        loop {
            let current = self.current(namespace, name).await?;
            let current_value: Value = serde_json::from_slice(&with_resource_version(
                &current.value,
                current.mod_revision,
            ))
            .map_err(ApiError::internal)?;
            let patched = patch(current_value)?;
            let rv_in_patch = patched
                .pointer("/metadata/resourceVersion")
                .and_then(Value::as_str)
                .map(str::to_string);
            let explicit_rv = rv_in_patch
                .as_deref()
                .is_some_and(|rv| rv != current.mod_revision.to_string());
            let mut new = self.decode_body(patched)?;
            if new
                .meta()
                .resource_version
                .as_deref()
                .unwrap_or("")
                .is_empty()
            {
                new.meta_mut().resource_version = Some(current.mod_revision.to_string());
            }
            match self
                .update_typed(ctx, name, subresource, new, &current, opts)
                .await
            {
                Err(e) if e.reason == "Conflict" && !explicit_rv && attempt < PATCH_RETRIES => {
                    attempt += 1;
                }
                other => return other,
            }
        }
    }

    async fn delete(
        &self,
        ctx: &RequestContext,
        name: &str,
        opts: &DeleteOptions,
    ) -> Result<DeleteOutcome, ApiError> {
        let namespace = self.namespace(ctx)?;
        let key = self.key(namespace, name);
        // As upstream's conditional delete and guaranteed update: when the object changes
        // between the read and the write, read it again and decide again (preconditions and
        // admission included); only a precondition it no longer meets answers 409.
        let mut attempt = 0;
        let retry = |e: &StorageError, attempt: usize| {
            matches!(e, StorageError::Conflict { .. }) && attempt < DELETE_RETRIES
        };
        loop {
            let current = self.current(namespace, name).await?;
            let mut obj = self.decode_stored(&current)?;
            check_preconditions(&self.info, &key, obj.meta(), opts)?;
            self.admit_delete(ctx, &obj, opts.dry_run).await?;
            let has_finalizers = obj
                .meta()
                .finalizers
                .as_ref()
                .is_some_and(|f| !f.is_empty());
            if has_finalizers {
                if obj.meta().deletion_timestamp.is_some() {
                    return Ok(DeleteOutcome::Pending(with_resource_version(
                        &current.value,
                        current.mod_revision,
                    )));
                }
                let meta = obj.meta_mut();
                meta.deletion_timestamp = Some(Time(jiff::Timestamp::now()));
                // As for custom resources upstream: no graceful deletion, so the grace period
                // is 0 whatever `gracePeriodSeconds` asked; the finalizers alone hold the object.
                meta.deletion_grace_period_seconds = Some(0);
                meta.resource_version = None;
                let bytes = self.encode(&mut obj)?;
                if opts.dry_run {
                    return Ok(DeleteOutcome::Pending(with_resource_version(
                        &bytes,
                        current.mod_revision,
                    )));
                }
                match self
                    .storage
                    .update(&key, bytes.clone(), current.mod_revision)
                    .await
                {
                    Ok(rev) => {
                        return Ok(DeleteOutcome::Pending(with_resource_version(&bytes, rev)));
                    }
                    Err(e) if retry(&e, attempt) => {
                        attempt += 1;
                        continue;
                    }
                    Err(e) => return Err(self.storage_error("update", name, e)),
                }
            }
            if !opts.dry_run {
                match self.storage.delete(&key, Some(current.mod_revision)).await {
                    Ok(_) => {}
                    Err(e) if retry(&e, attempt) => {
                        attempt += 1;
                        continue;
                    }
                    Err(e) => return Err(self.storage_error("delete", name, e)),
                }
            }
            return Ok(DeleteOutcome::Deleted(Box::new(Status::success(
                StatusDetails {
                    name: name.to_string(),
                    group: self.info.group.clone(),
                    kind: self.info.plural.clone(),
                    uid: obj.meta().uid.clone().unwrap_or_default(),
                    ..Default::default()
                },
            ))));
        }
    }

    async fn delete_collection(
        &self,
        ctx: &RequestContext,
        list: &ListOptions,
        opts: &DeleteOptions,
    ) -> Result<ObjectList, ApiError> {
        let all = RestStorage::list(self, ctx, list).await?;
        let mut deleted = Vec::new();
        for item in &all.items {
            let v: Value = serde_json::from_slice(item).map_err(ApiError::internal)?;
            let name = v
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            let item_ctx = RequestContext {
                namespace: v
                    .pointer("/metadata/namespace")
                    .and_then(Value::as_str)
                    .map(str::to_string)
                    .or_else(|| ctx.namespace.clone()),
                ..ctx.clone()
            };
            match RestStorage::delete(self, &item_ctx, &name, opts).await {
                Ok(DeleteOutcome::Pending(obj)) => deleted.push(obj),
                Ok(DeleteOutcome::Deleted(_)) => deleted.push(item.clone()),
                Err(e) if e.code == 404 => {}
                Err(e) => return Err(e),
            }
        }
        Ok(ObjectList {
            resource_version: all.resource_version,
            continue_token: None,
            remaining_item_count: None,
            items: deleted,
        })
    }
}

impl<T: ApiResource> Store<T> {
    async fn admit_delete(
        &self,
        ctx: &RequestContext,
        obj: &T,
        dry_run: bool,
    ) -> Result<(), ApiError> {
        if ctx.admission.is_empty() {
            return Ok(());
        }
        let old = Self::to_value(obj)?;
        let name = obj.meta().name.clone().unwrap_or_default();
        let namespace = obj.meta().namespace.clone();
        let mut attrs = AdmissionAttributes {
            operation: Operation::Delete,
            resource: &self.info,
            subresource: None,
            namespace: namespace.as_deref(),
            name: &name,
            object: None,
            old_object: Some(&old),
            user: &ctx.user,
            dry_run,
            registry: &ctx.registry,
        };
        ctx.admission.mutate(&mut attrs).await?;
        ctx.admission.validate(&attrs).await
    }
}

/// Empty collections in metadata are dropped, as upstream's encoding omits them: removing the
/// last label leaves no `labels` key behind.
fn normalize_meta(meta: &mut ObjectMeta) {
    if meta.labels.as_ref().is_some_and(|m| m.is_empty()) {
        meta.labels = None;
    }
    if meta.annotations.as_ref().is_some_and(|m| m.is_empty()) {
        meta.annotations = None;
    }
    if meta.finalizers.as_ref().is_some_and(|m| m.is_empty()) {
        meta.finalizers = None;
    }
    if meta.owner_references.as_ref().is_some_and(|m| m.is_empty()) {
        meta.owner_references = None;
    }
    if meta.managed_fields.as_ref().is_some_and(|m| m.is_empty()) {
        meta.managed_fields = None;
    }
    if meta.generate_name.as_deref() == Some("") {
        meta.generate_name = None;
    }
}

fn check_preconditions(
    info: &ResourceInfo,
    key: &str,
    meta: &ObjectMeta,
    opts: &DeleteOptions,
) -> Result<(), ApiError> {
    let name = meta.name.clone().unwrap_or_default();
    if let Some(uid) = &opts.precondition_uid
        && Some(uid) != meta.uid.as_ref()
    {
        return Err(ApiError::conflict(
            info,
            &name,
            &format!(
                "StorageError: invalid object, Code: 4, Key: {key}, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                meta.uid.clone().unwrap_or_default()
            ),
        ));
    }
    if let Some(rv) = &opts.precondition_resource_version
        && Some(rv) != meta.resource_version.as_ref()
    {
        return Err(ApiError::conflict(
            info,
            &name,
            &format!(
                "StorageError: invalid object, Code: 4, Key: {key}, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {}",
                meta.resource_version.clone().unwrap_or_default()
            ),
        ));
    }
    Ok(())
}
