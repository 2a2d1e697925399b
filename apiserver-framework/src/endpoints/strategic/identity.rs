//! JSON values as hash keys, so list elements are found by value or merge key in constant time
//! instead of by scanning the list.

use std::hash::{Hash, Hasher};

use serde_json::Value;

/// A borrowed JSON value compared and hashed as [`Value`]'s own equality sees it.
#[derive(Clone, Copy, Debug)]
pub(super) struct Identity<'v>(pub(super) &'v Value);

/// An owned JSON value compared and hashed like [`Identity`].
#[derive(Clone, Debug)]
pub(super) struct OwnedIdentity(pub(super) Value);

impl PartialEq for Identity<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.0 == other.0
    }
}

impl Eq for Identity<'_> {}

impl Hash for Identity<'_> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        hash_value(self.0, state);
    }
}

impl PartialEq for OwnedIdentity {
    fn eq(&self, other: &Self) -> bool {
        self.0 == other.0
    }
}

impl Eq for OwnedIdentity {}

impl Hash for OwnedIdentity {
    fn hash<H: Hasher>(&self, state: &mut H) {
        hash_value(&self.0, state);
    }
}

/// A hash consistent with `Value`'s equality: scalars by value (numbers as `serde_json`
/// compares them: integers by value, floats with `0.0 == -0.0`), lists and maps by their
/// length only (equality tells them apart; they are rare as keys).
fn hash_value<H: Hasher>(value: &Value, state: &mut H) {
    match value {
        Value::Null => 0u8.hash(state),
        Value::Bool(b) => (1u8, b).hash(state),
        Value::Number(n) => {
            if let Some(u) = n.as_u64() {
                (2u8, u).hash(state);
            } else if let Some(i) = n.as_i64() {
                (3u8, i).hash(state);
            } else {
                let f = n.as_f64().unwrap_or(0.0);
                let bits = if f == 0.0 { 0 } else { f.to_bits() };
                (4u8, bits).hash(state);
            }
        }
        Value::String(s) => (5u8, s).hash(state),
        Value::Array(items) => (6u8, items.len()).hash(state),
        Value::Object(map) => (7u8, map.len()).hash(state),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::collections::HashSet;

    #[test]
    fn equal_values_are_one_key() {
        let values = [
            json!(null),
            json!(true),
            json!(1),
            json!(-1),
            json!(1.5),
            json!(0.0),
            json!(-0.0),
            json!("1"),
            json!([1]),
            json!({"a": 1}),
            json!({"a": 2}),
        ];
        let set: HashSet<Identity> = values.iter().map(Identity).collect();
        // 0.0 and -0.0 are equal values.
        assert_eq!(set.len(), values.len() - 1);
        for v in &values {
            assert!(set.contains(&Identity(v)));
            assert!(
                [OwnedIdentity(v.clone())]
                    .into_iter()
                    .collect::<HashSet<_>>()
                    .contains(&OwnedIdentity(v.clone()))
            );
        }
        assert!(!set.contains(&Identity(&json!({"a": 3}))));
    }
}
