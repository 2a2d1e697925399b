//! YAML bodies: repeated keys with the line of their value.

use std::collections::HashSet;
use std::fmt;

use serde::de::{
    self, DeserializeSeed, Deserializer, EnumAccess, IgnoredAny, MapAccess, SeqAccess,
    VariantAccess, Visitor,
};

use super::collect::{push_index, push_key};
use super::{MAX_ISSUES, YamlDuplicateKey};
use crate::quote::go_quote;
use crate::yaml_body;

/// Keys given more than once in the same mapping of a YAML document, in the order they are
/// reported (a repeated key after anything repeated inside its value), at most [`MAX_ISSUES`].
///
/// Malformed YAML, a stream of several documents, or a document nested deeper than
/// [`yaml_body::MAX_DEPTH`] (found before it is parsed) yields an empty list.
pub fn duplicate_fields_yaml(body: &[u8]) -> Vec<YamlDuplicateKey> {
    if yaml_body::check_depth(body).is_err() {
        return Vec::new();
    }
    let mut walk = YamlWalk::new(None);
    if yaml_walk(body, &mut walk).is_err() {
        return Vec::new();
    }
    let mut lines = walk.lines;
    let mut found = walk.found;
    found.truncate(MAX_ISSUES);
    // A value without any scalar (`{}`, `[]`) takes one more pass that stops at it, as long as
    // those passes stay within the budget.
    let mut budget = YAML_PASS_BUDGET / body.len().max(1);
    for pending in &found {
        if lines[pending.slot].is_some() || budget == 0 {
            continue;
        }
        budget -= 1;
        let mut stop = YamlWalk::new(Some(pending.slot));
        if let Err(err) = yaml_walk(body, &mut stop)
            && err.to_string().contains(PROBE)
        {
            lines[pending.slot] = err.location().map(|l| l.line());
        }
    }
    found
        .into_iter()
        .map(|pending| YamlDuplicateKey {
            line: lines[pending.slot],
            key: pending.key,
            path: pending.path,
        })
        .collect()
}

/// Message of the errors raised on purpose to learn the position of a value.
const PROBE: &str = "field-validation position probe";

/// Bytes the extra passes of [`duplicate_fields_yaml`] may parse in all.
const YAML_PASS_BUDGET: usize = 4 << 20;

/// A repeated key, reported once its value has been walked.
struct Pending {
    /// Index into [`YamlWalk::lines`]; repeated keys are numbered in the order they are read.
    slot: usize,
    key: String,
    path: String,
}

/// State of one pass over a YAML document.
///
/// The YAML deserializer tells positions only in its errors. Raising an error on a scalar
/// leaves it in a consistent state (the scalar is consumed), so the pass raises one at the first
/// scalar of each repeated key's value, reads the position from it and carries on. For block
/// mappings and lists that scalar starts on the line where the value starts. (Known
/// inexactness: a value that is an alias gives the line of its anchor, and a list item whose
/// content starts on the line after its `-` gives the content's line.)
struct YamlWalk {
    path: String,
    found: Vec<Pending>,
    /// Line of the value of each repeated key, by slot.
    lines: Vec<Option<usize>>,
    /// The slot whose line the next scalar gives: the value of a repeated key starts where its
    /// first scalar is (values starting with an empty collection are left to the extra pass).
    want: Option<usize>,
    /// Stop the pass with an error at the value of this slot (to learn where it starts when
    /// it holds no scalar).
    stop_at: Option<usize>,
}

impl YamlWalk {
    fn new(stop_at: Option<usize>) -> Self {
        YamlWalk {
            path: String::new(),
            found: Vec::new(),
            lines: Vec::new(),
            want: None,
            stop_at,
        }
    }

    /// A list or mapping ended before any scalar: the first scalar of the wanted value, if any,
    /// comes after an empty collection and does not mark where the value starts.
    fn collection_done(&mut self) {
        self.want = None;
    }

    /// Takes a probe error raised for [`YamlWalk::want`]: records its line and reports success;
    /// any other error is passed on.
    fn catch<E: de::Error>(&mut self, err: E) -> Result<(), E> {
        let text = err.to_string();
        match self.want {
            Some(slot) if text.contains(PROBE) => {
                self.lines[slot] = line_of(&text);
                self.want = None;
                Ok(())
            }
            _ => Err(err),
        }
    }
}

/// The line in a YAML error text ending `... at line <n> column <m>`.
fn line_of(text: &str) -> Option<usize> {
    let (_, tail) = text.rsplit_once(" at line ")?;
    tail.split(' ').next()?.parse().ok()
}

fn yaml_walk(body: &[u8], walk: &mut YamlWalk) -> Result<(), serde_yaml_ng::Error> {
    YamlNode { walk }.deserialize(serde_yaml_ng::Deserializer::from_slice(body))
}

/// A mapping key as YAML typed it; keys of different types never collide.
#[derive(Clone, PartialEq, Eq, Hash)]
enum YamlKey {
    Str(String),
    Int(i128),
    Float(u64),
    Bool(bool),
    Null,
}

impl YamlKey {
    /// The key as Go's `%#v` writes it.
    fn go_repr(&self) -> String {
        match self {
            YamlKey::Str(s) => go_quote(s),
            YamlKey::Int(i) => i.to_string(),
            YamlKey::Float(bits) => go_float(f64::from_bits(*bits)),
            YamlKey::Bool(b) => b.to_string(),
            YamlKey::Null => "<nil>".into(),
        }
    }

    /// The key as it appears in a path.
    fn path_text(&self) -> String {
        match self {
            YamlKey::Str(s) => s.clone(),
            YamlKey::Null => "null".into(),
            other => other.go_repr(),
        }
    }
}

fn go_float(f: f64) -> String {
    if f.is_nan() {
        "NaN".into()
    } else if f.is_infinite() {
        if f > 0.0 { "+Inf" } else { "-Inf" }.into()
    } else {
        f.to_string()
    }
}

/// Reads a mapping key. With `probe`, keeps the key in `stash` and fails, so the error gives
/// the key's position.
struct KeySeed<'a> {
    probe: bool,
    stash: &'a mut Option<YamlKey>,
}

impl KeySeed<'_> {
    fn key<E: de::Error>(self, key: YamlKey) -> Result<YamlKey, E> {
        if self.probe {
            *self.stash = Some(key);
            Err(E::custom(PROBE))
        } else {
            Ok(key)
        }
    }
}

impl<'de> DeserializeSeed<'de> for KeySeed<'_> {
    type Value = YamlKey;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<YamlKey, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for KeySeed<'_> {
    type Value = YamlKey;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a scalar mapping key")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<YamlKey, E> {
        self.key(YamlKey::Bool(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<YamlKey, E> {
        self.key(YamlKey::Int(v.into()))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<YamlKey, E> {
        self.key(YamlKey::Int(v.into()))
    }

    fn visit_i128<E: de::Error>(self, v: i128) -> Result<YamlKey, E> {
        self.key(YamlKey::Int(v))
    }

    fn visit_u128<E: de::Error>(self, v: u128) -> Result<YamlKey, E> {
        match i128::try_from(v) {
            Ok(v) => self.key(YamlKey::Int(v)),
            Err(_) => Err(E::custom("integer key out of range")),
        }
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<YamlKey, E> {
        // 0.0 and -0.0 are the same key.
        self.key(YamlKey::Float(if v == 0.0 { 0 } else { v.to_bits() }))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<YamlKey, E> {
        self.key(YamlKey::Str(v.to_owned()))
    }

    fn visit_unit<E: de::Error>(self) -> Result<YamlKey, E> {
        self.key(YamlKey::Null)
    }

    fn visit_none<E: de::Error>(self) -> Result<YamlKey, E> {
        self.key(YamlKey::Null)
    }
}

/// One value of a YAML document.
struct YamlNode<'w> {
    walk: &'w mut YamlWalk,
}

impl YamlNode<'_> {
    /// A scalar value: fails if its position is wanted.
    fn scalar<E: de::Error>(self) -> Result<(), E> {
        match self.walk.want {
            Some(_) => Err(E::custom(PROBE)),
            None => Ok(()),
        }
    }
}

impl<'de> DeserializeSeed<'de> for YamlNode<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for YamlNode<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a YAML value")
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        self.scalar()
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        self.scalar()
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        self.scalar()
    }

    fn visit_i128<E: de::Error>(self, _: i128) -> Result<(), E> {
        self.scalar()
    }

    fn visit_u128<E: de::Error>(self, _: u128) -> Result<(), E> {
        self.scalar()
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        self.scalar()
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        self.scalar()
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.scalar()
    }

    fn visit_none<E: de::Error>(self) -> Result<(), E> {
        self.scalar()
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        self.deserialize(deserializer)
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        self.deserialize(deserializer)
    }

    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<(), A::Error> {
        // A value with a local tag (`!thing ...`): look into the tagged value.
        let (_, variant) = data.variant::<IgnoredAny>()?;
        variant.newtype_variant_seed(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut index = 0;
        loop {
            let mark = push_index(&mut self.walk.path, index);
            let item = match seq.next_element_seed(YamlNode {
                walk: &mut *self.walk,
            }) {
                Ok(item) => item.is_some(),
                Err(err) => self.walk.catch(err).map(|()| true)?,
            };
            self.walk.path.truncate(mark);
            if !item {
                self.walk.collection_done();
                return Ok(());
            }
            index += 1;
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen: HashSet<YamlKey> = HashSet::new();
        loop {
            let mut stash = None;
            let seed = KeySeed {
                probe: self.walk.want.is_some(),
                stash: &mut stash,
            };
            let key = match map.next_key_seed(seed) {
                Ok(Some(key)) => key,
                Ok(None) => {
                    self.walk.collection_done();
                    return Ok(());
                }
                Err(err) => {
                    self.walk.catch(err)?;
                    stash.ok_or_else(|| <A::Error as de::Error>::custom("mapping key lost"))?
                }
            };
            let mark = push_key(&mut self.walk.path, &key.path_text());
            let slot = if seen.insert(key.clone()) {
                None
            } else {
                self.walk.lines.push(None);
                Some(self.walk.lines.len() - 1)
            };
            if slot.is_some() && slot == self.walk.stop_at {
                map.next_value_seed(Stop)?;
            }
            if slot.is_some() {
                self.walk.want = slot;
            }
            if let Err(err) = map.next_value_seed(YamlNode {
                walk: &mut *self.walk,
            }) {
                self.walk.catch(err)?;
            }
            // Reported after its value, so repeats inside the value come first.
            if let Some(slot) = slot {
                self.walk.found.push(Pending {
                    slot,
                    key: key.go_repr(),
                    path: self.walk.path.clone(),
                });
            }
            self.walk.path.truncate(mark);
        }
    }
}

/// Fails on whatever value it meets, so the error carries the position where that value
/// starts.
struct Stop;

impl<'de> DeserializeSeed<'de> for Stop {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Stop {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(PROBE)
    }
}
