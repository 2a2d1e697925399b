//! Walking an object along its schema: list item identities, the field set of an object
//! (structured-merge-diff's `ToFieldSet`) and the comparison of two objects (`Compare`).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

use super::error::ApplyError;
use super::fieldpath::{FieldsV1Builder, Path, PathElement, Set};
use super::value::values_equal;
use crate::schema::{Field, ListType, NodeKind, SchemaNode, StructuralSchema};

static NO_KEYS: [String; 0] = [];

/// How a node is handled for a given value.
pub(crate) enum Shape<'a> {
    /// A scalar, or a value that does not match its schema: owned and replaced as a whole.
    Leaf,
    /// An object; `node` answers the field types (see [`field`]).
    Map { node: SchemaNode<'a>, atomic: bool },
    /// An array.
    List {
        items: SchemaNode<'a>,
        atomic: bool,
        keys: Option<&'a [String]>,
    },
}

/// The type of field or key `name` of an object at `node`, and whether it is a declared field
/// (declared fields are not members of field sets themselves). Keys the schema does not type
/// are deduced from their values.
pub(crate) fn field<'a>(node: SchemaNode<'a>, name: &str) -> (SchemaNode<'a>, bool) {
    match node.field(name) {
        Field::Declared(child) => (child, true),
        Field::Entry(child) => (child, false),
        _ => (node.absent(), false),
    }
}

/// As structured-merge-diff types a value: objects are structs and maps (granular unless
/// atomic), lists follow their list type, and deduced nodes (`x-kubernetes-preserve-unknown-fields`,
/// no schema) are typed by the value: objects granular maps, arrays atomic lists.
fn shape_of<'a>(node: SchemaNode<'a>, v: &Value) -> Shape<'a> {
    match node.kind() {
        NodeKind::Scalar(_) => Shape::Leaf,
        NodeKind::Object { atomic } if v.is_object() || v.is_null() => Shape::Map { node, atomic },
        NodeKind::List { items, list_type } if v.is_array() || v.is_null() => Shape::List {
            items,
            atomic: *list_type == ListType::Atomic,
            keys: match list_type {
                ListType::Map(keys) if !keys.is_empty() => Some(keys.as_slice()),
                ListType::Map(_) | ListType::Set => Some(&NO_KEYS),
                ListType::Atomic => None,
            },
        },
        NodeKind::Deduced if v.is_object() => Shape::Map {
            node,
            atomic: false,
        },
        NodeKind::Deduced if v.is_array() => Shape::List {
            items: node.absent(),
            atomic: true,
            keys: None,
        },
        _ => Shape::Leaf,
    }
}

/// The shape of a node seen with up to two values; values of different kinds make a leaf.
pub(crate) fn shape_pair<'a>(
    node: SchemaNode<'a>,
    l: Option<&Value>,
    r: Option<&Value>,
) -> Shape<'a> {
    match (l, r) {
        (Some(l), Some(r)) => match (shape_of(node, l), shape_of(node, r)) {
            (a @ Shape::Map { .. }, Shape::Map { .. }) => a,
            (a @ Shape::List { .. }, Shape::List { .. }) => a,
            _ => Shape::Leaf,
        },
        (Some(v), None) | (None, Some(v)) => shape_of(node, v),
        (None, None) => Shape::Leaf,
    }
}

/// The identity of a list item: `k:` for map lists, `v:` for sets, `i:` otherwise.
pub(crate) fn list_item_pe(
    keys: Option<&[String]>,
    index: usize,
    item: &Value,
) -> Result<PathElement, ApplyError> {
    match keys {
        None => Ok(PathElement::Index(index)),
        Some([]) => match item {
            Value::Object(_) => Err(ApplyError::Invalid(format!(
                "element {index}: associative list without keys has an element that's a map type"
            ))),
            Value::Array(_) => Err(ApplyError::Invalid(format!(
                "element {index}: associative list without keys has an element that's a list type"
            ))),
            v => Ok(PathElement::Value(v.clone())),
        },
        Some(keys) => {
            let Value::Object(map) = item else {
                return Err(ApplyError::Invalid(format!(
                    "element {index}: associative list with keys has an element that is not a map type"
                )));
            };
            let mut fields = Vec::with_capacity(keys.len());
            for key in keys {
                match map.get(key) {
                    Some(v) => fields.push((key.clone(), v.clone())),
                    None => {
                        return Err(ApplyError::Invalid(format!(
                            "element {index}: associative list with keys has an element that omits key field {key:?} (and doesn't have default value)"
                        )));
                    }
                }
            }
            Ok(PathElement::key(fields))
        }
    }
}

/// The items of a list with their identities, first occurrence of each identity only.
pub(crate) fn index_items<'v>(
    keys: Option<&[String]>,
    list: Option<&'v Value>,
) -> Result<Vec<(PathElement, &'v Value)>, ApplyError> {
    let mut out: Vec<(PathElement, &Value)> = Vec::new();
    if let Some(Value::Array(items)) = list {
        let mut seen = BTreeSet::new();
        for (i, item) in items.iter().enumerate() {
            let pe = list_item_pe(keys, i, item)?;
            if seen.insert(pe.clone()) {
                out.push((pe, item));
            }
        }
    }
    Ok(out)
}

/// Where each identity of [`index_items`]' result is, to find items by identity in
/// logarithmic time.
pub(crate) fn positions<'a>(
    items: &'a [(PathElement, &Value)],
) -> BTreeMap<&'a PathElement, usize> {
    items
        .iter()
        .enumerate()
        .map(|(i, (pe, _))| (pe, i))
        .collect()
}

pub(crate) fn as_map(v: Option<&Value>) -> Option<&Map<String, Value>> {
    v.and_then(Value::as_object)
}

pub(crate) fn is_empty_container(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => true,
        Some(Value::Object(m)) => m.is_empty(),
        Some(Value::Array(a)) => a.is_empty(),
        Some(_) => false,
    }
}

/// The set of fields an object sets: scalars, atomic lists and maps, map keys and list items
/// (declared struct fields only through their children), as upstream's `ToFieldSet`.
pub fn fields_of(obj: &Value, schema: &StructuralSchema) -> Result<Set, ApplyError> {
    fields_of_node(obj, schema.root())
}

/// [`fields_of`] for a value of type `node`.
pub fn fields_of_node(obj: &Value, node: SchemaNode<'_>) -> Result<Set, ApplyError> {
    let mut set = Set::new();
    walk_fields(&mut Vec::new(), node, obj, &mut set)?;
    Ok(set)
}

fn walk_fields(
    path: &mut Vec<PathElement>,
    node: SchemaNode<'_>,
    v: &Value,
    set: &mut Set,
) -> Result<(), ApplyError> {
    match shape_of(node, v) {
        Shape::Leaf => set.insert_elements(path),
        Shape::Map { atomic: true, .. } | Shape::List { atomic: true, .. } => {
            set.insert_elements(path)
        }
        Shape::Map { node, .. } => {
            if let Value::Object(map) = v {
                for (k, child) in map {
                    let (child_node, declared) = field(node, k);
                    path.push(PathElement::Field(k.clone()));
                    walk_fields(path, child_node, child, set)?;
                    if !declared {
                        set.insert_elements(path);
                    }
                    path.pop();
                }
            }
        }
        Shape::List { items, keys, .. } => {
            if let Value::Array(list) = v {
                for (i, item) in list.iter().enumerate() {
                    let pe = list_item_pe(keys, i, item).map_err(|e| at(path, e))?;
                    path.push(pe);
                    walk_fields(path, items, item, set)?;
                    set.insert_elements(path);
                    path.pop();
                }
            }
        }
    }
    Ok(())
}

fn at(path: &[PathElement], e: ApplyError) -> ApplyError {
    match e {
        ApplyError::Invalid(msg) => ApplyError::Invalid(format!("{}: {msg}", Path(path.to_vec()))),
        other => other,
    }
}

/// What changed between two objects, path by path.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Comparison {
    /// Paths only in the new object (including newly added maps, lists and items).
    pub added: Set,
    /// Paths whose leaf value differs.
    pub modified: Set,
    /// Paths only in the old object.
    pub removed: Set,
}

impl Comparison {
    /// Drops the paths at or below members of `ignored` (reset fields).
    pub fn exclude(mut self, ignored: &Set) -> Comparison {
        self.added.remove_recursive(ignored);
        self.modified.remove_recursive(ignored);
        self.removed.remove_recursive(ignored);
        self
    }
}

/// Compares an old and a new object along the schema.
pub fn compare(old: &Value, new: &Value, node: SchemaNode<'_>) -> Result<Comparison, ApplyError> {
    let mut c = Comparison::default();
    walk_compare(&mut Vec::new(), node, Some(old), Some(new), &mut c)?;
    Ok(c)
}

/// [`compare`] of `new` against the empty object of its kind (what a create compares): every
/// node of `new` is added but `apiVersion` and `kind`, which the empty object shares. One walk
/// over `new` builds the added set tree by tree, without a second object to look up; it meets
/// lists and reports their errors in the order [`compare`] does.
pub fn compare_created(new: &Value, node: SchemaNode<'_>) -> Result<Comparison, ApplyError> {
    match created(new, node, Mask::default())? {
        Some(added) => Ok(Comparison {
            added,
            ..Comparison::default()
        }),
        // Not the object of a granular root: the general comparison handles it.
        None => compare(&super::empty_like(new), new, node),
    }
}

/// What a create's writer owns: `compare_created(new, node)?.exclude(reset)` less the members
/// of `strip`, the paths left out as the walk meets them rather than removed afterwards; as a
/// [`Set`], or straight in its `FieldsV1` form ([`FieldsV1Builder`]). `None` for roots
/// [`compare_created`] hands to the general comparison.
pub(crate) fn created_fields<A: Added>(
    new: &Value,
    node: SchemaNode<'_>,
    reset: &Set,
    strip: &Set,
) -> Result<Option<A>, ApplyError> {
    created(
        new,
        node,
        Mask {
            reset: Some(reset),
            strip: Some(strip),
        },
    )
}

/// What a create's walk builds, step by step.
pub(crate) trait Added: Default {
    /// Adds step `pe`: as a member when `member`, with the paths `below` it (relative to `pe`)
    /// as its subtree. Each step is added once.
    fn add(&mut self, pe: PathElement, member: bool, below: Self);
}

impl Added for Set {
    fn add(&mut self, pe: PathElement, member: bool, below: Self) {
        self.insert_step(pe, member, below);
    }
}

impl Added for FieldsV1Builder {
    fn add(&mut self, pe: PathElement, member: bool, below: Self) {
        self.insert_step(&pe, member, below);
    }
}

/// The walk of [`compare_created`] and [`created_fields`]: the added paths less what `mask`
/// leaves out, or `None` when the root is not a granular object.
fn created<A: Added>(
    new: &Value,
    node: SchemaNode<'_>,
    mask: Mask<'_>,
) -> Result<Option<A>, ApplyError> {
    let (
        Value::Object(map),
        Shape::Map {
            node,
            atomic: false,
        },
    ) = (new, shape_of(node, new))
    else {
        return Ok(None);
    };
    // The keys the empty object has are met first and are equal on both sides: they add
    // nothing, but their lists are checked as the comparison checks them.
    let mut path = Vec::new();
    let mut same = Comparison::default();
    for k in SHARED_KEYS {
        if let Some(v) = map.get(k) {
            path.push(PathElement::Field(k.to_string()));
            walk_compare(&mut path, field(node, k).0, Some(v), Some(v), &mut same)?;
            path.pop();
        }
    }
    debug_assert_eq!(same, Comparison::default(), "a value equals itself");
    let mut added = A::default();
    let root = Trail::Root;
    for (k, v) in map {
        if SHARED_KEYS.contains(&k.as_str()) {
            continue;
        }
        let pe = PathElement::Field(k.clone());
        add_step(&mut added, &root, pe, field(node, k).0, v, mask)?;
    }
    Ok(Some(added))
}

/// The keys of the empty object of a kind (see `empty_like`), in the order it holds them.
const SHARED_KEYS: [&str; 2] = ["apiVersion", "kind"];

/// What a walk leaves out of the added set, relative to where it is: the paths at or below
/// a member of `reset`, and the members of `strip`.
#[derive(Clone, Copy, Default)]
struct Mask<'s> {
    reset: Option<&'s Set>,
    strip: Option<&'s Set>,
}

/// Where a walk is: the chain of its steps, made into a [`Path`] only when an error names it.
enum Trail<'t> {
    Root,
    Step(&'t Trail<'t>, &'t PathElement),
}

impl Trail<'_> {
    fn path(&self) -> Vec<PathElement> {
        let mut out = Vec::new();
        let mut at = self;
        while let Trail::Step(parent, pe) = at {
            out.push((*pe).clone());
            at = parent;
        }
        out.reverse();
        out
    }
}

/// Adds step `pe` below `parent` (value `v` of type `node`) to `out`, the parent's set, with
/// the paths below it, as far as `mask` (the parent's) lets them in.
fn add_step<A: Added>(
    out: &mut A,
    parent: &Trail<'_>,
    pe: PathElement,
    node: SchemaNode<'_>,
    v: &Value,
    mask: Mask<'_>,
) -> Result<(), ApplyError> {
    let trail = Trail::Step(parent, &pe);
    if mask.reset.is_some_and(|r| r.has_member(&pe)) {
        // Nothing at or below a reset field is owned; its lists are still checked.
        added_below::<A>(&trail, node, v, Mask::default())?;
        return Ok(());
    }
    let below = Mask {
        reset: mask.reset.and_then(|r| r.child(&pe)),
        strip: mask.strip.and_then(|s| s.child(&pe)),
    };
    let set = added_below(&trail, node, v, below)?;
    let member = !mask.strip.is_some_and(|s| s.has_member(&pe));
    out.add(pe, member, set);
    Ok(())
}

/// The paths below `v` (of type `node`) that a comparison with nothing adds, relative to `v`
/// and as far as `mask` lets them in: the same nodes [`walk_compare`] visits with no old
/// value, visited in its order.
fn added_below<A: Added>(
    trail: &Trail<'_>,
    node: SchemaNode<'_>,
    v: &Value,
    mask: Mask<'_>,
) -> Result<A, ApplyError> {
    let mut out = A::default();
    match shape_of(node, v) {
        // Leaves, atomic containers and empty ones are added as a whole.
        Shape::Leaf | Shape::Map { atomic: true, .. } | Shape::List { atomic: true, .. } => {}
        Shape::Map { node, .. } => {
            if let Value::Object(map) = v {
                for (k, child) in map {
                    let pe = PathElement::Field(k.clone());
                    add_step(&mut out, trail, pe, field(node, k).0, child, mask)?;
                }
            }
        }
        Shape::List { items, keys, .. } => {
            // Every item's identity first (a bad one fails the list before any item is
            // walked), then the first item of each identity.
            let indexed = index_items(keys, Some(v)).map_err(|e| at(&trail.path(), e))?;
            for (pe, item) in indexed {
                add_step(&mut out, trail, pe, items, item, mask)?;
            }
        }
    }
    Ok(out)
}

fn leaf_rule(path: &[PathElement], l: Option<&Value>, r: Option<&Value>, c: &mut Comparison) {
    match (l, r) {
        (None, Some(_)) => c.added.insert_elements(path),
        (Some(_), None) => c.removed.insert_elements(path),
        (Some(l), Some(r)) if !values_equal(l, r) => c.modified.insert_elements(path),
        _ => {}
    }
}

fn walk_compare(
    path: &mut Vec<PathElement>,
    node: SchemaNode<'_>,
    l: Option<&Value>,
    r: Option<&Value>,
    c: &mut Comparison,
) -> Result<(), ApplyError> {
    match shape_pair(node, l, r) {
        Shape::Leaf => {
            leaf_rule(path, l, r, c);
            return Ok(());
        }
        Shape::Map { node, atomic } => {
            if atomic || (is_empty_container(l) && is_empty_container(r)) {
                leaf_rule(path, l, r, c);
                return Ok(());
            }
            let (lm, rm) = (as_map(l), as_map(r));
            if let Some(lm) = lm {
                for (k, lv) in lm {
                    path.push(PathElement::Field(k.clone()));
                    walk_compare(
                        path,
                        field(node, k).0,
                        Some(lv),
                        rm.and_then(|m| m.get(k)),
                        c,
                    )?;
                    path.pop();
                }
            }
            if let Some(rm) = rm {
                for (k, rv) in rm {
                    if lm.is_some_and(|m| m.contains_key(k)) {
                        continue;
                    }
                    path.push(PathElement::Field(k.clone()));
                    walk_compare(path, field(node, k).0, None, Some(rv), c)?;
                    path.pop();
                }
            }
        }
        Shape::List {
            items,
            atomic,
            keys,
        } => {
            if atomic || (is_empty_container(l) && is_empty_container(r)) {
                leaf_rule(path, l, r, c);
                return Ok(());
            }
            let li = index_items(keys, l).map_err(|e| at(path, e))?;
            let ri = index_items(keys, r).map_err(|e| at(path, e))?;
            let (l_at, r_at) = (positions(&li), positions(&ri));
            for (pe, lv) in &li {
                let rv = r_at.get(pe).map(|&i| ri[i].1);
                path.push(pe.clone());
                walk_compare(path, items, Some(lv), rv, c)?;
                path.pop();
            }
            for (pe, rv) in &ri {
                if l_at.contains_key(pe) {
                    continue;
                }
                path.push(pe.clone());
                walk_compare(path, items, None, Some(rv), c)?;
                path.pop();
            }
        }
    }
    // Containers that appear or disappear as a whole are changes too.
    match (l, r) {
        (None, Some(_)) => c.added.insert_elements(path),
        (Some(_), None) => c.removed.insert_elements(path),
        _ => {}
    }
    Ok(())
}
