//! The store's codecs: request bodies into `T` (checking `apiVersion` and `kind`), `T` into the
//! bytes it stores (with upstream's empty metadata collections dropped), and stored bytes back.

use bytes::Bytes;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::Value;

use super::Store;
use crate::error::ApiError;
use crate::resource::ApiResource;
use crate::storage::KeyValue;

impl<T: ApiResource> Store<T> {
    /// Decodes a request body into `T`, checking `apiVersion` and `kind`.
    pub(super) fn decode_body(&self, mut body: Value) -> Result<T, ApiError> {
        let expected_gv = &self.api_version;
        let Some(map) = body.as_object_mut() else {
            return Err(ApiError::bad_request(format!(
                "{} in version {:?} cannot be handled as a {}: the request body must be a JSON object",
                self.info.kind, self.info.version, self.info.kind
            )));
        };
        match map.get("apiVersion") {
            Some(Value::String(gv)) if gv != expected_gv => {
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
        self.decode_value(body)
    }

    /// `T` as the bytes the storage keeps.
    pub(super) fn encode(&self, obj: &mut T) -> Result<Bytes, ApiError> {
        normalize_meta(obj.meta_mut());
        serde_json::to_vec(obj)
            .map(Bytes::from)
            .map_err(ApiError::internal)
    }

    /// A stored object, with its `resourceVersion` set from the key's revision.
    pub(super) fn decode_stored(&self, kv: &KeyValue) -> Result<T, ApiError> {
        let mut obj: T = serde_json::from_slice(&kv.value).map_err(ApiError::internal)?;
        obj.meta_mut().resource_version = Some(kv.mod_revision.to_string());
        Ok(obj)
    }

    /// `T` as JSON (what admission plugins and managed fields read).
    pub(super) fn to_value(obj: &T) -> Result<Value, ApiError> {
        serde_json::to_value(obj).map_err(ApiError::internal)
    }

    /// JSON (a body, or an object a plugin changed) into `T`: a value that does not fit is a
    /// 400.
    pub(super) fn decode_value(&self, v: Value) -> Result<T, ApiError> {
        serde_json::from_value(v).map_err(|e| {
            ApiError::bad_request(format!(
                "{} in version {:?} cannot be handled as a {}: {e}",
                self.info.kind, self.info.version, self.info.kind
            ))
        })
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

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde_json::json;

    use super::*;
    use crate::registry::store::fixture::{self, Widget};
    use crate::storage::Storage;

    #[test]
    fn a_body_decodes_with_or_without_type_meta_and_is_refused_with_another() {
        let (store, _) = fixture::store();
        let w = store
            .decode_body(
                json!({"apiVersion": "test.example.com/v1", "kind": "Widget",
                "metadata": {"name": "a"}, "spec": {"color": "red"}}),
            )
            .unwrap();
        assert_eq!(
            (w.metadata.name.as_deref(), w.spec.color.as_str()),
            (Some("a"), "red")
        );
        assert!(
            store
                .decode_body(json!({"metadata": {"name": "a"}}))
                .is_ok()
        );

        let e = store
            .decode_body(json!({"apiVersion": "test.example.com/v2"}))
            .unwrap_err();
        assert_eq!(e.code, 400);
        assert_eq!(
            e.message,
            "the API version in the data (test.example.com/v2) does not match the expected API version (test.example.com/v1)"
        );
        let e = store.decode_body(json!({"kind": "Gadget"})).unwrap_err();
        assert_eq!(
            e.message,
            "the kind in the data (Gadget) does not match the expected kind (Widget)"
        );
        let e = store.decode_body(json!({"apiVersion": 1})).unwrap_err();
        assert!(e.message.ends_with("apiVersion must be a string"), "{e:?}");
        let e = store.decode_body(json!([1])).unwrap_err();
        assert!(
            e.message
                .ends_with("the request body must be a JSON object"),
            "{e:?}"
        );
        let e = store
            .decode_body(json!({"spec": {"size": "big"}}))
            .unwrap_err();
        assert_eq!(e.code, 400);
        assert!(
            e.message
                .starts_with(r#"Widget in version "v1" cannot be handled as a Widget: "#),
            "{e:?}"
        );
    }

    #[tokio::test]
    async fn an_object_round_trips_through_the_memory_storage_with_its_revision() {
        let (store, storage) = fixture::store();
        let mut w = Widget::new("a", "blue");
        w.metadata.labels = Some(BTreeMap::from([("k".into(), "v".into())]));
        let bytes = store.encode(&mut w).unwrap();
        let stored: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(stored["apiVersion"], "test.example.com/v1");
        assert_eq!(stored["kind"], "Widget");
        let rev = storage.create("/k", bytes).await.unwrap();
        let kv = storage.get("/k").await.unwrap().unwrap();
        let back = store.decode_stored(&kv).unwrap();
        assert_eq!(back.metadata.resource_version, Some(rev.to_string()));
        assert_eq!(
            (back.spec, back.metadata.labels),
            (w.spec, w.metadata.labels)
        );
    }

    #[test]
    fn empty_metadata_collections_are_not_stored() {
        let (store, _) = fixture::store();
        let mut w = Widget::new("a", "blue");
        w.metadata.labels = Some(BTreeMap::new());
        w.metadata.annotations = Some(BTreeMap::new());
        w.metadata.finalizers = Some(Vec::new());
        w.metadata.owner_references = Some(Vec::new());
        w.metadata.managed_fields = Some(Vec::new());
        w.metadata.generate_name = Some(String::new());
        let stored: Value = serde_json::from_slice(&store.encode(&mut w).unwrap()).unwrap();
        assert_eq!(stored["metadata"], json!({"name": "a"}));
    }

    #[test]
    fn a_stored_value_that_does_not_decode_is_an_internal_error() {
        let (store, _) = fixture::store();
        let kv = KeyValue {
            key: "/k".into(),
            value: Bytes::from_static(b"not json"),
            create_revision: 2,
            mod_revision: 2,
        };
        assert_eq!(store.decode_stored(&kv).unwrap_err().code, 500);
    }
}
