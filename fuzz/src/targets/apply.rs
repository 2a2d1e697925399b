//! Server-side apply (the merge of field sets) and the managed fields it reads and writes.

use apiserver_framework::ApiError;
use apiserver_framework::apply::{self, Context, ManagedFields, Set};
use apiserver_framework::yaml_body;
use serde_json::Value;

use super::assert_client_error;
use crate::schema;

/// The time recorded on the entries the targets write.
fn now() -> jiff::Timestamp {
    jiff::Timestamp::from_second(1_780_000_000).expect("a valid time")
}

/// Applies `config` as `manager`; an error must be a 4xx.
fn apply_as(
    manager: &str,
    live: Option<&Value>,
    config: &Value,
    managed: ManagedFields,
    force: bool,
    input: &str,
) -> Option<(Value, ManagedFields)> {
    let structural = schema::structural();
    let ctx = Context {
        schema: &structural,
        manager,
        api_version: schema::API_VERSION,
        subresource: None,
        reset_fields: apply::reset_fields(None, true),
        now: now(),
    };
    match apply::apply(&ctx, live, config, managed, force) {
        Ok(done) => Some(done),
        Err(e) => {
            assert_client_error(&ApiError::from(e), input);
            None
        }
    }
}

/// Asserts that managed fields survive their JSON form.
fn assert_round_trip(managed: &ManagedFields, input: &str) {
    let encoded = managed.encode();
    let decoded = ManagedFields::decode(encoded.as_ref())
        .unwrap_or_else(|e| panic!("{input:?}: written managed fields do not decode: {e}"));
    assert_eq!(&decoded, managed, "{input:?}: {encoded:?}");
}

/// An apply configuration (YAML or JSON; `apiVersion` defaulted) applied to a live object by a
/// new manager with and without force, and on create. Refusals are 4xx (409 for conflicts);
/// written managed fields decode to what was written; applying the same configuration again
/// as the same manager changes nothing.
pub fn server_side_apply(data: &[u8]) {
    let input = String::from_utf8_lossy(data).into_owned();
    let Ok(Value::Object(mut config)) = yaml_body::from_slice::<Value>(data) else {
        return;
    };
    config
        .entry("apiVersion")
        .or_insert_with(|| Value::String(schema::API_VERSION.into()));
    config.remove("metadata");
    let config = Value::Object(config);
    // The live object, first written by an applier so that it has managers.
    let (live, managed) = apply_as(
        "owner",
        None,
        &schema::live_object(),
        ManagedFields::new(),
        false,
        "live object",
    )
    .expect("the live object applies");
    for (force, on) in [(false, Some(&live)), (true, Some(&live)), (false, None)] {
        let managed_before = if on.is_some() {
            managed.clone()
        } else {
            ManagedFields::new()
        };
        let Some((object, after)) = apply_as("fuzz", on, &config, managed_before, force, &input)
        else {
            continue;
        };
        assert_round_trip(&after, &input);
        let (again, after_again) =
            apply_as("fuzz", Some(&object), &config, after.clone(), false, &input)
                .unwrap_or_else(|| panic!("{input:?}: a second identical apply is refused"));
        assert_eq!(
            again, object,
            "{input:?}: a second identical apply changes the object"
        );
        assert_round_trip(&after_again, &input);
    }
}

/// `metadata.managedFields` and FieldsV1 as a client or a stored object may hold them: what
/// decodes encodes to what decodes to the same.
pub fn fields_v1(data: &[u8]) {
    let input = String::from_utf8_lossy(data).into_owned();
    let Ok(value) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    if let Ok(set) = Set::from_fields_v1(&value) {
        let printed = set.to_fields_v1();
        let again = Set::from_fields_v1(&printed)
            .unwrap_or_else(|e| panic!("{input:?} printed as {printed}, which fails: {e}"));
        assert_eq!(again, set, "{input:?} printed as {printed}");
        let _ = set.paths();
    }
    if let Ok(managed) = ManagedFields::decode(Some(&value)) {
        assert_round_trip(&managed, &input);
    }
}
