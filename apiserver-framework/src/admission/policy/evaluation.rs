//! One policy evaluated for one binding and one parameter (upstream's
//! `pkg/admission/plugin/policy/validating` validator): its `matchConditions`, `variables`,
//! `validations` with their messages, and `auditAnnotations`, in CEL with Kubernetes'
//! libraries (`kube-cel`).
//!
//! The expressions see `object` and `oldObject` (in the version the policy matched; `null`
//! where the operation has none), `request` (the `AdmissionRequest` without its objects),
//! `params` (the binding's parameter, or `null`), `namespaceObject` (the request's namespace,
//! `null` for cluster-scoped resources) and `variables` (the policy's `variables`, each able to
//! name the ones before it). Variables are evaluated once, in order, before the validations; one
//! that fails fails the validations that name it, with its error. `authorizer` and
//! `authorizer.requestResource` ask the server's authorizer ([`crate::cel::authorizer`]). Each
//! expression runs within upstream's per-call cost budget ([`crate::cel::cost`]).

use std::collections::HashMap;

use k8s_openapi::api::admissionregistration::v1::{
    MatchCondition, ValidatingAdmissionPolicySpec, Variable,
};
use kube_cel::cel::{Context, Value as CelValue};
use serde_json::Value;

use crate::admission::programs::Programs;
use crate::cel::authorizer::Checks;
use crate::cel::cost::{Meter, PER_CALL_LIMIT};
use crate::cel::json::to_cel;

/// Upstream's longest message a `messageExpression` may give
/// (`MaxEvaluatedMessageExpressionSizeBytes`); a longer one falls back to `message`.
const MAX_MESSAGE_BYTES: usize = 5 * 1024;
/// Upstream's longest audit annotation value; longer ones are cut.
pub(crate) const MAX_ANNOTATION_VALUE_BYTES: usize = 10 * 1024;

/// What the expressions of one evaluation see.
pub(crate) struct Inputs<'a> {
    /// The object in the matched version (`null` on delete).
    pub object: &'a Value,
    /// The stored object in the matched version (`null` on create).
    pub old_object: &'a Value,
    /// The `AdmissionRequest` without its objects.
    pub request: &'a Value,
    /// The binding's parameter.
    pub params: &'a Value,
    /// The request's namespace.
    pub namespace_object: &'a Value,
    /// The authorization checks of the request (`authorizer`).
    pub checks: &'a Checks,
}

/// What one validation decided.
#[derive(Debug, PartialEq)]
pub(crate) enum Decision {
    /// The expression is true.
    Admit,
    /// The expression is false: the message and the Status reason (upstream's default
    /// `Invalid`).
    Deny { message: String, reason: String },
    /// The expression failed: why (the failure policy decides).
    Error(String),
}

/// What an audit annotation's `valueExpression` gave.
#[derive(Debug, PartialEq)]
pub(crate) enum Annotation {
    /// A value to publish under `<policy>/<key>`.
    Publish { key: String, value: String },
    /// The expression failed (or gave neither a string nor null): why.
    Error(String),
}

/// The result of one evaluation: nothing when a match condition is false.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Outcome {
    /// One per validation, in order (empty when a match condition is false); a failed match
    /// condition gives one `Error`.
    pub decisions: Vec<Decision>,
    /// The audit annotations to publish (or their errors).
    pub annotations: Vec<Annotation>,
}

/// Runs `expression` in `context`; upstream's messages for what fails.
fn run(
    programs: &Programs,
    meter: &Meter,
    expression: &str,
    context: &Context,
) -> Result<CelValue, String> {
    match &*programs.get(expression) {
        Ok(program) => meter
            .run(program, context)
            .map_err(|e| format!("expression '{expression}' resulted in error: {e}")),
        Err(e) => Err(format!("compilation error: {e}")),
    }
}

/// The context of a policy's expressions: `inputs`, and its `variables` evaluated in order (each
/// seeing those before it) as `variables`, with the variables that failed and why. `None` when
/// one of its `conditions` is false; an error when one fails.
pub(crate) struct Prepared<'a> {
    /// What the expressions see.
    pub context: Context<'a>,
    /// The budget each expression run in `context` has.
    pub meter: Meter,
    /// The variables that failed to evaluate: (name, why).
    pub failed: Vec<(String, String)>,
}

impl Prepared<'_> {
    /// The error of a failed variable `expression` names, if any.
    pub(crate) fn failed_variable(&self, expression: &str) -> Option<String> {
        self.failed
            .iter()
            .find(|(name, _)| expression.contains(&format!("variables.{name}")))
            .map(|(_, e)| e.clone())
    }
}

/// Builds the context of a policy's expressions (see [`Prepared`]).
pub(crate) fn prepare<'a>(
    programs: &Programs,
    conditions: &[MatchCondition],
    variables: &[Variable],
    inputs: &Inputs<'_>,
) -> Result<Option<Prepared<'a>>, String> {
    let mut context = crate::cel::context();
    let bound = [
        ("object", inputs.object),
        ("oldObject", inputs.old_object),
        ("request", inputs.request),
        ("params", inputs.params),
        ("namespaceObject", inputs.namespace_object),
    ];
    for (name, value) in bound {
        context.add_variable_from_value(name, to_cel(value));
    }
    let meter = Meter::install(&mut context, PER_CALL_LIMIT);
    inputs.checks.install(&mut context, &meter);
    // Match conditions: a false one skips the policy; otherwise an error fails it.
    for condition in conditions {
        match run(programs, &meter, &condition.expression, &context)? {
            CelValue::Bool(true) => {}
            CelValue::Bool(false) => return Ok(None),
            other => {
                return Err(format!(
                    "expression '{}' resulted in a {:?}, not a bool",
                    condition.expression,
                    other.type_of()
                ));
            }
        }
    }
    let mut values: HashMap<String, CelValue> = HashMap::new();
    let mut failed: Vec<(String, String)> = Vec::new();
    for variable in variables {
        context.add_variable_from_value("variables", values.clone());
        match run(programs, &meter, &variable.expression, &context) {
            Ok(value) => {
                values.insert(variable.name.clone(), value);
            }
            Err(e) => failed.push((variable.name.clone(), e)),
        }
    }
    context.add_variable_from_value("variables", values);
    Ok(Some(Prepared {
        context,
        meter,
        failed,
    }))
}

/// Evaluates `spec` against `inputs`.
pub(crate) fn evaluate(
    programs: &Programs,
    spec: &ValidatingAdmissionPolicySpec,
    inputs: &Inputs<'_>,
) -> Outcome {
    let prepared = prepare(
        programs,
        spec.match_conditions.as_deref().unwrap_or_default(),
        spec.variables.as_deref().unwrap_or_default(),
        inputs,
    );
    let prepared = match prepared {
        Ok(Some(prepared)) => prepared,
        Ok(None) => return Outcome::default(),
        Err(e) => {
            return Outcome {
                decisions: vec![Decision::Error(e)],
                annotations: Vec::new(),
            };
        }
    };
    let context = &prepared.context;
    let meter = &prepared.meter;
    let failed_variable = |expression: &str| prepared.failed_variable(expression);
    let decisions = spec
        .validations
        .iter()
        .flatten()
        .map(|validation| {
            if let Some(e) = failed_variable(&validation.expression) {
                return Decision::Error(e);
            }
            match run(programs, meter, &validation.expression, context) {
                Ok(CelValue::Bool(true)) => Decision::Admit,
                Ok(CelValue::Bool(false)) => Decision::Deny {
                    message: message(programs, meter, validation, context),
                    reason: validation
                        .reason
                        .clone()
                        .filter(|r| !r.is_empty())
                        .unwrap_or_else(|| "Invalid".into()),
                },
                Ok(other) => Decision::Error(format!(
                    "expression '{}' resulted in a {:?}, not a bool",
                    validation.expression,
                    other.type_of()
                )),
                Err(e) => Decision::Error(e),
            }
        })
        .collect();
    let annotations = spec
        .audit_annotations
        .iter()
        .flatten()
        .filter_map(|annotation| {
            let expression = &annotation.value_expression;
            let value = match failed_variable(expression) {
                Some(e) => Err(e),
                None => run(programs, meter, expression, context),
            };
            match value {
                Ok(CelValue::String(s)) => {
                    let value = cut(s.trim(), MAX_ANNOTATION_VALUE_BYTES);
                    (!value.is_empty()).then(|| Annotation::Publish {
                        key: annotation.key.clone(),
                        value: value.to_string(),
                    })
                }
                Ok(CelValue::Null) => None,
                Ok(other) => Some(Annotation::Error(format!(
                    "valueExpression '{expression}' resulted in unsupported return type: {:?}. Return type must be either string or null.",
                    other.type_of()
                ))),
                Err(e) => Some(Annotation::Error(e)),
            }
        })
        .collect();
    Outcome {
        decisions,
        annotations,
    }
}

/// The message of a failed validation, as upstream picks it: its `messageExpression`'s string
/// (trimmed, one line, at most [`MAX_MESSAGE_BYTES`]), else its `message`, else the expression.
/// A `messageExpression` may not name `authorizer` (upstream compiles it without): one that
/// does fails, and `message` is used.
fn message(
    programs: &Programs,
    meter: &Meter,
    validation: &k8s_openapi::api::admissionregistration::v1::Validation,
    context: &Context,
) -> String {
    if let Some(expression) = validation.message_expression.as_deref()
        && !programs
            .get(expression)
            .as_ref()
            .as_ref()
            .is_ok_and(|program| crate::cel::names(program, "authorizer"))
        && let Ok(CelValue::String(s)) = run(programs, meter, expression, context)
    {
        let s = s.trim();
        if !s.is_empty() && s.len() <= MAX_MESSAGE_BYTES && !s.contains('\n') {
            return s.to_string();
        }
    }
    if let Some(message) = validation
        .message
        .as_deref()
        .map(str::trim)
        .filter(|m| !m.is_empty())
    {
        return message.to_string();
    }
    format!("failed expression: {}", validation.expression.trim())
}

/// `s` cut to at most `max` bytes, on a character boundary.
fn cut(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::admissionregistration::v1::{AuditAnnotation, Validation};
    use serde_json::json;

    fn validation(expression: &str) -> Validation {
        Validation {
            expression: expression.into(),
            ..Default::default()
        }
    }

    fn run_spec(spec: &ValidatingAdmissionPolicySpec) -> Outcome {
        let object = json!({"metadata": {"name": "f", "labels": {"tier": "gold"}},
                            "spec": {"reference": "x", "replicas": 5}});
        let request = json!({"operation": "CREATE", "userInfo": {"username": "alice"}});
        let params = json!({"data": {"max": "3"}});
        let namespace = json!({"metadata": {"name": "default", "labels": {"env": "prod"}}});
        evaluate(
            &Programs::default(),
            spec,
            &Inputs {
                object: &object,
                old_object: &Value::Null,
                request: &request,
                params: &params,
                namespace_object: &namespace,
                checks: &Checks::default(),
            },
        )
    }

    #[test]
    fn validations_decide_with_upstreams_messages() {
        let spec = ValidatingAdmissionPolicySpec {
            validations: Some(vec![
                validation("object.spec.replicas <= int(params.data.max)"),
                Validation {
                    message: Some("  gold only  ".into()),
                    ..validation("object.metadata.labels.tier != 'gold'")
                },
                Validation {
                    message_expression: Some("'replicas ' + string(object.spec.replicas)".into()),
                    reason: Some("Forbidden".into()),
                    ..validation("false")
                },
                validation("namespaceObject.metadata.labels.env == 'prod' && oldObject == null"),
                validation("object.spec.missing == 1"),
                validation("1"),
                Validation {
                    message: Some("no authorizer in messages".into()),
                    message_expression: Some(
                        "string(authorizer.path('/x').check('get').allowed())".into(),
                    ),
                    ..validation("false")
                },
            ]),
            ..Default::default()
        };
        let outcome = run_spec(&spec);
        let invalid = |m: &str| Decision::Deny {
            message: m.into(),
            reason: "Invalid".into(),
        };
        assert_eq!(
            outcome.decisions[..4],
            [
                invalid("failed expression: object.spec.replicas <= int(params.data.max)"),
                invalid("gold only"),
                Decision::Deny {
                    message: "replicas 5".into(),
                    reason: "Forbidden".into()
                },
                Decision::Admit,
            ]
        );
        assert!(
            matches!(&outcome.decisions[4], Decision::Error(e) if e.starts_with("expression 'object.spec.missing == 1' resulted in error: ")),
            "{:?}",
            outcome.decisions[4]
        );
        assert!(matches!(&outcome.decisions[5], Decision::Error(e) if e.contains("not a bool")));
        assert_eq!(outcome.decisions[6], invalid("no authorizer in messages"));
    }

    #[test]
    fn a_false_match_condition_skips_and_variables_build_on_each_other() {
        let skipped = ValidatingAdmissionPolicySpec {
            match_conditions: Some(vec![MatchCondition {
                name: "bob-only".into(),
                expression: "request.userInfo.username == 'bob'".into(),
            }]),
            validations: Some(vec![validation("false")]),
            ..Default::default()
        };
        assert_eq!(run_spec(&skipped), Outcome::default());
        let variables = ValidatingAdmissionPolicySpec {
            variables: Some(vec![
                Variable {
                    name: "replicas".into(),
                    expression: "object.spec.replicas".into(),
                },
                Variable {
                    name: "doubled".into(),
                    expression: "variables.replicas * 2".into(),
                },
                Variable {
                    name: "broken".into(),
                    expression: "object.spec.missing".into(),
                },
            ]),
            validations: Some(vec![
                validation("variables.doubled == 10"),
                validation("variables.broken == 1"),
            ]),
            audit_annotations: Some(vec![
                AuditAnnotation {
                    key: "replicas".into(),
                    value_expression: "'had ' + string(variables.replicas)".into(),
                },
                AuditAnnotation {
                    key: "none".into(),
                    value_expression: "null".into(),
                },
                AuditAnnotation {
                    key: "int".into(),
                    value_expression: "1".into(),
                },
            ]),
            ..Default::default()
        };
        let outcome = run_spec(&variables);
        assert_eq!(outcome.decisions[0], Decision::Admit);
        assert!(
            matches!(&outcome.decisions[1], Decision::Error(e) if e.contains("object.spec.missing"))
        );
        assert_eq!(
            outcome.annotations[0],
            Annotation::Publish {
                key: "replicas".into(),
                value: "had 5".into()
            }
        );
        assert_eq!(outcome.annotations.len(), 2);
        assert!(
            matches!(&outcome.annotations[1], Annotation::Error(e) if e.starts_with("valueExpression '1' resulted in unsupported return type"))
        );
    }
}
