//! JSON merge patch (RFC 7396) as a property, against the real `wardle local` binary over
//! HTTPS: for random Flunders and random merge patches (nested objects, nulls that delete,
//! arrays that replace, scalars), the object the server answers equals the patch applied
//! locally, apart from the metadata the server manages, with sample-apiserver's v1alpha1
//! defaulting applied to the result (a reference without a type refers to a Flunder). As
//! upstream's Flunder strategy validates no update, every such patch succeeds.

mod support;

use std::sync::atomic::{AtomicUsize, Ordering};

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use serde_json::{Map, Value, json};
use support::checks::answer;
use support::{FLUNDERS, Wardle};

/// Label keys, with and without a DNS prefix.
const LABEL_KEYS: &[&str] = &[
    "app",
    "tier",
    "x",
    "a.b-c_d",
    "example.com/team",
    "k8s.io/name",
];
/// Label values, the empty one included.
const LABEL_VALUES: &[&str] = &["web", "db", "", "v1.2", "A_b-9", "0"];
/// Annotation keys (the same syntax as label keys).
const ANNOTATION_KEYS: &[&str] = &[
    "note",
    "example.com/owner",
    "kubectl.kubernetes.io/last-applied",
    "z",
];
/// Finalizers (qualified names).
const FINALIZERS: &[&str] = &["example.com/cleanup", "kubernetes", "wardle.example.com/a"];

fn pick(pool: &'static [&'static str]) -> impl Strategy<Value = Value> {
    prop::sample::select(pool).prop_map(|s| Value::String(s.to_string()))
}

/// Annotation values are free text.
fn annotation_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        "[ -~]{0,16}".prop_map(Value::String),
        Just(Value::String("{\"nested\": [1, 2]}".into())),
        Just(Value::String("línea\nnueva".into())),
    ]
}

fn string_map(
    keys: &'static [&'static str],
    values: impl Strategy<Value = Value>,
    max: usize,
) -> impl Strategy<Value = Value> {
    prop::collection::btree_map(prop::sample::select(keys), values, 0..=max)
        .prop_map(|m| Value::Object(m.into_iter().map(|(k, v)| (k.to_string(), v)).collect()))
}

/// `s` or `null`.
fn or_null(s: impl Strategy<Value = Value>) -> impl Strategy<Value = Value> {
    prop_oneof![1 => Just(Value::Null), 3 => s]
}

fn reference() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::String(String::new())),
        "[a-z][a-z0-9-]{0,10}".prop_map(Value::String),
    ]
}

fn reference_type() -> impl Strategy<Value = Value> {
    pick(&["Flunder", "Fischer"])
}

/// An object with only the keys whose value is `Some`.
fn object(fields: Vec<(&str, Option<Value>)>) -> Value {
    Value::Object(
        fields
            .into_iter()
            .filter_map(|(k, v)| v.map(|v| (k.to_string(), v)))
            .collect(),
    )
}

/// A valid Flunder body: a spec with a reference, with or without its type, or no spec fields.
fn flunder() -> impl Strategy<Value = Value> {
    (
        string_map(LABEL_KEYS, pick(LABEL_VALUES), 4),
        string_map(ANNOTATION_KEYS, annotation_value(), 3),
        prop::collection::vec(pick(FINALIZERS), 0..=2),
        prop::option::of((
            "[a-z][a-z0-9-]{0,10}".prop_map(Value::String),
            prop::option::of(reference_type()),
        )),
    )
        .prop_map(|(labels, annotations, finalizers, spec)| {
            let spec = match spec {
                Some((r, Some(t))) => json!({"reference": r, "referenceType": t}),
                Some((r, None)) => json!({"reference": r}),
                None => json!({}),
            };
            json!({
                "apiVersion": "wardle.example.com/v1alpha1",
                "kind": "Flunder",
                "metadata": {
                    "labels": labels,
                    "annotations": annotations,
                    "finalizers": finalizers,
                },
                "spec": spec,
            })
        })
}

/// A merge patch over the fields a client may change: label and annotation maps (entries
/// set or deleted with null, or the whole map deleted), the finalizers array (replaced
/// whole), `generateName` (a scalar), and the spec (fields set or deleted, or the whole spec
/// deleted).
fn merge_patch() -> impl Strategy<Value = Value> {
    let labels = or_null(string_map(LABEL_KEYS, or_null(pick(LABEL_VALUES)), 3));
    let annotations = or_null(string_map(ANNOTATION_KEYS, or_null(annotation_value()), 3));
    let finalizers = or_null(prop::collection::vec(pick(FINALIZERS), 0..=3).prop_map(Value::Array));
    let generate_name = or_null(pick(&["gen-", "other-"]));
    let metadata = (
        prop::option::of(labels),
        prop::option::of(annotations),
        prop::option::of(finalizers),
        prop::option::of(generate_name),
    )
        .prop_map(|(l, a, f, g)| {
            object(vec![
                ("labels", l),
                ("annotations", a),
                ("finalizers", f),
                ("generateName", g),
            ])
        });
    let spec = or_null(
        (
            prop::option::of(or_null(reference())),
            prop::option::of(or_null(reference_type())),
        )
            .prop_map(|(r, t)| object(vec![("reference", r), ("referenceType", t)])),
    );
    (prop::option::of(metadata), prop::option::of(spec))
        .prop_map(|(m, s)| object(vec![("metadata", m), ("spec", s)]))
}

/// The object without what the server manages, and with the server's encoding of empty
/// values: empty maps and arrays and an empty `generateName` are omitted, a missing spec is
/// an empty one.
fn comparable(v: &Value) -> Value {
    let mut v = v.clone();
    let meta = v["metadata"].as_object_mut().expect("metadata");
    for k in [
        "resourceVersion",
        "generation",
        "managedFields",
        "uid",
        "creationTimestamp",
    ] {
        meta.remove(k);
    }
    meta.retain(|_, x| match x {
        Value::Object(m) => !m.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::String(s) => !s.is_empty(),
        Value::Null => false,
        _ => true,
    });
    let obj = v.as_object_mut().unwrap();
    if !obj.get("spec").is_some_and(Value::is_object) {
        obj.insert("spec".into(), Value::Object(Map::new()));
    }
    v
}

/// sample-apiserver's `SetDefaults_FlunderSpec`: a non-empty reference without a type refers
/// to a Flunder.
fn defaulted(mut object: Value) -> Value {
    if let Some(spec) = object.get_mut("spec").and_then(Value::as_object_mut) {
        let has_reference = spec
            .get("reference")
            .and_then(Value::as_str)
            .is_some_and(|r| !r.is_empty());
        let untyped = spec.get("referenceType").is_none_or(Value::is_null);
        if has_reference && untyped {
            spec.insert("referenceType".into(), json!("Flunder"));
        }
        // Rules run on the hub (v1beta1), where a reference lives in the field its type
        // names: an empty reference without a type goes nowhere, as upstream (whose v1alpha1
        // `reference` is omitted when empty).
        if !has_reference && untyped {
            spec.remove("reference");
        }
    }
    object
}

#[test]
fn merge_patches_apply_as_rfc_7396_says() {
    let server = Wardle::start();
    let client = server.client();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let counter = AtomicUsize::new(0);
    let mut runner = TestRunner::new(Config {
        cases: 48,
        failure_persistence: None,
        ..Config::default()
    });
    let result = runner.run(&(flunder(), merge_patch()), |(mut body, patch)| {
        let name = format!("p{}", counter.fetch_add(1, Ordering::SeqCst));
        body["metadata"]["name"] = json!(name);
        rt.block_on(async {
            let url = server.at(&format!("{FLUNDERS}/{name}"));
            let res = answer(client.post(server.at(FLUNDERS)).json(&body)).await;
            let code = res.status().as_u16();
            let created: Value = res.json().await.unwrap();
            prop_assert_eq!(code, 201, "create {}: {}", body, created);

            let res = answer(
                client
                    .patch(&url)
                    .header("Content-Type", "application/merge-patch+json")
                    .body(patch.to_string()),
            )
            .await;
            let code = res.status().as_u16();
            let answer: Value = res.json().await.unwrap();

            // What the body asked for, with the reference's type defaulted.
            let mut asked = body.clone();
            asked["metadata"]["name"] = json!(name);
            prop_assert_eq!(
                &created["spec"],
                &defaulted(asked)["spec"],
                "create {}",
                body
            );
            let mut expected = created.clone();
            json_patch::merge(&mut expected, &patch);
            let expected = defaulted(expected);
            prop_assert_eq!(code, 200, "patch {} on {}: {}", patch, created, answer);
            prop_assert_eq!(
                comparable(&answer),
                comparable(&expected),
                "patch {} on {}",
                patch,
                created
            );
            // What a later read sees is what the patch answered.
            let stored: Value = client.get(&url).send().await.unwrap().json().await.unwrap();
            prop_assert_eq!(&stored, &answer);
            Ok::<(), TestCaseError>(())
        })
    });
    if let Err(e) = result {
        panic!("{e}\nserver log:\n{}", server.log());
    }
}
