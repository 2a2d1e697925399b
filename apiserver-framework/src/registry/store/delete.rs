//! Delete: preconditions, admission, finalizers (an object that has some is only marked with
//! its deletion time), and the retry of a delete that raced another write.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use serde_json::Value;

use super::Store;
use super::errors::storage_error;
use crate::error::{ApiError, Status, StatusDetails};
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

/// The preconditions of a delete (`uid`, `resourceVersion`): one the object does not meet is
/// upstream's 409 `Conflict`.
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
                r#"Operation cannot be fulfilled on widgets.test.example.com "a": StorageError: invalid object, Code: 4, Key: /test.example.com/widgets/default/a, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: other, UID in object meta: {}"#,
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
            e.message.contains("ResourceVersion in precondition: 1"),
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
