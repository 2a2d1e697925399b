//! JSON bodies: one pass over the document, unknown and duplicate fields in document order.

use std::collections::HashSet;
use std::fmt;

use super::FieldIssue;
use super::collect::{Found, push_index, push_key};
use super::unknown::{Slot, slot};
use crate::schema::Node;
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

struct JsonWalk {
    path: String,
    found: Found,
}

/// The unknown and duplicate fields of a JSON document whose top level is at `node`; `None`
/// for malformed JSON.
pub(super) fn walk_json(body: &[u8], node: Node<'_>) -> Option<Found> {
    let mut walk = JsonWalk {
        path: String::new(),
        found: Found::default(),
    };
    let mut de = serde_json::Deserializer::from_slice(body);
    JsonNode {
        walk: &mut walk,
        node,
    }
    .deserialize(&mut de)
    .ok()?;
    de.end().ok()?;
    Some(walk.found)
}

/// One value of a JSON document, with its node of the model.
struct JsonNode<'w, 's> {
    walk: &'w mut JsonWalk,
    node: Node<'s>,
}

impl<'de> DeserializeSeed<'de> for JsonNode<'_, '_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for JsonNode<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }

    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }

    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }

    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }

    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let items = self.node.item_node();
        let mut index = 0;
        loop {
            let mark = push_index(&mut self.walk.path, index);
            let item = seq.next_element_seed(JsonNode {
                walk: &mut *self.walk,
                node: items,
            })?;
            self.walk.path.truncate(mark);
            if item.is_none() {
                return Ok(());
            }
            index += 1;
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen: HashSet<String> = HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            let mark = push_key(&mut self.walk.path, &key);
            match slot(self.node, &key) {
                Slot::Known(child) => {
                    if !seen.insert(key) {
                        let path = self.walk.path.clone();
                        self.walk.found.push(FieldIssue::Duplicate(path));
                    }
                    map.next_value_seed(JsonNode {
                        walk: &mut *self.walk,
                        node: child,
                    })?;
                }
                Slot::Unknown => {
                    let path = self.walk.path.clone();
                    self.walk.found.push(FieldIssue::Unknown(path));
                    map.next_value::<IgnoredAny>()?;
                }
            }
            self.walk.path.truncate(mark);
        }
        Ok(())
    }
}
