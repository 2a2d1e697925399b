//! Whether a JSON path (as printer columns and selectable fields use them) names a field of
//! a schema in an OpenAPI v3 document.

use serde_json::Value;

/// Follows `$ref`s (to `#/components/schemas/<name>` of `doc`) and single-element `allOf`s.
fn resolve<'a>(doc: &'a Value, schema: &'a Value) -> &'a Value {
    let mut current = schema;
    for _ in 0..16 {
        if let Some(reference) = current["$ref"].as_str() {
            let name = reference.rsplit('/').next().unwrap_or_default();
            current = &doc["components"]["schemas"][name];
        } else if let Some([single]) = current["allOf"].as_array().map(Vec::as_slice) {
            current = single;
        } else {
            break;
        }
    }
    current
}

/// Whether the schema admits any field below it (no declared properties to check against).
fn open(schema: &Value) -> bool {
    schema["x-kubernetes-preserve-unknown-fields"] == true
        || schema["x-kubernetes-int-or-string"] == true
        || (schema.get("properties").is_none() && schema.get("items").is_none())
            && (schema.get("type").is_none() || schema["type"] == "object")
            && schema.get("additionalProperties").is_none()
}

/// Checks that `path` (e.g. `.spec.size`, `.status.conditions[0].type`,
/// `.metadata.labels.app`) names a field of `schema`; the error (`no field .spec.x`) names the
/// first step that is missing.
pub fn check(doc: &Value, schema: &Value, path: &str) -> Result<(), String> {
    let trimmed = path.trim().trim_start_matches('{').trim_end_matches('}');
    let mut current = resolve(doc, schema);
    let mut walked = String::new();
    for step in trimmed.trim_start_matches('.').split('.') {
        let (field, indexed) = match step.find('[') {
            Some(i) => (&step[..i], true),
            None => (step, false),
        };
        if field.is_empty() {
            return Err(format!("no field {path:?} (not a simple JSON path)"));
        }
        walked.push('.');
        walked.push_str(field);
        if open(current) {
            return Ok(());
        }
        let next = if let Some(property) = current["properties"].get(field) {
            property
        } else if let Some(additional) = current
            .get("additionalProperties")
            .filter(|a| a.is_object())
        {
            additional
        } else {
            return Err(format!("no field {walked}"));
        };
        current = resolve(doc, next);
        if indexed {
            current = resolve(doc, &current["items"]);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn paths_are_followed_through_references_maps_and_arrays() {
        let doc = json!({"components": {"schemas": {
            "Meta": {"type": "object", "properties": {
                "labels": {"type": "object", "additionalProperties": {"type": "string"}}}},
            "Thing": {"type": "object", "properties": {
                "metadata": {"allOf": [{"$ref": "#/components/schemas/Meta"}]},
                "spec": {"type": "object", "properties": {"size": {"type": "integer"}}},
                "status": {"type": "object", "properties": {"conditions": {"type": "array",
                    "items": {"type": "object", "properties": {"type": {"type": "string"}}}}}},
                "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}}});
        let thing = &doc["components"]["schemas"]["Thing"];
        for ok in [
            ".spec.size",
            ".metadata.labels.app",
            ".status.conditions[0].type",
            ".extra.anything.below",
            "{.spec.size}",
        ] {
            assert_eq!(check(&doc, thing, ok), Ok(()), "{ok}");
        }
        assert_eq!(
            check(&doc, thing, ".spec.sise"),
            Err("no field .spec.sise".into())
        );
        assert_eq!(
            check(&doc, thing, ".status.conditions[0].reason"),
            Err("no field .status.conditions.reason".into())
        );
    }
}
