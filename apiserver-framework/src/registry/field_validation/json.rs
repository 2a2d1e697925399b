//! JSON bodies: one pass over the document that decodes it and finds its unknown and
//! duplicate fields, in document order.

use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

use super::FieldIssue;
use super::collect::{Found, push_index, push_key};
use super::unknown::{Slot, slot};
use crate::schema::SchemaNode;

struct JsonWalk {
    path: String,
    found: Found,
}

/// The unknown and duplicate fields of a JSON document whose top level is at `node`; `None`
/// for malformed JSON.
pub(super) fn walk_json(body: &[u8], node: SchemaNode<'_>) -> Option<Found> {
    decode_json(body, node).ok().map(|(_, found)| found)
}

/// A JSON document decoded, as `serde_json::from_slice::<Value>` decodes it (the same value,
/// the same errors), with its unknown and duplicate fields (its top level at `node`): one pass
/// over the bytes instead of one to decode and one to check.
pub(super) fn decode_json(
    body: &[u8],
    node: SchemaNode<'_>,
) -> Result<(Value, Found), serde_json::Error> {
    let mut walk = JsonWalk {
        path: String::new(),
        found: Found::default(),
    };
    let mut de = serde_json::Deserializer::from_slice(body);
    let value = JsonNode {
        walk: &mut walk,
        node,
    }
    .deserialize(&mut de)?;
    de.end()?;
    Ok((value, walk.found))
}

/// One value of a JSON document, with its node of the model.
struct JsonNode<'w, 's> {
    walk: &'w mut JsonWalk,
    node: SchemaNode<'s>,
}

impl<'de> DeserializeSeed<'de> for JsonNode<'_, '_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for JsonNode<'_, '_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any valid JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let items = self.node.item_node();
        let mut list = Vec::new();
        loop {
            let mark = push_index(&mut self.walk.path, list.len());
            let item = seq.next_element_seed(JsonNode {
                walk: &mut *self.walk,
                node: items,
            })?;
            self.walk.path.truncate(mark);
            match item {
                Some(item) => list.push(item),
                None => return Ok(Value::Array(list)),
            }
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut object = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let mark = push_key(&mut self.walk.path, &key);
            let value = match slot(self.node, &key) {
                Slot::Known(child) => {
                    if object.contains_key(&key) {
                        let path = self.walk.path.clone();
                        self.walk.found.push(FieldIssue::Duplicate(path));
                    }
                    map.next_value_seed(JsonNode {
                        walk: &mut *self.walk,
                        node: child,
                    })?
                }
                Slot::Unknown => {
                    let path = self.walk.path.clone();
                    self.walk.found.push(FieldIssue::Unknown(path));
                    map.next_value::<Value>()?
                }
            };
            self.walk.path.truncate(mark);
            // A repeated key keeps its last value, as a plain decode does.
            object.insert(key, value);
        }
        Ok(Value::Object(object))
    }
}
