//! What the store's unit tests share: a hand-written resource (`Widget`, namespaced, with a
//! status and a selectable field), stores of it over [`MemoryStorage`], request contexts and
//! admission plugins that record or refuse.

use std::borrow::Cow;
use std::sync::{Arc, Mutex};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Value, json};

use super::Store;
use crate::admission::{AdmissionAttributes, AdmissionChain, AdmissionPlugin, Operation};
use crate::error::ApiError;
use crate::registry::rest::RequestContext;
use crate::registry::scheme::Registry;
use crate::registry::store::strategy::{DefaultStrategy, Strategy};
use crate::resource::{ApiResource, ResourceInfo, Scope};
use crate::storage::Storage;
use crate::storage::memory::MemoryStorage;
use crate::user::UserInfo;

/// The namespace the tests write in.
pub const NS: &str = "default";

/// A namespaced resource `widgets.test.example.com/v1` with a status subresource.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Widget {
    #[serde(
        rename = "apiVersion",
        serialize_with = "api_version",
        skip_deserializing
    )]
    api_version: (),
    #[serde(serialize_with = "kind", skip_deserializing)]
    kind: (),
    #[serde(default)]
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub spec: WidgetSpec,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<WidgetStatus>,
}

fn api_version<S: Serializer>(_: &(), s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str("test.example.com/v1")
}

fn kind<S: Serializer>(_: &(), s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str("Widget")
}

/// The widget's desired state.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct WidgetSpec {
    #[serde(default)]
    pub color: String,
    #[serde(default)]
    pub size: i64,
}

/// The widget's observed state.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct WidgetStatus {
    #[serde(default)]
    pub ready: bool,
}

impl Widget {
    /// A widget named `name` of color `color`.
    pub fn new(name: &str, color: &str) -> Self {
        Widget {
            metadata: ObjectMeta {
                name: Some(name.to_string()),
                ..Default::default()
            },
            spec: WidgetSpec {
                color: color.to_string(),
                size: 1,
            },
            ..Default::default()
        }
    }
}

impl kube_core::Resource for Widget {
    type DynamicType = ();
    type Scope = kube_core::NamespaceResourceScope;

    fn kind(_: &()) -> Cow<'_, str> {
        Cow::Borrowed("Widget")
    }
    fn group(_: &()) -> Cow<'_, str> {
        Cow::Borrowed("test.example.com")
    }
    fn version(_: &()) -> Cow<'_, str> {
        Cow::Borrowed("v1")
    }
    fn api_version(_: &()) -> Cow<'_, str> {
        Cow::Borrowed("test.example.com/v1")
    }
    fn plural(_: &()) -> Cow<'_, str> {
        Cow::Borrowed("widgets")
    }
    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

impl ApiResource for Widget {
    fn resource_info() -> ResourceInfo {
        ResourceInfo {
            group: "test.example.com".into(),
            version: "v1".into(),
            kind: "Widget".into(),
            plural: "widgets".into(),
            singular: "widget".into(),
            scope: Scope::Namespaced,
            short_names: Vec::new(),
            categories: Vec::new(),
            status_subresource: true,
            printer_columns: Vec::new(),
            selectable_fields: vec![".spec.color".into()],
            scale: None,
            schema: Arc::new(json!({
                "type": "object",
                "properties": {
                    "apiVersion": {"type": "string"},
                    "kind": {"type": "string"},
                    "metadata": {"type": "object"},
                    "spec": {"type": "object", "properties": {
                        "color": {"type": "string"},
                        "size": {"type": "integer"},
                    }},
                    "status": {"type": "object", "properties": {
                        "ready": {"type": "boolean"},
                    }},
                },
            })),
        }
    }
    fn has_status() -> bool {
        true
    }
    fn copy_status_from(&mut self, other: &Self) {
        self.status = other.status.clone();
    }
    fn clear_status(&mut self) {
        self.status = None;
    }
    fn spec_differs(&self, other: &Self) -> bool {
        self.spec != other.spec
    }
}

/// A store of widgets over a fresh memory storage, and that storage.
pub fn store() -> (Store<Widget>, Arc<MemoryStorage>) {
    store_with(Arc::new(DefaultStrategy))
}

/// A store of widgets with `strategy` over a fresh memory storage, and that storage.
pub fn store_with(strategy: Arc<dyn Strategy<Widget>>) -> (Store<Widget>, Arc<MemoryStorage>) {
    let storage = Arc::new(MemoryStorage::new());
    let store = Store::new(storage.clone() as Arc<dyn Storage>, strategy);
    (store, storage)
}

/// A request in namespace [`NS`] by user `alice`, with the given admission plugins.
pub fn ctx_with(plugins: Vec<Arc<dyn AdmissionPlugin>>) -> RequestContext {
    RequestContext {
        namespace: Some(NS.to_string()),
        user: UserInfo::new("alice", &["system:authenticated"]),
        admission: Arc::new(AdmissionChain::new(plugins)),
        registry: Arc::new(Registry::default()),
        request_resource: None,
        notes: Default::default(),
    }
}

/// A request in namespace [`NS`] without admission plugins.
pub fn ctx() -> RequestContext {
    ctx_with(Vec::new())
}

/// The JSON body a client sends for `w`.
pub fn body(w: &Widget) -> Value {
    serde_json::to_value(w).unwrap()
}

/// An object as the store answered it.
pub fn decode(bytes: &[u8]) -> Widget {
    serde_json::from_slice(bytes).unwrap()
}

/// What an admission plugin saw: operation, subresource, name, and the object and old object.
pub type Seen = (
    Operation,
    Option<String>,
    String,
    Option<Value>,
    Option<Value>,
);

/// An admission plugin that records what it sees, sets label `admitted=<phase>` when
/// mutating, and refuses objects whose `spec.color` is `deny` (or, with `deny_delete`, every
/// delete) when validating.
#[derive(Default)]
pub struct Recorder {
    pub seen: Mutex<Vec<(&'static str, Seen)>>,
    pub deny_delete: bool,
}

impl Recorder {
    fn record(&self, phase: &'static str, attrs: &AdmissionAttributes<'_>) {
        let seen = (
            attrs.operation,
            attrs.subresource.map(str::to_string),
            attrs.name.to_string(),
            attrs.object.as_deref().cloned(),
            attrs.old_object.cloned(),
        );
        self.seen.lock().unwrap().push((phase, seen));
    }

    /// The phases seen, in order.
    pub fn phases(&self) -> Vec<(&'static str, Operation)> {
        self.seen
            .lock()
            .unwrap()
            .iter()
            .map(|(p, s)| (*p, s.0))
            .collect()
    }
}

#[async_trait::async_trait]
impl AdmissionPlugin for Recorder {
    fn name(&self) -> &str {
        "Recorder"
    }

    async fn mutate(&self, attrs: &mut AdmissionAttributes<'_>) -> Result<(), ApiError> {
        self.record("mutate", attrs);
        if let Some(obj) = attrs.object.as_deref_mut() {
            obj["metadata"]["labels"]["admitted"] = json!("mutated");
        }
        Ok(())
    }

    async fn validate(&self, attrs: &AdmissionAttributes<'_>) -> Result<(), ApiError> {
        self.record("validate", attrs);
        let denied = attrs
            .object
            .as_deref()
            .and_then(|o| o.pointer("/spec/color"))
            .is_some_and(|c| c == "deny");
        if denied || (self.deny_delete && attrs.operation == Operation::Delete) {
            return Err(attrs.forbidden("denied by Recorder"));
        }
        Ok(())
    }
}
