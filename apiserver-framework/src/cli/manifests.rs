//! `<server> manifests`: everything deploying the server to a real cluster needs, as YAML.
//!
//! Namespace, ServiceAccount, a Secret with a serving certificate for the Service's DNS name
//! (signed by a CA kept in `--cert-dir`, reused across runs), a PersistentVolumeClaim for the
//! embedded store, a Deployment probing `/livez` and `/readyz`, the Service, one `APIService`
//! per served group-version with the CA as `caBundle`, and RBAC: the RoleBinding to
//! `extension-apiserver-authentication-reader` in kube-system, the ClusterRoleBinding to
//! `system:auth-delegator`, and a ClusterRole (with its binding) for what the server reads from
//! the host.

use std::path::PathBuf;

use base64::Engine;
use serde_json::{Value, json};

use crate::devhost::pki::{Authority, Usage};
use crate::tls::TlsError;

/// Options of `manifests`.
#[derive(Clone, Debug, clap::Args)]
pub struct ManifestsOptions {
    /// The namespace to deploy into (default: the server's name).
    #[arg(long)]
    pub namespace: Option<String>,
    /// The container image (default: `<server>:latest`).
    #[arg(long)]
    pub image: Option<String>,
    /// The Service's name.
    #[arg(long, default_value = "api")]
    pub service_name: String,
    /// The port the container serves HTTPS on.
    #[arg(long, default_value_t = 8443)]
    pub container_port: u16,
    /// The size of the PersistentVolumeClaim of the embedded store.
    #[arg(long, default_value = "1Gi")]
    pub storage_size: String,
    /// Where the serving CA and certificate are kept (created on first use, reused after).
    #[arg(long, default_value = "apiserver.local.config/manifests")]
    pub cert_dir: PathBuf,
}

/// One served group-version (its APIService gets `groupPriorityMinimum: 1000`,
/// `versionPriority: 15`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupVersion {
    /// The group.
    pub group: String,
    /// The version.
    pub version: String,
}

fn b64(s: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(s.as_bytes())
}

/// The manifests of server `name` serving `versions`, as a multi-document YAML stream.
pub fn render(
    name: &str,
    versions: &[GroupVersion],
    opts: &ManifestsOptions,
) -> Result<String, TlsError> {
    let ns = opts.namespace.clone().unwrap_or_else(|| name.to_string());
    let svc = &opts.service_name;
    let image = opts
        .image
        .clone()
        .unwrap_or_else(|| format!("{name}:latest"));
    let dns = [
        svc.clone(),
        format!("{svc}.{ns}"),
        format!("{svc}.{ns}.svc"),
        format!("{svc}.{ns}.svc.cluster.local"),
    ];
    let ca = Authority::load_or_create(&opts.cert_dir, "ca", &format!("{name}-ca"))?;
    let dns_refs: Vec<&str> = dns.iter().map(String::as_str).collect();
    // Named after the Service, so another namespace or service name gets its own certificate.
    let serving = ca.load_or_issue(
        &opts.cert_dir,
        &format!("serving-{svc}.{ns}"),
        Usage::Server,
        &dns_refs,
    )?;
    let labels = json!({"app.kubernetes.io/name": name});
    let sa = "apiserver";
    let port = opts.container_port;
    let mut docs: Vec<Value> = vec![
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
        json!({"apiVersion": "v1", "kind": "ServiceAccount",
               "metadata": {"name": sa, "namespace": ns}}),
        json!({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
               "metadata": {"name": format!("{name}-serving-cert"), "namespace": ns},
               "data": {"tls.crt": b64(&serving.cert_pem), "tls.key": b64(&serving.key_pem)}}),
        json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
               "metadata": {"name": format!("{name}-data"), "namespace": ns},
               "spec": {"accessModes": ["ReadWriteOnce"],
                        "resources": {"requests": {"storage": opts.storage_size}}}}),
        json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": ns, "labels": labels},
        "spec": {
            "replicas": 1,
            // One writer at a time for the embedded store.
            "strategy": {"type": "Recreate"},
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "serviceAccountName": sa,
                    "containers": [{
                        "name": name,
                        "image": image,
                        "args": [
                            "serve",
                            format!("--secure-port={port}"),
                            "--tls-cert-file=/var/run/serving-cert/tls.crt",
                            "--tls-private-key-file=/var/run/serving-cert/tls.key",
                            "--data-dir=/var/lib/apiserver/data",
                        ],
                        "ports": [{"name": "https", "containerPort": port}],
                        "livenessProbe": {"httpGet": {"path": "/livez", "port": port, "scheme": "HTTPS"},
                                          "periodSeconds": 10},
                        "readinessProbe": {"httpGet": {"path": "/readyz", "port": port, "scheme": "HTTPS"},
                                           "periodSeconds": 5},
                        "volumeMounts": [
                            {"name": "serving-cert", "mountPath": "/var/run/serving-cert", "readOnly": true},
                            {"name": "data", "mountPath": "/var/lib/apiserver"},
                        ],
                    }],
                    "volumes": [
                        {"name": "serving-cert", "secret": {"secretName": format!("{name}-serving-cert")}},
                        {"name": "data", "persistentVolumeClaim": {"claimName": format!("{name}-data")}},
                    ],
                },
            },
        }}),
        json!({"apiVersion": "v1", "kind": "Service",
               "metadata": {"name": svc, "namespace": ns},
               "spec": {"selector": labels,
                        "ports": [{"name": "https", "port": 443, "targetPort": port, "protocol": "TCP"}]}}),
    ];
    for gv in versions {
        docs.push(json!({
            "apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
            "metadata": {"name": format!("{}.{}", gv.version, gv.group)},
            "spec": {
                "group": gv.group, "version": gv.version,
                "service": {"namespace": ns, "name": svc, "port": 443},
                "caBundle": b64(&ca.cert_pem),
                "groupPriorityMinimum": 1000, "versionPriority": 15,
            },
        }));
    }
    let subject = json!([{"kind": "ServiceAccount", "name": sa, "namespace": ns}]);
    docs.extend([
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
               "metadata": {"name": format!("{name}:extension-apiserver-authentication-reader"),
                            "namespace": "kube-system"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                           "name": "extension-apiserver-authentication-reader"},
               "subjects": subject}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
               "metadata": {"name": format!("{name}:system:auth-delegator")},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                           "name": "system:auth-delegator"},
               "subjects": subject}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": format!("{name}:host-reader")},
        "rules": [
            {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["get", "list", "watch"]},
            {"apiGroups": ["admissionregistration.k8s.io"],
             "resources": ["mutatingwebhookconfigurations", "validatingwebhookconfigurations"],
             "verbs": ["get", "list", "watch"]},
        ]}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
               "metadata": {"name": format!("{name}:host-reader")},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                           "name": format!("{name}:host-reader")},
               "subjects": subject}),
    ]);
    let mut out = String::new();
    for doc in docs {
        out.push_str("---\n");
        out.push_str(&serde_yaml_ng::to_string(&doc).unwrap_or_default());
    }
    Ok(out)
}
