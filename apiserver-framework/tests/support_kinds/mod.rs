//! The kinds the framework's tests serve, each declared in one line: `kind!` declares a
//! namespaced kind whose spec holds one field, `sized_kind!` one whose spec holds a size; and
//! a Flunder of `wardle.example.com`.

#![allow(dead_code, unused_macros, unused_imports)]

use apiserver_framework::prelude::*;
use serde_json::{Value, json};

/// `object` with the labels `labels`.
pub fn labelled(mut object: Value, labels: impl serde::Serialize) -> Value {
    object["metadata"]["labels"] = json!(labels);
    object
}

/// An object `name` of a [`sized_kind!`] kind (`api_version`, `kind`) of size `size`, as JSON.
pub fn sized(api_version: &str, kind: &str, name: &str, size: i64) -> Value {
    json!({
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {"name": name},
        "spec": {"size": size},
    })
}

/// Declares `$spec`, the spec (one field, `$field` of type `$ty`) of the namespaced kind
/// `$kind` of `$group`/`$version`, with `#[derive(ApiResource)]` (so the kind `$kind` itself
/// too): e.g. `kind!(WidgetSpec, "one.example.com", "v1", "Widget", size: i64);`. The caller
/// has the framework's prelude in scope. `kind!(cluster FooSpec, ...)` declares a
/// cluster-scoped kind.
macro_rules! kind {
    (cluster $spec:ident, $group:tt, $version:tt, $kind:tt, $field:ident: $ty:ty) => {
        /// The spec of a test object.
        #[derive(ApiResource, Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
        #[resource(group = $group, version = $version, kind = $kind)]
        pub struct $spec {
            /// Its one field.
            pub $field: $ty,
        }
    };
    ($spec:ident, $group:tt, $version:tt, $kind:tt, $field:ident: $ty:ty) => {
        /// The spec of a test object.
        #[derive(ApiResource, Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
        #[resource(group = $group, version = $version, kind = $kind, namespaced)]
        pub struct $spec {
            /// Its one field.
            pub $field: $ty,
        }
    };
}

/// [`kind!`] of a kind whose spec holds a size (`{"size": <i64>}`).
macro_rules! sized_kind {
    ($spec:ident, $group:tt, $version:tt, $kind:tt) => {
        crate::support_kinds::kind!($spec, $group, $version, $kind, size: i64);
    };
}

pub(crate) use {kind, sized_kind};

// A flunder (wardle's kind, its spec reduced to what it refers to).
kind!(
    FlunderSpec,
    "wardle.example.com",
    "v1alpha1",
    "Flunder",
    reference: String
);
