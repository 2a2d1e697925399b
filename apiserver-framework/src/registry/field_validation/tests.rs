use serde_json::json;

use super::*;
use crate::quote::go_quote;
use crate::schema::object_meta::OBJECT_META;
use crate::schema::{StructuralSchema, object_schema, structural_schema_of};

/// The model of a resource schema in the shape the framework builds: `metadata` is a
/// placeholder.
fn widget_schema() -> StructuralSchema {
    let spec = json!({
        "type": "object",
        "properties": {
            "replicas": {"type": "integer"},
            "paused": {"type": "boolean"},
            "selector": {
                "type": "object",
                "properties": {
                    "matchLabels": {"type": "object", "additionalProperties": {"type": "string"}}
                }
            },
            "ports": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"name": {"type": "string"}, "port": {"type": "integer"}}
                }
            },
            "backends": {
                "type": "object",
                "additionalProperties": {
                    "type": "object",
                    "properties": {"url": {"type": "string"}}
                }
            },
            "extra": {
                "type": "object",
                "x-kubernetes-preserve-unknown-fields": true,
                "properties": {
                    "known": {"type": "object", "properties": {"a": {"type": "string"}}}
                }
            },
            "raw": {},
            "opaque": {"type": "object"},
            "size": {"x-kubernetes-int-or-string": true},
            "template": {
                "type": "object",
                "x-kubernetes-embedded-resource": true,
                "properties": {
                    "spec": {"type": "object", "properties": {"image": {"type": "string"}}}
                }
            },
            "choice": {
                "type": "object",
                "anyOf": [
                    {"properties": {"a": {"type": "string"}}},
                    {"properties": {"b": {"type": "object", "properties": {"c": {"type": "string"}}}}}
                ]
            }
        }
    });
    let status = json!({"type": "object", "properties": {"ready": {"type": "boolean"}}});
    StructuralSchema::from_openapi(&object_schema("A widget.", spec, Some(status), false))
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

#[test]
fn object_meta_schema_has_the_standard_fields() {
    let props = OBJECT_META["properties"].as_object().unwrap();
    for field in [
        "name",
        "namespace",
        "labels",
        "annotations",
        "finalizers",
        "managedFields",
        "ownerReferences",
        "resourceVersion",
        "uid",
    ] {
        assert!(props.contains_key(field), "ObjectMeta lacks {field}");
    }
    let entry = &props["managedFields"]["items"]["properties"];
    assert!(entry.get("fieldsV1").is_some());
}

#[test]
fn reports_nested_unknown_fields_without_descending() {
    let object = json!({
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w"},
        "spec": {
            "replicas": 1,
            "foo": {"deeper": {"still": 1}},
            "selector": {"matchLabels": {"app": "w"}, "bar": 1}
        },
        "status": {"ready": true, "phase": "x"},
        "zzz": 1
    });
    assert_eq!(
        unknown_fields(&object, &widget_schema()),
        strings(&["spec.foo", "spec.selector.bar", "status.phase", "zzz"])
    );
}

#[test]
fn reports_unknown_fields_in_list_items_and_map_values() {
    let object = json!({
        "spec": {
            "ports": [{"name": "a", "port": 1}, {"name": "b", "bogus": true}],
            "backends": {
                "primary": {"url": "http://a"},
                "backup": {"url": "http://b", "timeout": 3}
            },
            "selector": {"matchLabels": {"any.key/at-all": "fine"}}
        }
    });
    assert_eq!(
        unknown_fields(&object, &widget_schema()),
        strings(&["spec.backends.backup.timeout", "spec.ports[1].bogus"])
    );
}

#[test]
fn preserve_unknown_and_free_form_subtrees_are_not_checked() {
    let object = json!({
        "spec": {
            "extra": {"anything": {"deep": [1, {"x": 2}]}, "known": {"a": "ok", "zzz": 1}},
            "raw": {"whatever": {"nested": true}},
            "opaque": {"any": 1},
            "size": {"not": "a scalar"}
        }
    });
    // A declared field under a preserve-unknown object is still checked.
    assert_eq!(
        unknown_fields(&object, &widget_schema()),
        strings(&["spec.extra.known.zzz"])
    );
}

#[test]
fn metadata_is_checked_against_object_meta() {
    let object = json!({
        "metadata": {
            "name": "w",
            "labels": {"app.kubernetes.io/name": "w"},
            "annotations": {"a": "b"},
            "foo": "bar",
            "managedFields": [{
                "manager": "kubectl",
                "fieldsV1": {"f:spec": {"f:replicas": {}}},
                "bogus": 1
            }],
            "ownerReferences": [{
                "apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "u", "bogus": 2
            }]
        }
    });
    assert_eq!(
        unknown_fields(&object, &widget_schema()),
        strings(&[
            "metadata.foo",
            "metadata.managedFields[0].bogus",
            "metadata.ownerReferences[0].bogus",
        ])
    );
    let known = json!({"metadata": {"name": "w", "labels": {"a": "b"}}});
    assert!(unknown_fields(&known, &widget_schema()).is_empty());
}

#[test]
fn embedded_resources_and_unions() {
    let object = json!({
        "spec": {
            "template": {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "cm", "color": "red"},
                "spec": {"image": "x", "tag": "y"},
                "other": 1
            },
            "choice": {"a": "x", "b": {"c": "y", "d": "z"}, "e": 1}
        }
    });
    assert_eq!(
        unknown_fields(&object, &widget_schema()),
        strings(&[
            "spec.choice.b.d",
            "spec.choice.e",
            "spec.template.metadata.color",
            "spec.template.other",
            "spec.template.spec.tag",
        ])
    );
}

#[test]
fn schemas_derived_from_rust_types_including_recursive_ones() {
    #[derive(schemars::JsonSchema)]
    #[schemars(rename_all = "camelCase")]
    #[allow(dead_code)]
    struct Node {
        node_name: String,
        child: Option<Box<Node>>,
    }
    #[derive(schemars::JsonSchema)]
    #[schemars(rename_all = "camelCase")]
    #[allow(dead_code)]
    struct Spec {
        first_name: String,
        tags: Vec<Tag>,
        by_name: std::collections::BTreeMap<String, Tag>,
        anything: serde_json::Value,
        tree: Option<Node>,
    }
    #[derive(schemars::JsonSchema)]
    #[allow(dead_code)]
    struct Tag {
        key: String,
    }
    let schema = StructuralSchema::from_openapi(&object_schema(
        "",
        structural_schema_of::<Spec>(),
        None,
        false,
    ));
    let object = json!({
        "spec": {
            "firstName": "a",
            "first_name": "b",
            "tags": [{"key": "k", "value": "v"}],
            "byName": {"x": {"key": "k", "oops": 1}},
            "anything": {"free": true},
            "tree": {"nodeName": "r", "child": {"nodeName": "c", "child": {"nodeName": "d", "x": 1}}}
        }
    });
    assert_eq!(
        unknown_fields(&object, &schema),
        strings(&[
            "spec.byName.x.oops",
            "spec.first_name",
            "spec.tags[0].value",
            "spec.tree.child.child.x",
        ])
    );
}

#[test]
fn unknown_fields_are_capped() {
    let spec: serde_json::Map<String, Value> =
        (0..150).map(|i| (format!("f{i:03}"), json!(i))).collect();
    let object = json!({"spec": spec});
    let found = unknown_fields(&object, &widget_schema());
    assert_eq!(found.len(), MAX_ISSUES);
    assert_eq!(found[0], "spec.f000");
    assert_eq!(found[99], "spec.f099");
}

#[test]
fn duplicate_json_keys_at_every_level() {
    let body = br#"{"a":1,"a":2,"a":3,"b":{"c":1,"c":2,"c":3},"l":[{"x":1},{"x":1,"y":0,"x":2}],"m":{"d":{"e":{"f":1,"f":2}}}}"#;
    assert_eq!(
        duplicate_fields_json(body),
        strings(&["a", "b.c", "l[1].x", "m.d.e.f"])
    );
    assert_eq!(
        duplicate_fields_json(br#"[{"op":"add","op":"remove"}]"#),
        strings(&["[0].op"])
    );
    assert_eq!(
        duplicate_fields_json(br#"{"metadata":{"labels":{"app.kubernetes.io/name":"a","app.kubernetes.io/name":"b"}}}"#),
        strings(&["metadata.labels.app.kubernetes.io/name"])
    );
    assert!(duplicate_fields_json(br#"{"a":1,"b":2}"#).is_empty());
}

#[test]
fn malformed_json_yields_nothing() {
    assert!(duplicate_fields_json(br#"{"a":1,"a":2"#).is_empty());
    assert!(duplicate_fields_json(br#"{"a":1,"a":2}}"#).is_empty());
    assert!(duplicate_fields_json(b"").is_empty());
    assert!(FieldIssues::from_json(br#"{"spec":{"x":1,}}"#, &widget_schema()).is_empty());
}

#[test]
fn duplicate_yaml_keys_with_lines_in_report_order() {
    let body = b"a: 1
b:
  c: 1
  c: 2
a: 3
l:
- x: 1
  x: 2
";
    let found = duplicate_fields_yaml(body);
    let messages: Vec<String> = found
        .iter()
        .map(|d| FieldIssue::YamlDuplicate(d.clone()).message())
        .collect();
    assert_eq!(
        messages,
        [
            r#"line 4: key "c" already set in map"#,
            r#"line 5: key "a" already set in map"#,
            r#"line 8: key "x" already set in map"#,
        ]
    );
    let paths: Vec<&str> = found.iter().map(|d| d.path.as_str()).collect();
    assert_eq!(paths, ["b.c", "a", "l[0].x"]);
}

#[test]
fn duplicate_yaml_key_is_reported_at_its_value_after_repeats_inside_it() {
    let body = b"kind: Widget
spec:
  name: a
spec:
  name: b
  name: c
";
    let found = duplicate_fields_yaml(body);
    let summary: Vec<(usize, &str, &str)> = found
        .iter()
        .map(|d| (d.line.unwrap(), d.key.as_str(), d.path.as_str()))
        .collect();
    assert_eq!(
        summary,
        [(6, r#""name""#, "spec.name"), (5, r#""spec""#, "spec")]
    );
}

#[test]
fn yaml_lines_for_lists_flow_values_and_values_without_scalars() {
    let body = b"a: {}
a: {}
l:
- 1
l:
- 2
f: {x: 1}
f:
  {x: 2}
s: [[], [3]]
s:
  - []
  - [4]
e: []
e:

  []
";
    let found: Vec<(Option<usize>, String)> = duplicate_fields_yaml(body)
        .into_iter()
        .map(|d| (d.line, d.path))
        .collect();
    assert_eq!(
        found,
        [
            (Some(2), "a".to_owned()),
            (Some(6), "l".to_owned()),
            (Some(9), "f".to_owned()),
            (Some(12), "s".to_owned()),
            (Some(17), "e".to_owned()),
        ]
    );
}

#[test]
fn yaml_duplicate_without_a_line_uses_the_path_wording() {
    let issues = FieldIssues {
        issues: vec![
            FieldIssue::YamlDuplicate(YamlDuplicateKey {
                line: Some(3),
                key: r#""a""#.into(),
                path: "a".into(),
            }),
            FieldIssue::YamlDuplicate(YamlDuplicateKey {
                line: None,
                key: r#""b""#.into(),
                path: "spec.b".into(),
            }),
            FieldIssue::Unknown("spec.c".into()),
        ],
    };
    assert_eq!(
        issues.warnings(),
        [
            r#"line 3: key "a" already set in map"#,
            r#"duplicate field "spec.b""#,
            r#"unknown field "spec.c""#,
        ]
    );
    assert_eq!(
        issues.strict_message(),
        "strict decoding error: yaml: unmarshal errors:\n  line 3: key \"a\" already set in map, duplicate field \"spec.b\", unknown field \"spec.c\""
    );
    assert_eq!(issues.duplicate(), ["a", "spec.b"]);
}

#[test]
fn yaml_keys_keep_their_types() {
    let body = b"1: a\n1: b\ntrue: x\ntrue: y\n\"1\": z\n";
    let messages: Vec<String> = duplicate_fields_yaml(body)
        .into_iter()
        .map(|d| FieldIssue::YamlDuplicate(d).message())
        .collect();
    assert_eq!(
        messages,
        [
            "line 2: key 1 already set in map",
            "line 4: key true already set in map",
        ]
    );
}

#[test]
fn malformed_or_multi_document_yaml_yields_nothing() {
    assert!(duplicate_fields_yaml(b"a: [1, 2\na: 3\n").is_empty());
    assert!(duplicate_fields_yaml(b"a: 1\na: 2\n---\nb: 1\n").is_empty());
    assert!(duplicate_fields_yaml(b"").is_empty());
    assert!(duplicate_fields_yaml(b"a: 1\nb: 2\n").is_empty());
}

const WIDGET_JSON: &str = r#"{
  "apiVersion": "example.com/v1",
  "kind": "Widget",
  "metadata": {"name": "a", "name": "b", "labels": {"x": "y"}, "color": "red"},
  "spec": {
    "bogus": 1,
    "twice": 1,
    "twice": 2,
    "paused": true,
    "paused": false,
    "ports": [{"name": "p", "extra": 1, "port": 1, "port": 2}]
  }
}"#;

const WIDGET_YAML: &str = "apiVersion: example.com/v1
kind: Widget
metadata:
  name: a
  name: b
  labels:
    x: y
  color: red
spec:
  bogus: 1
  twice: 1
  twice: 2
  paused: true
  paused: false
  ports:
  - name: p
    extra: 1
    port: 1
    port: 2
";

#[test]
fn json_body_findings_interleave_in_document_order() {
    let issues = FieldIssues::from_json(WIDGET_JSON.as_bytes(), &widget_schema());
    assert_eq!(
        issues.warnings(),
        [
            r#"duplicate field "metadata.name""#,
            r#"unknown field "metadata.color""#,
            r#"unknown field "spec.bogus""#,
            r#"unknown field "spec.twice""#,
            r#"duplicate field "spec.paused""#,
            r#"unknown field "spec.ports[0].extra""#,
            r#"duplicate field "spec.ports[0].port""#,
        ]
    );
    assert_eq!(
        issues.strict_message(),
        r#"strict decoding error: duplicate field "metadata.name", unknown field "metadata.color", unknown field "spec.bogus", unknown field "spec.twice", duplicate field "spec.paused", unknown field "spec.ports[0].extra", duplicate field "spec.ports[0].port""#
    );
    assert_eq!(
        issues.unknown(),
        [
            "metadata.color",
            "spec.bogus",
            "spec.twice",
            "spec.ports[0].extra"
        ]
    );
    assert_eq!(
        issues.duplicate(),
        ["metadata.name", "spec.paused", "spec.ports[0].port"]
    );
}

#[test]
fn decoding_and_checking_in_one_pass_gives_a_plain_decodes_value_and_errors() {
    let schema = widget_schema();
    let deep = format!("{}1{}", "[".repeat(100), "]".repeat(100));
    let too_deep = format!("{}1{}", "[".repeat(200), "]".repeat(200));
    let bodies: Vec<&[u8]> = vec![
        WIDGET_JSON.as_bytes(),
        br#"{"kind":"Widget","spec":{"replicas":1,"replicas":2,"ports":[{"port":1},{"port":2,"port":3}]}}"#,
        br#"{"spec":{"bogus":{"deep":[1,2,{"x":null}]},"bogus":true}}"#,
        br#"{"n":[18446744073709551615,-9223372036854775808,1.5,-0.0,1e308,2.5e-3,0]}"#,
        br#"{"s":"\u00e9\ud83d\ude00\n\"","t":"","u":null,"b":[true,false]}"#,
        br#"[{"a":1},{"a":1,"a":2}]"#,
        br#""just a string""#,
        b"  {}  ",
        deep.as_bytes(),
        br#"{"spec":{"x":1,}}"#,
        br#"{"a":1} trailing"#,
        br#"{"a":"#,
        b"",
        br#"{"a":1e999}"#,
        br#"{"a":"\ud800"}"#,
        too_deep.as_bytes(),
    ];
    for body in bodies {
        let plain = serde_json::from_slice::<Value>(body).map_err(|e| e.to_string());
        let both = FieldIssues::decode_json(body, &schema);
        assert_eq!(
            both.as_ref()
                .map(|(v, _)| v.clone())
                .map_err(|e| e.to_string()),
            plain,
            "{}",
            String::from_utf8_lossy(body)
        );
        // The findings are those of the check alone.
        assert_eq!(
            both.map(|(_, issues)| issues).unwrap_or_default(),
            FieldIssues::from_json(body, &schema)
        );
    }
    // The last value of a repeated key is kept, and the repeat reported.
    let (value, issues) =
        FieldIssues::decode_json(br#"{"spec":{"replicas":1,"replicas":2}}"#, &schema).unwrap();
    assert_eq!(value, json!({"spec":{"replicas":2}}));
    assert_eq!(issues.warnings(), [r#"duplicate field "spec.replicas""#]);
}

#[test]
fn create_and_update_wrap_the_strict_text() {
    let issues = FieldIssues::from_json(br#"{"kind":"Widget","spec":{"foo":1}}"#, &widget_schema());
    assert_eq!(
        issues.strict_request_message("Widget", "v1alpha1", "Widget"),
        r#"Widget in version "v1alpha1" cannot be handled as a Widget: strict decoding error: unknown field "spec.foo""#
    );
}

#[test]
fn json_body_without_problems() {
    let body =
        br#"{"apiVersion":"v","kind":"Widget","metadata":{"name":"a"},"spec":{"replicas":2}}"#;
    assert!(FieldIssues::from_json(body, &widget_schema()).is_empty());
}

#[test]
fn yaml_body_findings_put_duplicate_keys_first() {
    let object: Value = serde_yaml_ng::from_str(WIDGET_YAML).unwrap();
    let issues = FieldIssues::from_yaml(WIDGET_YAML.as_bytes(), &object, &widget_schema());
    assert_eq!(
        issues.warnings(),
        [
            r#"line 5: key "name" already set in map"#,
            r#"line 12: key "twice" already set in map"#,
            r#"line 14: key "paused" already set in map"#,
            r#"line 19: key "port" already set in map"#,
            r#"unknown field "metadata.color""#,
            r#"unknown field "spec.bogus""#,
            r#"unknown field "spec.ports[0].extra""#,
            r#"unknown field "spec.twice""#,
        ]
    );
    assert_eq!(
        issues.strict_message(),
        "strict decoding error: yaml: unmarshal errors:\n  line 5: key \"name\" already set in map\n  line 12: key \"twice\" already set in map\n  line 14: key \"paused\" already set in map\n  line 19: key \"port\" already set in map, unknown field \"metadata.color\", unknown field \"spec.bogus\", unknown field \"spec.ports[0].extra\", unknown field \"spec.twice\""
    );
    assert_eq!(
        issues.duplicate(),
        [
            "metadata.name",
            "spec.twice",
            "spec.paused",
            "spec.ports[0].port"
        ]
    );
}

#[test]
fn merge_and_strategic_patches_report_patch_duplicates_then_sorted_unknowns() {
    let patch = br#"{"spec":{"zeta":1,"zeta":2,"paused":true,"paused":false,"ports":[{"name":"p","alpha":1}]}}"#;
    let patched =
        json!({"spec": {"zeta": 2, "paused": false, "ports": [{"name": "p", "alpha": 1}]}});
    let expected = [
        r#"duplicate field "spec.zeta""#,
        r#"duplicate field "spec.paused""#,
        r#"unknown field "spec.ports[0].alpha""#,
        r#"unknown field "spec.zeta""#,
    ];
    let merge = FieldIssues::merge_patch(patch, &patched, &widget_schema());
    assert_eq!(merge.warnings(), expected);
    let smp = FieldIssues::strategic_merge_patch(patch, &patched, &widget_schema());
    assert_eq!(smp.warnings(), expected);
    assert_eq!(
        smp.strict_message(),
        format!("strict decoding error: {}", expected.join(", "))
    );
}

#[test]
fn json_patch_operations_are_checked_and_prefixed() {
    let patch = br#"[
            {"op": "add", "path": "/spec/foo", "value": "x", "foo": "bar"},
            {"op": "add", "path": "/spec/a", "path": "/spec/b", "value": {"k": 1, "k": 2}},
            {"op": "replace", "path": "/spec/replicas", "value": 3}
        ]"#;
    let patched = json!({"spec": {"foo": "x", "b": {"k": 2}, "replicas": 3}});
    let issues = FieldIssues::json_patch(patch, &patched, &widget_schema());
    assert_eq!(
        issues.warnings(),
        [
            r#"json patch unknown field "[0].foo""#,
            r#"json patch duplicate field "[1].path""#,
            r#"json patch duplicate field "[1].value.k""#,
            r#"unknown field "spec.b""#,
            r#"unknown field "spec.foo""#,
        ]
    );
    assert!(issues.unknown() == ["spec.b", "spec.foo"]);
    assert!(issues.duplicate().is_empty());
}

#[test]
fn apply_reports_yaml_duplicates_even_for_json_bodies() {
    let body = br#"{
  "apiVersion": "example.com/v1",
  "kind": "Widget",
  "spec": {
    "paused": false,
    "paused": true
  }
}"#;
    let issues = FieldIssues::apply_patch(body);
    assert_eq!(
        issues.warnings(),
        [r#"line 6: key "paused" already set in map"#]
    );
    assert_eq!(
        issues.apply_strict_message(),
        "error strict decoding patch: error converting YAML to JSON: yaml: unmarshal errors:\n  line 6: key \"paused\" already set in map"
    );
}

#[test]
fn repeated_unknown_keys_are_reported_once() {
    let body = br#"{"spec":{"nope":1,"nope":2,"nope":{"x":1,"x":2}}}"#;
    let issues = FieldIssues::from_json(body, &widget_schema());
    assert_eq!(issues.warnings(), [r#"unknown field "spec.nope""#]);
}

#[test]
fn one_check_stops_at_the_cap() {
    let fields: Vec<String> = (0..150).map(|i| format!("\"f{i}\":{i}")).collect();
    let body = format!("{{\"spec\":{{{}}}}}", fields.join(","));
    let issues = FieldIssues::from_json(body.as_bytes(), &widget_schema());
    assert_eq!(issues.issues.len(), MAX_ISSUES);
}

#[test]
fn paths_are_quoted_go_style() {
    assert_eq!(go_quote(r#"a"b\c"#), r#""a\"b\\c""#);
    assert_eq!(go_quote("a\nb\tc\u{1}\u{7f}"), r#""a\nb\tc\x01\x7f""#);
    assert_eq!(go_quote("é ✓ 日本"), "\"é ✓ 日本\"");
    assert_eq!(
        go_quote("\u{a0}\u{200b}\u{feff}"),
        r#""\u00a0\u200b\ufeff""#
    );
    assert_eq!(go_quote("\u{f0000}"), r#""\U000f0000""#);
    let body = b"{\"spec\":{\"a\\nb\":1}}";
    let issues = FieldIssues::from_json(body, &widget_schema());
    assert_eq!(issues.warnings(), [r#"unknown field "spec.a\nb""#]);
}
