//! Field paths and sets of field paths, and their `FieldsV1` encoding (structured-merge-diff's
//! `fieldpath` package).

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde_json::{Map, Value};

use super::typed::field;
use super::value::{compare_values, to_compact_json};
use crate::schema::SchemaNode;

/// One step of a [`Path`]: a field, an associative-list key, a set value or a list index.
#[derive(Debug, Clone)]
pub enum PathElement {
    /// A field of a struct or a key of a map (`f:<name>`).
    Field(String),
    /// An item of a list of type `map`, by its key fields sorted by name (`k:{...}`).
    Key(Vec<(String, Value)>),
    /// An item of a list of type `set`, by its value (`v:<json>`).
    Value(Value),
    /// An item of a list by position (`i:<n>`).
    Index(usize),
}

impl PathElement {
    fn rank(&self) -> u8 {
        match self {
            PathElement::Field(_) => 0,
            PathElement::Key(_) => 1,
            PathElement::Value(_) => 2,
            PathElement::Index(_) => 3,
        }
    }

    /// The `FieldsV1` key of this element: `f:name`, `k:{"name":"x"}`, `v:"x"` or `i:0`.
    pub fn to_fields_v1_key(&self) -> String {
        match self {
            PathElement::Field(name) => {
                let mut out = String::with_capacity(name.len() + 2);
                out.push_str("f:");
                out.push_str(name);
                out
            }
            PathElement::Key(fields) => {
                let mut out = String::from("k:{");
                for (i, (name, value)) in fields.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&to_compact_json(&Value::String(name.clone())));
                    out.push(':');
                    out.push_str(&to_compact_json(value));
                }
                out.push('}');
                out
            }
            PathElement::Value(value) => format!("v:{}", to_compact_json(value)),
            PathElement::Index(i) => format!("i:{i}"),
        }
    }

    /// Parses a `FieldsV1` key (the inverse of [`PathElement::to_fields_v1_key`]).
    pub fn from_fields_v1_key(key: &str) -> Result<PathElement, FieldsV1Error> {
        let bytes = key.as_bytes();
        if bytes.len() < 2 {
            return Err(FieldsV1Error::TooShort);
        }
        if bytes[1] != b':' {
            return Err(FieldsV1Error::MissingColon(key.to_string()));
        }
        let (kind, rest) = key.split_at(2);
        match &kind[..1] {
            "f" => Ok(PathElement::Field(rest.to_string())),
            "k" => match serde_json::from_str::<Value>(rest) {
                Ok(Value::Object(map)) => Ok(PathElement::key(map.into_iter().collect())),
                Ok(_) => Err(FieldsV1Error::Invalid(format!(
                    "expected a JSON object in key {key:?}"
                ))),
                Err(e) => Err(FieldsV1Error::Invalid(e.to_string())),
            },
            "v" => serde_json::from_str::<Value>(rest)
                .map(PathElement::Value)
                .map_err(|e| FieldsV1Error::Invalid(e.to_string())),
            "i" => rest
                .parse::<usize>()
                .map(PathElement::Index)
                .map_err(|e| FieldsV1Error::Invalid(e.to_string())),
            _ => Err(FieldsV1Error::UnknownElement),
        }
    }

    /// A key element with its fields sorted by name.
    pub fn key(mut fields: Vec<(String, Value)>) -> PathElement {
        fields.sort_by(|a, b| a.0.cmp(&b.0));
        PathElement::Key(fields)
    }
}

impl PartialEq for PathElement {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for PathElement {}

impl PartialOrd for PathElement {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for PathElement {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (PathElement::Field(a), PathElement::Field(b)) => a.cmp(b),
            (PathElement::Key(a), PathElement::Key(b)) => {
                for ((an, av), (bn, bv)) in a.iter().zip(b.iter()) {
                    let c = an.cmp(bn).then_with(|| compare_values(av, bv));
                    if c != Ordering::Equal {
                        return c;
                    }
                }
                a.len().cmp(&b.len())
            }
            (PathElement::Value(a), PathElement::Value(b)) => compare_values(a, b),
            (PathElement::Index(a), PathElement::Index(b)) => a.cmp(b),
            _ => self.rank().cmp(&other.rank()),
        }
    }
}

/// Upstream's `PathElement.String()`: `.name`, `[k1=v1,k2=v2]`, `[=value]`, `[0]`.
impl fmt::Display for PathElement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PathElement::Field(name) => write!(f, ".{name}"),
            PathElement::Key(fields) => {
                f.write_str("[")?;
                for (i, (name, value)) in fields.iter().enumerate() {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    write!(f, "{name}={}", to_compact_json(value))?;
                }
                f.write_str("]")
            }
            PathElement::Value(value) => write!(f, "[={}]", to_compact_json(value)),
            PathElement::Index(i) => write!(f, "[{i}]"),
        }
    }
}

/// A path from the root of an object to one of its nodes.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Path(pub Vec<PathElement>);

impl Path {
    /// A path of field names, e.g. `Path::fields(&["spec", "size"])` is `.spec.size`.
    pub fn fields(names: &[&str]) -> Path {
        Path(
            names
                .iter()
                .map(|n| PathElement::Field((*n).to_string()))
                .collect(),
        )
    }

    /// This path followed by `pe`.
    pub fn child(&self, pe: PathElement) -> Path {
        let mut elements = self.0.clone();
        elements.push(pe);
        Path(elements)
    }
}

/// Upstream's `Path.String()`: the elements one after another, e.g.
/// `.spec.containers[name="nginx"].image`.
impl fmt::Display for Path {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for pe in &self.0 {
            write!(f, "{pe}")?;
        }
        Ok(())
    }
}

/// Why a `FieldsV1` document could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FieldsV1Error {
    /// A key shorter than its `x:` prefix.
    #[error("key must be 2 characters long:")]
    TooShort,
    /// A key whose second character is not `:`.
    #[error("missing colon: {0}")]
    MissingColon(String),
    /// A key without one of the `f:`, `k:`, `v:`, `i:` prefixes.
    #[error("unknown path element type")]
    UnknownElement,
    /// A node that is not a JSON object.
    #[error("expected an object in FieldsV1, found {0}")]
    NotAnObject(String),
    /// A key whose value part is not valid.
    #[error("invalid path element: {0}")]
    Invalid(String),
}

/// A set of paths, stored as a tree: `members` are the paths ending at this node, `children`
/// the subtrees below it (never empty).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Set {
    members: BTreeSet<PathElement>,
    children: BTreeMap<PathElement, Set>,
}

impl Set {
    /// The empty set.
    pub fn new() -> Set {
        Set::default()
    }

    /// A set holding the given paths.
    pub fn from_paths<I: IntoIterator<Item = Path>>(paths: I) -> Set {
        let mut set = Set::new();
        for p in paths {
            set.insert(&p);
        }
        set
    }

    /// Whether the set holds no path.
    pub fn is_empty(&self) -> bool {
        self.members.is_empty() && self.children.is_empty()
    }

    /// Adds a path (the empty path is ignored: the root is never a member).
    pub fn insert(&mut self, path: &Path) {
        self.insert_elements(&path.0);
    }

    pub(crate) fn insert_elements(&mut self, elements: &[PathElement]) {
        match elements {
            [] => {}
            [last] => {
                self.members.insert(last.clone());
            }
            // The key is copied only for a child not yet present.
            [first, rest @ ..] => match self.children.get_mut(first) {
                Some(child) => child.insert_elements(rest),
                None => self
                    .children
                    .entry(first.clone())
                    .or_default()
                    .insert_elements(rest),
            },
        }
    }

    /// Adds step `pe` below this node: as a member when `member`, and with the paths `below`
    /// it (relative to `pe`) as its subtree when there are any. The caller knows `pe` is new here.
    pub(crate) fn insert_step(&mut self, pe: PathElement, member: bool, below: Set) {
        match (member, below.is_empty()) {
            (true, true) => {
                self.members.insert(pe);
            }
            (true, false) => {
                self.members.insert(pe.clone());
                let previous = self.children.insert(pe, below);
                debug_assert!(previous.is_none(), "a step is walked once");
            }
            (false, false) => {
                let previous = self.children.insert(pe, below);
                debug_assert!(previous.is_none(), "a step is walked once");
            }
            (false, true) => {}
        }
    }

    /// Whether `path` is a member.
    pub fn has(&self, path: &Path) -> bool {
        self.has_elements(&path.0)
    }

    fn has_elements(&self, elements: &[PathElement]) -> bool {
        match elements {
            [] => false,
            [last] => self.members.contains(last),
            [first, rest @ ..] => self
                .children
                .get(first)
                .is_some_and(|c| c.has_elements(rest)),
        }
    }

    /// Whether `pe` (one step below this node) is a member.
    pub(crate) fn has_member(&self, pe: &PathElement) -> bool {
        self.members.contains(pe)
    }

    /// The subtree below `pe` (paths relative to `pe`), if any.
    pub(crate) fn child(&self, pe: &PathElement) -> Option<&Set> {
        self.children.get(pe)
    }

    /// Paths in either set.
    pub fn union(&self, other: &Set) -> Set {
        let mut out = self.clone();
        out.members.extend(other.members.iter().cloned());
        for (pe, child) in &other.children {
            let merged = match out.children.get(pe) {
                Some(mine) => mine.union(child),
                None => child.clone(),
            };
            out.children.insert(pe.clone(), merged);
        }
        out
    }

    /// Paths in both sets.
    pub fn intersection(&self, other: &Set) -> Set {
        let members = self.members.intersection(&other.members).cloned().collect();
        let mut children = BTreeMap::new();
        for (pe, child) in &self.children {
            if let Some(theirs) = other.children.get(pe) {
                let c = child.intersection(theirs);
                if !c.is_empty() {
                    children.insert(pe.clone(), c);
                }
            }
        }
        Set { members, children }
    }

    /// Paths of this set that are not in `other` (path by path: a member of `other` does not
    /// remove this set's paths below it).
    pub fn difference(&self, other: &Set) -> Set {
        let members = self.members.difference(&other.members).cloned().collect();
        let mut children = BTreeMap::new();
        for (pe, child) in &self.children {
            let c = match other.children.get(pe) {
                Some(theirs) => child.difference(theirs),
                None => child.clone(),
            };
            if !c.is_empty() {
                children.insert(pe.clone(), c);
            }
        }
        Set { members, children }
    }

    /// [`difference`](Self::difference) in place: removes the paths of `other`.
    pub fn remove_all(&mut self, other: &Set) {
        if other.is_empty() {
            return;
        }
        // The members both sets have, found in one pass over the two sorted sets, are the only
        // ones looked up again (rather than every member of this set looked up in `other`).
        let mut common: Vec<&PathElement> = Vec::new();
        let (mut mine, mut theirs) = (self.members.iter(), other.members.iter());
        let (mut a, mut b) = (mine.next(), theirs.next());
        while let (Some(x), Some(y)) = (a, b) {
            match x.cmp(y) {
                Ordering::Less => a = mine.next(),
                Ordering::Greater => b = theirs.next(),
                Ordering::Equal => {
                    common.push(y);
                    a = mine.next();
                    b = theirs.next();
                }
            }
        }
        for m in common {
            self.members.remove(m);
        }
        // Only the subtrees `other` has can change; one emptied is dropped (children are never
        // empty).
        for (pe, theirs) in &other.children {
            if let Some(child) = self.children.get_mut(pe) {
                child.remove_all(theirs);
                if child.is_empty() {
                    self.children.remove(pe);
                }
            }
        }
    }

    /// [`recursive_difference`](Self::recursive_difference) in place: removes the paths of
    /// `other` and every path below its members.
    pub fn remove_recursive(&mut self, other: &Set) {
        if other.is_empty() {
            return;
        }
        self.members.retain(|m| !other.members.contains(m));
        self.children.retain(|pe, child| {
            if other.members.contains(pe) {
                return false;
            }
            if let Some(theirs) = other.children.get(pe) {
                child.remove_recursive(theirs);
            }
            !child.is_empty()
        });
    }

    /// Paths of this set that neither are in `other` nor lie below a member of `other`.
    pub fn recursive_difference(&self, other: &Set) -> Set {
        let members = self.members.difference(&other.members).cloned().collect();
        let mut children = BTreeMap::new();
        for (pe, child) in &self.children {
            if other.members.contains(pe) {
                continue;
            }
            let c = match other.children.get(pe) {
                Some(theirs) => child.recursive_difference(theirs),
                None => child.clone(),
            };
            if !c.is_empty() {
                children.insert(pe.clone(), c);
            }
        }
        Set { members, children }
    }

    /// This set plus, as members, the declared struct fields that have paths below them
    /// (upstream's `EnsureNamedFieldsAreMembers`, used when pruning).
    pub(crate) fn ensure_named_fields_are_members(&self, node: SchemaNode<'_>) -> Set {
        let mut out = Set {
            members: self.members.clone(),
            children: BTreeMap::new(),
        };
        for (pe, child) in &self.children {
            let child_node = match pe {
                PathElement::Field(name) => {
                    let (n, declared) = field(node, name);
                    if declared {
                        out.members.insert(pe.clone());
                    }
                    n
                }
                _ => node.item_node(),
            };
            out.children.insert(
                pe.clone(),
                child.ensure_named_fields_are_members(child_node),
            );
        }
        out
    }

    /// Every member path, in upstream's order (members of a node before its children's).
    pub fn paths(&self) -> Vec<Path> {
        let mut out = Vec::new();
        self.collect(&mut Vec::new(), &mut out);
        out
    }

    fn collect(&self, prefix: &mut Vec<PathElement>, out: &mut Vec<Path>) {
        for m in &self.members {
            let mut p = prefix.clone();
            p.push(m.clone());
            out.push(Path(p));
        }
        for (pe, child) in &self.children {
            prefix.push(pe.clone());
            child.collect(prefix, out);
            prefix.pop();
        }
    }

    /// The `FieldsV1` form: `{"f:spec":{"f:size":{}}}`, with `".":{}` in a node that is a
    /// member as well as a parent.
    pub fn to_fields_v1(&self) -> Value {
        let mut map = Map::new();
        // Members and children are both sorted: walk them side by side, in upstream's order.
        let mut members = self.members.iter().peekable();
        let mut children = self.children.iter().peekable();
        loop {
            let order = match (members.peek(), children.peek()) {
                (None, None) => break,
                (Some(_), None) => Ordering::Less,
                (None, Some(_)) => Ordering::Greater,
                (Some(m), Some((c, _))) => (*m).cmp(*c),
            };
            let (pe, member, child) = match order {
                Ordering::Less => (members.next().expect("peeked"), true, None),
                Ordering::Equal => {
                    members.next();
                    let (c, set) = children.next().expect("peeked");
                    (c, true, Some(set))
                }
                Ordering::Greater => {
                    let (c, set) = children.next().expect("peeked");
                    (c, false, Some(set))
                }
            };
            let value = match child {
                Some(child) => {
                    let mut inner = match child.to_fields_v1() {
                        Value::Object(m) => m,
                        _ => Map::new(),
                    };
                    if member {
                        inner.insert(".".to_string(), Value::Object(Map::new()));
                    }
                    Value::Object(inner)
                }
                None => Value::Object(Map::new()),
            };
            map.insert(pe.to_fields_v1_key(), value);
        }
        Value::Object(map)
    }

    /// Reads a `FieldsV1` document.
    pub fn from_fields_v1(value: &Value) -> Result<Set, FieldsV1Error> {
        let Value::Object(map) = value else {
            return Err(FieldsV1Error::NotAnObject(to_compact_json(value)));
        };
        let mut set = Set::new();
        for (key, child) in map {
            if key == "." {
                continue;
            }
            let pe = PathElement::from_fields_v1_key(key)?;
            let Value::Object(inner) = child else {
                return Err(FieldsV1Error::NotAnObject(to_compact_json(child)));
            };
            if inner.is_empty() || inner.contains_key(".") {
                set.members.insert(pe.clone());
            }
            let sub = Set::from_fields_v1(child)?;
            if !sub.is_empty() {
                set.children.insert(pe, sub);
            }
        }
        Ok(set)
    }
}

/// A `FieldsV1` object written step by step, as [`Set::to_fields_v1`] writes the set of the
/// same steps, for walks that need only the `FieldsV1` form.
#[derive(Debug, Default)]
pub(crate) struct FieldsV1Builder(Map<String, Value>);

impl FieldsV1Builder {
    /// Whether no step was added.
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Adds step `pe`, as [`Set::insert_step`] adds it to a set: as a member when `member`,
    /// and with the paths `below` it. A step that is neither is left out, as a set leaves it.
    pub(crate) fn insert_step(&mut self, pe: &PathElement, member: bool, below: FieldsV1Builder) {
        let mut inner = below.0;
        if inner.is_empty() && !member {
            return;
        }
        if member && !inner.is_empty() {
            inner.insert(".".to_string(), Value::Object(Map::new()));
        }
        self.0.insert(pe.to_fields_v1_key(), Value::Object(inner));
    }

    /// The `FieldsV1` object.
    pub(crate) fn into_value(self) -> Value {
        Value::Object(self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn in_place_differences_match_the_copying_ones() {
        let set = |v: serde_json::Value| Set::from_fields_v1(&v).unwrap();
        let a = set(json!({
            "f:metadata": {"f:labels": {".": {}, "f:app": {}, "f:tier": {}}},
            "f:spec": {".": {}, "f:replicas": {}, "f:toppings": {"k:{\"name\":\"x\"}": {".": {}, "f:amount": {}}}},
            "f:status": {"f:replicas": {}}
        }));
        for other in [
            json!({}),
            json!({"f:status": {}}),
            json!({"f:spec": {"f:toppings": {}}}),
            json!({"f:metadata": {"f:labels": {"f:app": {}}}, "f:spec": {".": {}}}),
            json!({"f:spec": {"f:replicas": {}, "f:toppings": {"k:{\"name\":\"x\"}": {"f:amount": {}}}}}),
        ] {
            let other = set(other);
            let mut plain = a.clone();
            plain.remove_all(&other);
            assert_eq!(plain, a.difference(&other), "difference by {other:?}");
            let mut recursive = a.clone();
            recursive.remove_recursive(&other);
            assert_eq!(
                recursive,
                a.recursive_difference(&other),
                "recursive difference by {other:?}"
            );
        }
    }

    #[test]
    fn fields_v1_round_trips_deployment_shaped_entry() {
        let fields = json!({
            "f:metadata": {"f:labels": {".": {}, "f:app": {}}, "f:finalizers": {".": {}, "v:\"x.example.com\"": {}}},
            "f:spec": {
                "f:replicas": {},
                "f:template": {"f:spec": {"f:containers": {
                    "k:{\"name\":\"nginx\"}": {".": {}, "f:image": {}, "f:name": {},
                        "f:ports": {"k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {".": {}, "f:containerPort": {}}}}
                }}},
                "f:args": {"i:0": {}}
            }
        });
        let set = Set::from_fields_v1(&fields).unwrap();
        assert_eq!(set.to_fields_v1(), fields);
        let paths: Vec<String> = set.paths().iter().map(|p| p.to_string()).collect();
        assert!(paths.contains(&".metadata.labels".to_string()));
        assert!(paths.contains(&".metadata.finalizers[=\"x.example.com\"]".to_string()));
        assert!(
            paths.contains(&".spec.template.spec.containers[name=\"nginx\"].image".to_string())
        );
        assert!(paths.contains(
            &".spec.template.spec.containers[name=\"nginx\"].ports[containerPort=80,protocol=\"TCP\"]"
                .to_string()
        ));
        assert!(paths.contains(&".spec.args[0]".to_string()));
        assert!(!paths.contains(&".spec".to_string()));
    }

    #[test]
    fn key_elements_are_encoded_with_sorted_fields() {
        let pe = PathElement::key(vec![
            ("protocol".into(), json!("TCP")),
            ("containerPort".into(), json!(80)),
        ]);
        assert_eq!(
            pe.to_fields_v1_key(),
            r#"k:{"containerPort":80,"protocol":"TCP"}"#
        );
        assert_eq!(pe.to_string(), r#"[containerPort=80,protocol="TCP"]"#);
        assert_eq!(
            PathElement::from_fields_v1_key(&pe.to_fields_v1_key()).unwrap(),
            pe
        );
    }

    #[test]
    fn malformed_fields_v1_is_rejected() {
        let err = |v: Value| Set::from_fields_v1(&v).unwrap_err().to_string();
        assert_eq!(err(json!({"x:a": {}})), "unknown path element type");
        assert_eq!(err(json!({"f": {}})), "key must be 2 characters long:");
        assert_eq!(err(json!({"fa": {}})), "missing colon: fa");
        assert!(Set::from_fields_v1(&json!({"f:a": 1})).is_err());
        assert!(Set::from_fields_v1(&json!([])).is_err());
        assert!(Set::from_fields_v1(&json!({"i:x": {}})).is_err());
    }

    #[test]
    fn set_operations() {
        let a = Set::from_paths([Path::fields(&["a"]), Path::fields(&["b", "c"])]);
        let b = Set::from_paths([Path::fields(&["b"]), Path::fields(&["b", "c"])]);
        assert_eq!(a.intersection(&b).paths(), vec![Path::fields(&["b", "c"])]);
        assert_eq!(a.difference(&b).paths(), vec![Path::fields(&["a"])]);
        assert_eq!(a.union(&b).paths().len(), 3, "union holds .a, .b and .b.c");
        let only_b = Set::from_paths([Path::fields(&["b"])]);
        assert_eq!(a.difference(&only_b), a);
        assert_eq!(
            a.recursive_difference(&only_b).paths(),
            vec![Path::fields(&["a"])]
        );
    }
}
