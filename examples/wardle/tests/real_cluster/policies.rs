//! The cluster's ValidatingAdmissionPolicies hold for wardle's resources: one policy, created in
//! kube-apiserver, matches Flunders (in v1beta1) and the host's own ConfigMaps; wardle denies a
//! Flunder with the same Status that kube-apiserver gives the ConfigMap (message, reason, code
//! and causes), and a `Warn` binding's warning reaches kubectl; a policy asking the authorizer
//! warns alike for both. A MutatingAdmissionPolicy labels Flunders as it labels ConfigMaps.

use serde_json::{Value, json};

use crate::cluster::{RealCluster, TIMEOUT, block_on};
use crate::http::{host_client, send};

const POLICY: &str = r#"
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: no-bad-names
spec:
  failurePolicy: Fail
  paramKind: {apiVersion: v1, kind: ConfigMap}
  matchConstraints:
    resourceRules:
    - {apiGroups: ["wardle.example.com"], apiVersions: ["v1beta1"], operations: ["CREATE"], resources: ["flunders"]}
    - {apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE"], resources: ["configmaps"]}
  variables:
  - {name: name, expression: "object.metadata.name"}
  validations:
  - expression: "!variables.name.startsWith(params.data.prefix)"
    messageExpression: "'name ' + variables.name + ' starts with ' + params.data.prefix"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: no-bad-names-in-alice
spec:
  policyName: no-bad-names
  paramRef: {name: policy-params, namespace: alice, parameterNotFoundAction: Deny}
  matchResources:
    namespaceSelector:
      matchLabels: {kubernetes.io/metadata.name: alice}
  validationActions: [Deny]
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: no-bronze
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: ["wardle.example.com"], apiVersions: ["v1beta1"], operations: ["CREATE"], resources: ["flunders"]}
    - {apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE"], resources: ["configmaps"]}
  validations:
  - expression: "!has(object.metadata.labels) || !('tier' in object.metadata.labels) || object.metadata.labels['tier'] != 'bronze'"
    message: bronze is discouraged
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: no-bronze-in-alice
spec:
  policyName: no-bronze
  matchResources:
    namespaceSelector:
      matchLabels: {kubernetes.io/metadata.name: alice}
  validationActions: [Warn]
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: report-authorizer
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: ["wardle.example.com"], apiVersions: ["v1beta1"], operations: ["CREATE"], resources: ["flunders"]}
    - {apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE"], resources: ["configmaps"]}
    objectSelector:
      matchLabels: {authz-check: "yes"}
  validations:
  - expression: "!authorizer.requestResource.check('delete').allowed()"
    message: may delete it
  - expression: "!authorizer.group('').resource('nodes').check('delete').allowed()"
    message: may delete nodes
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: report-authorizer-in-alice
spec:
  policyName: report-authorizer
  matchResources:
    namespaceSelector:
      matchLabels: {kubernetes.io/metadata.name: alice}
  validationActions: [Warn]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: policy-params, namespace: alice}
data: {prefix: bad-}
---
# wardle reads the parameters of the policies it enforces.
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: policy-params-reader, namespace: alice}
rules:
- {apiGroups: [""], resources: ["configmaps"], verbs: ["get", "list", "watch"]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: wardle-reads-policy-params, namespace: alice}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: policy-params-reader}
subjects:
- {kind: ServiceAccount, name: apiserver, namespace: wardle}
---
# alice may create ConfigMaps in her namespace, for the comparison.
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: alice-edits, namespace: alice}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: edit}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: alice}
"#;

/// POSTs `body` to kube-apiserver's `path` as alice: the code and the Status.
fn create_as_alice(cluster: &RealCluster, path: &str, body: Value) -> (u16, Value) {
    let client = host_client(cluster, Some("alice"), true);
    block_on(send(
        client
            .post(format!("{}{path}", cluster.api_url()))
            .json(&body),
    ))
}

/// The denial's Status with the resource's own names replaced and its group left out (the core
/// group has none), so that a Flunder's and a ConfigMap's compare.
fn normalised(status: &Value, resource: &str, plural: &str) -> String {
    let mut status = status.clone();
    if let Some(details) = status["details"].as_object_mut() {
        details.remove("group");
    }
    status
        .to_string()
        .replace(&format!("\"kind\":\"{plural}\""), "\"kind\":\"PLURAL\"")
        .replace(resource, "RESOURCE")
}

/// Deletes the Flunders and ConfigMaps these checks created in alice's namespace (labelled
/// `policy-check: "yes"`), which the checks after them do not expect.
fn remove_checked_objects(cluster: &RealCluster) {
    cluster.kubectl_ok(
        "admin",
        &[
            "delete",
            "flunders,configmaps",
            "-n",
            "alice",
            "-l",
            "policy-check=yes",
        ],
    );
}

pub fn policies(cluster: &RealCluster) {
    cluster.kubectl_input_ok("admin", &["apply", "-f", "-"], POLICY);

    let flunder = |name: &str| {
        json!({"apiVersion": "wardle.example.com/v1alpha1", "kind": "Flunder",
               "metadata": {"name": name, "labels": {"policy-check": "yes"}},
               "spec": {"reference": "x", "referenceType": "Fischer"}})
    };
    let flunders = "/apis/wardle.example.com/v1alpha1/namespaces/alice/flunders";
    let mut n = 0;
    cluster.wait_until("wardle applies the cluster's policy", TIMEOUT, || {
        n += 1;
        create_as_alice(cluster, flunders, flunder(&format!("bad-probe-{n}"))).0 == 422
    });
    let (flunder_code, flunder_status) = create_as_alice(cluster, flunders, flunder("bad-one"));
    let configmap = |name: &str| {
        create_as_alice(
            cluster,
            "/api/v1/namespaces/alice/configmaps",
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": name, "labels": {"policy-check": "yes"}}}),
        )
    };
    // kube-apiserver learns of alice's RoleBinding and of the policy through its own watches.
    let mut n = 0;
    cluster.wait_until("kube-apiserver applies its policy", TIMEOUT, || {
        n += 1;
        configmap(&format!("bad-probe-{n}")).0 == 422
    });
    let (configmap_code, configmap_status) = configmap("bad-one");
    assert_eq!(
        (flunder_code, configmap_code),
        (422, 422),
        "{flunder_status}\n{configmap_status}"
    );
    assert_eq!(
        normalised(&flunder_status, "flunders.wardle.example.com", "flunders"),
        normalised(&configmap_status, "configmaps", "configmaps"),
        "wardle's Status {flunder_status}\nkube-apiserver's {configmap_status}"
    );
    assert_eq!(flunder_status["details"]["group"], "wardle.example.com");
    assert_eq!(
        flunder_status["message"],
        "flunders.wardle.example.com \"bad-one\" is forbidden: ValidatingAdmissionPolicy 'no-bad-names' with binding 'no-bad-names-in-alice' denied request: name bad-one starts with bad-"
    );

    // The Warn action: kubectl prints the warning, as for the ConfigMap.
    let bronze = |kind_yaml: &str| {
        format!(
            "{kind_yaml}\nmetadata:\n  name: shiny\n  namespace: alice\n  labels: {{tier: bronze, policy-check: 'yes'}}\n"
        )
    };
    let out = cluster.kubectl_with_input(
        "alice",
        &["create", "-f", "-"],
        &bronze("apiVersion: wardle.example.com/v1alpha1\nkind: Flunder\nspec: {reference: x, referenceType: Fischer}"),
    );
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let warning = "Warning: Validation failed for ValidatingAdmissionPolicy 'no-bronze' with binding 'no-bronze-in-alice': bronze is discouraged";
    assert!(out.status.success() && stderr.contains(warning), "{stderr}");
    let out = cluster.kubectl_with_input(
        "alice",
        &["create", "-f", "-"],
        &bronze("apiVersion: v1\nkind: ConfigMap"),
    );
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success() && stderr.contains(warning), "{stderr}");

    // The authorizer: wardle asks kube-apiserver (SubjectAccessReview) what kube-apiserver
    // asks its own authorizer, and both warn alike: alice may delete what she creates in her
    // namespace, not the cluster's nodes.
    let asked = |kind_yaml: &str, name: &str| {
        format!(
            "{kind_yaml}\nmetadata:\n  name: {name}\n  namespace: alice\n  labels: {{authz-check: 'yes', policy-check: 'yes'}}\n"
        )
    };
    let warning = |what: &str| {
        format!(
            "Warning: Validation failed for ValidatingAdmissionPolicy 'report-authorizer' with binding 'report-authorizer-in-alice': {what}"
        )
    };
    for (kind_yaml, name) in [
        (
            "apiVersion: wardle.example.com/v1alpha1\nkind: Flunder\nspec: {reference: x, referenceType: Fischer}",
            "asked-flunder",
        ),
        ("apiVersion: v1\nkind: ConfigMap", "asked-configmap"),
    ] {
        let out =
            cluster.kubectl_with_input("alice", &["create", "-f", "-"], &asked(kind_yaml, name));
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(
            out.status.success()
                && stderr.contains(&warning("may delete it"))
                && !stderr.contains(&warning("may delete nodes")),
            "{name}: {stderr}"
        );
    }

    cluster.kubectl_input_ok("admin", &["delete", "-f", "-"], POLICY);
    remove_checked_objects(cluster);
}

const MUTATING_POLICY: &str = r#"
apiVersion: admissionregistration.k8s.io/v1beta1
kind: MutatingAdmissionPolicy
metadata:
  name: label-on-create
spec:
  failurePolicy: Fail
  reinvocationPolicy: Never
  matchConstraints:
    resourceRules:
    - {apiGroups: ["wardle.example.com"], apiVersions: ["v1beta1"], operations: ["CREATE"], resources: ["flunders"]}
    - {apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE"], resources: ["configmaps"]}
  variables:
  - {name: kind, expression: "object.kind.lowerAscii()"}
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: "Object{metadata: Object.metadata{labels: {'labelled-by': 'policy', 'kind': variables.kind}}}"
---
apiVersion: admissionregistration.k8s.io/v1beta1
kind: MutatingAdmissionPolicyBinding
metadata:
  name: label-on-create-in-alice
spec:
  policyName: label-on-create
  matchResources:
    namespaceSelector:
      matchLabels: {kubernetes.io/metadata.name: alice}
---
# alice may create ConfigMaps in her namespace, for the comparison.
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: alice-edits-for-mutation, namespace: alice}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: edit}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: alice}
"#;

/// A MutatingAdmissionPolicy created in kube-apiserver (its beta API enabled) labels a Flunder
/// created on wardle, as it labels a ConfigMap created on kube-apiserver.
pub fn mutating_policies(cluster: &RealCluster) {
    cluster.kubectl_input_ok("admin", &["apply", "-f", "-"], MUTATING_POLICY);
    let flunders = "/apis/wardle.example.com/v1alpha1/namespaces/alice/flunders";
    let flunder = |name: &str| {
        json!({"apiVersion": "wardle.example.com/v1alpha1", "kind": "Flunder",
               "metadata": {"name": name, "labels": {"policy-check": "yes"}},
               "spec": {"reference": "x", "referenceType": "Fischer"}})
    };
    let configmap = |name: &str| {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": name, "labels": {"policy-check": "yes"}}})
    };
    let labels = |created: &(u16, Value)| created.1["metadata"]["labels"].clone();
    let mut n = 0;
    let mut labelled = Value::Null;
    cluster.wait_until("wardle applies the mutating policy", TIMEOUT, || {
        n += 1;
        let created = create_as_alice(cluster, flunders, flunder(&format!("mutated-{n}")));
        labelled = labels(&created);
        created.0 == 201 && labelled["labelled-by"] == "policy"
    });
    // The policy matched v1beta1: the object it saw was a v1beta1 Flunder.
    assert_eq!(
        labelled,
        json!({"labelled-by": "policy", "kind": "flunder", "policy-check": "yes"}),
        "{labelled}"
    );
    let mut n = 0;
    cluster.wait_until(
        "kube-apiserver applies the mutating policy",
        TIMEOUT,
        || {
            n += 1;
            let created = create_as_alice(
                cluster,
                "/api/v1/namespaces/alice/configmaps",
                configmap(&format!("mutated-{n}")),
            );
            labelled = labels(&created);
            created.0 == 201 && labelled["labelled-by"] == "policy"
        },
    );
    assert_eq!(
        labelled,
        json!({"labelled-by": "policy", "kind": "configmap", "policy-check": "yes"}),
        "{labelled}"
    );
    cluster.kubectl_input_ok("admin", &["delete", "-f", "-"], MUTATING_POLICY);
    remove_checked_objects(cluster);
}
