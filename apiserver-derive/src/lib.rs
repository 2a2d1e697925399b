//! The `#[derive(ApiResource)]` macro of `apiserver-framework`.
//!
//! Use it through `apiserver_framework::prelude::*` rather than depending on this crate.
//! Like kube-rs' `#[derive(CustomResource)]`, it goes on the *spec* struct and generates the
//! root type:
//!
//! ```text
//! use apiserver_framework::prelude::*;
//!
//! /// A Flunder refers to another flunder or a fischer.
//! #[derive(ApiResource, Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
//! #[resource(group = "wardle.example.com", version = "v1alpha1", kind = "Flunder", namespaced,
//!            status = "FlunderStatus", shortname = "fl", category = "all",
//!            printcolumn(name = "Reference", type = "string", json_path = ".spec.reference"))]
//! #[serde(rename_all = "camelCase")]
//! pub struct FlunderSpec {
//!     pub reference: Option<String>,
//! }
//! ```
//!
//! generates `pub struct Flunder { pub metadata: ObjectMeta, pub spec: FlunderSpec,
//! pub status: Option<FlunderStatus> }` with `Flunder::new(name, spec)`, serde impls writing
//! `apiVersion` and `kind`, `kube_core::Resource` (so `kube::Api<Flunder>` works),
//! `schemars::JsonSchema` and `apiserver_framework::resource::ApiResource`.
//!
//! # Attribute keys of `#[resource(...)]`
//!
//! | key | meaning |
//! |-----|---------|
//! | `group = "..."` | API group, a lower-case DNS subdomain, or `""` for the core group served under `/api/<version>` (required) |
//! | `version = "..."` | `v<N>`, `v<N>alpha<M>` or `v<N>beta<M>` (required) |
//! | `kind = "..."` | CamelCase kind (required) |
//! | `namespaced` | objects live in namespaces (default: cluster-scoped) |
//! | `plural = "..."` | default: the lower-case kind pluralised (`policy` → `policies`, `box` → `boxes`) |
//! | `singular = "..."` | default: the lower-case kind |
//! | `status = "Type"` | the status type; adds `status: Option<Type>` and the status subresource |
//! | `shortname = "..."` | a kubectl short name (repeatable) |
//! | `category = "..."` | a category such as `all` (repeatable) |
//! | `printcolumn(name, json_path, type, description, priority, format)` | an additional printer column (repeatable); `name` and `json_path` are required, `type` is one of `string` (default), `integer`, `number`, `boolean`, `date` |
//! | `flat` | the spec's fields sit at the top level of the object instead of under `spec` |
//! | `root = "Name"` | name of the generated type (default: the kind) |
//! | `derive = "Trait"` | an extra derive for the root type (repeatable) |
//! | `crate = "path"` | path of the framework crate (default: `::apiserver_framework`) |
//! | `selectable_field = ".spec.x"` | a field usable in field selectors as `spec.x=value` (repeatable) |
//! | `scale(spec_replicas_path, status_replicas_path, label_selector_path)` | the `scale` subresource (`autoscaling/v1 Scale`); the first two are required |
//! | `validation = "rule"` or `validation = Rule::new("rule").message(..)` | a CEL rule of the whole object (`self` is the object), as kube-derive's `#[kube(validation = ...)]`: published in `x-kubernetes-validations` and checked on every write (repeatable) |
//!
//! # Attribute keys of `#[resource(...)]` on the spec's fields
//!
//! They publish list and map semantics in the schema, which strategic merge patch, `kubectl
//! apply` and server-side apply follow, and the field's CEL rules:
//!
//! | key | meaning |
//! |-----|---------|
//! | `list_type = "atomic" \| "set" \| "map"` | `x-kubernetes-list-type`; a `set` merges as a set, a `map` merges items by key |
//! | `list_map_key = "name"` | a key of a `map` list (repeatable); the first is the patch merge key |
//! | `map_type = "atomic" \| "granular"` | `x-kubernetes-map-type` |
//! | `patch_strategy = "merge" \| "retainKeys" \| "merge,retainKeys" \| "replace"` | overrides the strategy implied by `list_type` |
//! | `patch_merge_key = "name"` | overrides the merge key implied by `list_map_key` |
//! | `validation = "rule"` or `validation = Rule::new("rule")...` | a CEL rule of the field's value (`x-kubernetes-validations`; repeatable), with `kube_core::Rule`'s message, `messageExpression`, `fieldPath` and reason |
//!
//! Nested types are plain `JsonSchema` types; give their fields the same semantics with
//! schemars' `#[schemars(extend("x-kubernetes-list-type" = "map", ...))]`.

mod attrs;
mod expand;
mod fields;
mod names;

use proc_macro::TokenStream;

/// Generates a Kubernetes resource type from a spec struct; see the [crate documentation](crate).
#[proc_macro_derive(ApiResource, attributes(resource))]
pub fn derive_api_resource(input: TokenStream) -> TokenStream {
    let input = syn::parse_macro_input!(input as syn::DeriveInput);
    expand::expand(&input)
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}
