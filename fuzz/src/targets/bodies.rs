//! Object bodies of creates and updates, JSON and YAML, with their field validation.

use apiserver_framework::endpoints::handlers::decode_object;
use apiserver_framework::endpoints::negotiation::BodyFormat;
use apiserver_framework::registry::field_validation::FieldIssues;
use apiserver_framework::yaml_body::{self, MAX_DEPTH};
use serde_json::Value;

use super::assert_client_error;
use crate::schema;

/// The nesting of collections in `v` (a scalar is 0).
fn depth(v: &Value) -> usize {
    // Iterative, so that the check itself cannot overflow the stack.
    let mut deepest = 0;
    let mut stack = vec![(v, 0usize)];
    while let Some((v, d)) = stack.pop() {
        let children: Box<dyn Iterator<Item = &Value>> = match v {
            Value::Array(a) => Box::new(a.iter()),
            Value::Object(o) => Box::new(o.values()),
            _ => continue,
        };
        deepest = deepest.max(d + 1);
        stack.extend(children.map(|c| (c, d + 1)));
    }
    deepest
}

/// Checks a decoded body the way every format does: bounded nesting, a JSON round trip, and
/// field validation of it.
fn check_decoded(input: &[u8], object: &Value) {
    assert!(
        depth(object) <= MAX_DEPTH,
        "{:?}: depth {}",
        String::from_utf8_lossy(input),
        depth(object)
    );
    let encoded = serde_json::to_vec(object).expect("a Value encodes");
    let again = decode_object(BodyFormat::Json, &encoded).expect("an encoded object decodes");
    assert_eq!(&again, object);
    let structural = schema::structural();
    let issues = FieldIssues::from_json(&encoded, &structural);
    let _ = (issues.warnings(), issues.strict_message(), issues.unknown());
}

/// Decodes a JSON object body (400 for anything malformed, nested at most 127 deep) and runs
/// field validation over the raw body (unknown and duplicate fields).
pub fn json_body(data: &[u8]) {
    let structural = schema::structural();
    let issues = FieldIssues::from_json(data, &structural);
    let _ = (
        issues.warnings(),
        issues.strict_message(),
        issues.duplicate(),
    );
    match decode_object(BodyFormat::Json, data) {
        Ok(object) => check_decoded(data, &object),
        Err(e) => assert_client_error(&e, &String::from_utf8_lossy(data)),
    }
}

/// Decodes a YAML object body: nesting is refused before parsing (and only what the parser
/// or the JSON form would refuse), a decoded body has the same JSON form, and field validation (duplicate keys
/// included) runs over it.
pub fn yaml_body(data: &[u8]) {
    let depth_check = yaml_body::check_depth(data);
    if let Err(too_deep) = depth_check {
        // The early refusal refuses only what would be refused anyway: by the parser, or by
        // the JSON decoding of the stored object (a level less deep than the parser's bound).
        let parsed = serde_yaml_ng::from_slice::<Value>(data);
        assert!(
            parsed.as_ref().map_or(true, |v| depth(v) > MAX_DEPTH),
            "{:?}: refused as {too_deep} but the parser accepts it and JSON could hold it",
            String::from_utf8_lossy(data)
        );
    }
    match decode_object(BodyFormat::Yaml, data) {
        Ok(object) => {
            check_decoded(data, &object);
            let structural = schema::structural();
            let issues = FieldIssues::from_yaml(data, &object, &structural);
            let _ = (
                issues.warnings(),
                issues.strict_message(),
                issues.duplicate(),
            );
            let _ = FieldIssues::apply_patch(data).apply_strict_message();
        }
        Err(e) => assert_client_error(&e, &String::from_utf8_lossy(data)),
    }
}
