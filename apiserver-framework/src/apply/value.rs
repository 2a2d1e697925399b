//! Comparing and printing JSON values the way structured-merge-diff's `value` package does.

use std::cmp::Ordering;

use serde_json::Value;

/// `metadata.<name>` of an object (without `Value::pointer`, which allocates per step).
pub(crate) fn metadata_field<'a>(obj: &'a Value, name: &str) -> Option<&'a Value> {
    obj.get("metadata")?.get(name)
}

/// Appends `s` as a JSON string literal.
pub(crate) fn push_json_string(out: &mut String, s: &str) {
    if s.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\') {
        out.reserve(s.len() + 2);
        out.push('"');
        out.push_str(s);
        out.push('"');
    } else {
        out.push_str(&serde_json::to_string(s).unwrap_or_default());
    }
}

/// Compact JSON, as upstream prints values in paths and `FieldsV1` keys.
pub(crate) fn to_compact_json(value: &Value) -> String {
    serde_json::to_string(value).unwrap_or_default()
}

fn rank(v: &Value) -> u8 {
    match v {
        Value::Null => 0,
        Value::Bool(_) => 1,
        Value::Number(_) => 2,
        Value::String(_) => 3,
        Value::Array(_) => 4,
        Value::Object(_) => 5,
    }
}

fn compare_numbers(a: &serde_json::Number, b: &serde_json::Number) -> Ordering {
    if let (Some(x), Some(y)) = (a.as_i64(), b.as_i64()) {
        return x.cmp(&y);
    }
    let x = a.as_f64().unwrap_or(0.0);
    let y = b.as_f64().unwrap_or(0.0);
    x.partial_cmp(&y).unwrap_or(Ordering::Equal)
}

/// A total order on JSON values (numbers compare by value, `1` equals `1.0`).
pub(crate) fn compare_values(a: &Value, b: &Value) -> Ordering {
    match (a, b) {
        (Value::Bool(x), Value::Bool(y)) => x.cmp(y),
        (Value::Number(x), Value::Number(y)) => compare_numbers(x, y),
        (Value::String(x), Value::String(y)) => x.cmp(y),
        (Value::Array(x), Value::Array(y)) => {
            for (i, j) in x.iter().zip(y.iter()) {
                let c = compare_values(i, j);
                if c != Ordering::Equal {
                    return c;
                }
            }
            x.len().cmp(&y.len())
        }
        (Value::Object(x), Value::Object(y)) => {
            for ((ka, va), (kb, vb)) in x.iter().zip(y.iter()) {
                let c = ka.cmp(kb).then_with(|| compare_values(va, vb));
                if c != Ordering::Equal {
                    return c;
                }
            }
            x.len().cmp(&y.len())
        }
        _ => rank(a).cmp(&rank(b)),
    }
}

/// Deep equality with numbers compared by value.
pub(crate) fn values_equal(a: &Value, b: &Value) -> bool {
    compare_values(a, b) == Ordering::Equal
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn json_strings_are_written_as_serde_json_writes_them() {
        for s in [
            "",
            "kubectl",
            "wardle.example.com/v1alpha1",
            "quote \" and backslash \\",
            "tab\tnewline\ncontrol\u{1}",
            "del \u{7f} and non-ASCII é ☃",
        ] {
            let mut out = String::from("x");
            push_json_string(&mut out, s);
            assert_eq!(
                out,
                format!("x{}", serde_json::to_string(s).unwrap()),
                "{s:?}"
            );
        }
    }

    #[test]
    fn metadata_fields_are_found_as_a_pointer_finds_them() {
        let obj = json!({"metadata": {"managedFields": [], "name": "a"}, "spec": {}});
        for name in ["managedFields", "name", "labels"] {
            assert_eq!(
                metadata_field(&obj, name),
                obj.pointer(&format!("/metadata/{name}"))
            );
        }
        assert_eq!(metadata_field(&json!({"spec": {}}), "name"), None);
        assert_eq!(metadata_field(&json!("text"), "name"), None);
    }
}
