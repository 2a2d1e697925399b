//! The store's calls into the admission chain: the mutating and validating phases of a create
//! or an update, and the admission of a delete.

use super::Store;
use crate::admission::{AdmissionAttributes, Operation};
use crate::error::ApiError;
use crate::registry::rest::RequestContext;
use crate::resource::ApiResource;

/// The two phases of admission: mutating plugins run before the strategy's defaulting and
/// validation, validating plugins right before the write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Phase {
    Mutating,
    Validating,
}

/// One write as admission sees it.
pub(super) struct Write<'a, T> {
    pub operation: Operation,
    pub subresource: Option<&'a str>,
    /// The stored object (updates).
    pub old: Option<&'a T>,
    pub dry_run: bool,
}

impl<T: ApiResource> Store<T> {
    /// Runs one phase of the admission chain on `obj`; a mutating plugin's changes are
    /// decoded back into it.
    pub(super) async fn admit(
        &self,
        phase: Phase,
        ctx: &RequestContext,
        write: &Write<'_, T>,
        obj: &mut T,
    ) -> Result<(), ApiError> {
        // No plugin wants the request: spare the object's round trip through JSON.
        let runs = match phase {
            Phase::Mutating => ctx.admission.may_mutate(&self.info, write.operation),
            Phase::Validating => ctx.admission.handles(&self.info, write.operation),
        };
        if !runs {
            return Ok(());
        }
        let mut value = Self::to_value(obj)?;
        let old_value = write.old.map(Self::to_value).transpose()?;
        let name = obj.meta().name.clone().unwrap_or_default();
        let namespace = obj.meta().namespace.clone();
        // Validating plugins see the object as it is: they get the typed one as well. Mutating
        // plugins may change the JSON, so `object::<T>()` decodes it there.
        let typed: Option<&T> = match phase {
            Phase::Mutating => None,
            Phase::Validating => Some(obj),
        };
        let mut attrs = AdmissionAttributes {
            operation: write.operation,
            resource: &self.info,
            request_resource: ctx.request_resource.as_deref().unwrap_or(&self.info),
            subresource: write.subresource,
            namespace: namespace.as_deref(),
            name: &name,
            object: Some(&mut value),
            old_object: old_value.as_ref(),
            user: &ctx.user,
            dry_run: write.dry_run,
            notes: &ctx.notes,
            reinvocation: Default::default(),
            registry: ctx.registry.as_ref(),
            typed_object: typed.map(|t| t as _),
            typed_old_object: write.old.map(|t| t as _),
            authorizer: ctx.admission.authorizer(),
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

    /// Runs the validating phase of the admission chain on `obj` and answers the JSON the
    /// plugins read, for the caller's next use of it; `None` when no plugin wants the request
    /// (the JSON is then not made).
    pub(super) async fn admit_validating(
        &self,
        ctx: &RequestContext,
        write: &Write<'_, T>,
        obj: &T,
    ) -> Result<Option<serde_json::Value>, ApiError> {
        if !ctx.admission.handles(&self.info, write.operation) {
            return Ok(None);
        }
        let mut value = Self::to_value(obj)?;
        let old_value = write.old.map(Self::to_value).transpose()?;
        let meta = obj.meta();
        let attrs = AdmissionAttributes {
            operation: write.operation,
            resource: &self.info,
            request_resource: ctx.request_resource.as_deref().unwrap_or(&self.info),
            subresource: write.subresource,
            namespace: meta.namespace.as_deref(),
            name: meta.name.as_deref().unwrap_or_default(),
            object: Some(&mut value),
            old_object: old_value.as_ref(),
            user: &ctx.user,
            dry_run: write.dry_run,
            notes: &ctx.notes,
            reinvocation: Default::default(),
            registry: ctx.registry.as_ref(),
            typed_object: Some(obj),
            typed_old_object: write.old.map(|t| t as _),
            authorizer: ctx.admission.authorizer(),
        };
        ctx.admission.validate(&attrs).await?;
        Ok(Some(value))
    }

    /// Runs both phases of the admission chain on the delete of `obj`.
    pub(super) async fn admit_delete(
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
            request_resource: ctx.request_resource.as_deref().unwrap_or(&self.info),
            subresource: None,
            namespace: namespace.as_deref(),
            name: &name,
            object: None,
            old_object: Some(&old),
            user: &ctx.user,
            dry_run,
            notes: &ctx.notes,
            reinvocation: Default::default(),
            registry: ctx.registry.as_ref(),
            typed_object: None,
            typed_old_object: Some(obj),
            authorizer: ctx.admission.authorizer(),
        };
        ctx.admission.mutate(&mut attrs).await?;
        ctx.admission.validate(&attrs).await
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::AtomicUsize;
    use std::sync::atomic::Ordering::Relaxed;

    use super::*;
    use crate::admission::{AdmissionPlugin, Phases};
    use crate::registry::store::fixture::{self, Recorder, Widget};
    use crate::resource::ResourceInfo;

    fn create(dry_run: bool) -> Write<'static, Widget> {
        Write {
            operation: Operation::Create,
            subresource: None,
            old: None,
            dry_run,
        }
    }

    /// Runs `phase` of admission for a create of `w`, which must pass.
    async fn admit_create(
        store: &Store<Widget>,
        ctx: &RequestContext,
        phase: Phase,
        w: &mut Widget,
    ) {
        store.admit(phase, ctx, &create(false), w).await.unwrap();
    }

    #[tokio::test]
    async fn a_mutating_plugin_changes_the_object() {
        let (store, _) = fixture::store();
        let rec = Arc::new(Recorder::default());
        let ctx = fixture::ctx_with(vec![rec.clone()]);
        let mut w = Widget::new("a", "red");
        admit_create(&store, &ctx, Phase::Mutating, &mut w).await;
        assert_eq!(w.metadata.labels.unwrap()["admitted"], "mutated");
        assert_eq!(rec.phases(), [("mutate", Operation::Create)]);
    }

    #[tokio::test]
    async fn a_validating_plugin_refuses_and_sees_the_old_object() {
        let (store, _) = fixture::store();
        let rec = Arc::new(Recorder::default());
        let ctx = fixture::ctx_with(vec![rec.clone()]);
        let old = Widget::new("a", "red");
        let update = Write {
            operation: Operation::Update,
            subresource: Some("status"),
            old: Some(&old),
            dry_run: true,
        };
        let mut w = Widget::new("a", "deny");
        let e = store
            .admit(Phase::Validating, &ctx, &update, &mut w)
            .await
            .unwrap_err();
        assert_eq!((e.code, e.reason.as_str()), (403, "Forbidden"));
        assert_eq!(
            e.message,
            r#"widgets.test.example.com "a" is forbidden: denied by Recorder"#
        );
        let seen = rec.seen.lock().unwrap();
        let (_, (op, sub, name, obj, old_obj)) = &seen[0];
        assert_eq!(
            (*op, sub.as_deref(), name.as_str()),
            (Operation::Update, Some("status"), "a")
        );
        assert_eq!(obj.as_ref().unwrap()["spec"]["color"], "deny");
        assert_eq!(old_obj.as_ref().unwrap()["spec"]["color"], "red");
        // Validation changes nothing.
        assert!(w.metadata.labels.is_none());
    }

    /// A plugin that wants no request of any resource and fails when called.
    struct Uninterested;

    #[async_trait::async_trait]
    impl AdmissionPlugin for Uninterested {
        fn name(&self) -> &str {
            "Uninterested"
        }
        fn handles(&self, _: &ResourceInfo, _: Operation) -> bool {
            false
        }
        async fn mutate(&self, _: &mut AdmissionAttributes<'_>) -> Result<(), ApiError> {
            Err(ApiError::internal("called"))
        }
    }

    #[tokio::test]
    async fn plugins_that_do_not_handle_the_request_are_not_run() {
        let (store, _) = fixture::store();
        let ctx = fixture::ctx_with(vec![Arc::new(Uninterested)]);
        let mut w = Widget::new("a", "red");
        let before = w.clone();
        admit_create(&store, &ctx, Phase::Mutating, &mut w).await;
        assert_eq!(w, before);
    }

    /// A plugin that says it only validates and counts its validations; its `mutate` would fail.
    #[derive(Default)]
    struct ValidatesOnly {
        validated: AtomicUsize,
    }

    #[async_trait::async_trait]
    impl AdmissionPlugin for ValidatesOnly {
        fn name(&self) -> &str {
            "ValidatesOnly"
        }
        fn phases(&self) -> Phases {
            Phases::Validate
        }
        async fn mutate(&self, _: &mut AdmissionAttributes<'_>) -> Result<(), ApiError> {
            Err(ApiError::internal(
                "mutate called on a plugin that only validates",
            ))
        }
        async fn validate(&self, _: &AdmissionAttributes<'_>) -> Result<(), ApiError> {
            self.validated.fetch_add(1, Relaxed);
            Ok(())
        }
    }

    #[tokio::test]
    async fn a_plugin_that_says_it_only_validates_is_skipped_in_the_mutating_phase() {
        let (store, _) = fixture::store();
        let plugin = Arc::new(ValidatesOnly::default());
        let ctx = fixture::ctx_with(vec![plugin.clone()]);
        let info = store.info.clone();
        assert!(!ctx.admission.may_mutate(&info, Operation::Create));
        for round in 1..=2 {
            let mut w = Widget::new("a", "red");
            let before = w.clone();
            admit_create(&store, &ctx, Phase::Mutating, &mut w).await;
            assert_eq!(w, before);
            admit_create(&store, &ctx, Phase::Validating, &mut w).await;
            assert_eq!(
                plugin.validated.load(Relaxed),
                round,
                "validation runs on every request"
            );
        }
    }

    #[tokio::test]
    async fn a_mutating_plugin_beside_one_that_only_validates_mutates_every_request() {
        let (store, _) = fixture::store();
        let rec = Arc::new(Recorder::default());
        let ctx = fixture::ctx_with(vec![Arc::new(ValidatesOnly::default()), rec.clone()]);
        for _ in 0..2 {
            let mut w = Widget::new("a", "red");
            admit_create(&store, &ctx, Phase::Mutating, &mut w).await;
            assert_eq!(w.metadata.labels.unwrap()["admitted"], "mutated");
            assert!(ctx.admission.may_mutate(&store.info, Operation::Create));
        }
        assert_eq!(
            rec.phases(),
            [("mutate", Operation::Create), ("mutate", Operation::Create)]
        );
    }

    /// A plugin that says it only mutates; its `validate` would fail.
    struct MutatesOnly;

    #[async_trait::async_trait]
    impl AdmissionPlugin for MutatesOnly {
        fn name(&self) -> &str {
            "MutatesOnly"
        }
        fn phases(&self) -> Phases {
            Phases::Mutate
        }
        async fn validate(&self, _: &AdmissionAttributes<'_>) -> Result<(), ApiError> {
            Err(ApiError::internal(
                "validate called on a plugin that only mutates",
            ))
        }
    }

    #[tokio::test]
    async fn a_plugin_that_says_it_only_mutates_is_skipped_in_the_validating_phase() {
        let (store, _) = fixture::store();
        let ctx = fixture::ctx_with(vec![Arc::new(MutatesOnly)]);
        let mut w = Widget::new("a", "red");
        admit_create(&store, &ctx, Phase::Validating, &mut w).await;
        assert!(ctx.admission.may_mutate(&store.info, Operation::Create));
    }

    #[tokio::test]
    async fn a_delete_runs_both_phases_with_the_old_object_only() {
        let (store, _) = fixture::store();
        let rec = Arc::new(Recorder {
            deny_delete: true,
            ..Default::default()
        });
        let ctx = fixture::ctx_with(vec![rec.clone()]);
        let w = Widget::new("a", "red");
        let e = store.admit_delete(&ctx, &w, false).await.unwrap_err();
        assert_eq!(e.code, 403);
        assert_eq!(
            rec.phases(),
            [
                ("mutate", Operation::Delete),
                ("validate", Operation::Delete)
            ]
        );
        {
            let seen = rec.seen.lock().unwrap();
            assert!(seen[0].1.3.is_none());
            assert_eq!(seen[0].1.4.as_ref().unwrap()["metadata"]["name"], "a");
        }
        // Without plugins nothing runs and nothing fails.
        store
            .admit_delete(&fixture::ctx(), &w, false)
            .await
            .unwrap();
    }
}
