//! Definitions of the `meta/v1` types every document references: `ObjectMeta` (and what it
//! references), `ListMeta`, `Status`, `DeleteOptions`, `WatchEvent`, `Patch` and the
//! discovery documents; and `autoscaling/v1 Scale`, the kind of scale subresources.
//!
//! They are generated with schemars from k8s-openapi's types, in the OpenAPI 3.0 dialect
//! (`SchemaSettings::openapi3()`, definitions under `#/components/schemas/`); k8s-openapi
//! already names them by their upstream keys (`io.k8s.apimachinery.pkg.apis.meta.v1.<Name>`).

use std::sync::LazyLock;

use k8s_openapi::apimachinery::pkg::apis::meta::v1 as meta;
use k8s_openapi::apimachinery::pkg::runtime::RawExtension;
use schemars::generate::SchemaSettings;
use serde_json::{Map, Value};

use super::dialect::V3_REF_PREFIX;

/// The meta definitions, keyed by their upstream names, in the OpenAPI 3.0 dialect.
pub(crate) fn meta_definitions() -> Map<String, Value> {
    static DEFINITIONS: LazyLock<Map<String, Value>> = LazyLock::new(generate);
    DEFINITIONS.clone()
}

fn generate() -> Map<String, Value> {
    let path = V3_REF_PREFIX.trim_start_matches('#').trim_end_matches('/');
    let mut generator = SchemaSettings::openapi3()
        .with(|s| {
            s.definitions_path = path.to_owned().into();
            s.meta_schema = None;
        })
        .into_generator();
    // `subschema_for` adds each type (and everything it references) to the definitions.
    let _ = generator.subschema_for::<meta::ObjectMeta>();
    let _ = generator.subschema_for::<meta::ListMeta>();
    let _ = generator.subschema_for::<meta::Status>();
    let _ = generator.subschema_for::<meta::DeleteOptions>();
    let _ = generator.subschema_for::<meta::WatchEvent<RawExtension>>();
    let _ = generator.subschema_for::<meta::Patch>();
    let _ = generator.subschema_for::<meta::APIResourceList>();
    let _ = generator.subschema_for::<meta::APIGroup>();
    // The scale subresource's kind.
    let _ = generator.subschema_for::<k8s_openapi::api::autoscaling::v1::Scale>();
    generator.take_definitions(true)
}
