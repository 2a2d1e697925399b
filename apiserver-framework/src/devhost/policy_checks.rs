//! What the dev host fills in and checks on the admission policies, their bindings and the
//! webhook configurations it serves, as kube-apiserver does (its `admissionregistration`
//! defaults and a part of its validation), so that a policy tried on a laptop reads as it will
//! in a cluster:
//!
//! - defaults: `failurePolicy: Fail`; `matchPolicy: Equivalent` and empty namespace and object
//!   selectors (every namespace, every object) in match resources and webhooks; a rule's scope
//!   `*`; a webhook's `timeoutSeconds: 10`, service port 443 and, when mutating,
//!   `reinvocationPolicy: Never`;
//! - checks: a binding names its policy and has valid `validationActions` (at least one, each
//!   `Deny`, `Warn` or `Audit` once, not both `Deny` and `Warn`); a validating policy has a
//!   validation or an audit annotation; every expression of a policy compiles.
//!
//! Not checked (kube-apiserver does): expressions' types and estimated costs, and the rules'
//! and selectors' own syntax.

use k8s_openapi::api::admissionregistration::v1 as reg;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

use crate::devhost::policies::{
    MutatingAdmissionPolicy, MutatingAdmissionPolicyBinding, ValidatingAdmissionPolicy,
    ValidatingAdmissionPolicyBinding,
};
use crate::devhost::webhooks::{MutatingWebhookConfiguration, ValidatingWebhookConfiguration};
use crate::error::{FieldError, FieldErrorKind};
use crate::registry::store::strategy::Strategy;

/// The defaults and checks of the admission registration kinds (see the module).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct PolicyChecks;

fn fail(policy: &mut Option<String>) {
    policy.get_or_insert_with(|| "Fail".into());
}

fn everything(selector: &mut Option<LabelSelector>) {
    selector.get_or_insert_with(LabelSelector::default);
}

fn rule_scope(rules: Option<&mut Vec<reg::NamedRuleWithOperations>>) {
    for rule in rules.into_iter().flatten() {
        rule.scope.get_or_insert_with(|| "*".into());
    }
}

fn match_resources(resources: Option<&mut reg::MatchResources>) {
    if let Some(resources) = resources {
        resources
            .match_policy
            .get_or_insert_with(|| "Equivalent".into());
        everything(&mut resources.namespace_selector);
        everything(&mut resources.object_selector);
        rule_scope(resources.resource_rules.as_mut());
        rule_scope(resources.exclude_resource_rules.as_mut());
    }
}

fn webhook_rules(rules: Option<&mut Vec<reg::RuleWithOperations>>) {
    for rule in rules.into_iter().flatten() {
        rule.scope.get_or_insert_with(|| "*".into());
    }
}

fn service_port(config: &mut reg::WebhookClientConfig) {
    if let Some(service) = &mut config.service {
        service.port.get_or_insert(443);
    }
}

/// Errors of every expression of `expressions` (field path, expression) that `compile` refuses
/// (it gives why).
fn compiled<'a>(
    expressions: impl IntoIterator<Item = (String, &'a str)>,
    compile: impl Fn(&str) -> Option<String>,
) -> Vec<FieldError> {
    expressions
        .into_iter()
        .filter_map(|(field, expression)| {
            compile(expression).map(|e| FieldError::invalid(field, expression, e))
        })
        .collect()
}

/// The expressions of a policy's match conditions and variables, with their field paths.
fn conditions_and_variables<'a>(
    conditions: Option<&'a Vec<reg::MatchCondition>>,
    variables: Option<&'a Vec<reg::Variable>>,
) -> Vec<(String, &'a str)> {
    let conditions = conditions.into_iter().flatten().enumerate().map(|(i, c)| {
        (
            format!("spec.matchConditions[{i}].expression"),
            c.expression.as_str(),
        )
    });
    let variables = variables.into_iter().flatten().enumerate().map(|(i, v)| {
        (
            format!("spec.variables[{i}].expression"),
            v.expression.as_str(),
        )
    });
    conditions.chain(variables).collect()
}

impl Strategy<ValidatingAdmissionPolicy> for PolicyChecks {
    fn default(&self, obj: &mut ValidatingAdmissionPolicy) {
        let spec = &mut obj.spec.policy;
        fail(&mut spec.failure_policy);
        match_resources(spec.match_constraints.as_mut());
    }

    fn validate(&self, obj: &ValidatingAdmissionPolicy) -> Vec<FieldError> {
        let spec = &obj.spec.policy;
        let mut errors = Vec::new();
        if spec.validations.as_ref().is_none_or(Vec::is_empty)
            && spec.audit_annotations.as_ref().is_none_or(Vec::is_empty)
        {
            errors.push(FieldError::required(
                "spec.validations",
                "validations or auditAnnotations must contain at least one item",
            ));
        }
        let mut expressions =
            conditions_and_variables(spec.match_conditions.as_ref(), spec.variables.as_ref());
        for (i, v) in spec.validations.iter().flatten().enumerate() {
            expressions.push((format!("spec.validations[{i}].expression"), &v.expression));
            if let Some(message) = v.message_expression.as_deref() {
                expressions.push((format!("spec.validations[{i}].messageExpression"), message));
            }
        }
        for (i, a) in spec.audit_annotations.iter().flatten().enumerate() {
            expressions.push((
                format!("spec.auditAnnotations[{i}].valueExpression"),
                &a.value_expression,
            ));
        }
        errors.extend(compiled(expressions, |e| crate::cel::compile(e).err()));
        errors
    }
}

impl Strategy<ValidatingAdmissionPolicyBinding> for PolicyChecks {
    fn default(&self, obj: &mut ValidatingAdmissionPolicyBinding) {
        match_resources(obj.spec.binding.match_resources.as_mut());
    }

    fn validate(&self, obj: &ValidatingAdmissionPolicyBinding) -> Vec<FieldError> {
        let spec = &obj.spec.binding;
        let mut errors = policy_name(spec.policy_name.as_deref());
        errors.extend(validation_actions(
            spec.validation_actions.as_deref().unwrap_or_default(),
        ));
        errors
    }
}

impl Strategy<MutatingAdmissionPolicy> for PolicyChecks {
    fn default(&self, obj: &mut MutatingAdmissionPolicy) {
        let spec = &mut obj.spec.policy;
        fail(&mut spec.failure_policy);
        match_resources(spec.match_constraints.as_mut());
    }

    fn validate(&self, obj: &MutatingAdmissionPolicy) -> Vec<FieldError> {
        let spec = &obj.spec.policy;
        let mut expressions =
            conditions_and_variables(spec.match_conditions.as_ref(), spec.variables.as_ref());
        for (i, m) in spec.mutations.iter().flatten().enumerate() {
            let (field, expression) = match m.patch_type.as_str() {
                "JSONPatch" => ("jsonPatch", m.json_patch.as_ref()),
                _ => ("applyConfiguration", m.apply_configuration.as_ref()),
            };
            if let Some(expression) = expression.and_then(|e| e.expression.as_deref()) {
                expressions.push((
                    format!("spec.mutations[{i}].{field}.expression"),
                    expression,
                ));
            }
        }
        // Object construction is what mutations are written in: compiled as the plugin reads
        // them.
        compiled(expressions, |e| {
            crate::admission::policy::objects::compile(e).err()
        })
    }
}

impl Strategy<MutatingAdmissionPolicyBinding> for PolicyChecks {
    fn default(&self, obj: &mut MutatingAdmissionPolicyBinding) {
        match_resources(obj.spec.binding.match_resources.as_mut());
    }

    fn validate(&self, obj: &MutatingAdmissionPolicyBinding) -> Vec<FieldError> {
        policy_name(obj.spec.binding.policy_name.as_deref())
    }
}

/// kube-apiserver's defaults of one webhook, validating or mutating (the same fields).
macro_rules! webhook_defaults {
    ($hook:expr) => {{
        let hook = $hook;
        fail(&mut hook.failure_policy);
        hook.match_policy.get_or_insert_with(|| "Equivalent".into());
        everything(&mut hook.namespace_selector);
        everything(&mut hook.object_selector);
        hook.timeout_seconds.get_or_insert(10);
        webhook_rules(hook.rules.as_mut());
        service_port(&mut hook.client_config);
    }};
}

impl Strategy<ValidatingWebhookConfiguration> for PolicyChecks {
    fn default(&self, obj: &mut ValidatingWebhookConfiguration) {
        for hook in obj.spec.webhooks.iter_mut() {
            webhook_defaults!(hook);
        }
    }
}

impl Strategy<MutatingWebhookConfiguration> for PolicyChecks {
    fn default(&self, obj: &mut MutatingWebhookConfiguration) {
        for hook in obj.spec.webhooks.iter_mut() {
            hook.reinvocation_policy
                .get_or_insert_with(|| "Never".into());
            webhook_defaults!(hook);
        }
    }
}

/// A binding's `policyName`: required.
fn policy_name(name: Option<&str>) -> Vec<FieldError> {
    match name {
        None | Some("") => vec![FieldError::required("spec.policyName", "")],
        Some(_) => Vec::new(),
    }
}

/// Upstream's checks of a binding's `validationActions`.
fn validation_actions(actions: &[String]) -> Vec<FieldError> {
    const VALID: [&str; 3] = ["Audit", "Deny", "Warn"];
    let field = "spec.validationActions";
    let mut errors = Vec::new();
    let mut seen: Vec<&str> = Vec::new();
    for (i, action) in actions.iter().enumerate() {
        if !VALID.contains(&action.as_str()) {
            errors.push(FieldError::not_supported(
                format!("{field}[{i}]"),
                action.as_str(),
                &VALID,
            ));
        }
        if seen.contains(&action.as_str()) {
            errors.push(FieldError::new(
                format!("{field}[{i}]"),
                FieldErrorKind::Duplicate(action.as_str().into()),
                "",
            ));
        }
        seen.push(action);
    }
    if seen.contains(&"Deny") && seen.contains(&"Warn") {
        errors.push(FieldError::invalid(
            field,
            serde_json::json!(actions),
            "must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)",
        ));
    }
    if seen.is_empty() {
        errors.push(FieldError::required(
            field,
            "at least one validation action is required",
        ));
    }
    errors
}
