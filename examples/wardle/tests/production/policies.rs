//! The host's ValidatingAdmissionPolicies applied to wardle's writes: a policy with a parameter
//! (a ConfigMap of the host), variables, a `messageExpression` and an audit annotation denies a
//! Flunder with upstream's Status and records the `Audit` action; another warns through
//! kubectl; a missing parameter follows the policy's `failurePolicy`. MutatingAdmissionPolicies,
//! once enabled, label and annotate Flunders by apply configuration and by JSON patch. A
//! policy's expressions ask wardle's authorizer through `authorizer`, and an `IfNeeded`
//! mutating policy runs again after a later change.

use reqwest::Method;
use serde_json::{Value, json};

use apiserver_framework::testing::wait;

use crate::stack::{Stack, TIMEOUT};
use crate::support::fixtures::{flunder, with_metadata};
use crate::watch_prefix::{audit_events, audited_stack};

/// Creates `body` on the host at `path` (under `/apis/admissionregistration.k8s.io/v1/` or
/// `/api/v1/`) as its admin.
async fn host_create(stack: &Stack, path: &str, body: Value) {
    let url = format!("{}{path}", stack.host_url());
    let (code, text) = stack.send_as("admin", Method::POST, &url, Some(body)).await;
    assert_eq!(code, 201, "{path}: {text}");
}

/// Creates a ValidatingAdmissionPolicy and its binding on the host.
async fn create_policy(stack: &Stack, policy: Value, binding: Value) {
    let admissionregistration = "/apis/admissionregistration.k8s.io/v1";
    host_create(
        stack,
        &format!("{admissionregistration}/validatingadmissionpolicies"),
        policy,
    )
    .await;
    host_create(
        stack,
        &format!("{admissionregistration}/validatingadmissionpolicybindings"),
        binding,
    )
    .await;
}

/// Creates a MutatingAdmissionPolicy `name` on Flunders (see [`policy`]) with `spec`, and its
/// binding `<name>-binding`, on the host.
async fn create_mutating_policy(stack: &Stack, name: &str, spec: Value) {
    let admissionregistration = "/apis/admissionregistration.k8s.io/v1beta1";
    let mut mutating = policy(name, spec);
    mutating["apiVersion"] = json!("admissionregistration.k8s.io/v1beta1");
    mutating["kind"] = json!("MutatingAdmissionPolicy");
    host_create(
        stack,
        &format!("{admissionregistration}/mutatingadmissionpolicies"),
        mutating,
    )
    .await;
    let mut bound = binding(&format!("{name}-binding"), name, json!({}));
    bound["apiVersion"] = json!("admissionregistration.k8s.io/v1beta1");
    bound["kind"] = json!("MutatingAdmissionPolicyBinding");
    host_create(
        stack,
        &format!("{admissionregistration}/mutatingadmissionpolicybindings"),
        bound,
    )
    .await;
}

/// A policy on Flunders, matched in v1beta1 (wardle's requests below are sent in v1alpha1).
fn policy(name: &str, spec: Value) -> Value {
    let mut spec = spec;
    spec["matchConstraints"] = json!({"resourceRules": [{
        "apiGroups": ["wardle.example.com"],
        "apiVersions": ["v1beta1"],
        "operations": ["CREATE", "UPDATE"],
        "resources": ["flunders"],
    }]});
    json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name},
        "spec": spec,
    })
}

fn binding(name: &str, policy: &str, spec: Value) -> Value {
    let mut spec = spec;
    spec["policyName"] = json!(policy);
    json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": name},
        "spec": spec,
    })
}

/// Creates a Flunder through the host as alice in v1alpha1: the code and the answer.
async fn create(stack: &Stack, body: Value) -> (u16, Value) {
    let url = format!(
        "{}/apis/wardle.example.com/v1alpha1/namespaces/default/flunders",
        stack.host_url()
    );
    let (code, text) = stack.send_as("alice", Method::POST, &url, Some(body)).await;
    let value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"));
    (code, value)
}

/// Creates `<prefix><n>` Flunders with `labels` until one is answered `code` (wardle has seen
/// the host's policies); returns that answer.
async fn until_answered(stack: &Stack, prefix: &str, labels: Value, code: u16) -> Value {
    let mut n = 0;
    wait::poll("wardle to apply the host's policy", TIMEOUT, || {
        let body = with_metadata(flunder(&format!("{prefix}{n}")), "labels", labels.clone());
        n += 1;
        async move {
            match create(stack, body).await {
                (c, body) if c == code => Ok(body),
                (c, body) => Err(format!("{c} {body}")),
            }
        }
    })
    .await
    .unwrap_or_else(|e| panic!("{e}"))
}

/// A policy with a ConfigMap parameter denies Flunders whose name starts with the parameter's
/// prefix (`Deny` and `Audit`), with upstream's 422 Status; its audit annotation is recorded
/// for the Flunders it lets through; a second policy's `Warn` action reaches kubectl.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_policy_denies_warns_and_audits_flunder_writes() {
    let (stack, audit) = audited_stack().await;
    host_create(
        &stack,
        "/api/v1/namespaces/default/configmaps",
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": "flunder-limits"},
               "data": {"forbiddenPrefix": "bad-"}}),
    )
    .await;
    let names = policy(
        "flunder-names",
        json!({
            "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
            "variables": [
                {"name": "name", "expression": "object.metadata.name"},
                {"name": "prefix", "expression": "params.data.forbiddenPrefix"},
            ],
            "validations": [{
                "expression": "!variables.name.startsWith(variables.prefix)",
                "messageExpression": "'name ' + variables.name + ' starts with ' + variables.prefix",
            }, {
                // The policy matched v1beta1: the object was converted to it.
                "expression": "object.apiVersion == 'wardle.example.com/v1beta1'",
            }],
            "auditAnnotations": [{
                "key": "name-length",
                "valueExpression": "string(size(object.metadata.name))",
            }],
        }),
    );
    create_policy(
        &stack,
        names,
        binding(
            "flunder-names-binding",
            "flunder-names",
            json!({
                "paramRef": {"name": "flunder-limits", "namespace": "default",
                             "parameterNotFoundAction": "Deny"},
                "validationActions": ["Deny", "Audit"],
            }),
        ),
    )
    .await;
    let tiers = policy(
        "flunder-tiers",
        json!({"validations": [{
            "expression": "!has(object.metadata.labels) || !('tier' in object.metadata.labels) || object.metadata.labels['tier'] != 'bronze'",
            "message": "bronze flunders are discouraged",
        }]}),
    );
    create_policy(
        &stack,
        tiers,
        binding(
            "flunder-tiers-binding",
            "flunder-tiers",
            json!({"validationActions": ["Warn"]}),
        ),
    )
    .await;

    until_answered(&stack, "bad-probe-", json!({}), 422).await;
    let (code, status) = create(&stack, flunder("bad-one")).await;
    let message = "flunders.wardle.example.com \"bad-one\" is forbidden: ValidatingAdmissionPolicy 'flunder-names' with binding 'flunder-names-binding' denied request: name bad-one starts with bad-";
    assert_eq!(code, 422, "{status}");
    assert_eq!(
        (
            &status["reason"],
            &status["message"],
            &status["details"]["name"],
            &status["details"]["group"],
            &status["details"]["kind"],
            &status["details"]["causes"][0]["message"],
        ),
        (
            &json!("Invalid"),
            &json!(message),
            &json!("bad-one"),
            &json!("wardle.example.com"),
            &json!("flunders"),
            &json!(
                message
                    .split_once("is forbidden: ")
                    .map(|(_, m)| m)
                    .unwrap()
            ),
        ),
        "{status}"
    );

    let (code, body) = create(&stack, flunder("good-one")).await;
    assert_eq!(code, 201, "{body}");

    let file = stack.path("bronze.json");
    let bronze = with_metadata(flunder("bronze-one"), "labels", json!({"tier": "bronze"}));
    std::fs::write(&file, bronze.to_string()).expect("the Flunder's file");
    let out = stack.kubectl(
        "alice",
        &["create", "-n", "default", "-f", &file.display().to_string()],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("Warning: Validation failed for ValidatingAdmissionPolicy 'flunder-tiers' with binding 'flunder-tiers-binding': bronze flunders are discouraged"),
        "{stderr}"
    );

    let created = |name: &'static str| {
        move |e: &Value| e["verb"] == "create" && e["objectRef"]["name"] == name
    };
    let events = audit_events(audit.path(), 1, created("bad-one")).await;
    let failure: Value = serde_json::from_str(
        events[0]["annotations"]["validation.policy.admission.k8s.io/validation_failure"]
            .as_str()
            .unwrap_or_else(|| panic!("no validation failure annotation: {}", events[0])),
    )
    .unwrap();
    assert_eq!(
        failure,
        json!([{
            "message": "name bad-one starts with bad-",
            "policy": "flunder-names",
            "binding": "flunder-names-binding",
            "expressionIndex": 0,
            "validationActions": ["Deny", "Audit"],
        }])
    );
    let events = audit_events(audit.path(), 1, created("good-one")).await;
    assert_eq!(
        events[0]["annotations"]["flunder-names/name-length"], "8",
        "{}",
        events[0]
    );
}

/// A binding whose parameter is missing fails the request under `failurePolicy: Fail` with
/// upstream's message, and is skipped under `Ignore`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_parameter_follows_the_failure_policy() {
    let stack = Stack::start(&[]).await;
    for (name, failure_policy) in [("strict", "Fail"), ("lenient", "Ignore")] {
        let mut spec = policy(
            name,
            json!({
                "failurePolicy": failure_policy,
                "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
                "validations": [{"expression": "true"}],
            }),
        );
        // Each policy takes only the Flunders labelled with its name.
        spec["spec"]["matchConstraints"]["objectSelector"] =
            json!({"matchLabels": {"policy": name}});
        create_policy(
            &stack,
            spec,
            binding(
                &format!("{name}-binding"),
                name,
                json!({
                    "paramRef": {"name": "absent", "namespace": "default",
                                 "parameterNotFoundAction": "Deny"},
                    "validationActions": ["Deny"],
                }),
            ),
        )
        .await;
    }
    let status = until_answered(&stack, "strict-", json!({"policy": "strict"}), 422).await;
    let message = status["message"].as_str().unwrap_or_default();
    assert!(
        message.ends_with("is forbidden: ValidatingAdmissionPolicy 'strict' with binding 'strict-binding' denied request: failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction"),
        "{status}"
    );
    let lenient = with_metadata(
        flunder("lenient-one"),
        "labels",
        json!({"policy": "lenient"}),
    );
    let (code, body) = create(&stack, lenient).await;
    assert_eq!(code, 201, "{body}");
}

/// With `MutatingAdmissionPolicy` enabled, a policy's apply configuration labels a Flunder sent
/// in v1alpha1 (the policy matched v1beta1) and merges its `toppings` by name, and its JSON
/// patch annotates it; a failing
/// mutation refuses the write with upstream's message under `failurePolicy: Fail`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mutating_policy_labels_and_annotates_flunders() {
    let stack = Stack::start(&["--enable-admission-plugins=MutatingAdmissionPolicy"]).await;
    create_mutating_policy(
        &stack,
        "flunder-labels",
        json!({
            "variables": [{"name": "version", "expression": "object.apiVersion.split('/')[1]"}],
            "mutations": [{
                "patchType": "ApplyConfiguration",
                "applyConfiguration": {"expression":
                    "Object{metadata: Object.metadata{labels: {'mutated-in': variables.version}}}"},
            }, {
                "patchType": "JSONPatch",
                "jsonPatch": {"expression":
                    "[JSONPatch{op: 'add', path: '/metadata/annotations', value: {'patched': 'yes'}}]"},
            }, {
                "patchType": "JSONPatch",
                "jsonPatch": {"expression":
                    "object.metadata.name.startsWith('broken') ? [JSONPatch{op: 'remove', path: '/spec/nothing'}] : []"},
            }, {
                // `toppings` is a map list keyed by name: merged item by item.
                "patchType": "ApplyConfiguration",
                "applyConfiguration": {"expression":
                    "Object{spec: Object.spec{toppings: [Object.spec.toppings{name: 'cheese', amount: 2}]}}"},
            }],
        }),
    )
    .await;

    let mut n = 0;
    let stack_ref = &stack;
    let created = wait::poll("wardle to apply the mutating policy", TIMEOUT, || {
        let name = format!("probe-{n}");
        n += 1;
        let mut body = flunder(&name);
        body["spec"]["toppings"] =
            json!([{"name": "tomato", "amount": 1}, {"name": "cheese", "amount": 1}]);
        async move {
            match create(stack_ref, body).await {
                (201, body) if body["metadata"]["labels"]["mutated-in"] == "v1beta1" => Ok(body),
                (code, body) => Err(format!("{code} {body}")),
            }
        }
    })
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        created["metadata"]["annotations"],
        json!({"patched": "yes"}),
        "{created}"
    );
    assert_eq!(created["apiVersion"], "wardle.example.com/v1alpha1");
    assert_eq!(
        created["spec"]["toppings"],
        json!([{"name": "tomato", "amount": 1}, {"name": "cheese", "amount": 2}]),
        "{created}"
    );

    let (code, status) = create(&stack, flunder("broken-one")).await;
    assert_eq!(code, 403, "{status}");
    assert_eq!(status["reason"], "Invalid", "{status}");
    let message = status["message"].as_str().unwrap_or_default();
    assert_eq!(
        message,
        "policy 'flunder-labels' with binding 'flunder-labels-binding' denied request: JSON Patch: error in remove for path: '/spec/nothing': Unable to remove nonexistent key: nothing: missing value",
        "{status}"
    );
    assert_eq!(
        status["details"]["causes"][0]["message"], message,
        "{status}"
    );
}

/// An expression that would take a billion steps stops at upstream's per-call cost budget and
/// the write is refused (`failurePolicy: Fail`) with upstream's error, at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expensive_expression_runs_out_of_budget() {
    let stack = Stack::start(&[]).await;
    let expensive = "lists.range(1000).all(x, lists.range(1000).all(y, lists.range(1000).all(z, x + y + z >= 0)))";
    let mut spec = policy(
        "expensive",
        json!({"validations": [{"expression": expensive}]}),
    );
    spec["spec"]["matchConstraints"]["objectSelector"] =
        json!({"matchLabels": {"policy": "expensive"}});
    create_policy(
        &stack,
        spec,
        binding(
            "expensive-binding",
            "expensive",
            json!({"validationActions": ["Deny"]}),
        ),
    )
    .await;
    let status = until_answered(&stack, "costly-", json!({"policy": "expensive"}), 422).await;
    assert_eq!(
        status["message"],
        format!(
            "flunders.wardle.example.com \"{}\" is forbidden: ValidatingAdmissionPolicy 'expensive' with binding 'expensive-binding' denied request: expression '{expensive}' resulted in error: operation cancelled: actual cost limit exceeded",
            status["details"]["name"].as_str().unwrap_or_default()
        ),
        "{status}"
    );
}

/// A policy's expressions ask wardle's authorizer (the host's SubjectAccessReview) through
/// `authorizer`: alice, an editor of wardle's resources, may delete the Flunder she creates
/// (`authorizer.requestResource`) but not the host's nodes, and a service account with no rules
/// may not create Flunders. A `messageExpression` may not name `authorizer` (upstream's
/// environment for messages has none): its `message` is used.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_policy_asks_the_authorizer() {
    let stack = Stack::start(&[]).await;
    let mut spec = policy(
        "authorized",
        json!({
            "variables": [{
                "name": "builderMayCreate",
                "expression": "authorizer.serviceAccount('default', 'builder').group('wardle.example.com').resource('flunders').namespace('default').check('create').allowed()",
            }],
            "validations": [
                {"expression": "authorizer.requestResource.check('delete').allowed()",
                 "message": "alice may not delete it"},
                {"expression": "!variables.builderMayCreate", "message": "builder may create"},
                {"expression": "authorizer.group('').resource('nodes').check('delete').allowed()",
                 "messageExpression": "'decided: ' + string(authorizer.path('/x').check('get').allowed())",
                 "message": "alice may not delete nodes"},
            ],
        }),
    );
    spec["spec"]["matchConstraints"]["objectSelector"] =
        json!({"matchLabels": {"policy": "authorized"}});
    create_policy(
        &stack,
        spec,
        binding(
            "authorized-binding",
            "authorized",
            json!({"validationActions": ["Deny"]}),
        ),
    )
    .await;
    // Upstream answers the first denial: the first two validations hold, the third does not.
    let status = until_answered(&stack, "asked-", json!({"policy": "authorized"}), 422).await;
    assert_eq!(
        status["message"],
        format!(
            "flunders.wardle.example.com \"{}\" is forbidden: ValidatingAdmissionPolicy 'authorized' with binding 'authorized-binding' denied request: alice may not delete nodes",
            status["details"]["name"].as_str().unwrap_or_default()
        ),
        "{status}"
    );
}

/// Mutating policies run again as upstream's do: in name order, `a-saw-b` (`IfNeeded`) and
/// `a2-never-saw-b` (`Never`) record the label `b` that `b-add-b` (`Never`) adds after them;
/// the change brings a second round in which only `a-saw-b` runs again, and sees it.
/// `b-add-b` counts its runs: once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_if_needed_mutating_policy_runs_again_and_sees_the_later_change() {
    let stack = Stack::start(&["--enable-admission-plugins=MutatingAdmissionPolicy"]).await;
    let saw_b = |label: &str| {
        format!(
            "Object{{metadata: Object.metadata{{labels: {{'{label}': has(object.metadata.labels) && 'b' in object.metadata.labels ? object.metadata.labels['b'] : 'none'}}}}}}"
        )
    };
    let apply = |expression: String| json!([{"patchType": "ApplyConfiguration", "applyConfiguration": {"expression": expression}}]);
    create_mutating_policy(
        &stack,
        "a-saw-b",
        json!({"reinvocationPolicy": "IfNeeded", "mutations": apply(saw_b("saw-b"))}),
    )
    .await;
    create_mutating_policy(
        &stack,
        "a2-never-saw-b",
        json!({"reinvocationPolicy": "Never", "mutations": apply(saw_b("never-saw-b"))}),
    )
    .await;
    let runs = "has(object.metadata.annotations) && 'b-runs' in object.metadata.annotations ? int(object.metadata.annotations['b-runs']) + 1 : 1";
    create_mutating_policy(
        &stack,
        "b-add-b",
        json!({"reinvocationPolicy": "Never", "mutations": apply(format!(
            "Object{{metadata: Object.metadata{{labels: {{'b': 'added'}}, annotations: {{'b-runs': string({runs})}}}}}}"
        ))}),
    )
    .await;

    let mut n = 0;
    let stack_ref = &stack;
    let created = wait::poll("wardle to apply the three policies", TIMEOUT, || {
        let name = format!("rerun-{n}");
        n += 1;
        async move {
            match create(stack_ref, flunder(&name)).await {
                (201, body)
                    if ["saw-b", "never-saw-b", "b"]
                        .iter()
                        .all(|l| body["metadata"]["labels"].get(l).is_some()) =>
                {
                    Ok(body)
                }
                (code, body) => Err(format!("{code} {body}")),
            }
        }
    })
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    let labels = &created["metadata"]["labels"];
    assert_eq!(labels["saw-b"], "added", "IfNeeded runs again: {created}");
    assert_eq!(labels["never-saw-b"], "none", "Never does not: {created}");
    assert_eq!(
        created["metadata"]["annotations"]["b-runs"], "1",
        "the policy that changed the object runs once: {created}"
    );
}

/// The dev host fills in and checks policies as kube-apiserver does: a policy created without
/// `failurePolicy` or `matchPolicy` reads back with upstream's defaults, a binding with both
/// `Deny` and `Warn` and a policy whose expression does not compile are refused with 422.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dev_host_defaults_and_checks_policies() {
    let stack = Stack::start(&[]).await;
    let admissionregistration = "/apis/admissionregistration.k8s.io/v1";
    let policies = format!("{admissionregistration}/validatingadmissionpolicies");
    host_create(
        &stack,
        &policies,
        policy(
            "defaulted",
            json!({"validations": [{"expression": "true"}]}),
        ),
    )
    .await;
    let url = format!("{}{policies}/defaulted", stack.host_url());
    let (code, text) = stack.send_as("admin", Method::GET, &url, None).await;
    assert_eq!(code, 200, "{text}");
    let read: Value = serde_json::from_str(&text).unwrap();
    let spec = &read["spec"];
    assert_eq!(spec["failurePolicy"], "Fail", "{read}");
    let constraints = &spec["matchConstraints"];
    assert_eq!(constraints["matchPolicy"], "Equivalent", "{read}");
    assert_eq!(constraints["namespaceSelector"], json!({}), "{read}");
    assert_eq!(constraints["objectSelector"], json!({}), "{read}");
    assert_eq!(constraints["resourceRules"][0]["scope"], "*", "{read}");

    let refused = |path: String, body: Value| {
        let stack = &stack;
        async move {
            let url = format!("{}{path}", stack.host_url());
            let (code, text) = stack.send_as("admin", Method::POST, &url, Some(body)).await;
            assert_eq!(code, 422, "{text}");
            let status: Value = serde_json::from_str(&text).unwrap();
            assert_eq!(status["reason"], "Invalid", "{status}");
            status
        }
    };
    let status = refused(
        format!("{admissionregistration}/validatingadmissionpolicybindings"),
        binding(
            "both",
            "defaulted",
            json!({"validationActions": ["Deny", "Warn"]}),
        ),
    )
    .await;
    let cause = &status["details"]["causes"][0];
    assert_eq!(cause["field"], "spec.validationActions", "{status}");
    assert!(
        cause["message"].as_str().unwrap_or_default().ends_with(
            "must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)"
        ),
        "{status}"
    );
    let status = refused(
        policies,
        policy(
            "broken",
            json!({"validations": [{"expression": "object.metadata.name =="}]}),
        ),
    )
    .await;
    let cause = &status["details"]["causes"][0];
    assert_eq!(cause["field"], "spec.validations[0].expression", "{status}");
    assert!(
        cause["message"]
            .as_str()
            .unwrap_or_default()
            .contains("compilation failed"),
        "{status}"
    );
}
