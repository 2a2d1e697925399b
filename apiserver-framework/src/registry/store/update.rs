//! Update, shared by PUT and PATCH: the object replaces the stored one after the
//! `resourceVersion` precondition, the metadata rules, admission and validation; a patch that
//! lost a race with another write is applied again to the new state.

use bytes::Bytes;
use serde_json::Value;

use super::Store;
use super::admission::{Phase, Write};
use super::errors::WriteError;
use crate::admission::Operation;
use crate::error::{ApiError, FieldError};
use crate::registry::rest::RequestContext;
use crate::registry::rest::options::WriteOptions;
use crate::registry::store::encoding::with_resource_version;
use crate::resource::ApiResource;
use crate::storage::KeyValue;
use crate::validation;

/// How many times a patch is retried when a concurrent write changed the object meanwhile.
const PATCH_RETRIES: usize = 5;

impl<T: ApiResource> Store<T> {
    /// PUT of `body` to object `name` (or its `status`).
    pub(super) async fn replace(
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
        Ok(self
            .update_typed(ctx, name, subresource, new, &current, opts)
            .await?)
    }

    /// PATCH of object `name` (or its `status` or `scale`): `patch` turns the stored object
    /// into the new one. When another write lands between the read and the write, the patch
    /// is applied again to the new state, unless it names a `resourceVersion` of its own.
    pub(super) async fn patch_object(
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
            let explicit_rv = patched
                .pointer("/metadata/resourceVersion")
                .and_then(Value::as_str)
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
                Err(WriteError::Conflict(_)) if !explicit_rv && attempt < PATCH_RETRIES => {
                    attempt += 1;
                }
                other => return Ok(other?),
            }
        }
    }

    /// The update path shared by PUT and PATCH: `new` replaces the stored object `current`.
    pub(super) async fn update_typed(
        &self,
        ctx: &RequestContext,
        name: &str,
        subresource: Option<&str>,
        mut new: T,
        current: &KeyValue,
        opts: &WriteOptions,
    ) -> Result<Bytes, WriteError> {
        let namespace = self.namespace(ctx)?;
        let old = self.decode_stored(current)?;
        self.check_target(&mut new, name, namespace)?;
        self.check_uid_precondition(&new, &old, name, namespace)?;
        self.check_resource_version(&new, name, current)?;
        let write = Write {
            operation: Operation::Update,
            subresource,
            old: Some(&old),
            dry_run: opts.dry_run,
        };
        self.admit(Phase::Mutating, ctx, &write, &mut new).await?;
        let mut errs = Vec::new();
        if subresource == Some("status") {
            new = status_write(&old, new, opts);
        } else {
            errs.extend(carry_server_meta(&old, &mut new));
            self.strategy.prepare_for_update(&mut new, &old);
            self.strategy.default(&mut new);
            bump_generation(&old, &mut new);
        }
        errs.extend(validation::object_meta(new.meta()));
        errs.extend(finalizers_while_deleting(&old, &new));
        errs.extend(self.strategy.validate_update(&new, &old));
        errs.extend(self.validate_schema(&new, Some(&old))?);
        if !errs.is_empty() {
            return Err(ApiError::invalid(&self.info, name, &errs).into());
        }
        self.admit(Phase::Validating, ctx, &write, &mut new).await?;
        self.track_update(Some(&old), &mut new, subresource, opts)?;
        new.meta_mut().resource_version = None;
        let bytes = self.encode(&mut new)?;
        let pending_delete = new.meta().deletion_timestamp.is_some()
            && new.meta().finalizers.as_ref().is_none_or(|f| f.is_empty());
        self.store_update(
            namespace,
            name,
            bytes,
            current,
            pending_delete,
            opts.dry_run,
        )
        .await
    }

    /// The object's name may be left out of the body, not differ from the URL's; the same
    /// holds for its namespace.
    fn check_target(
        &self,
        new: &mut T,
        name: &str,
        namespace: Option<&str>,
    ) -> Result<(), ApiError> {
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
        Ok(())
    }

    /// An update names the `resourceVersion` it replaces (422 without one); another than the
    /// stored one is a [`WriteError::Conflict`].
    fn check_resource_version(
        &self,
        new: &T,
        name: &str,
        current: &KeyValue,
    ) -> Result<(), WriteError> {
        let rv = new.meta().resource_version.as_deref().unwrap_or_default();
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
            return Err(e.into());
        }
        let expected: u64 = rv
            .parse()
            .map_err(|_| ApiError::bad_request(format!("invalid resource version: {rv:?}")))?;
        if expected != current.mod_revision {
            return Err(WriteError::Conflict(ApiError::stale(&self.info, name)));
        }
        Ok(())
    }

    /// A uid in the new object is a precondition (upstream's `UpdatedObjectInfo`): one other
    /// than the stored object's is upstream's storage error, a 409 `Conflict` naming the key.
    fn check_uid_precondition(
        &self,
        new: &T,
        old: &T,
        name: &str,
        namespace: Option<&str>,
    ) -> Result<(), WriteError> {
        let Some(uid) = new.meta().uid.as_deref().filter(|u| !u.is_empty()) else {
            return Ok(());
        };
        let stored = old.meta().uid.as_deref().unwrap_or_default();
        if uid == stored {
            return Ok(());
        }
        let key = self.key(namespace, name);
        Err(WriteError::Conflict(ApiError::conflict(
            &self.info,
            name,
            &format!(
                "StorageError: invalid object, Code: 4, Key: {key}, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: {uid}, UID in object meta: {stored}"
            ),
        )))
    }

    /// Writes the encoded update over `current` (nothing when it is unchanged or a dry run);
    /// an object being deleted whose last finalizer is gone is deleted instead.
    async fn store_update(
        &self,
        namespace: Option<&str>,
        name: &str,
        bytes: Bytes,
        current: &KeyValue,
        pending_delete: bool,
        dry_run: bool,
    ) -> Result<Bytes, WriteError> {
        if bytes == current.value {
            // Nothing changed: no write, same resourceVersion (as upstream).
            return Ok(with_resource_version(&current.value, current.mod_revision));
        }
        if dry_run {
            return Ok(with_resource_version(&bytes, current.mod_revision));
        }
        let key = self.key(namespace, name);
        let failed = |op, e| WriteError::storage(&self.info, op, name, e);
        if pending_delete {
            // The last finalizer is gone from an object being deleted: it disappears now,
            // without the update being written (upstream's `errEmptiedFinalizers` path), so
            // watchers see one DELETED event carrying the object as last stored.
            self.storage
                .delete(&key, Some(current.mod_revision))
                .await
                .map_err(|e| failed("delete", e))?;
            return Ok(with_resource_version(&bytes, current.mod_revision));
        }
        let rev = self
            .storage
            .update(&key, bytes.clone(), current.mod_revision)
            .await
            .map_err(|e| failed("update", e))?;
        Ok(with_resource_version(&bytes, rev))
    }
}

/// A write to the `status` subresource: the stored object with `new`'s status (and, for an
/// apply, the managed fields it computed).
fn status_write<T: ApiResource>(old: &T, mut new: T, opts: &WriteOptions) -> T {
    let mut merged = old.clone();
    merged.copy_status_from(&new);
    if opts.apply {
        merged.meta_mut().managed_fields = new.meta_mut().managed_fields.take();
    }
    merged.meta_mut().resource_version = new.meta().resource_version.clone();
    merged
}

/// A write to the object itself keeps the stored status and what the server owns in metadata
/// (uid, namespace, creation and deletion, generation; see [`bump_generation`]). A uid other
/// than the stored one is an error.
fn carry_server_meta<T: ApiResource>(old: &T, new: &mut T) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if T::has_status() {
        new.copy_status_from(old);
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
    errs
}

/// The generation goes up when the spec changed: compared once the new object is defaulted,
/// as upstream decodes (and defaults) a body before its strategy compares, so that a field
/// the body leaves to its default is no change.
fn bump_generation<T: ApiResource>(old: &T, new: &mut T) {
    if new.spec_differs(old) {
        let g = new.meta().generation.unwrap_or(0) + 1;
        new.meta_mut().generation = Some(g);
    }
}

/// No finalizer may be added to an object being deleted.
fn finalizers_while_deleting<T: ApiResource>(old: &T, new: &T) -> Option<FieldError> {
    old.meta().deletion_timestamp.as_ref()?;
    let had = old.meta().finalizers.clone().unwrap_or_default();
    new.meta()
        .finalizers
        .iter()
        .flatten()
        .any(|f| !had.contains(f))
        .then(|| {
            FieldError::forbidden(
                "metadata.finalizers",
                "no new finalizers can be added if the object is being deleted",
            )
        })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use serde_json::json;

    use super::*;
    use crate::registry::rest::RestStorage;
    use crate::registry::store::fixture::{self, NS, Widget, WidgetStatus};
    use crate::storage::Storage;

    const KEY: &str = "/test.example.com/widgets/default/a";

    async fn created(store: &Store<Widget>) -> Widget {
        let out = store
            .create(
                &fixture::ctx(),
                fixture::body(&Widget::new("a", "red")),
                &WriteOptions::default(),
            )
            .await
            .unwrap();
        fixture::decode(&out)
    }

    async fn put(store: &Store<Widget>, w: &Widget, sub: Option<&str>) -> Result<Widget, ApiError> {
        let out = store
            .update(
                &fixture::ctx(),
                "a",
                sub,
                fixture::body(w),
                &WriteOptions::default(),
            )
            .await?;
        Ok(fixture::decode(&out))
    }

    #[tokio::test]
    async fn a_stale_resource_version_is_a_typed_conflict() {
        let (store, storage) = fixture::store();
        let w = created(&store).await;
        let mut stale = w.clone();
        stale.metadata.resource_version = Some("1".into());
        let current = storage.get(KEY).await.unwrap().unwrap();
        let r = store
            .update_typed(
                &fixture::ctx(),
                "a",
                None,
                stale.clone(),
                &current,
                &WriteOptions::default(),
            )
            .await;
        match r {
            Err(WriteError::Conflict(e)) => {
                assert_eq!((e.code, e.reason.as_str()), (409, "Conflict"));
                assert_eq!(
                    e.message,
                    r#"Operation cannot be fulfilled on widgets.test.example.com "a": the object has been modified; please apply your changes to the latest version and try again"#
                );
            }
            other => panic!("not a conflict: {other:?}"),
        }
        // A resourceVersion that is left out is required; one that is not a number is a 400.
        let mut none = w.clone();
        none.metadata.resource_version = None;
        let e = put(&store, &none, None).await.unwrap_err();
        assert_eq!((e.code, e.reason.as_str()), (422, "Invalid"));
        assert!(
            e.message
                .starts_with(r#"widgets.test.example.com "a" is invalid"#),
            "{e:?}"
        );
        let mut bad = w;
        bad.metadata.resource_version = Some("x".into());
        assert_eq!(put(&store, &bad, None).await.unwrap_err().code, 400);
    }

    #[tokio::test]
    async fn a_write_that_loses_the_race_to_the_storage_is_a_typed_conflict() {
        let (store, storage) = fixture::store();
        let w = created(&store).await;
        let read = storage.get(KEY).await.unwrap().unwrap();
        // Another writer lands between the read and the write.
        let mut other = w.clone();
        other.spec.size = 5;
        put(&store, &other, None).await.unwrap();
        let mut new = w.clone();
        new.spec.color = "blue".into();
        let r = store
            .update_typed(
                &fixture::ctx(),
                "a",
                None,
                new,
                &read,
                &WriteOptions::default(),
            )
            .await;
        assert!(matches!(r, Err(WriteError::Conflict(_))), "{r:?}");
    }

    #[tokio::test]
    async fn the_generation_goes_up_only_when_the_spec_changes() {
        let (store, _) = fixture::store();
        let w = created(&store).await;
        let mut labelled = w.clone();
        labelled.metadata.labels = Some([("k".to_string(), "v".to_string())].into());
        let labelled = put(&store, &labelled, None).await.unwrap();
        assert_eq!(labelled.metadata.generation, Some(1));
        assert_ne!(
            labelled.metadata.resource_version,
            w.metadata.resource_version
        );
        let mut respec = labelled.clone();
        respec.spec.color = "blue".into();
        let respec = put(&store, &respec, None).await.unwrap();
        assert_eq!(respec.metadata.generation, Some(2));
        // An unchanged object is not written: same resourceVersion.
        let same = put(&store, &respec, None).await.unwrap();
        assert_eq!(
            same.metadata.resource_version,
            respec.metadata.resource_version
        );
    }

    #[tokio::test]
    async fn the_server_keeps_its_metadata_and_the_status_on_the_main_resource() {
        let (store, _) = fixture::store();
        let w = created(&store).await;
        let mut changed = w.clone();
        changed.metadata.creation_timestamp = None;
        changed.metadata.generation = Some(40);
        changed.status = Some(WidgetStatus { ready: true });
        let out = put(&store, &changed, None).await.unwrap();
        assert_eq!(
            out.metadata.creation_timestamp,
            w.metadata.creation_timestamp
        );
        assert_eq!(out.metadata.generation, Some(1));
        assert_eq!(out.metadata.uid, w.metadata.uid);
        assert!(out.status.is_none());
        let mut uid = w.clone();
        uid.metadata.uid = Some("other".into());
        // Another uid is a failed precondition, as upstream's storage reports it.
        let e = put(&store, &uid, None).await.unwrap_err();
        assert_eq!((e.code, e.reason.as_str()), (409, "Conflict"));
        assert!(
            e.message.ends_with(&format!(
                "Precondition failed: UID in precondition: other, UID in object meta: {}",
                w.metadata.uid.clone().unwrap()
            )),
            "{e:?}"
        );
    }

    #[tokio::test]
    async fn the_status_subresource_changes_only_the_status() {
        let (store, _) = fixture::store();
        let w = created(&store).await;
        let mut new = w.clone();
        new.spec.color = "blue".into();
        new.status = Some(WidgetStatus { ready: true });
        let out = put(&store, &new, Some("status")).await.unwrap();
        assert_eq!(out.spec.color, "red");
        assert_eq!(out.status, Some(WidgetStatus { ready: true }));
        assert_eq!(out.metadata.generation, Some(1));
        assert_eq!(
            put(&store, &new, Some("scale")).await.unwrap_err().code,
            404
        );
    }

    #[tokio::test]
    async fn an_update_does_not_create_and_checks_name_and_namespace() {
        let (store, _) = fixture::store();
        // Update never creates an object (the store does not allow create-on-update).
        let e = put(&store, &Widget::new("a", "red"), None)
            .await
            .unwrap_err();
        assert_eq!((e.code, e.reason.as_str()), (404, "NotFound"));
        let w = created(&store).await;
        let mut renamed = w.clone();
        renamed.metadata.name = Some("b".into());
        let e = put(&store, &renamed, None).await.unwrap_err();
        assert_eq!(
            e.message,
            "the name of the object (b) does not match the name on the URL (a)"
        );
        let mut moved = w;
        moved.metadata.namespace = Some("other".into());
        assert_eq!(put(&store, &moved, None).await.unwrap_err().code, 400);
    }

    #[tokio::test]
    async fn a_dry_run_update_stores_nothing() {
        let (store, storage) = fixture::store();
        let mut w = created(&store).await;
        let rev = storage.current_revision().await.unwrap();
        w.spec.color = "blue".into();
        let opts = WriteOptions {
            dry_run: true,
            ..Default::default()
        };
        let out = store
            .update(&fixture::ctx(), "a", None, fixture::body(&w), &opts)
            .await
            .unwrap();
        assert_eq!(fixture::decode(&out).spec.color, "blue");
        assert_eq!(storage.current_revision().await.unwrap(), rev);
        assert_eq!(
            store.get_object(Some(NS), "a").await.unwrap().spec.color,
            "red"
        );
    }

    #[tokio::test]
    async fn no_finalizer_can_be_added_while_deleting_and_the_last_one_removed_deletes() {
        let (store, _) = fixture::store();
        let mut w = created(&store).await;
        w.metadata.finalizers = Some(vec!["a/f".into()]);
        let w = put(&store, &w, None).await.unwrap();
        let opts = Default::default();
        store.delete(&fixture::ctx(), "a", &opts).await.unwrap();
        let deleting = store.get_object(Some(NS), "a").await.unwrap();
        assert!(deleting.metadata.deletion_timestamp.is_some());
        let mut more = deleting.clone();
        more.metadata.finalizers = Some(vec!["a/f".into(), "b/g".into()]);
        let e = put(&store, &more, None).await.unwrap_err();
        assert_eq!((e.code, e.reason.as_str()), (422, "Invalid"));
        assert_eq!(e.details.unwrap().causes[0].field, "metadata.finalizers");
        let mut done = deleting;
        done.metadata.finalizers = None;
        let last = put(&store, &done, None).await.unwrap();
        assert_eq!(last.metadata.uid, w.metadata.uid);
        assert_eq!(store.get_object(Some(NS), "a").await.unwrap_err().code, 404);
    }

    /// An admission plugin that, the first time it sees an update, changes the stored object
    /// underneath it: the write that follows loses the race.
    struct RacingWriter {
        storage: Arc<dyn Storage>,
        fired: AtomicUsize,
    }

    #[async_trait::async_trait]
    impl crate::admission::AdmissionPlugin for RacingWriter {
        fn name(&self) -> &str {
            "RacingWriter"
        }
        async fn mutate(
            &self,
            attrs: &mut crate::admission::AdmissionAttributes<'_>,
        ) -> Result<(), ApiError> {
            if attrs.operation == Operation::Update
                && self.fired.fetch_add(1, Ordering::SeqCst) == 0
            {
                let kv = self.storage.get(KEY).await.unwrap().unwrap();
                let mut other: Value = serde_json::from_slice(&kv.value).unwrap();
                other["spec"]["size"] = json!(9);
                let bytes = serde_json::to_vec(&other).unwrap().into();
                self.storage
                    .update(KEY, bytes, kv.mod_revision)
                    .await
                    .unwrap();
            }
            Ok(())
        }
    }

    #[tokio::test]
    async fn a_patch_is_applied_again_after_a_racing_write() {
        let (store, storage) = fixture::store();
        created(&store).await;
        let ctx = fixture::ctx_with(vec![Arc::new(RacingWriter {
            storage,
            fired: AtomicUsize::new(0),
        })]);
        let calls = AtomicUsize::new(0);
        let patch = |mut v: Value| {
            calls.fetch_add(1, Ordering::SeqCst);
            v["spec"]["color"] = json!("blue");
            Ok(v)
        };
        let out = store
            .patch(&ctx, "a", None, &patch, &WriteOptions::default())
            .await
            .unwrap();
        let w = fixture::decode(&out);
        assert_eq!(calls.load(Ordering::SeqCst), 2);
        assert_eq!((w.spec.color.as_str(), w.spec.size), ("blue", 9));
    }

    #[tokio::test]
    async fn a_put_that_loses_a_race_is_a_conflict_for_the_client() {
        let (store, storage) = fixture::store();
        let mut w = created(&store).await;
        let ctx = fixture::ctx_with(vec![Arc::new(RacingWriter {
            storage,
            fired: AtomicUsize::new(0),
        })]);
        w.spec.color = "green".into();
        let e = store
            .update(&ctx, "a", None, fixture::body(&w), &WriteOptions::default())
            .await
            .unwrap_err();
        assert_eq!((e.code, e.reason.as_str()), (409, "Conflict"));
        let stored = store.get_object(Some(NS), "a").await.unwrap();
        assert_eq!((stored.spec.color.as_str(), stored.spec.size), ("red", 9));
    }

    #[tokio::test]
    async fn a_patch_naming_a_stale_resource_version_is_not_retried() {
        let (store, _) = fixture::store();
        created(&store).await;
        let calls = AtomicUsize::new(0);
        let patch = |mut v: Value| {
            calls.fetch_add(1, Ordering::SeqCst);
            v["metadata"]["resourceVersion"] = json!("1");
            Ok(v)
        };
        let e = store
            .patch(&fixture::ctx(), "a", None, &patch, &WriteOptions::default())
            .await
            .unwrap_err();
        assert_eq!((e.code, e.reason.as_str()), (409, "Conflict"));
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }

    /// An admission plugin that refuses every update with a 409 `Conflict` of its own.
    struct RefusesWithConflict;

    #[async_trait::async_trait]
    impl crate::admission::AdmissionPlugin for RefusesWithConflict {
        fn name(&self) -> &str {
            "RefusesWithConflict"
        }

        fn phases(&self) -> crate::admission::Phases {
            crate::admission::Phases::Validate
        }
        async fn validate(
            &self,
            attrs: &crate::admission::AdmissionAttributes<'_>,
        ) -> Result<(), ApiError> {
            if attrs.operation == Operation::Update {
                return Err(ApiError::conflict(attrs.resource, attrs.name, "refused"));
            }
            Ok(())
        }
    }

    #[tokio::test]
    async fn a_conflict_that_is_not_a_lost_race_is_not_retried() {
        let (store, _) = fixture::store();
        created(&store).await;
        let ctx = fixture::ctx_with(vec![Arc::new(RefusesWithConflict)]);
        let calls = AtomicUsize::new(0);
        let patch = |mut v: Value| {
            calls.fetch_add(1, Ordering::SeqCst);
            v["spec"]["color"] = json!("blue");
            Ok(v)
        };
        let e = store
            .patch(&ctx, "a", None, &patch, &WriteOptions::default())
            .await
            .unwrap_err();
        assert_eq!((e.code, e.reason.as_str()), (409, "Conflict"));
        assert!(e.message.ends_with("refused"), "{e:?}");
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }
}
