//! Delete: preconditions, admission, finalizers (an object that has some is only marked with
//! its deletion time), and the retry of a delete that raced another write.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use serde_json::Value;

use super::Store;
use super::errors::storage_error;
use crate::error::{ApiError, Status, StatusDetails, StatusReason};
use crate::registry::rest::options::{DeleteOptions, ListOptions};
use crate::registry::rest::{DeleteOutcome, ObjectList, RequestContext, RestStorage};
use crate::registry::store::encoding::with_resource_version;
use crate::resource::{ApiResource, ResourceInfo};
use crate::storage::StorageError;

/// How many times a delete reads the object again when a concurrent write changed it between
/// the read and the delete (upstream retries without a bound; each retry reads the latest
/// state, so running out takes that many writes landing in that many short windows).
const DELETE_RETRIES: usize = 16;

impl<T: ApiResource> Store<T> {
    /// Deletes object `name`, or marks it with its deletion time while finalizers hold it.
    pub(super) async fn delete_object(
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
            check_preconditions(
                &self.info,
                obj.meta(),
                opts,
                (attempt > 0).then_some(key.as_str()),
            )?;
            self.admit_delete(ctx, &obj, opts.dry_run).await?;
            if obj.meta().deletion_timestamp.is_none()
                && let Some(finalizers) = garbage_collection_finalizers(obj.meta(), opts)
            {
                obj.meta_mut().finalizers = Some(finalizers);
            }
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
                    Err(e) => return Err(storage_error(&self.info, "update", name, e)),
                }
            }
            if !opts.dry_run {
                match self.storage.delete(&key, Some(current.mod_revision)).await {
                    Ok(_) => {}
                    Err(e) if retry(&e, attempt) => {
                        attempt += 1;
                        continue;
                    }
                    Err(e) => return Err(storage_error(&self.info, "delete", name, e)),
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

    /// Deletes every object the list options select, each as [`Store::delete_object`] would;
    /// answers the deleted (or now pending) objects.
    pub(super) async fn delete_objects(
        &self,
        ctx: &RequestContext,
        list: &ListOptions,
        opts: &DeleteOptions,
    ) -> Result<ObjectList, ApiError> {
        let all = RestStorage::list(self, ctx, list).await?;
        let resource_version = all.resource_version.clone();
        let mut deleted = Vec::new();
        for item in &all.into_items() {
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
            match self.delete_object(&item_ctx, &name, opts).await {
                Ok(DeleteOutcome::Pending(obj)) => deleted.push(obj),
                Ok(DeleteOutcome::Deleted(_)) => deleted.push(item.clone()),
                Err(e) if e.code == 404 => {}
                Err(e) => return Err(e),
            }
        }
        let mut deleted = ObjectList::new(deleted);
        deleted.resource_version = resource_version;
        Ok(deleted)
    }
}

/// The garbage collector's finalizer a delete asks for (upstream's
/// `deletionFinalizersForGarbageCollection`): `orphan` when dependents are orphaned
/// (`propagationPolicy=Orphan`, `orphanDependents=true`, or the object already asks for it),
/// `foregroundDeletion` when they are deleted first (`propagationPolicy=Foreground`, or the
/// object already asks for it); `Background`, the default, needs none. The object's finalizers
/// then, when they change: the others kept in order, the collector's last. The object waits,
/// marked for deletion, until the collector (kube-controller-manager's, which handles
/// aggregated resources too) removes its finalizer.
fn garbage_collection_finalizers(meta: &ObjectMeta, opts: &DeleteOptions) -> Option<Vec<String>> {
    const ORPHAN: &str = "orphan";
    const FOREGROUND: &str = "foregroundDeletion";
    let current = meta.finalizers.clone().unwrap_or_default();
    let has = |f: &str| current.iter().any(|c| c == f);
    let policy = opts.propagation_policy.as_deref();
    let orphan = match (policy, opts.orphan_dependents) {
        (Some(p), _) => p == "Orphan",
        (None, Some(o)) => o,
        (None, None) => has(ORPHAN),
    };
    let foreground = !orphan
        && match (policy, opts.orphan_dependents) {
            (Some(p), _) => p == "Foreground",
            (None, Some(_)) => false,
            (None, None) => has(FOREGROUND),
        };
    let mut wanted: Vec<String> = current
        .iter()
        .filter(|f| *f != ORPHAN && *f != FOREGROUND)
        .cloned()
        .collect();
    if orphan {
        wanted.push(ORPHAN.to_string());
    }
    if foreground {
        wanted.push(FOREGROUND.to_string());
    }
    let same = |a: &[String], b: &[String]| {
        let set = |v: &[String]| v.iter().cloned().collect::<std::collections::BTreeSet<_>>();
        set(a) == set(b)
    };
    (!same(&current, &wanted)).then_some(wanted)
}

/// The preconditions of a delete (`uid`, `resourceVersion`): one the object does not meet is
/// upstream's 409 `Conflict` of `rest.BeforeDelete`, which checks them on the object first
/// read. As upstream's, it names the object by its kind (`Flunder.wardle.example.com "f"`,
/// details `kind: Flunder`), not its resource. On an object read again after a concurrent
/// change (`retried_at` its storage key), the check is the storage's conditional delete's:
/// upstream's storage error, naming the resource and the key.
fn check_preconditions(
    info: &ResourceInfo,
    meta: &ObjectMeta,
    opts: &DeleteOptions,
    retried_at: Option<&str>,
) -> Result<(), ApiError> {
    let name = meta.name.clone().unwrap_or_default();
    if let Some(key) = retried_at {
        let failed = |what: &str, asked: &str, stored: Option<&String>| {
            ApiError::conflict(
                info,
                &name,
                &format!(
                    "StorageError: invalid object, Code: 4, Key: {key}, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: {what} in precondition: {asked}, {what} in object meta: {}",
                    stored.cloned().unwrap_or_default()
                ),
            )
        };
        if let Some(uid) = &opts.precondition_uid
            && Some(uid) != meta.uid.as_ref()
        {
            return Err(failed("UID", uid, meta.uid.as_ref()));
        }
        if let Some(rv) = &opts.precondition_resource_version
            && Some(rv) != meta.resource_version.as_ref()
        {
            return Err(failed(
                "ResourceVersion",
                rv,
                meta.resource_version.as_ref(),
            ));
        }
        return Ok(());
    }
    let conflict = |why: String| {
        let group_kind = if info.group.is_empty() {
            info.kind.clone()
        } else {
            format!("{}.{}", info.kind, info.group)
        };
        ApiError::new(
            409,
            StatusReason::Conflict.as_str(),
            format!("Operation cannot be fulfilled on {group_kind} {name:?}: {why}"),
        )
        .with_details(StatusDetails {
            name: name.clone(),
            group: info.group.clone(),
            kind: info.kind.clone(),
            ..Default::default()
        })
    };
    if let Some(uid) = &opts.precondition_uid
        && Some(uid) != meta.uid.as_ref()
    {
        return Err(conflict(format!(
            "the UID in the precondition ({uid}) does not match the UID in record ({}). The object might have been deleted and then recreated",
            meta.uid.clone().unwrap_or_default()
        )));
    }
    if let Some(rv) = &opts.precondition_resource_version
        && Some(rv) != meta.resource_version.as_ref()
    {
        return Err(conflict(format!(
            "the ResourceVersion in the precondition ({rv}) does not match the ResourceVersion in record ({}). The object might have been modified",
            meta.resource_version.clone().unwrap_or_default()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::admission::Operation;
    use crate::registry::rest::options::WriteOptions;
    use crate::registry::store::fixture::{self, NS, Recorder, Widget};
    use crate::selector::LabelSelector;
    use crate::storage::Storage;

    async fn create(store: &Store<Widget>, w: Widget) -> Widget {
        let out = store
            .create(&fixture::ctx(), fixture::body(&w), &WriteOptions::default())
            .await
            .unwrap();
        fixture::decode(&out)
    }

    fn finalized(name: &str) -> Widget {
        let mut w = Widget::new(name, "red");
        w.metadata.finalizers = Some(vec!["example.com/hold".into()]);
        w
    }

    #[tokio::test]
    async fn an_object_without_finalizers_is_gone_with_a_success_status() {
        let (store, _) = fixture::store();
        let w = create(&store, Widget::new("a", "red")).await;
        let out = store
            .delete(&fixture::ctx(), "a", &DeleteOptions::default())
            .await
            .unwrap();
        let DeleteOutcome::Deleted(status) = out else {
            panic!("{out:?}")
        };
        let d = status.details.unwrap();
        assert_eq!((d.name.as_str(), d.kind.as_str()), ("a", "widgets"));
        assert_eq!(Some(d.uid), w.metadata.uid);
        assert_eq!(store.get_object(Some(NS), "a").await.unwrap_err().code, 404);
        let e = store
            .delete(&fixture::ctx(), "a", &DeleteOptions::default())
            .await
            .unwrap_err();
        assert_eq!(e.code, 404);
    }

    #[tokio::test]
    async fn finalizers_mark_the_deletion_time_with_no_grace() {
        let (store, _) = fixture::store();
        create(&store, finalized("a")).await;
        let opts = DeleteOptions {
            grace_period_seconds: Some(30),
            ..Default::default()
        };
        let out = store.delete(&fixture::ctx(), "a", &opts).await.unwrap();
        let DeleteOutcome::Pending(bytes) = out else {
            panic!("{out:?}")
        };
        let pending = fixture::decode(&bytes);
        assert!(pending.metadata.deletion_timestamp.is_some());
        assert_eq!(pending.metadata.deletion_grace_period_seconds, Some(0));
        let stored = store.get_object(Some(NS), "a").await.unwrap();
        assert_eq!(
            stored.metadata.resource_version,
            pending.metadata.resource_version
        );
        // A second delete changes nothing and answers the object again.
        let again = store.delete(&fixture::ctx(), "a", &opts).await.unwrap();
        let DeleteOutcome::Pending(bytes) = again else {
            panic!("{again:?}")
        };
        assert_eq!(fixture::decode(&bytes), stored);
    }

    #[tokio::test]
    async fn a_dry_run_delete_changes_nothing() {
        let (store, storage) = fixture::store();
        create(&store, Widget::new("a", "red")).await;
        create(&store, finalized("b")).await;
        let rev = storage.current_revision().await.unwrap();
        let opts = DeleteOptions {
            dry_run: true,
            ..Default::default()
        };
        let out = store.delete(&fixture::ctx(), "a", &opts).await.unwrap();
        assert!(matches!(out, DeleteOutcome::Deleted(_)));
        let out = store.delete(&fixture::ctx(), "b", &opts).await.unwrap();
        let DeleteOutcome::Pending(bytes) = out else {
            panic!("{out:?}")
        };
        assert!(
            fixture::decode(&bytes)
                .metadata
                .deletion_timestamp
                .is_some()
        );
        assert_eq!(storage.current_revision().await.unwrap(), rev);
        let b = store.get_object(Some(NS), "b").await.unwrap();
        assert!(b.metadata.deletion_timestamp.is_none());
    }

    #[tokio::test]
    async fn preconditions_on_uid_and_resource_version_answer_conflict() {
        let (store, _) = fixture::store();
        let w = create(&store, Widget::new("a", "red")).await;
        let opts = DeleteOptions {
            precondition_uid: Some("other".into()),
            ..Default::default()
        };
        let e = store.delete(&fixture::ctx(), "a", &opts).await.unwrap_err();
        assert_eq!((e.code, e.reason.as_str()), (409, "Conflict"));
        assert_eq!(
            e.message,
            format!(
                r#"Operation cannot be fulfilled on Widget.test.example.com "a": the UID in the precondition (other) does not match the UID in record ({}). The object might have been deleted and then recreated"#,
                w.metadata.uid.clone().unwrap()
            )
        );
        let opts = DeleteOptions {
            precondition_resource_version: Some("1".into()),
            ..Default::default()
        };
        let e = store.delete(&fixture::ctx(), "a", &opts).await.unwrap_err();
        assert_eq!(e.code, 409);
        assert!(
            e.message
                .contains("the ResourceVersion in the precondition (1) does not match"),
            "{e:?}"
        );
        // Met preconditions delete.
        let opts = DeleteOptions {
            precondition_uid: w.metadata.uid.clone(),
            precondition_resource_version: w.metadata.resource_version.clone(),
            ..Default::default()
        };
        store.delete(&fixture::ctx(), "a", &opts).await.unwrap();
    }

    #[tokio::test]
    async fn propagation_policies_ask_for_the_garbage_collectors_finalizers() {
        let (store, _) = fixture::store();
        for (name, policy, finalizer) in [
            ("f", "Foreground", Some("foregroundDeletion")),
            ("o", "Orphan", Some("orphan")),
            ("b", "Background", None),
        ] {
            create(&store, Widget::new(name, "red")).await;
            let opts = DeleteOptions {
                propagation_policy: Some(policy.into()),
                ..Default::default()
            };
            let out = store.delete(&fixture::ctx(), name, &opts).await.unwrap();
            match (out, finalizer) {
                (DeleteOutcome::Pending(obj), Some(f)) => {
                    let v: Value = serde_json::from_slice(&obj).unwrap();
                    assert_eq!(v["metadata"]["finalizers"], serde_json::json!([f]), "{v}");
                    assert!(v["metadata"]["deletionTimestamp"].is_string(), "{v}");
                }
                (DeleteOutcome::Deleted(_), None) => {}
                (other, f) => panic!("{policy}: {other:?}, expected the finalizer {f:?}"),
            }
        }
        // orphanDependents=true is the Orphan policy.
        create(&store, Widget::new("od", "red")).await;
        let opts = DeleteOptions {
            orphan_dependents: Some(true),
            ..Default::default()
        };
        let out = store.delete(&fixture::ctx(), "od", &opts).await.unwrap();
        assert!(matches!(out, DeleteOutcome::Pending(_)), "{out:?}");
    }

    #[tokio::test]
    async fn admission_sees_the_delete_and_may_refuse_it() {
        let (store, _) = fixture::store();
        create(&store, Widget::new("a", "red")).await;
        let rec = Arc::new(Recorder {
            deny_delete: true,
            ..Default::default()
        });
        let ctx = fixture::ctx_with(vec![rec.clone()]);
        let e = store
            .delete(&ctx, "a", &DeleteOptions::default())
            .await
            .unwrap_err();
        assert_eq!(e.code, 403);
        assert!(rec.phases().contains(&("validate", Operation::Delete)));
        assert!(store.get_object(Some(NS), "a").await.is_ok());
    }

    #[tokio::test]
    async fn a_delete_collection_deletes_what_the_selector_selects() {
        let (store, _) = fixture::store();
        for (name, tier) in [("a", "web"), ("b", "web"), ("c", "db")] {
            let mut w = if name == "b" {
                finalized(name)
            } else {
                Widget::new(name, "red")
            };
            w.metadata.labels = Some([("tier".to_string(), tier.to_string())].into());
            create(&store, w).await;
        }
        let list = ListOptions {
            label_selector: LabelSelector::parse("tier=web").unwrap(),
            ..Default::default()
        };
        let out = store
            .delete_collection(&fixture::ctx(), &list, &DeleteOptions::default())
            .await
            .unwrap();
        let names: Vec<_> = out
            .into_items()
            .iter()
            .map(|b| fixture::decode(b).metadata.name.unwrap())
            .collect();
        assert_eq!(names, ["a", "b"]);
        assert_eq!(store.get_object(Some(NS), "a").await.unwrap_err().code, 404);
        let b = store.get_object(Some(NS), "b").await.unwrap();
        assert!(b.metadata.deletion_timestamp.is_some());
        assert!(store.get_object(Some(NS), "c").await.is_ok());
    }

    #[tokio::test]
    async fn a_delete_that_races_a_write_reads_again_and_deletes() {
        let (store, storage) = fixture::store();
        create(&store, finalized("a")).await;
        // A validating plugin that lands a write to the object the first time it runs.
        struct Racer(Arc<dyn Storage>, std::sync::atomic::AtomicBool);
        #[async_trait::async_trait]
        impl crate::admission::AdmissionPlugin for Racer {
            fn name(&self) -> &str {
                "Racer"
            }

            fn phases(&self) -> crate::admission::Phases {
                crate::admission::Phases::Validate
            }
            async fn validate(
                &self,
                _: &crate::admission::AdmissionAttributes<'_>,
            ) -> Result<(), ApiError> {
                if !self.1.swap(true, std::sync::atomic::Ordering::SeqCst) {
                    let key = "/test.example.com/widgets/default/a";
                    let kv = self.0.get(key).await.unwrap().unwrap();
                    let mut v: Value = serde_json::from_slice(&kv.value).unwrap();
                    v["metadata"]["labels"] = serde_json::json!({"raced": "yes"});
                    let bytes = serde_json::to_vec(&v).unwrap().into();
                    self.0.update(key, bytes, kv.mod_revision).await.unwrap();
                }
                Ok(())
            }
        }
        let ctx = fixture::ctx_with(vec![Arc::new(Racer(storage, false.into()))]);
        let out = store
            .delete(&ctx, "a", &DeleteOptions::default())
            .await
            .unwrap();
        let DeleteOutcome::Pending(bytes) = out else {
            panic!("{out:?}")
        };
        let w = fixture::decode(&bytes);
        // Decided again on the state after the racing write, which it keeps.
        assert!(w.metadata.deletion_timestamp.is_some());
        assert_eq!(w.metadata.labels.unwrap()["raced"], "yes");
    }
}
