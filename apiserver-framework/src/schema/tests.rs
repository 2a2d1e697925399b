//! Unit tests of the structural schema model: what it reads from schemars-derived and
//! hand-written OpenAPI schemas, ObjectMeta's one definition, and the bounds of the build.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::object_meta::OBJECT_META;
use super::*;

fn is_list<'a>(node: SchemaNode<'a>, expected: &ListType) -> bool {
    matches!(node.kind(), NodeKind::List { list_type, .. } if list_type == expected)
}

fn is_scalar(node: SchemaNode<'_>, expected: ScalarType) -> bool {
    matches!(node.kind(), NodeKind::Scalar(t) if t == expected)
}

fn is_object(node: SchemaNode<'_>, atomic: bool) -> bool {
    matches!(node.kind(), NodeKind::Object { atomic: a } if a == atomic)
}

/// A spec with every flavour a derived schema has.
#[derive(Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
struct Spec {
    name: String,
    replicas: Option<i32>,
    ratio: f64,
    paused: bool,
    tags: Vec<String>,
    ports: Vec<Port>,
    labels: BTreeMap<String, String>,
    backends: BTreeMap<String, Port>,
    color: Option<Color>,
    size: Option<k8s_openapi::apimachinery::pkg::util::intstr::IntOrString>,
    anything: Value,
    tree: Option<Tree>,
}

#[derive(Serialize, Deserialize, schemars::JsonSchema)]
#[allow(dead_code)]
struct Port {
    name: String,
    port: u16,
}

#[derive(Serialize, Deserialize, schemars::JsonSchema)]
#[allow(dead_code)]
enum Color {
    Red,
    Blue,
}

#[derive(Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
struct Tree {
    node_name: String,
    child: Option<Box<Tree>>,
}

#[test]
fn built_from_a_schemars_derived_schema() {
    let spec = extend_property(
        structural_schema_of::<Spec>(),
        &["ports"],
        &[
            ("x-kubernetes-list-type", r#""map""#),
            ("x-kubernetes-list-map-keys", r#"["name"]"#),
        ],
    );
    let spec = extend_property(spec, &["tags"], &[("x-kubernetes-list-type", r#""set""#)]);
    let model = StructuralSchema::from_openapi(&object_schema("A spec.", spec, None, false));
    let root = model.root();
    assert!(is_object(root, false));
    assert!(matches!(root.field("bogus"), Field::Unknown));
    let spec = root.field_node("spec");
    assert!(matches!(spec.rest(), Some(Rest::Unknown)));
    assert!(is_scalar(spec.field_node("name"), ScalarType::String));
    assert!(is_scalar(spec.field_node("replicas"), ScalarType::Integer));
    assert!(is_scalar(spec.field_node("ratio"), ScalarType::Number));
    assert!(is_scalar(spec.field_node("paused"), ScalarType::Boolean));
    assert!(is_scalar(spec.field_node("color"), ScalarType::String));
    assert!(is_scalar(spec.field_node("size"), ScalarType::IntOrString));
    assert!(is_list(spec.field_node("tags"), &ListType::Set));
    let ports = spec.field_node("ports");
    assert!(is_list(ports, &ListType::Map(vec!["name".into()])));
    let port = ports.items().expect("ports have items");
    assert!(is_scalar(port.field_node("port"), ScalarType::Integer));
    assert!(matches!(port.field("protocol"), Field::Unknown));
    // Maps: declared nothing, every key is an entry.
    let labels = spec.field_node("labels");
    assert!(matches!(labels.field("app"), Field::Entry(v) if is_scalar(v, ScalarType::String)));
    let backend = spec.field_node("backends").field_node("primary");
    assert!(matches!(backend.field("port"), Field::Declared(_)));
    // `serde_json::Value` says nothing: deduced, any key goes.
    let anything = spec.field_node("anything");
    assert!(!anything.is_absent());
    assert!(matches!(anything.kind(), NodeKind::Deduced));
    assert!(matches!(
        anything.field("x"),
        Field::Preserved | Field::Unspecified
    ));
    // A recursive type, through its `$ref`, is a finite graph: the child is the same node.
    let tree = spec.field_node("tree");
    assert!(matches!(tree.field("nodeName"), Field::Declared(_)));
    let mut ids = std::collections::HashSet::new();
    let mut node = tree;
    for _ in 0..10 {
        node = node.field_node("child");
        assert!(matches!(node.field("nodeName"), Field::Declared(_)));
        assert!(matches!(node.field("x"), Field::Unknown));
        ids.insert(node.id());
    }
    assert!(ids.len() <= 2, "{ids:?}");
}

/// A hand-written OpenAPI schema: `$ref`s into `components`, `allOf`, list markers,
/// preserve-unknown-fields, int-or-string and an embedded resource.
fn hand_written() -> Value {
    json!({
        "type": "object",
        "properties": {
            "spec": {"$ref": "#/components/schemas/Spec"},
            "status": {"allOf": [{"$ref": "#/components/schemas/Status"}], "description": "s"}
        },
        "components": {"schemas": {
            "Spec": {
                "type": "object",
                "properties": {
                    "containers": {
                        "type": "array",
                        "items": {"$ref": "#/components/schemas/Container"},
                        "x-kubernetes-list-type": "map",
                        "x-kubernetes-list-map-keys": ["name"],
                        "x-kubernetes-patch-strategy": "merge",
                        "x-kubernetes-patch-merge-key": "name"
                    },
                    "args": {"type": "array", "items": {"type": "string"}},
                    "selector": {
                        "type": "object",
                        "additionalProperties": {"type": "string"},
                        "x-kubernetes-map-type": "atomic"
                    },
                    "config": {
                        "type": "object",
                        "x-kubernetes-preserve-unknown-fields": true,
                        "properties": {"known": {"type": "string"}}
                    },
                    "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                    "opaque": {"type": "object"},
                    "port": {
                        "x-kubernetes-int-or-string": true,
                        "anyOf": [{"type": "integer"}, {"type": "string"}]
                    },
                    "template": {
                        "type": "object",
                        "x-kubernetes-embedded-resource": true,
                        "properties": {"spec": {"type": "object", "properties": {"image": {"type": "string"}}}}
                    },
                    "raw": {
                        "type": "object",
                        "x-kubernetes-embedded-resource": true,
                        "x-kubernetes-preserve-unknown-fields": true
                    },
                    "choice": {
                        "type": "object",
                        "anyOf": [
                            {"properties": {"a": {"type": "string"}}},
                            {"properties": {"b": {"type": "integer"}}}
                        ]
                    },
                    "closed": {"type": "object", "additionalProperties": false},
                    "whole": {"type": "object", "x-kubernetes-patch-strategy": "replace"}
                }
            },
            "Container": {
                "type": "object",
                "properties": {"name": {"type": "string"}, "image": {"type": "string"}}
            },
            "Status": {"type": "object", "properties": {"phase": {"type": "string"}}}
        }}
    })
}

#[test]
fn built_from_a_hand_written_schema() {
    let model = StructuralSchema::from_openapi(&hand_written());
    let spec = model.root().field_node("spec");
    assert!(is_object(spec, false));

    let containers = spec.field_node("containers");
    assert!(is_list(containers, &ListType::Map(vec!["name".into()])));
    assert_eq!(
        containers.patch_strategy(),
        Some(PatchStrategy {
            merge: true,
            ..Default::default()
        })
    );
    assert_eq!(containers.patch_merge_key(), Some("name"));
    assert_eq!(containers.declared_type(), Some("array"));
    let container = containers.item_node();
    assert!(matches!(container.field("image"), Field::Declared(_)));
    assert!(matches!(container.field("command"), Field::Unknown));

    assert!(is_list(spec.field_node("args"), &ListType::Atomic));
    assert!(is_object(spec.field_node("selector"), true));
    assert!(matches!(
        spec.field_node("selector").field("k"),
        Field::Entry(_)
    ));

    let config = spec.field_node("config");
    assert!(is_object(config, false));
    assert!(config.preserves_unknown_fields());
    assert!(matches!(config.field("known"), Field::Declared(_)));
    assert!(matches!(config.field("other"), Field::Preserved));
    let free = spec.field_node("free");
    assert!(matches!(free.kind(), NodeKind::Deduced));
    assert!(matches!(free.field("x"), Field::Preserved));
    assert!(matches!(
        spec.field_node("opaque").rest(),
        Some(Rest::Unspecified)
    ));
    assert!(matches!(
        spec.field_node("closed").field("x"),
        Field::Unknown
    ));

    let port = spec.field_node("port");
    assert!(is_scalar(port, ScalarType::IntOrString));
    assert_eq!(
        port.declared_type(),
        None,
        "anyOf alternatives declare no type"
    );

    // Embedded resources have apiVersion, kind and ObjectMeta, like the root.
    let template = spec.field_node("template");
    assert!(template.is_embedded_resource());
    assert!(is_scalar(template.field_node("kind"), ScalarType::String));
    assert_eq!(
        template.field_node("metadata").id(),
        model.root().field_node("metadata").id()
    );
    assert!(matches!(template.field("other"), Field::Unknown));
    let raw = spec.field_node("raw");
    assert!(is_object(raw, false));
    assert!(matches!(raw.field("anything"), Field::Preserved));
    assert_eq!(
        raw.field_node("metadata").id(),
        model.root().field_node("metadata").id()
    );

    // Branches add their declarations.
    let choice = spec.field_node("choice");
    assert!(is_scalar(choice.field_node("a"), ScalarType::String));
    assert!(is_scalar(choice.field_node("b"), ScalarType::Integer));
    assert!(matches!(choice.field("c"), Field::Unknown));
    let status = model.root().field_node("status");
    assert_eq!(status.declared_type(), Some("object"));
    assert!(matches!(status.field("phase"), Field::Declared(_)));

    assert!(
        spec.field_node("whole")
            .patch_strategy()
            .is_some_and(|s| s.replace)
    );
    assert!(spec.field_node("missing").is_absent());
}

#[test]
fn object_meta_is_defined_once_with_upstream_markers() {
    let props = OBJECT_META["properties"].as_object().unwrap();
    for field in [
        "name",
        "labels",
        "finalizers",
        "ownerReferences",
        "managedFields",
    ] {
        assert!(props.contains_key(field), "ObjectMeta lacks {field}");
    }
    let model = StructuralSchema::none();
    let meta = model.root().field_node("metadata");
    assert!(matches!(meta.field("color"), Field::Unknown));
    let finalizers = meta.field_node("finalizers");
    assert!(is_list(finalizers, &ListType::Set));
    assert!(finalizers.patch_strategy().is_some_and(|s| s.merge));
    let owners = meta.field_node("ownerReferences");
    assert!(is_list(owners, &ListType::Map(vec!["uid".into()])));
    assert!(owners.patch_strategy().is_some_and(|s| s.merge));
    assert_eq!(owners.patch_merge_key(), Some("uid"));
    assert!(
        is_object(owners.item_node(), true),
        "OwnerReference is an atomic struct"
    );
    assert!(matches!(
        owners.item_node().field("controller"),
        Field::Declared(_)
    ));
    let managed = meta.field_node("managedFields");
    assert!(is_list(managed, &ListType::Atomic));
    assert!(matches!(
        managed.item_node().field("fieldsV1"),
        Field::Declared(_)
    ));
    for map in ["labels", "annotations"] {
        let map = meta.field_node(map);
        assert!(is_object(map, false));
        assert!(
            matches!(map.field("app.kubernetes.io/name"), Field::Entry(v) if is_scalar(v, ScalarType::String))
        );
    }
    assert!(is_scalar(
        meta.field_node("creationTimestamp"),
        ScalarType::String
    ));
    // Whatever the schema says about them.
    let model = StructuralSchema::from_openapi(&json!({"type": "object", "properties": {
        "metadata": {"type": "string"}, "kind": {"type": "object"}
    }}));
    assert!(is_list(
        model.root().field_node("metadata").field_node("finalizers"),
        &ListType::Set
    ));
    assert!(is_scalar(
        model.root().field_node("kind"),
        ScalarType::String
    ));
}

#[test]
fn a_resource_without_schema_and_a_plain_document() {
    let none = StructuralSchema::none();
    let root = none.root();
    assert!(matches!(root.field("spec"), Field::Unspecified));
    assert!(matches!(root.field("metadata"), Field::Declared(_)));
    assert_eq!(StructuralSchema::default(), none);
    let doc = StructuralSchema::from_openapi_value(&json!({
        "type": "array",
        "items": {"type": "object", "properties": {"op": {"type": "string"}}}
    }));
    let item = doc.root().item_node();
    assert!(matches!(item.field("op"), Field::Declared(_)));
    assert!(matches!(item.field("metadata"), Field::Unknown));
}

#[test]
fn absent_places_and_schemas_that_say_nothing_differ() {
    let model = StructuralSchema::from_openapi_value(&json!({"type": "object", "properties": {
        "bare": {"type": "array"},
        "empty": {"type": "array", "items": {}},
        "map": {"type": "object", "additionalProperties": {}}
    }}));
    let root = model.root();
    assert!(root.field_node("bare").items().is_none());
    assert!(root.field_node("bare").item_node().is_absent());
    let empty = root.field_node("empty").items().unwrap();
    assert!(!empty.is_absent());
    assert!(matches!(empty.kind(), NodeKind::Deduced));
    assert!(matches!(root.field_node("map").field("k"), Field::Entry(v) if !v.is_absent()));
}

#[test]
fn cycles_and_depth_are_bounded() {
    // References to themselves, to the root and between branches end.
    let model = StructuralSchema::from_openapi_value(&json!({
        "type": "object",
        "properties": {
            "me": {"$ref": "#"},
            "loop": {"allOf": [{"$ref": "#/properties/loop"}]},
            "missing": {"$ref": "#/components/schemas/Nowhere"}
        }
    }));
    let root = model.root();
    let me = root.field_node("me");
    assert!(matches!(me.field("loop"), Field::Declared(_)));
    assert_eq!(me.field_node("me").id(), me.id());
    assert!(!root.field_node("loop").is_absent());
    // An unresolvable reference allows anything.
    assert!(matches!(
        root.field_node("missing").field("x"),
        Field::Unspecified
    ));
    assert!(model.len() < 10, "{}", model.len());

    // Nesting deeper than the bound leaves the deepest places absent.
    let mut deep = json!({"type": "string"});
    for _ in 0..400 {
        deep = json!({"type": "object", "properties": {"a": deep}});
    }
    let model = StructuralSchema::from_openapi_value(&deep);
    let mut node = model.root();
    let mut levels = 0;
    while !node.is_absent() {
        node = node.field_node("a");
        levels += 1;
    }
    assert!((200..=300).contains(&levels), "{levels}");
}

#[test]
fn shared_models_are_built_once_per_schema() {
    let schema = Arc::new(hand_written());
    let first = StructuralSchema::shared(&schema);
    let again = StructuralSchema::shared(&schema);
    assert!(Arc::ptr_eq(&first.0, &again.0));
    let other = StructuralSchema::shared(&Arc::new(hand_written()));
    assert!(!Arc::ptr_eq(&first.0, &other.0));
    assert_eq!(first, other);
}
