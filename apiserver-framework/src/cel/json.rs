//! JSON values as CEL values, as Kubernetes' CEL sees objects: every integer is an `int`
//! (`uint` only beyond `int`'s range), so `object.spec.replicas * 2` and
//! `object.spec.replicas > 1` hold between like types. (The `cel` crate's serde conversion
//! makes a non-negative integer a `uint`, which does not mix with `int` literals.)

use std::collections::HashMap;
use std::sync::Arc;

use kube_cel::cel::Value as CelValue;
use kube_cel::cel::objects::{Key, Map};
use serde_json::Value;

/// `value` as a CEL value.
pub(crate) fn to_cel(value: &Value) -> CelValue {
    match value {
        Value::Null => CelValue::Null,
        Value::Bool(b) => CelValue::Bool(*b),
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => CelValue::Int(i),
            (None, Some(u)) => CelValue::UInt(u),
            _ => CelValue::Float(n.as_f64().unwrap_or(f64::NAN)),
        },
        Value::String(s) => CelValue::String(Arc::new(s.clone())),
        Value::Array(items) => CelValue::List(Arc::new(items.iter().map(to_cel).collect())),
        Value::Object(fields) => {
            let map: HashMap<Key, CelValue> = fields
                .iter()
                .map(|(k, v)| (Key::String(Arc::new(k.clone())), to_cel(v)))
                .collect();
            CelValue::Map(Map { map: Arc::new(map) })
        }
    }
}

/// A CEL value as JSON, for the objects policies build; a value JSON has no form for (a
/// function, an opaque value, a timestamp) is an error naming its type.
pub(crate) fn from_cel(value: &CelValue) -> Result<Value, String> {
    Ok(match value {
        CelValue::Null => Value::Null,
        CelValue::Bool(b) => Value::Bool(*b),
        CelValue::Int(i) => Value::from(*i),
        CelValue::UInt(u) => Value::from(*u),
        CelValue::Float(f) => serde_json::Number::from_f64(*f)
            .map(Value::Number)
            .ok_or_else(|| format!("{f} has no JSON form"))?,
        CelValue::String(s) => Value::String(s.to_string()),
        CelValue::List(items) => {
            Value::Array(items.iter().map(from_cel).collect::<Result<_, _>>()?)
        }
        CelValue::Map(map) => {
            let mut fields = serde_json::Map::new();
            for (key, value) in map.map.iter() {
                let key = match key {
                    Key::String(s) => s.to_string(),
                    Key::Int(i) => i.to_string(),
                    Key::Uint(u) => u.to_string(),
                    Key::Bool(b) => b.to_string(),
                };
                fields.insert(key, from_cel(value)?);
            }
            Value::Object(fields)
        }
        other => return Err(format!("a {:?} has no JSON form", other.type_of())),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube_cel::cel::{Context, Program};
    use serde_json::json;

    #[test]
    fn integers_are_ints() {
        let mut context = Context::default();
        context.add_variable_from_value("object", to_cel(&json!({"n": 5, "f": 1.5, "l": [1]})));
        let run = |e: &str| Program::compile(e).unwrap().execute(&context).unwrap();
        assert_eq!(run("object.n * 2"), CelValue::Int(10));
        assert_eq!(run("object.l[0] + 1"), CelValue::Int(2));
        assert_eq!(run("object.f * 2.0"), CelValue::Float(3.0));
        let back = json!({"n": 5, "f": 1.5, "l": [1, "a", null, true], "m": {"k": {}}});
        assert_eq!(from_cel(&to_cel(&back)).unwrap(), back);
    }
}
