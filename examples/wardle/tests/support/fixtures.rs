//! The wardle objects the tests create, in one place: Flunders as JSON, as YAML manifests and
//! as kube-rs' typed `Flunder`.
//!
//! A test file that uses nothing else of `support` includes this module alone:
//! `#[path = "support/fixtures.rs"] mod fixtures;`.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::fmt::Debug;

use kube::Api;
use kube::api::PostParams;
use serde::Serialize;
use serde::de::DeserializeOwned;

use serde_json::{Value, json};
use wardle::{Flunder, FlunderSpec, ReferenceType};

/// The group version of wardle's kinds.
pub const API_VERSION: &str = "wardle.example.com/v1alpha1";

/// A Flunder `name` as JSON with `spec` as given (no namespace: the request's).
pub fn flunder_with_spec(name: &str, spec: Value) -> Value {
    json!({
        "apiVersion": API_VERSION,
        "kind": "Flunder",
        "metadata": {"name": name},
        "spec": spec,
    })
}

/// A Flunder `name` as JSON referring to `reference` of the type `reference_type` (`Flunder`
/// or `Fischer`).
pub fn flunder_to(name: &str, reference: &str, reference_type: &str) -> Value {
    flunder_with_spec(
        name,
        json!({"reference": reference, "referenceType": reference_type}),
    )
}

/// The Flunder most tests create: `name`, referring to the Fischer `x`.
pub fn flunder(name: &str) -> Value {
    flunder_to(name, "x", "Fischer")
}

/// A Flunder `name` in `namespace` as JSON, referring to the Flunder `r`.
pub fn flunder_in(namespace: &str, name: &str) -> Value {
    with_metadata(
        flunder_to(name, "r", "Flunder"),
        "namespace",
        json!(namespace),
    )
}

/// `object` with `metadata.<field>` set to `value` (labels, namespace, resourceVersion, ...).
pub fn with_metadata(mut object: Value, field: &str, value: Value) -> Value {
    object["metadata"][field] = value;
    object
}

/// A Flunder `name` whose spec holds `count` toppings named `<prefix><i>`, each of amount 1.
pub fn flunder_with_toppings(name: &str, count: usize, prefix: &str) -> Value {
    let toppings: Vec<Value> = (0..count)
        .map(|i| json!({"name": format!("{prefix}{i}"), "amount": 1}))
        .collect();
    flunder_with_spec(name, json!({"toppings": toppings}))
}

/// A Flunder `name` referring to `other`, with two toppings: cheese (2) and olives (no amount).
pub fn topped_flunder(name: &str) -> Value {
    flunder_with_spec(
        name,
        json!({
            "reference": "other",
            "toppings": [{"name": "cheese", "amount": 2}, {"name": "olives"}],
        }),
    )
}

/// A Flunder `name` with an empty spec and an annotation `note` of `bytes` bytes.
pub fn flunder_with_note(name: &str, bytes: usize) -> Value {
    with_metadata(
        flunder_with_spec(name, json!({})),
        "annotations",
        json!({"note": "n".repeat(bytes)}),
    )
}

/// A Flunder manifest (YAML) `name` referring to `reference`, with `referenceType` and
/// `namespace` when given.
pub fn flunder_yaml(
    name: &str,
    namespace: Option<&str>,
    reference: &str,
    reference_type: Option<&str>,
) -> String {
    let mut yaml = format!("apiVersion: {API_VERSION}\nkind: Flunder\nmetadata:\n  name: {name}\n");
    if let Some(namespace) = namespace {
        yaml.push_str(&format!("  namespace: {namespace}\n"));
    }
    yaml.push_str(&format!("spec:\n  reference: {reference}\n"));
    if let Some(reference_type) = reference_type {
        yaml.push_str(&format!("  referenceType: {reference_type}\n"));
    }
    yaml
}

/// A typed Flunder `name` referring to `reference` of the type `reference_type`.
pub fn typed_flunder(name: &str, reference: &str, reference_type: ReferenceType) -> Flunder {
    Flunder::new(
        name,
        FlunderSpec {
            reference: Some(reference.into()),
            reference_type: Some(reference_type),
            ..Default::default()
        },
    )
}

/// A typed Flunder `name` with an empty spec.
pub fn empty_flunder(name: &str) -> Flunder {
    Flunder::new(name, FlunderSpec::default())
}

/// Creates `object` with `api` (failing the test when it is refused) and returns what was
/// stored.
pub async fn create<K>(api: &Api<K>, object: &K) -> K
where
    K: Clone + Debug + Serialize + DeserializeOwned,
{
    api.create(&PostParams::default(), object)
        .await
        .expect("the object is created")
}

/// The resourceVersion of `object`, a number.
pub fn resource_version<K: kube::Resource>(object: &K) -> u64 {
    let rv = object.meta().resource_version.as_deref();
    rv.expect("a resourceVersion").parse().expect("a number")
}

/// `flunder` with the labels `labels` (none: left unset).
pub fn labelled(mut flunder: Flunder, labels: &[(&str, &str)]) -> Flunder {
    if !labels.is_empty() {
        flunder.metadata.labels = Some(
            labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<BTreeMap<_, _>>(),
        );
    }
    flunder
}
