//! Create: the server's metadata (name from `generateName`, uid, creation time, generation),
//! admission, the strategy's defaulting and validation, and the write.

use bytes::Bytes;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use rand::Rng;

use super::Store;
use super::admission::{Phase, Write};
use super::errors::storage_error;
use crate::admission::Operation;
use crate::error::{ApiError, FieldError};
use crate::registry::rest::RequestContext;
use crate::registry::rest::options::WriteOptions;
use crate::registry::store::encoding::with_resource_version;
use crate::resource::ApiResource;
use crate::validation;

impl<T: ApiResource> Store<T> {
    /// Creates `obj`; answers the stored object at its resourceVersion (a dry run: as it would
    /// be stored).
    pub(super) async fn create_typed(
        &self,
        ctx: &RequestContext,
        mut obj: T,
        opts: &WriteOptions,
    ) -> Result<Bytes, ApiError> {
        let namespace = self.namespace(ctx)?;
        self.init_meta(obj.meta_mut(), namespace)?;
        if T::has_status() {
            obj.clear_status();
        }
        let write = Write {
            operation: Operation::Create,
            subresource: None,
            old: None,
            dry_run: opts.dry_run,
        };
        self.admit(Phase::Mutating, ctx, &write, &mut obj).await?;
        self.strategy.prepare_for_create(&mut obj);
        self.strategy.default(&mut obj);
        let name = obj.meta().name.clone().unwrap_or_default();
        let mut errs = self.validate_name(&name);
        errs.extend(validation::object_meta(obj.meta()));
        errs.extend(self.strategy.validate(&obj));
        errs.extend(self.validate_schema(&obj, None)?);
        if !errs.is_empty() {
            return Err(ApiError::invalid(&self.info, &name, &errs));
        }
        // The JSON validating admission reads is the one managed fields are computed from.
        let value = self.admit_validating(ctx, &write, &obj).await?;
        self.track_update_of(None, &mut obj, value, None, opts)?;
        let bytes = self.encode(&mut obj)?;
        let key = self.key(namespace, &name);
        let storage_error = |op, e| storage_error(&self.info, op, &name, e);
        if opts.dry_run {
            if self
                .storage
                .get(&key)
                .await
                .map_err(|e| storage_error("get", e))?
                .is_some()
            {
                return Err(ApiError::already_exists(&self.info, &name));
            }
            return Ok(bytes);
        }
        let rev = self
            .storage
            .create(&key, bytes.clone())
            .await
            .map_err(|e| storage_error("create", e))?;
        Ok(with_resource_version(&bytes, rev))
    }

    /// Sets what the server owns in a new object's metadata: the namespace of the request
    /// (a different one in the body is a 400), a name from `generateName`, uid, creation
    /// time and generation 1; clears resourceVersion and deletion.
    fn init_meta(&self, meta: &mut ObjectMeta, namespace: Option<&str>) -> Result<(), ApiError> {
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
        Ok(())
    }

    fn validate_name(&self, name: &str) -> Vec<FieldError> {
        validation::dns1123_subdomain(name)
            .into_iter()
            .map(|msg| FieldError::invalid("metadata.name", name, msg))
            .collect()
    }
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

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::*;
    use crate::registry::rest::RestStorage;
    use crate::registry::store::fixture::{self, NS, Recorder, Widget, WidgetStatus};
    use crate::storage::Storage;

    fn dry_run() -> WriteOptions {
        WriteOptions {
            dry_run: true,
            ..Default::default()
        }
    }

    #[tokio::test]
    async fn a_create_stores_the_object_with_the_servers_metadata() {
        let (store, storage) = fixture::store();
        let mut w = Widget::new("a", "red");
        w.metadata.uid = Some("client-uid".into());
        w.metadata.generation = Some(7);
        w.metadata.resource_version = Some("99".into());
        w.status = Some(WidgetStatus { ready: true });
        let out = store
            .create(&fixture::ctx(), fixture::body(&w), &WriteOptions::default())
            .await
            .unwrap();
        let created = fixture::decode(&out);
        let meta = &created.metadata;
        assert_eq!(meta.namespace.as_deref(), Some(NS));
        assert_ne!(meta.uid.as_deref(), Some("client-uid"));
        assert_eq!(meta.generation, Some(1));
        assert!(meta.creation_timestamp.is_some());
        assert!(created.status.is_none(), "status is cleared on create");
        let kv = storage
            .get("/test.example.com/widgets/default/a")
            .await
            .unwrap()
            .unwrap();
        assert_eq!(meta.resource_version, Some(kv.mod_revision.to_string()));
        assert_eq!(
            store.get_object(Some(NS), "a").await.unwrap().spec.color,
            "red"
        );
    }

    #[tokio::test]
    async fn generate_name_makes_a_name_and_a_missing_name_is_invalid() {
        let (store, _) = fixture::store();
        let mut w = Widget::new("", "red");
        w.metadata.generate_name = Some("gen-".into());
        let out = store
            .create(&fixture::ctx(), fixture::body(&w), &WriteOptions::default())
            .await
            .unwrap();
        let name = fixture::decode(&out).metadata.name.unwrap();
        assert!(name.starts_with("gen-") && name.len() == 9, "{name}");
        assert!(
            name[4..]
                .bytes()
                .all(|b| b"bcdfghjklmnpqrstvwxz2456789".contains(&b))
        );
        assert!(store.get_object(Some(NS), &name).await.is_ok());

        let e = store
            .create(
                &fixture::ctx(),
                json!({"spec": {}}),
                &WriteOptions::default(),
            )
            .await
            .unwrap_err();
        assert_eq!((e.code, e.reason.as_str()), (422, "Invalid"));
        assert_eq!(e.details.unwrap().causes[0].field, "metadata.name");
    }

    #[test]
    fn a_long_generate_name_is_cut_at_a_character_boundary() {
        let name = generate_name(&"é".repeat(40));
        assert_eq!(name.chars().count(), 29 + 5);
        assert_eq!(generate_name(&"x".repeat(100)).len(), 63);
    }

    #[tokio::test]
    async fn a_second_create_of_a_name_already_exists() {
        let (store, _) = fixture::store();
        let body = fixture::body(&Widget::new("a", "red"));
        let opts = WriteOptions::default();
        store
            .create(&fixture::ctx(), body.clone(), &opts)
            .await
            .unwrap();
        let e = store
            .create(&fixture::ctx(), body.clone(), &opts)
            .await
            .unwrap_err();
        assert_eq!((e.code, e.reason.as_str()), (409, "AlreadyExists"));
        assert_eq!(e.message, r#"widgets.test.example.com "a" already exists"#);
        // A dry run finds it too.
        let e = store
            .create(&fixture::ctx(), body, &dry_run())
            .await
            .unwrap_err();
        assert_eq!(e.reason, "AlreadyExists");
    }

    #[tokio::test]
    async fn a_dry_run_answers_the_object_and_stores_nothing() {
        let (store, storage) = fixture::store();
        let before = storage.current_revision().await.unwrap();
        let out = store
            .create(
                &fixture::ctx(),
                fixture::body(&Widget::new("a", "red")),
                &dry_run(),
            )
            .await
            .unwrap();
        let w = fixture::decode(&out);
        assert_eq!(w.metadata.name.as_deref(), Some("a"));
        assert!(w.metadata.uid.is_some());
        assert_eq!(storage.current_revision().await.unwrap(), before);
        assert_eq!(store.get_object(Some(NS), "a").await.unwrap_err().code, 404);
    }

    #[tokio::test]
    async fn the_namespace_comes_from_the_request() {
        let (store, _) = fixture::store();
        let mut w = Widget::new("a", "red");
        w.metadata.namespace = Some("other".into());
        let e = store
            .create(&fixture::ctx(), fixture::body(&w), &WriteOptions::default())
            .await
            .unwrap_err();
        assert_eq!(e.code, 400);
        let mut ctx = fixture::ctx();
        ctx.namespace = None;
        let e = store
            .create(
                &ctx,
                fixture::body(&Widget::new("a", "red")),
                &WriteOptions::default(),
            )
            .await
            .unwrap_err();
        assert_eq!(e.message, "Namespace parameter required.");
    }

    #[tokio::test]
    async fn admission_and_validation_run_in_order_and_may_refuse() {
        let (store, _) = fixture::store();
        let rec = Arc::new(Recorder::default());
        let ctx = fixture::ctx_with(vec![rec.clone()]);
        let out = store
            .create(
                &ctx,
                fixture::body(&Widget::new("a", "red")),
                &WriteOptions::default(),
            )
            .await
            .unwrap();
        assert_eq!(
            fixture::decode(&out).metadata.labels.unwrap()["admitted"],
            "mutated"
        );
        assert_eq!(
            rec.phases(),
            [
                ("mutate", Operation::Create),
                ("validate", Operation::Create)
            ]
        );
        let e = store
            .create(
                &ctx,
                fixture::body(&Widget::new("b", "deny")),
                &WriteOptions::default(),
            )
            .await
            .unwrap_err();
        assert_eq!(e.code, 403);
        assert_eq!(store.get_object(Some(NS), "b").await.unwrap_err().code, 404);
        let e = store
            .create(
                &ctx,
                fixture::body(&Widget::new("Not_A_Name", "red")),
                &WriteOptions::default(),
            )
            .await
            .unwrap_err();
        assert_eq!((e.code, e.reason.as_str()), (422, "Invalid"));
    }
}
