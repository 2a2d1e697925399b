//! The structural schema model: one tree of typed nodes per resource, built once from its
//! OpenAPI v3 schema, that strategic merge patch, server-side apply and field validation walk
//! instead of the JSON.
//!
//! A [`StructuralSchema`] is an arena of nodes; a [`SchemaNode`] is a cheap cursor into it. Every
//! node has a [`NodeKind`]:
//!
//! - an **object** with declared fields, and a [`Rest`] saying what other keys are: unknown,
//!   left unspecified, preserved, or the entries of a map whose values follow one schema;
//! - a **list** with its items and [`ListType`] (`atomic`, `set`, `map` with keys);
//! - a **scalar** with its [`ScalarType`] (`x-kubernetes-int-or-string` included);
//! - **deduced**: nothing is declared, the value's own shape decides (`{}`, or
//!   `x-kubernetes-preserve-unknown-fields` without properties).
//!
//! Besides its kind, a node carries the facts users of the model read: the declared `type`,
//! `x-kubernetes-patch-strategy` and `x-kubernetes-patch-merge-key`,
//! `x-kubernetes-preserve-unknown-fields` and `x-kubernetes-embedded-resource`.
//!
//! The model of a resource ([`StructuralSchema::from_openapi`]) has `apiVersion` and `kind`
//! strings and `metadata` as ObjectMeta ([`super::object_meta`]) at its root and in every
//! embedded resource. Where the schema says nothing, a walk reaches the *absent* node
//! ([`SchemaNode::is_absent`]), a deduced node without facts.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, LazyLock, Weak};

use parking_lot::Mutex;
use serde_json::Value;

/// How the items of a list are identified (`x-kubernetes-list-type`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ListType {
    /// Owned and replaced as a whole (`atomic`, the default).
    Atomic,
    /// Scalar items identified by their value (`set`).
    Set,
    /// Object items identified by the values of these key fields (`map` with
    /// `x-kubernetes-list-map-keys`).
    Map(Vec<String>),
}

/// The type of a scalar node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScalarType {
    /// `type: string`.
    String,
    /// `type: integer`.
    Integer,
    /// `type: number`.
    Number,
    /// `type: boolean`.
    Boolean,
    /// `x-kubernetes-int-or-string: true`.
    IntOrString,
    /// Any other declared type (such as `null`).
    Other,
}

/// `x-kubernetes-patch-strategy`: a comma-separated list of strategies.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PatchStrategy {
    /// `merge`: lists merge (by the merge key, or as a set).
    pub merge: bool,
    /// `replace`: the value is replaced whole.
    pub replace: bool,
    /// `retainKeys`: keys a patch does not name are dropped.
    pub retain_keys: bool,
}

impl PatchStrategy {
    /// Reads `merge`, `replace` and `retainKeys` from the extension's text; other words are
    /// ignored.
    pub fn parse(text: &str) -> Self {
        let mut out = PatchStrategy::default();
        for word in text.split(',').map(str::trim) {
            match word {
                "merge" => out.merge = true,
                "replace" => out.replace = true,
                "retainKeys" => out.retain_keys = true,
                _ => {}
            }
        }
        out
    }
}

/// What the keys of an object that are not declared fields are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rest {
    /// Unknown fields: the object declares its fields (`properties`, or
    /// `additionalProperties: false`).
    Unknown,
    /// Not said: the schema declares no fields and no map (`{"type": "object"}`).
    Unspecified,
    /// Kept as they are (`x-kubernetes-preserve-unknown-fields`, `additionalProperties: true`).
    Preserved,
    /// Entries of a map whose values follow this node (`additionalProperties: {..}`).
    Values(NodeId),
}

/// The index of a node in its [`StructuralSchema`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct NodeId(pub(super) u32);

impl NodeId {
    /// The absent node, present in every model at this index.
    pub(super) const ABSENT: NodeId = NodeId(0);
}

/// The kind of one node, as stored.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Shape {
    Object {
        fields: BTreeMap<String, NodeId>,
        rest: Rest,
        atomic: bool,
    },
    List {
        items: Option<NodeId>,
        list_type: ListType,
    },
    Scalar(ScalarType),
    Deduced,
}

/// One node, as stored.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct NodeData {
    pub(super) shape: Shape,
    pub(super) declared_type: Option<String>,
    pub(super) patch_strategy: Option<PatchStrategy>,
    pub(super) patch_merge_key: Option<String>,
    pub(super) preserve_unknown_fields: bool,
    pub(super) embedded_resource: bool,
}

impl NodeData {
    /// A deduced node without facts: the absent node, and the placeholder of a node being built.
    pub(super) fn absent() -> Self {
        NodeData {
            shape: Shape::Deduced,
            declared_type: None,
            patch_strategy: None,
            patch_merge_key: None,
            preserve_unknown_fields: false,
            embedded_resource: false,
        }
    }
}

/// The arena.
#[derive(Debug, PartialEq)]
pub(super) struct Model {
    pub(super) nodes: Vec<NodeData>,
    pub(super) root: NodeId,
}

/// The structural schema model of a resource (or of any document): built once, shared by
/// cheap clones, walked through [`StructuralSchema::root`].
///
/// ```
/// use apiserver_framework::schema::{Field, NodeKind, ListType, StructuralSchema};
/// use serde_json::json;
///
/// let model = StructuralSchema::from_openapi(&json!({"type": "object", "properties": {
///     "spec": {"type": "object", "properties": {
///         "ports": {"type": "array", "x-kubernetes-list-type": "map",
///             "x-kubernetes-list-map-keys": ["name"], "items": {"type": "object"}}
///     }}
/// }}));
/// let ports = model.root().field_node("spec").field_node("ports");
/// assert!(matches!(ports.kind(), NodeKind::List { list_type: ListType::Map(keys), .. } if keys == &["name"]));
/// // `metadata` is ObjectMeta in every resource: finalizers are a set.
/// let finalizers = model.root().field_node("metadata").field_node("finalizers");
/// assert!(matches!(finalizers.kind(), NodeKind::List { list_type: ListType::Set, .. }));
/// assert!(matches!(model.root().field("bogus"), Field::Unknown));
/// ```
#[derive(Clone, PartialEq)]
pub struct StructuralSchema(pub(super) Arc<Model>);

impl StructuralSchema {
    /// The model of a resource from its structural OpenAPI v3 schema (the whole object's;
    /// `$ref`s to `#/...` are followed). `apiVersion` and `kind` are strings and `metadata` is
    /// ObjectMeta, whatever the schema says about them; a schema that is not an object's (such
    /// as `null`) gives a resource with nothing else declared.
    pub fn from_openapi(schema: &Value) -> Self {
        StructuralSchema(Arc::new(super::build::build(schema, true)))
    }

    /// The model of any document from its OpenAPI v3 schema, without the resource's
    /// `apiVersion`, `kind` and `metadata` at its root (embedded resources still have them).
    pub fn from_openapi_value(schema: &Value) -> Self {
        StructuralSchema(Arc::new(super::build::build(schema, false)))
    }

    /// The model of a resource without a schema: only `apiVersion`, `kind` and `metadata` are
    /// known. Shared, built once.
    pub fn none() -> Self {
        static NONE: LazyLock<StructuralSchema> =
            LazyLock::new(|| StructuralSchema::from_openapi(&Value::Null));
        NONE.clone()
    }

    /// The model of the resource schema `schema`, built on the first call for that schema and
    /// shared by later calls with the same `Arc` while it lives (for storages that keep no model
    /// of their own).
    pub fn shared(schema: &Arc<Value>) -> Self {
        static BUILT: Mutex<Vec<(Weak<Value>, StructuralSchema)>> = Mutex::new(Vec::new());
        let mut built = BUILT.lock();
        // A live `Weak` keeps its allocation, so an equal pointer is the same schema.
        if let Some((_, model)) = built
            .iter()
            .find(|(weak, _)| weak.as_ptr() == Arc::as_ptr(schema))
        {
            return model.clone();
        }
        built.retain(|(weak, _)| weak.strong_count() > 0);
        let model = StructuralSchema::from_openapi(schema);
        built.push((Arc::downgrade(schema), model.clone()));
        model
    }

    /// The node of the whole document.
    pub fn root(&self) -> SchemaNode<'_> {
        SchemaNode {
            model: &self.0,
            id: self.0.root,
        }
    }

    /// The number of nodes in the model (the absent node included).
    pub fn len(&self) -> usize {
        self.0.nodes.len()
    }

    /// Whether the model has only the absent node (never true of a resource's model).
    pub fn is_empty(&self) -> bool {
        self.0.nodes.len() <= 1
    }
}

impl Default for StructuralSchema {
    /// [`StructuralSchema::none`].
    fn default() -> Self {
        StructuralSchema::none()
    }
}

impl fmt::Debug for StructuralSchema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StructuralSchema")
            .field("nodes", &self.0.nodes.len())
            .finish()
    }
}

/// The kind of a node, with its list's items at hand.
#[derive(Clone, Copy, Debug)]
pub enum NodeKind<'a> {
    /// A JSON object: declared fields (see [`SchemaNode::field`]) and the rest.
    Object {
        /// `x-kubernetes-map-type: atomic` (or an atomic struct): owned and replaced whole.
        atomic: bool,
    },
    /// A JSON array.
    List {
        /// The items' node (the absent node when the schema has no `items`).
        items: SchemaNode<'a>,
        /// How items are identified.
        list_type: &'a ListType,
    },
    /// A string, number, boolean (or int-or-string).
    Scalar(ScalarType),
    /// Nothing declared: the value's own shape decides.
    Deduced,
}

/// Where a key of an object leads (see [`SchemaNode::field`]).
#[derive(Clone, Copy, Debug)]
pub enum Field<'a> {
    /// A declared field.
    Declared(SchemaNode<'a>),
    /// An entry of a map.
    Entry(SchemaNode<'a>),
    /// Not declared, and kept (preserve-unknown-fields, `additionalProperties: true`).
    Preserved,
    /// Not declared, and nothing said about such keys (a schema without fields or map).
    Unspecified,
    /// Not declared in an object that declares its fields: an unknown field.
    Unknown,
}

impl<'a> Field<'a> {
    /// The node of a declared field or map entry.
    pub fn node(self) -> Option<SchemaNode<'a>> {
        match self {
            Field::Declared(node) | Field::Entry(node) => Some(node),
            _ => None,
        }
    }
}

/// A place in a [`StructuralSchema`]: one node, read through its methods.
#[derive(Clone, Copy)]
pub struct SchemaNode<'a> {
    model: &'a Model,
    id: NodeId,
}

impl<'a> SchemaNode<'a> {
    fn data(&self) -> &'a NodeData {
        &self.model.nodes[self.id.0 as usize]
    }

    fn at(&self, id: NodeId) -> SchemaNode<'a> {
        SchemaNode {
            model: self.model,
            id,
        }
    }

    /// The absent node of the same model: where the schema says nothing.
    pub fn absent(&self) -> SchemaNode<'a> {
        self.at(NodeId::ABSENT)
    }

    /// Whether this is the absent node (no schema at all here, as opposed to `{}`).
    pub fn is_absent(&self) -> bool {
        self.id == NodeId::ABSENT
    }

    /// The node's index in its model.
    pub fn id(&self) -> NodeId {
        self.id
    }

    /// The kind of the node.
    pub fn kind(&self) -> NodeKind<'a> {
        match &self.data().shape {
            Shape::Object { atomic, .. } => NodeKind::Object { atomic: *atomic },
            Shape::List { items, list_type } => NodeKind::List {
                items: self.at(items.unwrap_or(NodeId::ABSENT)),
                list_type,
            },
            Shape::Scalar(t) => NodeKind::Scalar(*t),
            Shape::Deduced => NodeKind::Deduced,
        }
    }

    /// Where key `name` of an object at this node leads. Nodes other than objects declare
    /// nothing: their keys are [`Field::Preserved`] under preserve-unknown-fields, else
    /// [`Field::Unspecified`].
    pub fn field(&self, name: &str) -> Field<'a> {
        let data = self.data();
        match &data.shape {
            Shape::Object { fields, rest, .. } => match fields.get(name) {
                Some(id) => Field::Declared(self.at(*id)),
                None => match rest {
                    Rest::Values(id) => Field::Entry(self.at(*id)),
                    Rest::Preserved => Field::Preserved,
                    Rest::Unspecified => Field::Unspecified,
                    Rest::Unknown => Field::Unknown,
                },
            },
            _ if data.preserve_unknown_fields => Field::Preserved,
            _ => Field::Unspecified,
        }
    }

    /// The node of key `name`: a declared field or map entry, else the absent node.
    pub fn field_node(&self, name: &str) -> SchemaNode<'a> {
        self.field(name).node().unwrap_or_else(|| self.absent())
    }

    /// The declared fields of an object node, by name.
    pub fn fields(&self) -> impl Iterator<Item = (&'a str, SchemaNode<'a>)> + 'a {
        let node = *self;
        let fields = match &self.data().shape {
            Shape::Object { fields, .. } => Some(fields),
            _ => None,
        };
        fields
            .into_iter()
            .flatten()
            .map(move |(name, id)| (name.as_str(), node.at(*id)))
    }

    /// What the undeclared keys of an object node are (`None` for other kinds).
    pub fn rest(&self) -> Option<Rest> {
        match &self.data().shape {
            Shape::Object { rest, .. } => Some(*rest),
            _ => None,
        }
    }

    /// The items of a list node whose schema has `items`.
    pub fn items(&self) -> Option<SchemaNode<'a>> {
        match &self.data().shape {
            Shape::List {
                items: Some(items), ..
            } => Some(self.at(*items)),
            _ => None,
        }
    }

    /// The items of a list node, else the absent node.
    pub fn item_node(&self) -> SchemaNode<'a> {
        self.items().unwrap_or_else(|| self.absent())
    }

    /// The list type of a list node.
    pub fn list_type(&self) -> Option<&'a ListType> {
        match &self.data().shape {
            Shape::List { list_type, .. } => Some(list_type),
            _ => None,
        }
    }

    /// The `type` the schema declares (on itself, a `$ref` target or an `allOf` branch; not
    /// the alternatives of `anyOf`/`oneOf`).
    pub fn declared_type(&self) -> Option<&'a str> {
        self.data().declared_type.as_deref()
    }

    /// `x-kubernetes-patch-strategy`, if given.
    pub fn patch_strategy(&self) -> Option<PatchStrategy> {
        self.data().patch_strategy
    }

    /// `x-kubernetes-patch-merge-key`, if given.
    pub fn patch_merge_key(&self) -> Option<&'a str> {
        self.data().patch_merge_key.as_deref()
    }

    /// `x-kubernetes-preserve-unknown-fields: true`.
    pub fn preserves_unknown_fields(&self) -> bool {
        self.data().preserve_unknown_fields
    }

    /// `x-kubernetes-embedded-resource: true`: an object with `apiVersion`, `kind` and
    /// ObjectMeta `metadata`.
    pub fn is_embedded_resource(&self) -> bool {
        self.data().embedded_resource
    }
}

impl fmt::Debug for SchemaNode<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Node")
            .field("id", &self.id.0)
            .field("shape", &self.data().shape)
            .finish()
    }
}

impl PartialEq for SchemaNode<'_> {
    /// The same node of the same model.
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self.model, other.model) && self.id == other.id
    }
}
