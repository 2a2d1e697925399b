//! `metadata.managedFields` of the store's writes: which manager owns which fields.

use super::Store;
use crate::apply;
use crate::error::ApiError;
use crate::registry::rest::options::WriteOptions;
use crate::resource::ApiResource;

impl<T: ApiResource> Store<T> {
    /// The server-side apply context of a write by `manager` to `subresource`.
    fn apply_context<'a>(
        &'a self,
        manager: &'a str,
        subresource: Option<&'a str>,
    ) -> apply::Context<'a> {
        apply::Context {
            schema: &self.schema,
            manager,
            api_version: &self.api_version,
            subresource,
            reset_fields: apply::reset_fields(subresource, self.info.status_subresource),
            now: jiff::Timestamp::now(),
        }
    }

    /// Records a write other than an apply in `new`'s `metadata.managedFields`: the fields
    /// it changes from `old` (`None` on create) join the writer's `Update` entry.
    pub(super) fn track_update(
        &self,
        old: Option<&T>,
        new: &mut T,
        subresource: Option<&str>,
        opts: &WriteOptions,
    ) -> Result<(), ApiError> {
        self.track_update_of(old, new, None, subresource, opts)
    }

    /// [`track_update`](Self::track_update), given `new`'s JSON when the caller has it.
    pub(super) fn track_update_of(
        &self,
        old: Option<&T>,
        new: &mut T,
        new_value: Option<serde_json::Value>,
        subresource: Option<&str>,
        opts: &WriteOptions,
    ) -> Result<(), ApiError> {
        if opts.apply {
            return Ok(());
        }
        let mut old_value = old.map(Self::to_value).transpose()?;
        let mut new_value = match new_value {
            Some(v) => v,
            None => Self::to_value(new)?,
        };
        let managed =
            apply::ManagedFields::for_update(old_value.as_ref(), &new_value, subresource.is_some());
        // Both values are this write's own copies: the comparison reads them without
        // `managedFields`, which is taken out here rather than copied out.
        old_value.iter_mut().for_each(apply::remove_managed_fields);
        apply::remove_managed_fields(&mut new_value);
        let ctx = self.apply_context(&opts.field_manager, subresource);
        new.meta_mut().managed_fields =
            apply::update_typed(&ctx, old_value.as_ref(), &new_value, managed)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::registry::store::fixture::{self, Widget, WidgetStatus};

    fn opts(manager: &str) -> WriteOptions {
        WriteOptions {
            field_manager: manager.into(),
            ..Default::default()
        }
    }

    /// `(manager, operation, subresource, fieldsV1)` of each entry.
    fn entries(w: &Widget) -> Vec<(String, String, String, Value)> {
        w.metadata
            .managed_fields
            .iter()
            .flatten()
            .map(|e| {
                (
                    e.manager.clone().unwrap_or_default(),
                    e.operation.clone().unwrap_or_default(),
                    e.subresource.clone().unwrap_or_default(),
                    e.fields_v1
                        .as_ref()
                        .map(|f| f.0.clone())
                        .unwrap_or_default(),
                )
            })
            .collect()
    }

    #[test]
    fn a_create_gives_its_manager_an_update_entry_of_the_fields_it_set() {
        let (store, _) = fixture::store();
        let mut w = Widget::new("a", "red");
        store
            .track_update(None, &mut w, None, &opts("kubectl"))
            .unwrap();
        let e = entries(&w);
        assert_eq!(e.len(), 1, "{e:?}");
        let (manager, op, sub, fields) = &e[0];
        assert_eq!(
            (manager.as_str(), op.as_str(), sub.as_str()),
            ("kubectl", "Update", "")
        );
        assert_eq!(
            fields["f:spec"],
            json!({".": {}, "f:color": {}, "f:size": {}})
        );
        let entry = &w.metadata.managed_fields.as_ref().unwrap()[0];
        assert_eq!(entry.api_version.as_deref(), Some("test.example.com/v1"));
    }

    #[test]
    fn an_update_by_another_manager_takes_only_the_fields_it_changed() {
        let (store, _) = fixture::store();
        let mut old = Widget::new("a", "red");
        store
            .track_update(None, &mut old, None, &opts("first"))
            .unwrap();
        let mut new = old.clone();
        new.spec.color = "blue".into();
        store
            .track_update(Some(&old), &mut new, None, &opts("second"))
            .unwrap();
        let e = entries(&new);
        let first = e.iter().find(|e| e.0 == "first").expect("first kept");
        let second = e.iter().find(|e| e.0 == "second").expect("second added");
        assert_eq!(first.3["f:spec"], json!({".": {}, "f:size": {}}));
        assert_eq!(second.3["f:spec"], json!({"f:color": {}}));
    }

    #[test]
    fn a_status_write_is_recorded_for_the_status_subresource() {
        let (store, _) = fixture::store();
        let mut old = Widget::new("a", "red");
        store
            .track_update(None, &mut old, None, &opts("first"))
            .unwrap();
        let mut new = old.clone();
        new.status = Some(WidgetStatus { ready: true });
        store
            .track_update(Some(&old), &mut new, Some("status"), &opts("controller"))
            .unwrap();
        let e = entries(&new);
        let c = e.iter().find(|e| e.0 == "controller").expect("{e:?}");
        assert_eq!(c.2, "status");
        assert_eq!(c.3["f:status"], json!({".": {}, "f:ready": {}}));
    }

    #[test]
    fn an_apply_keeps_the_managed_fields_it_computed() {
        let (store, _) = fixture::store();
        let mut w = Widget::new("a", "red");
        let apply = WriteOptions {
            apply: true,
            ..opts("kubectl")
        };
        store.track_update(None, &mut w, None, &apply).unwrap();
        assert!(w.metadata.managed_fields.is_none());
    }
}
