//! Label and field selectors (`?labelSelector=`, `?fieldSelector=`).

use std::collections::BTreeMap;

use apiserver_framework::selector::{FieldSelector, LabelSelector, Operator};
use serde_json::json;

use super::text;

/// Prints a label selector in the grammar it was parsed from.
fn print_labels(s: &LabelSelector) -> String {
    let mut parts = Vec::new();
    for r in &s.requirements {
        let k = &r.key;
        let one = || r.values.first().cloned().unwrap_or_default();
        parts.push(match r.op {
            Operator::Exists => k.clone(),
            Operator::DoesNotExist => format!("!{k}"),
            Operator::Equals => format!("{k}={}", one()),
            Operator::NotEquals => format!("{k}!={}", one()),
            Operator::GreaterThan => format!("{k}>{}", one()),
            Operator::LessThan => format!("{k}<{}", one()),
            Operator::In => format!("{k} in ({})", r.values.join(",")),
            Operator::NotIn => format!("{k} notin ({})", r.values.join(",")),
        });
    }
    parts.join(",")
}

/// Parses a label selector; one that parses prints to text that parses to the same selector,
/// and matching a label set does not panic.
pub fn label_selector(data: &[u8]) {
    let input = text(data);
    let Ok(selector) = LabelSelector::parse(&input) else {
        return;
    };
    let printed = print_labels(&selector);
    let again = LabelSelector::parse(&printed)
        .unwrap_or_else(|e| panic!("{input:?} printed as {printed:?}, which fails: {e}"));
    assert_eq!(again, selector, "{input:?} printed as {printed:?}");
    let labels: BTreeMap<String, String> = selector
        .requirements
        .iter()
        .map(|r| (r.key.clone(), r.values.first().cloned().unwrap_or_default()))
        .collect();
    selector.matches(&labels);
    selector.matches(&BTreeMap::new());
}

/// Escapes a field selector value.
fn escape_value(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    for c in v.chars() {
        if matches!(c, '\\' | ',' | '=') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Parses a field selector; one that parses prints (values escaped) to text that parses to
/// the same selector, and matching an object does not panic.
pub fn field_selector(data: &[u8]) {
    let input = text(data);
    let Ok(selector) = FieldSelector::parse(&input) else {
        return;
    };
    let printed = selector
        .requirements
        .iter()
        .map(|r| {
            let op = if r.negated { "!=" } else { "=" };
            format!("{}{op}{}", r.field, escape_value(&r.value))
        })
        .collect::<Vec<_>>()
        .join(",");
    let again = FieldSelector::parse(&printed)
        .unwrap_or_else(|e| panic!("{input:?} printed as {printed:?}, which fails: {e}"));
    // Terms are sorted as written (`a==x` before `a=w`), so the order may differ; the set
    // of requirements (all ANDed) may not.
    let sorted = |s: &FieldSelector| {
        let mut r: Vec<_> = s
            .requirements
            .iter()
            .map(|r| (r.field.clone(), r.negated, r.value.clone()))
            .collect();
        r.sort();
        r
    };
    assert_eq!(
        sorted(&again),
        sorted(&selector),
        "{input:?} printed as {printed:?}"
    );
    selector.matches(&json!({"metadata": {"name": "a", "namespace": "b"}, "spec": {"x": 1}}));
    selector.matches(&json!(null));
}
