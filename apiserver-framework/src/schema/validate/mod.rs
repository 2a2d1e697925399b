//! Enforcing a resource's published schema on writes, as kube-apiserver enforces a
//! CustomResourceDefinition's: the value constraints of the OpenAPI v3 schema
//! (module `constraints`), the list invariants of `x-kubernetes-list-type` `set` and `map`, and the
//! CEL rules of `x-kubernetes-validations` (module `rules`), with upstream's field errors and
//! ratcheting (`CRDValidationRatcheting`, on by default since Kubernetes 1.30): on update, a
//! value left as it was in the stored object does not fail the write, whatever it breaks.
//!
//! The CEL expressions are compiled once, by [`SchemaValidator::new`]: a rule that does not
//! compile, names an unknown reason, or whose estimated cost exceeds upstream's per-call limit is
//! a [`RuleError`], which refuses the server's start.

mod constraints;
mod rules;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, HashMap, HashSet};

use serde_json::Value;

use crate::error::{FieldError, FieldErrorKind};
use constraints::Constraints;
use rules::CompiledRule;

/// Why a schema's rules cannot be used: the server refuses to start with it.
#[derive(Debug, thiserror::Error)]
#[error("x-kubernetes-validations rule {rule:?} at {}: {reason}", if path.is_empty() { "the object's root" } else { path.as_str() })]
pub struct RuleError {
    /// Where the rule is declared, e.g. `spec` (empty at the root).
    pub path: String,
    /// The rule's expression.
    pub rule: String,
    /// What is wrong with it.
    pub reason: String,
}

/// The checks of one schema node and of its children.
#[derive(Debug, Default)]
struct Node {
    /// The declared `type` (`object`, `string`, …; empty when none, as int-or-string).
    type_name: String,
    constraints: Constraints,
    rules: Vec<CompiledRule>,
    properties: BTreeMap<String, Node>,
    /// The schema of a map's values (`additionalProperties`).
    additional: Option<Box<Node>>,
    items: Option<Box<Node>>,
    /// `x-kubernetes-list-type`.
    list_type: Option<String>,
    /// `x-kubernetes-list-map-keys`.
    map_keys: Vec<String>,
    /// Whether this node or one below it checks anything.
    checks: bool,
}

/// The compiled checks of one resource's schema.
#[derive(Debug)]
pub struct SchemaValidator {
    root: Node,
}

impl SchemaValidator {
    /// Compiles the checks of `schema` (a structural OpenAPI v3 schema of a whole object).
    pub fn new(schema: &Value) -> Result<Self, RuleError> {
        Ok(SchemaValidator {
            root: Node::build(schema, "", 0)?,
        })
    }

    /// Whether the schema constrains nothing (writes then skip validation).
    pub fn is_empty(&self) -> bool {
        !self.root.checks
    }

    /// Checks `new` (a whole object as JSON) against the schema; on update `old` is the stored
    /// object, for transition rules and ratcheting. Every error is a cause of a 422 `Invalid`.
    pub fn validate(&self, new: &Value, old: Option<&Value>) -> Vec<FieldError> {
        if !self.root.checks {
            return Vec::new();
        }
        let mut errs = Vec::new();
        self.root.check_constraints(new, old, "", &mut errs);
        let mut list_errs = Vec::new();
        self.root.check_lists(new, "", &mut list_errs);
        // As upstream: list invariants ratchet as a whole, checked only when the old object
        // keeps them.
        if !list_errs.is_empty()
            && old.is_none_or(|old| {
                let mut old_errs = Vec::new();
                self.root.check_lists(old, "", &mut old_errs);
                old_errs.is_empty()
            })
        {
            errs.extend(list_errs);
        }
        if errs.iter().any(blocks_rules) {
            errs.push(FieldError::invalid(
                "<nil>",
                Value::Null,
                "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation",
            ));
        } else {
            rules::with_context(|ctx| self.root.check_rules(ctx, new, old, "", &mut errs));
        }
        errs
    }
}

/// Errors after which upstream leaves the CEL rules unchecked (`hasBlockingErr`).
fn blocks_rules(e: &FieldError) -> bool {
    matches!(
        e.kind,
        FieldErrorKind::NotSupported(..)
            | FieldErrorKind::Required
            | FieldErrorKind::TooLong
            | FieldErrorKind::TooMany(_)
            | FieldErrorKind::TypeInvalid(_)
    )
}

/// Deeper schemas than this are not followed (a guard against recursion).
const MAX_DEPTH: usize = 64;

/// `parent.name` (`name` at the root), upstream's `field.Path.Child`.
fn child(parent: &str, name: &str) -> String {
    if parent.is_empty() {
        name.to_string()
    } else {
        format!("{parent}.{name}")
    }
}

impl Node {
    fn build(schema: &Value, path: &str, depth: usize) -> Result<Node, RuleError> {
        let mut node = Node {
            type_name: schema
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            constraints: Constraints::from_schema(schema),
            list_type: schema
                .get("x-kubernetes-list-type")
                .and_then(Value::as_str)
                .map(str::to_string),
            map_keys: super::build::map_keys(schema.get("x-kubernetes-list-map-keys")),
            ..Node::default()
        };
        node.rules = rules::compile(schema, path)?;
        if depth < MAX_DEPTH {
            if let Some(Value::Object(props)) = schema.get("properties") {
                for (name, sub) in props {
                    let sub = Node::build(sub, &child(path, name), depth + 1)?;
                    node.properties.insert(name.clone(), sub);
                }
            }
            if let Some(sub @ Value::Object(_)) = schema.get("additionalProperties") {
                node.additional = Some(Box::new(Node::build(sub, path, depth + 1)?));
            }
            if let Some(sub @ Value::Object(_)) = schema.get("items") {
                node.items = Some(Box::new(Node::build(sub, path, depth + 1)?));
            }
        }
        node.checks = !node.constraints.is_empty()
            || !node.rules.is_empty()
            || matches!(node.list_type.as_deref(), Some("set" | "map"))
            || node.properties.values().any(|n| n.checks)
            || node.additional.as_ref().is_some_and(|n| n.checks)
            || node.items.as_ref().is_some_and(|n| n.checks);
        Ok(node)
    }

    /// The identity of an item of a `map` list: its key fields' values, as JSON text.
    fn item_key(&self, item: &Value) -> String {
        let keys: Vec<&Value> = self
            .map_keys
            .iter()
            .map(|k| item.get(k).unwrap_or(&Value::Null))
            .collect();
        serde_json::to_string(&keys).unwrap_or_default()
    }

    /// The stored items of a list, by key, that the new items correlate with: only items of a
    /// `map` list correlate, by their keys (upstream's `CorrelatedObject`); `None` for other
    /// lists or without a stored list.
    fn old_items<'a>(&self, old: Option<&'a Value>) -> Option<HashMap<String, &'a Value>> {
        if self.list_type.as_deref() != Some("map") || self.map_keys.is_empty() {
            return None;
        }
        let old = old?.as_array()?;
        Some(old.iter().map(|o| (self.item_key(o), o)).collect())
    }

    /// The stored item `item` correlates with, in `old_items`.
    fn correlate<'a>(
        &self,
        item: &Value,
        old_items: &Option<HashMap<String, &'a Value>>,
    ) -> Option<&'a Value> {
        old_items.as_ref()?.get(&self.item_key(item)).copied()
    }

    /// The value constraints of this node and its children, ratcheted on `old`.
    fn check_constraints(
        &self,
        value: &Value,
        old: Option<&Value>,
        path: &str,
        errs: &mut Vec<FieldError>,
    ) {
        if !self.checks {
            return;
        }
        let mut mine = Vec::new();
        // In upstream's order: a list's items before the list's own constraints, an object's
        // own constraints before its fields, and its required fields last.
        if !value.is_array() {
            self.constraints
                .check(value, path, &self.type_name, &mut mine);
        }
        match value {
            Value::Object(map) => {
                // As upstream, which prunes a field's `null` where the schema does not allow
                // it (`PruneNonNullableNullsWithoutDefaults`) before validating: such a field is
                // missing.
                let pruned = |name: &str, v: &Value| {
                    v.is_null()
                        && self
                            .properties
                            .get(name)
                            .is_some_and(|n| n.constraints.refuses_null)
                };
                for (name, sub) in &self.properties {
                    if let Some(v) = map.get(name)
                        && !pruned(name, v)
                    {
                        let o = old.and_then(|o| o.get(name));
                        sub.check_constraints(v, o, &child(path, name), &mut mine);
                    }
                }
                if let Some(sub) = &self.additional {
                    for (key, v) in map {
                        if !self.properties.contains_key(key) {
                            let o = old.and_then(|o| o.get(key));
                            sub.check_constraints(v, o, &child(path, key), &mut mine);
                        }
                    }
                }
                for key in &self.constraints.required {
                    if map.get(key).is_none_or(|v| pruned(key, v)) {
                        mine.push(FieldError::required(child(path, key), ""));
                    }
                }
            }
            Value::Array(items) => {
                if let Some(sub) = &self.items {
                    let old_items = self.old_items(old);
                    for (i, v) in items.iter().enumerate() {
                        let o = self.correlate(v, &old_items);
                        sub.check_constraints(v, o, &format!("{path}[{i}]"), &mut mine);
                    }
                }
                self.constraints
                    .check(value, path, &self.type_name, &mut mine);
            }
            _ => {}
        }
        // Ratcheting: what is unchanged from the stored object may stay invalid.
        if !mine.is_empty() && old != Some(value) {
            errs.extend(mine);
        }
    }

    /// The invariants of `set` and `map` lists: no item twice (upstream's
    /// `ValidateListSetsAndMaps`).
    fn check_lists(&self, value: &Value, path: &str, errs: &mut Vec<FieldError>) {
        if !self.checks {
            return;
        }
        match value {
            Value::Object(map) => {
                for (name, sub) in &self.properties {
                    if let Some(v) = map.get(name) {
                        sub.check_lists(v, &child(path, name), errs);
                    }
                }
                if let Some(sub) = &self.additional {
                    for (key, v) in map {
                        if !self.properties.contains_key(key) {
                            sub.check_lists(v, &format!("{path}[{key}]"), errs);
                        }
                    }
                }
            }
            Value::Array(items) => {
                match self.list_type.as_deref() {
                    Some("set") => {
                        let mut seen = HashSet::with_capacity(items.len());
                        for (i, v) in items.iter().enumerate() {
                            if !seen.insert(serde_json::to_string(v).unwrap_or_default()) {
                                errs.push(duplicate(format!("{path}[{i}]"), v.clone()));
                            }
                        }
                    }
                    Some("map") if !self.map_keys.is_empty() => {
                        let mut seen = HashSet::with_capacity(items.len());
                        for (i, v) in items.iter().enumerate() {
                            if !seen.insert(self.item_key(v)) {
                                // Upstream names the duplicate by its key fields.
                                let mut key = serde_json::Map::new();
                                for name in &self.map_keys {
                                    if let Some(x) = v.get(name) {
                                        key.insert(name.clone(), x.clone());
                                    }
                                }
                                errs.push(duplicate(format!("{path}[{i}]"), Value::Object(key)));
                            }
                        }
                    }
                    _ => {}
                }
                if let Some(sub) = &self.items {
                    for (i, v) in items.iter().enumerate() {
                        sub.check_lists(v, &format!("{path}[{i}]"), errs);
                    }
                }
            }
            _ => {}
        }
    }
}

fn duplicate(field: String, value: Value) -> FieldError {
    FieldError::new(field, FieldErrorKind::Duplicate(value), "")
}
