//! JSON bodies: one pass over the document, unknown and duplicate fields in document order.

use std::collections::HashSet;
use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use super::FieldIssue;
use super::collect::{Found, push_index, push_key};
use super::schema::{Shape, Slot};

struct JsonWalk<'s> {
    root: &'s Value,
    path: String,
    found: Found,
}

pub(super) fn walk_json<'s>(
    body: &[u8],
    shape: Shape<'s>,
    top: bool,
    root: &'s Value,
) -> Option<Found> {
    let mut walk = JsonWalk {
        root,
        path: String::new(),
        found: Found::default(),
    };
    let mut de = serde_json::Deserializer::from_slice(body);
    JsonNode {
        walk: &mut walk,
        shape,
        top,
    }
    .deserialize(&mut de)
    .ok()?;
    de.end().ok()?;
    Some(walk.found)
}

/// One value of a JSON document, with the schemas that apply to it.
struct JsonNode<'w, 's> {
    walk: &'w mut JsonWalk<'s>,
    shape: Shape<'s>,
    top: bool,
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
        let items = self.shape.items(self.walk.root);
        let mut index = 0;
        loop {
            let mark = push_index(&mut self.walk.path, index);
            let item = seq.next_element_seed(JsonNode {
                walk: &mut *self.walk,
                shape: items.clone(),
                top: false,
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
            match self.shape.slot(&key, self.top, self.walk.root) {
                Slot::Known(child) => {
                    if !seen.insert(key) {
                        let path = self.walk.path.clone();
                        self.walk.found.push(FieldIssue::Duplicate(path));
                    }
                    map.next_value_seed(JsonNode {
                        walk: &mut *self.walk,
                        shape: child,
                        top: false,
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
