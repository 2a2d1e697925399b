//! `<server> manifests`: everything deploying the server to a real cluster needs, as YAML.
//!
//! Namespace, ServiceAccount, a Secret with a serving certificate for the Service's DNS name
//! (signed by a CA kept in `--cert-dir`, reused across runs), a PersistentVolumeClaim for the
//! embedded store, a Deployment probing `/livez` and `/readyz`, the Service, one `APIService`
//! per served group-version with the CA as `caBundle`, and RBAC: the RoleBinding to
//! `extension-apiserver-authentication-reader` in kube-system, the ClusterRoleBinding to
//! `system:auth-delegator`, and a ClusterRole (with its binding) for what the server reads from
//! the host.
//!
//! With `--etcd-servers` the server stores objects in etcd and runs several replicas
//! (`--replicas`, default 2): no PersistentVolumeClaim, a RollingUpdate strategy with
//! `maxUnavailable: 0`, preferred pod anti-affinity across nodes, a PodDisruptionBudget, and a
//! `--shutdown-delay-duration` within the pod's grace period so that a terminating replica
//! leaves the Service's endpoints before it stops serving. On the embedded store the
//! Deployment keeps one replica, recreated on update, and says why in a comment.

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
    /// Store objects in this etcd cluster (comma-separated client URLs) instead of the
    /// embedded store: the Deployment then runs several replicas, with a PodDisruptionBudget,
    /// pod anti-affinity and rolling updates that keep every replica up until its successor is
    /// ready.
    #[arg(long, value_delimiter = ',')]
    pub etcd_servers: Vec<String>,
    /// How many replicas to run (default 2). Only with --etcd-servers: the embedded store is
    /// one process's files, so a server on it runs exactly one replica.
    #[arg(long, requires = "etcd_servers")]
    pub replicas: Option<u32>,
}

impl Default for ManifestsOptions {
    fn default() -> Self {
        ManifestsOptions {
            namespace: None,
            image: None,
            service_name: "api".into(),
            container_port: 8443,
            storage_size: "1Gi".into(),
            cert_dir: PathBuf::from("apiserver.local.config/manifests"),
            etcd_servers: Vec::new(),
            replicas: None,
        }
    }
}

/// Replicas of an etcd-backed server when `--replicas` is not given: enough that one can be
/// disrupted (a node drained, a rollout) while another serves.
pub const DEFAULT_ETCD_REPLICAS: u32 = 2;

/// `--shutdown-delay-duration` of the etcd-backed replicas: how long a terminating replica
/// fails `/readyz` while it still serves, so that the Service's endpoints (and the
/// aggregator's routing) drop it before it stops accepting connections.
const SHUTDOWN_DELAY_SECONDS: u32 = 10;

/// The pod's grace period: the shutdown delay, then up to 60 s for requests in flight (the
/// server's drain bound), and a margin.
const TERMINATION_GRACE_SECONDS: u32 = SHUTDOWN_DELAY_SECONDS + 60 + 5;

/// Why the embedded store's Deployment has one replica and is recreated, not rolled.
const EMBEDDED_ONE_REPLICA: &str = "# One replica, recreated on update: the embedded store is \
one process's files on one volume (ReadWriteOnce), which two servers cannot share. For several \
replicas and rollouts without an outage, store objects in etcd (manifests --etcd-servers).";

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
    let etcd = !opts.etcd_servers.is_empty();
    let mut docs: Vec<Value> = vec![
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
        json!({"apiVersion": "v1", "kind": "ServiceAccount",
               "metadata": {"name": sa, "namespace": ns}}),
        json!({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
               "metadata": {"name": format!("{name}-serving-cert"), "namespace": ns},
               "data": {"tls.crt": b64(&serving.cert_pem), "tls.key": b64(&serving.key_pem)}}),
        json!({"apiVersion": "v1", "kind": "Service",
               "metadata": {"name": svc, "namespace": ns},
               "spec": {"selector": labels,
                        "ports": [{"name": "https", "port": 443, "targetPort": port, "protocol": "TCP"}]}}),
    ];
    if etcd {
        docs.push(deployment_on_etcd(name, &ns, &image, port, &labels, opts));
        docs.push(disruption_budget(name, &ns, &labels));
    } else {
        docs.push(json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
               "metadata": {"name": format!("{name}-data"), "namespace": ns},
               "spec": {"accessModes": ["ReadWriteOnce"],
                        "resources": {"requests": {"storage": opts.storage_size}}}}));
        docs.push(deployment_on_embedded(name, &ns, &image, port, &labels));
    }
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
             "resources": ["mutatingwebhookconfigurations", "validatingwebhookconfigurations",
                           "validatingadmissionpolicies", "validatingadmissionpolicybindings",
                           "mutatingadmissionpolicies", "mutatingadmissionpolicybindings"],
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
        if !etcd && doc["kind"] == "Deployment" {
            out.push_str(EMBEDDED_ONE_REPLICA);
            out.push('\n');
        }
        out.push_str(&serde_yaml_ng::to_string(&doc).unwrap_or_default());
    }
    Ok(out)
}

/// The container's probes on `port`.
fn probes(port: u16) -> (Value, Value) {
    (
        json!({"httpGet": {"path": "/livez", "port": port, "scheme": "HTTPS"}, "periodSeconds": 10}),
        json!({"httpGet": {"path": "/readyz", "port": port, "scheme": "HTTPS"}, "periodSeconds": 5}),
    )
}

/// The serving certificate's volume and its mount.
fn serving_cert_volume(name: &str) -> (Value, Value) {
    (
        json!({"name": "serving-cert", "secret": {"secretName": format!("{name}-serving-cert")}}),
        json!({"name": "serving-cert", "mountPath": "/var/run/serving-cert", "readOnly": true}),
    )
}

/// One replica on the embedded store, on its PersistentVolumeClaim.
fn deployment_on_embedded(name: &str, ns: &str, image: &str, port: u16, labels: &Value) -> Value {
    let (liveness, readiness) = probes(port);
    let (cert_volume, cert_mount) = serving_cert_volume(name);
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
                "serviceAccountName": "apiserver",
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
                    "livenessProbe": liveness,
                    "readinessProbe": readiness,
                    "volumeMounts": [
                        cert_mount,
                        {"name": "data", "mountPath": "/var/lib/apiserver"},
                    ],
                }],
                "volumes": [
                    cert_volume,
                    {"name": "data", "persistentVolumeClaim": {"claimName": format!("{name}-data")}},
                ],
            },
        },
    }})
}

/// Several replicas on etcd: rolling updates that start a successor before stopping a
/// replica (`maxUnavailable: 0`), replicas spread over nodes, and a shutdown that leaves the
/// Service's endpoints before it stops serving.
fn deployment_on_etcd(
    name: &str,
    ns: &str,
    image: &str,
    port: u16,
    labels: &Value,
    opts: &ManifestsOptions,
) -> Value {
    let (liveness, readiness) = probes(port);
    let (cert_volume, cert_mount) = serving_cert_volume(name);
    let replicas = opts.replicas.unwrap_or(DEFAULT_ETCD_REPLICAS);
    json!({"apiVersion": "apps/v1", "kind": "Deployment",
    "metadata": {"name": name, "namespace": ns, "labels": labels},
    "spec": {
        "replicas": replicas,
        "strategy": {"type": "RollingUpdate",
                     "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 1}},
        "selector": {"matchLabels": labels},
        "template": {
            "metadata": {"labels": labels},
            "spec": {
                "serviceAccountName": "apiserver",
                // Preferred, not required: a cluster with fewer nodes than replicas (plus the
                // surge of a rollout) still schedules every replica.
                "affinity": {"podAntiAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [{
                        "weight": 100,
                        "podAffinityTerm": {
                            "labelSelector": {"matchLabels": labels},
                            "topologyKey": "kubernetes.io/hostname",
                        },
                    }],
                }},
                "terminationGracePeriodSeconds": TERMINATION_GRACE_SECONDS,
                "containers": [{
                    "name": name,
                    "image": image,
                    "args": [
                        "serve",
                        format!("--secure-port={port}"),
                        "--tls-cert-file=/var/run/serving-cert/tls.crt",
                        "--tls-private-key-file=/var/run/serving-cert/tls.key",
                        format!("--etcd-servers={}", opts.etcd_servers.join(",")),
                        format!("--shutdown-delay-duration={SHUTDOWN_DELAY_SECONDS}s"),
                    ],
                    "ports": [{"name": "https", "containerPort": port}],
                    "livenessProbe": liveness,
                    "readinessProbe": readiness,
                    "volumeMounts": [cert_mount],
                }],
                "volumes": [cert_volume],
            },
        },
    }})
}

/// At most one replica down at a time through voluntary disruptions (node drains).
fn disruption_budget(name: &str, ns: &str, labels: &Value) -> Value {
    json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
           "metadata": {"name": name, "namespace": ns},
           "spec": {"maxUnavailable": 1, "selector": {"matchLabels": labels}}})
}
