//! A webhook's `matchConditions` (upstream's `matchconditions` matcher): CEL expressions over
//! the request, every one of which must be true for the webhook to be called. They see
//! `object` and `oldObject` (in the version the webhook is called in; `null` where the
//! operation has none) and `request` (the `AdmissionRequest` without its objects), and
//! Kubernetes' CEL libraries (lists, sets, strings, regex, URLs, IP and CIDR, quantity,
//! semver, format) from the `kube-cel` crate over the `cel` crate.
//!
//! As upstream: the first condition that is `false` skips the webhook; otherwise an error in
//! any (an expression that does not compile or evaluate, or is not a bool) fails the request
//! with `403 Forbidden` under `failurePolicy: Fail` and skips the webhook under `Ignore`.
//! `authorizer` and `authorizer.requestResource` ask the server's authorizer
//! ([`crate::cel::authorizer`]). Each expression runs within upstream's per-call cost budget
//! ([`crate::cel::cost`]).

use kube_cel::cel::Value as CelValue;

pub(crate) use crate::admission::programs::Programs;
use crate::cel::authorizer::Checks;
use crate::cel::cost::{Meter, PER_CALL_LIMIT};
use crate::cel::json::to_cel;
use serde_json::Value;

/// What a webhook's conditions decided.
#[derive(Debug, PartialEq)]
pub(crate) enum Matched {
    /// Every condition is true (or there is none): the webhook is called.
    Yes,
    /// Condition `name` is false: the webhook is not called.
    No { name: String },
    /// No condition is false but some failed to evaluate: why, upstream's aggregate.
    Error(String),
}

/// Evaluates `conditions` (name, expression), compiled through `programs`, against a request's
/// `review` (its `AdmissionReview`, as the webhook would receive it), with the request's
/// authorization `checks`.
pub(crate) fn evaluate(
    programs: &Programs,
    conditions: &[(String, String)],
    review: &Value,
    checks: &Checks,
) -> Matched {
    if conditions.is_empty() {
        return Matched::Yes;
    }
    let request = &review["request"];
    let mut bare = request.clone();
    if let Some(map) = bare.as_object_mut() {
        map.remove("object");
        map.remove("oldObject");
        map.remove("uid");
    }
    let mut context = crate::cel::context();
    let variables = [
        ("object", request.get("object").unwrap_or(&Value::Null)),
        (
            "oldObject",
            request.get("oldObject").unwrap_or(&Value::Null),
        ),
        ("request", &bare),
    ];
    for (name, value) in variables {
        context.add_variable_from_value(name, to_cel(value));
    }
    let meter = Meter::install(&mut context, PER_CALL_LIMIT);
    checks.install(&mut context, &meter);
    let mut errors = Vec::new();
    for (name, expression) in conditions {
        let result = match &*programs.get(expression) {
            Ok(program) => meter.run(program, &context),
            Err(e) => Err(e.clone()),
        };
        match result {
            Ok(CelValue::Bool(false)) => return Matched::No { name: name.clone() },
            Ok(CelValue::Bool(true)) => {}
            Ok(other) => errors.push(format!(
                "expression '{expression}' resulted in a {:?}, not a bool",
                other.type_of()
            )),
            Err(e) => errors.push(format!("expression '{expression}' resulted in error: {e}")),
        }
    }
    match errors.len() {
        0 => Matched::Yes,
        1 => Matched::Error(errors.remove(0)),
        _ => Matched::Error(format!("[{}]", errors.join(", "))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn review() -> Value {
        json!({"request": {
            "uid": "u", "operation": "CREATE", "namespace": "default", "name": "f",
            "userInfo": {"username": "alice", "groups": ["editors"]},
            "object": {"metadata": {"name": "f", "labels": {"tier": "gold"}},
                       "spec": {"reference": "x", "items": [1, 2, 3]}},
        }})
    }

    fn conditions(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(n, e)| (n.to_string(), e.to_string()))
            .collect()
    }

    #[test]
    fn every_condition_must_hold() {
        let all = conditions(&[
            ("label", "object.metadata.labels.tier == 'gold'"),
            ("user", "request.userInfo.username == 'alice'"),
            (
                "create",
                "request.operation == 'CREATE' && oldObject == null",
            ),
            (
                "lists",
                "object.spec.items.all(i, i > 0) && object.spec.items.size() == 3",
            ),
        ]);
        assert_eq!(
            evaluate(&Programs::default(), &all, &review(), &Checks::default()),
            Matched::Yes
        );
        let one_false = conditions(&[
            ("label", "object.metadata.labels.tier == 'gold'"),
            ("not-bob", "request.userInfo.username == 'bob'"),
        ]);
        assert_eq!(
            evaluate(
                &Programs::default(),
                &one_false,
                &review(),
                &Checks::default()
            ),
            Matched::No {
                name: "not-bob".into()
            }
        );
    }

    #[test]
    fn false_wins_over_errors_and_errors_are_reported() {
        let both = conditions(&[
            ("broken", "object.metadata.missing == 'x'"),
            ("false", "false"),
        ]);
        assert_eq!(
            evaluate(&Programs::default(), &both, &review(), &Checks::default()),
            Matched::No {
                name: "false".into()
            }
        );
        let broken = conditions(&[("broken", "object.metadata.missing == 'x'")]);
        assert!(
            matches!(evaluate(&Programs::default(), &broken, &review(), &Checks::default()), Matched::Error(e) if e.contains("object.metadata.missing"))
        );
        let not_bool = conditions(&[("int", "1 + 1")]);
        assert!(
            matches!(evaluate(&Programs::default(), &not_bool, &review(), &Checks::default()), Matched::Error(e) if e.contains("not a bool"))
        );
        let syntax = conditions(&[("syntax", "object.(")]);
        assert!(
            matches!(evaluate(&Programs::default(), &syntax, &review(), &Checks::default()), Matched::Error(e) if e.contains("compilation failed"))
        );
    }

    #[test]
    fn kubernetes_libraries_are_there() {
        let k8s = conditions(&[
            ("regex", "object.spec.reference.matches('^[a-z]$')"),
            ("quantity", "quantity('1Gi').isGreaterThan(quantity('1Mi'))"),
        ]);
        assert_eq!(
            evaluate(&Programs::default(), &k8s, &review(), &Checks::default()),
            Matched::Yes
        );
    }
}
