//! Renders JSON values in error messages the way Kubernetes API servers print them: as a Go
//! program prints decoded JSON with `%v` (`map[a:1 b:[x y]]`), and with Go's names for types.

use serde_json::{Number, Value};

/// `value` as Go's `%v` prints decoded JSON: maps as `map[k:v ...]` with sorted keys, lists as
/// `[a b]`, strings bare, `null` as `<nil>`.
pub(super) fn go_value(value: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, value);
    out
}

/// Several lists printed as one Go list of lists: `[[a b] [c]]`.
pub(super) fn go_lists(lists: &[&[Value]]) -> String {
    let mut out = String::from("[");
    for (i, list) in lists.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        write_list(&mut out, list);
    }
    out.push(']');
    out
}

/// The Go type that a decoded JSON value has.
pub(super) fn go_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float64",
        Value::Number(_) => "int64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

/// The JSON type of a value, as a JSON decoder names it in errors.
pub(super) fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn write_value(out: &mut String, value: &Value) {
    match value {
        Value::Null => out.push_str("<nil>"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&number(n)),
        Value::String(s) => out.push_str(s),
        Value::Array(items) => write_list(out, items),
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push_str("map[");
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                out.push_str(key);
                out.push(':');
                write_value(out, &map[key.as_str()]);
            }
            out.push(']');
        }
    }
}

fn write_list(out: &mut String, items: &[Value]) {
    out.push('[');
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        write_value(out, item);
    }
    out.push(']');
}

/// A number as Go prints it: integers in full, floats in their shortest form, with an exponent
/// (`1e+21`, `1e-05`) outside [1e-4, 1e21).
fn number(n: &Number) -> String {
    let Some(f) = n.as_f64().filter(|_| n.is_f64()) else {
        return n.to_string();
    };
    let magnitude = f.abs();
    if f == 0.0 || (1e-4..1e21).contains(&magnitude) {
        return format!("{f}");
    }
    let formatted = format!("{f:e}");
    match formatted.split_once('e') {
        Some((mantissa, exponent)) => {
            let (sign, digits) = match exponent.strip_prefix('-') {
                Some(digits) => ('-', digits),
                None => ('+', exponent),
            };
            format!("{mantissa}e{sign}{digits:0>2}")
        }
        None => formatted,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn values_print_as_go_prints_decoded_json() {
        assert_eq!(
            go_value(&json!({"b": [1, "x", null], "a": {"c": true}})),
            "map[a:map[c:true] b:[1 x <nil>]]"
        );
        assert_eq!(go_value(&json!(1.5)), "1.5");
        assert_eq!(go_value(&json!(2.0)), "2");
        assert_eq!(go_value(&json!(1e21)), "1e+21");
        assert_eq!(go_value(&json!(0.00001)), "1e-05");
        assert_eq!(go_value(&json!(-7)), "-7");
        assert_eq!(go_lists(&[&[json!(1)], &[json!("a")]]), "[[1] [a]]");
    }

    #[test]
    fn go_and_json_type_names() {
        assert_eq!(go_type(&json!([])), "[]interface {}");
        assert_eq!(go_type(&json!({})), "map[string]interface {}");
        assert_eq!(go_type(&json!(1)), "int64");
        assert_eq!(go_type(&json!(1.5)), "float64");
        assert_eq!(go_type(&json!(null)), "<nil>");
        assert_eq!(json_type(&json!([])), "array");
        assert_eq!(json_type(&json!(true)), "bool");
    }
}
