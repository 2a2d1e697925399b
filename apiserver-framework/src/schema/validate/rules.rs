//! `x-kubernetes-validations`: CEL rules of a schema node, compiled once and checked with
//! upstream's semantics (`apiextensions-apiserver`'s `pkg/apiserver/schema/cel`):
//!
//! - `self` is the node's value; `oldSelf` its stored value on update, where the node correlates
//!   (object fields by name, map values by key, items of `map` lists by their keys); a rule
//!   naming `oldSelf` (a transition rule) is skipped where there is none, unless
//!   `optionalOldSelf` (then `oldSelf` is `null`);
//! - a false rule is a field error at the node's path (plus `fieldPath`), `Invalid value:
//!   "<type>": <message>`, or `Forbidden`, `Required`, `Duplicate` after `reason`; the message is
//!   `messageExpression`'s result, else `message`, else `failed rule: <rule>`;
//! - ratcheting: a false rule that does not name `oldSelf` on a value unchanged from the stored
//!   object does not fail the update.
//!
//! The expressions are parsed and evaluated by the `cel` crate with Kubernetes' CEL libraries
//! from `kube-cel`, whose `Rule` reads the rules and whose cost estimate bounds them when they
//! are compiled. kube-cel's own `Validator` is not used: it pairs list items with old ones by
//! index (upstream correlates only `map` lists, by key), does not ratchet, and reports its own
//! messages rather than upstream's field errors. Each rule and message expression runs within
//! upstream's per-call cost budget ([`crate::cel::cost`]); one over it ends the rules of the
//! object with upstream's error. Not there yet: typed values for `format: date-time` and
//! `duration` strings (they are strings to the rules).

use std::collections::HashMap;
use std::sync::Arc;

use kube_cel::cel::objects::{Key, Map};
use kube_cel::cel::{Context, IdedExpr, Value as CelValue};
use serde_json::Value;

use super::{Node, RuleError, child};
use crate::cel::cost::{Meter, OUT_OF_BUDGET, PER_CALL_LIMIT, metered};
use crate::error::{FieldError, FieldErrorKind};

/// One compiled rule.
pub(super) struct CompiledRule {
    rule: kube_cel::Rule,
    /// The rule, metered for the cost budget.
    expr: IdedExpr,
    /// The message expression, metered.
    message: Option<IdedExpr>,
    /// A transition rule: it names `oldSelf`.
    uses_old_self: bool,
    /// `fieldPath` without its leading dot.
    field_path: String,
}

impl std::fmt::Debug for CompiledRule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompiledRule")
            .field("rule", &self.rule.rule)
            .finish()
    }
}

/// The reasons a rule may give (upstream's `FieldValueErrorReason`).
const REASONS: &[&str] = &[
    "FieldValueInvalid",
    "FieldValueForbidden",
    "FieldValueRequired",
    "FieldValueDuplicate",
];

/// Compiles the rules of `schema` (declared at `path`).
pub(super) fn compile(schema: &Value, path: &str) -> Result<Vec<CompiledRule>, RuleError> {
    let Some(list) = schema.get("x-kubernetes-validations") else {
        return Ok(Vec::new());
    };
    let Some(list) = list.as_array() else {
        return Err(RuleError {
            path: path.into(),
            rule: String::new(),
            reason: "x-kubernetes-validations must be a list of rules".into(),
        });
    };
    let mut out = Vec::new();
    for raw in list {
        let text = raw.get("rule").and_then(Value::as_str).unwrap_or_default();
        let error = |reason: String| RuleError {
            path: path.into(),
            rule: text.into(),
            reason,
        };
        let rule: kube_cel::Rule =
            serde_json::from_value(raw.clone()).map_err(|e| error(format!("not a rule: {e}")))?;
        if rule.rule.trim().is_empty() {
            return Err(error("rule is empty".into()));
        }
        let program = crate::cel::compile(&rule.rule).map_err(error)?;
        let message = match &rule.message_expression {
            Some(expr) => Some(metered(
                crate::cel::compile(expr)
                    .map_err(|e| error(format!("messageExpression {e}")))?
                    .expression(),
            )),
            None => None,
        };
        if let Some(reason) = &rule.reason
            && !REASONS.contains(&reason.as_str())
        {
            return Err(error(format!(
                "unsupported reason {reason:?}: use one of {}",
                REASONS.join(", ")
            )));
        }
        let uses_old_self = program.references().has_variable("oldSelf");
        // Upstream refuses a rule whose estimated cost exceeds the per-call limit; kube-cel's
        // estimate is coarser than upstream's (it bounds lists and strings without maxItems or
        // maxLength by default sizes), but catches the same mistakes.
        let compiled_node = kube_cel::compile_schema(schema);
        for warning in kube_cel::estimate_rule_cost(&rule.rule, &compiled_node) {
            if warning.kind == kube_cel::WarningKind::CostExceeded {
                return Err(error(format!(
                    "estimated rule cost exceeds budget: {}",
                    warning.message
                )));
            }
        }
        let field_path = rule
            .field_path
            .as_deref()
            .unwrap_or_default()
            .trim_start_matches('.')
            .to_string();
        out.push(CompiledRule {
            rule,
            expr: metered(program.expression()),
            message,
            uses_old_self,
            field_path,
        });
    }
    Ok(out)
}

thread_local! {
    /// Kubernetes' CEL libraries, registered once per thread, and the meter of the rules run
    /// in it.
    static BASE: (Context<'static>, Meter) = {
        let mut context = crate::cel::context();
        let meter = Meter::install(&mut context, PER_CALL_LIMIT);
        (context, meter)
    };
}

/// Runs `f` with a context holding Kubernetes' CEL libraries.
pub(super) fn with_context<R>(f: impl FnOnce(&Context<'static>) -> R) -> R {
    BASE.with(|(base, _)| f(base))
}

/// The meter installed in this thread's context.
fn meter() -> Meter {
    BASE.with(|(_, meter)| meter.clone())
}

impl Node {
    /// The rules of this node and of its children, ratcheted on `old`.
    pub(super) fn check_rules(
        &self,
        base: &Context<'_>,
        value: &Value,
        old: Option<&Value>,
        path: &str,
        errs: &mut Vec<FieldError>,
    ) {
        if !self.checks {
            return;
        }
        // As upstream, rules do not see a `null` (of a nullable field).
        if !self.rules.is_empty() && !value.is_null() {
            self.evaluate(base, value, old, path, errs);
        }
        match value {
            Value::Object(map) => {
                for (name, sub) in &self.properties {
                    if let Some(v) = map.get(name)
                        && !(v.is_null() && self.prunes_null(name))
                    {
                        let o = old.and_then(|o| o.get(name));
                        sub.check_rules(base, v, o, &child(path, name), errs);
                    }
                }
                if let Some(sub) = &self.additional {
                    for (key, v) in map {
                        if !self.properties.contains_key(key) {
                            let o = old.and_then(|o| o.get(key));
                            sub.check_rules(base, v, o, &format!("{path}[{key}]"), errs);
                        }
                    }
                }
            }
            Value::Array(items) => {
                if let Some(sub) = &self.items {
                    let old_items = self.old_items(old);
                    for (i, v) in items.iter().enumerate() {
                        let o = self.correlate(v, &old_items);
                        sub.check_rules(base, v, o, &format!("{path}[{i}]"), errs);
                    }
                }
            }
            _ => {}
        }
    }

    fn evaluate(
        &self,
        base: &Context<'_>,
        value: &Value,
        old: Option<&Value>,
        path: &str,
        errs: &mut Vec<FieldError>,
    ) {
        let mut ctx = base.new_inner_scope();
        ctx.add_variable_from_value("self", self.to_cel(value));
        match old {
            Some(old) => ctx.add_variable_from_value("oldSelf", self.to_cel(old)),
            None => ctx.add_variable_from_value("oldSelf", CelValue::Null),
        }
        let unchanged = old == Some(value);
        for rule in &self.rules {
            let optional_old_self = rule.rule.optional_old_self == Some(true);
            if rule.uses_old_self && old.is_none() && !optional_old_self {
                continue;
            }
            let text = rule_text(&rule.rule);
            let kind = Value::String(self.type_name.clone());
            let meter = meter();
            match meter.run(&rule.expr, &ctx) {
                Ok(CelValue::Bool(true)) => {}
                Ok(CelValue::Bool(false)) => {
                    if !rule.uses_old_self && unchanged {
                        continue;
                    }
                    let field = if rule.field_path.is_empty() {
                        path.to_string()
                    } else {
                        child(path, &rule.field_path)
                    };
                    let message = rule
                        .message
                        .as_ref()
                        .and_then(|m| match meter.run(m, &ctx) {
                            Ok(CelValue::String(s))
                                if !s.trim().is_empty() && !s.contains('\n') =>
                            {
                                Some(s.trim().to_string())
                            }
                            _ => None,
                        })
                        .unwrap_or_else(|| default_message(&rule.rule));
                    errs.push(match rule.rule.reason.as_deref() {
                        Some("FieldValueForbidden") => FieldError::forbidden(field, message),
                        Some("FieldValueRequired") => FieldError::required(field, message),
                        Some("FieldValueDuplicate") => {
                            FieldError::new(field, FieldErrorKind::Duplicate(kind), "")
                        }
                        _ => FieldError::invalid(field, kind, message),
                    });
                }
                Ok(other) => errs.push(FieldError::invalid(
                    path,
                    kind,
                    format!(
                        "rule returned a {:?}, not a bool, evaluating rule: {text}",
                        other.type_of()
                    ),
                )),
                Err(e) if e == OUT_OF_BUDGET => {
                    errs.push(FieldError::invalid(
                        path,
                        kind,
                        format!(
                            "'{e}': no further validation rules will be run due to call cost exceeds limit for rule: {text}"
                        ),
                    ));
                    return;
                }
                Err(e) => errs.push(FieldError::invalid(
                    path,
                    kind,
                    format!("{e} evaluating rule: {text}"),
                )),
            }
        }
    }

    /// Whether a `null` in field `name` is pruned before validation (the field does not allow
    /// it).
    fn prunes_null(&self, name: &str) -> bool {
        self.properties
            .get(name)
            .is_some_and(|n| n.constraints.refuses_null)
    }

    /// `value` as CEL sees it under this node: declared field names escaped, numbers of
    /// `type: number` as doubles.
    fn to_cel(&self, value: &Value) -> CelValue {
        match value {
            Value::Null => CelValue::Null,
            Value::Bool(b) => CelValue::Bool(*b),
            Value::Number(n) => {
                if self.type_name == "number" || n.is_f64() {
                    CelValue::Float(n.as_f64().unwrap_or_default())
                } else if let Some(i) = n.as_i64() {
                    CelValue::Int(i)
                } else {
                    CelValue::UInt(n.as_u64().unwrap_or_default())
                }
            }
            Value::String(s) => CelValue::String(Arc::new(s.clone())),
            Value::Array(items) => CelValue::List(Arc::new(
                items
                    .iter()
                    .map(|v| match &self.items {
                        Some(sub) => sub.to_cel(v),
                        None => untyped(v),
                    })
                    .collect(),
            )),
            Value::Object(map) => {
                let mut out = HashMap::with_capacity(map.len());
                for (k, v) in map {
                    if v.is_null() && self.prunes_null(k) {
                        continue;
                    }
                    let (key, v) = match (self.properties.get(k), &self.additional) {
                        (Some(sub), _) => (escape(k), sub.to_cel(v)),
                        (None, Some(sub)) => (k.clone(), sub.to_cel(v)),
                        (None, None) => (escape(k), untyped(v)),
                    };
                    out.insert(Key::String(Arc::new(key)), v);
                }
                CelValue::Map(Map { map: Arc::new(out) })
            }
        }
    }
}

/// A value where the schema says nothing (`x-kubernetes-preserve-unknown-fields`).
fn untyped(value: &Value) -> CelValue {
    Node::default().to_cel(value)
}

/// A field name as CEL expressions write it (upstream's `model.Escape`): reserved words as
/// `__word__`; `_`, `.`, `-`, `/` as `__`, `__dot__`, `__dash__`, `__slash__`.
fn escape(name: &str) -> String {
    const RESERVED: &[&str] = &[
        "true",
        "false",
        "null",
        "in",
        "as",
        "break",
        "const",
        "continue",
        "else",
        "for",
        "function",
        "if",
        "import",
        "let",
        "loop",
        "package",
        "namespace",
        "return",
        "var",
        "void",
        "while",
    ];
    if RESERVED.contains(&name) {
        return format!("__{name}__");
    }
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        match c {
            '_' => out.push_str("__"),
            '.' => out.push_str("__dot__"),
            '-' => out.push_str("__dash__"),
            '/' => out.push_str("__slash__"),
            c => out.push(c),
        }
    }
    out
}

/// The rule as upstream's messages quote it: its message if any, else its expression.
fn rule_text(rule: &kube_cel::Rule) -> String {
    match rule.message.as_deref().map(str::trim) {
        Some(m) if !m.is_empty() => m.to_string(),
        _ => rule.rule.trim().to_string(),
    }
}

/// `message`, or `failed rule: <rule>` (upstream's `ruleMessageOrDefault`).
fn default_message(rule: &kube_cel::Rule) -> String {
    match rule.message.as_deref().map(str::trim) {
        Some(m) if !m.is_empty() => m.to_string(),
        _ => format!("failed rule: {}", rule.rule.trim()),
    }
}
