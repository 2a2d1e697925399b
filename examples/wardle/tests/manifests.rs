//! `wardle manifests`: the real binary's output parsed as Kubernetes objects, the serving
//! certificate checked against the APIService's CA, and the CA reused across runs.

#[path = "support/api_service.rs"]
mod api_service;
#[path = "support/process.rs"]
mod process;

use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use base64::Engine as _;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{
    Namespace, PersistentVolumeClaim, Secret, Service, ServiceAccount,
};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, RoleBinding};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::ServerCertVerifier as _;
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use serde::Deserialize;
use serde_json::Value;

use api_service::{ApiService, ServiceReference};
use process::run_ok;

/// Everything `wardle manifests` printed, by kind.
#[derive(Default)]
struct Manifests {
    namespaces: Vec<Namespace>,
    service_accounts: Vec<ServiceAccount>,
    secrets: Vec<Secret>,
    claims: Vec<PersistentVolumeClaim>,
    deployments: Vec<Deployment>,
    services: Vec<Service>,
    api_services: Vec<ApiService>,
    role_bindings: Vec<RoleBinding>,
    cluster_role_bindings: Vec<ClusterRoleBinding>,
    cluster_roles: Vec<ClusterRole>,
}

fn typed<T: serde::de::DeserializeOwned>(doc: Value) -> T {
    serde_json::from_value(doc.clone())
        .unwrap_or_else(|e| panic!("{e}: not a valid {}: {doc:#}", std::any::type_name::<T>()))
}

/// Runs `wardle manifests --cert-dir <cert_dir> --image example/wardle:1` and parses every
/// YAML document of its output.
fn manifests(cert_dir: &Path) -> Manifests {
    let output = run_ok(
        Command::new(env!("CARGO_BIN_EXE_wardle"))
            .args(["manifests", "--cert-dir"])
            .arg(cert_dir)
            .args(["--image", "example/wardle:1"]),
        "wardle manifests",
    );
    let text = String::from_utf8(output.stdout).expect("UTF-8 output");
    let mut m = Manifests::default();
    for document in serde_yaml_ng::Deserializer::from_str(&text) {
        let doc = Value::deserialize(document).expect("a YAML document");
        let kind = doc["kind"].as_str().unwrap_or_default().to_string();
        match kind.as_str() {
            "Namespace" => m.namespaces.push(typed(doc)),
            "ServiceAccount" => m.service_accounts.push(typed(doc)),
            "Secret" => m.secrets.push(typed(doc)),
            "PersistentVolumeClaim" => m.claims.push(typed(doc)),
            "Deployment" => m.deployments.push(typed(doc)),
            "Service" => m.services.push(typed(doc)),
            "APIService" => m.api_services.push(typed(doc)),
            "RoleBinding" => m.role_bindings.push(typed(doc)),
            "ClusterRoleBinding" => m.cluster_role_bindings.push(typed(doc)),
            "ClusterRole" => m.cluster_roles.push(typed(doc)),
            other => panic!("unexpected kind {other:?} in: {doc:#}"),
        }
    }
    m
}

fn one<'a, T>(items: &'a [T], what: &str) -> &'a T {
    assert_eq!(items.len(), 1, "expected exactly one {what}");
    &items[0]
}

fn b64_decode(text: &str) -> Vec<u8> {
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .expect("valid base64")
}

/// The one certificate of a PEM text.
fn pem_cert(pem: &[u8]) -> CertificateDer<'static> {
    let certs: Vec<_> = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<_, _>>()
        .expect("PEM certificates");
    assert_eq!(certs.len(), 1, "expected one certificate");
    certs.into_iter().next().unwrap()
}

#[test]
fn manifests_deploy_the_server_behind_an_apiservice() {
    let dir = tempfile::tempdir().unwrap();
    let m = manifests(dir.path());

    // Namespace, ServiceAccount and volume claim, all in the server's namespace.
    let ns = one(&m.namespaces, "Namespace");
    assert_eq!(ns.metadata.name.as_deref(), Some("wardle"));
    let sa = one(&m.service_accounts, "ServiceAccount");
    let sa_name = sa.metadata.name.clone().unwrap();
    assert_eq!(sa.metadata.namespace.as_deref(), Some("wardle"));
    let claim = one(&m.claims, "PersistentVolumeClaim");
    assert_eq!(claim.metadata.namespace.as_deref(), Some("wardle"));

    // The APIService: group, version, Service reference and the CA.
    // One APIService per served version (Flunder is served in v1alpha1 and v1beta1), the
    // same but for the version; the v1alpha1 one is checked in full.
    let mut names: Vec<_> = m
        .api_services
        .iter()
        .filter_map(|a| a.metadata.name.clone())
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["v1alpha1.wardle.example.com", "v1beta1.wardle.example.com"]
    );
    assert_eq!(
        m.api_services[0].spec.ca_bundle,
        m.api_services[1].spec.ca_bundle
    );
    let api = m
        .api_services
        .iter()
        .find(|a| a.spec.version == "v1alpha1")
        .unwrap();
    assert_eq!(api.api_version, "apiregistration.k8s.io/v1");
    assert_eq!(api.kind, "APIService");
    assert_eq!(
        api.metadata.name.as_deref(),
        Some("v1alpha1.wardle.example.com")
    );
    assert_eq!(api.spec.group, "wardle.example.com");
    assert_eq!(api.spec.version, "v1alpha1");
    assert_eq!(
        api.spec.service,
        ServiceReference {
            namespace: "wardle".into(),
            name: "api".into(),
            port: 443
        }
    );
    assert!(api.spec.group_priority_minimum > 0 && api.spec.version_priority > 0);
    let ca_pem = b64_decode(&api.spec.ca_bundle);
    let ca = pem_cert(&ca_pem);

    // The Secret's serving certificate is issued by that CA for the Service's DNS names.
    let secret = one(&m.secrets, "Secret");
    let secret_name = secret.metadata.name.clone().unwrap();
    assert_eq!(secret.metadata.namespace.as_deref(), Some("wardle"));
    assert_eq!(secret.type_.as_deref(), Some("kubernetes.io/tls"));
    let data = secret.data.as_ref().expect("Secret data");
    let leaf = pem_cert(&data["tls.crt"].0);
    assert!(
        String::from_utf8_lossy(&data["tls.key"].0).contains("PRIVATE KEY"),
        "tls.key holds a private key"
    );
    let (_, ca_x509) = x509_parser::parse_x509_certificate(&ca).unwrap();
    let (_, leaf_x509) = x509_parser::parse_x509_certificate(&leaf).unwrap();
    assert!(ca_x509.is_ca(), "the caBundle is a CA certificate");
    assert_eq!(leaf_x509.issuer(), ca_x509.subject());
    let sans: Vec<String> = leaf_x509
        .subject_alternative_name()
        .unwrap()
        .expect("a SAN extension")
        .value
        .general_names
        .iter()
        .filter_map(|n| match n {
            x509_parser::extensions::GeneralName::DNSName(d) => Some(d.to_string()),
            _ => None,
        })
        .collect();
    assert!(sans.iter().any(|s| s == "api.wardle.svc"), "SANs: {sans:?}");
    // What the aggregator does: verify the chain to the caBundle for `<service>.<ns>.svc`.
    let mut roots = rustls::RootCertStore::empty();
    roots.add(ca.clone()).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider)
        .build()
        .unwrap();
    let name = ServerName::try_from("api.wardle.svc").unwrap();
    verifier
        .verify_server_cert(&leaf, &[], &name, &[], UnixTime::now())
        .expect("the serving certificate verifies against the caBundle");
    let other = ServerName::try_from("api.other.svc").unwrap();
    assert!(
        verifier
            .verify_server_cert(&leaf, &[], &other, &[], UnixTime::now())
            .is_err(),
        "the certificate is not valid for another Service"
    );

    // The Deployment runs `serve` with the Secret mounted and HTTPS probes on its port.
    let deployment = one(&m.deployments, "Deployment");
    assert_eq!(deployment.metadata.namespace.as_deref(), Some("wardle"));
    let pod = deployment
        .spec
        .as_ref()
        .unwrap()
        .template
        .spec
        .as_ref()
        .unwrap();
    assert_eq!(pod.service_account_name.as_deref(), Some(sa_name.as_str()));
    let container = one(&pod.containers, "container");
    assert_eq!(container.image.as_deref(), Some("example/wardle:1"));
    let args = container.args.clone().unwrap_or_default();
    assert_eq!(args.first().map(String::as_str), Some("serve"), "{args:?}");
    let port = one(container.ports.as_deref().unwrap(), "container port").container_port;
    assert!(
        args.contains(&format!("--secure-port={port}")),
        "serves on the container port: {args:?}"
    );
    for (probe, path) in [
        (container.liveness_probe.as_ref(), "/livez"),
        (container.readiness_probe.as_ref(), "/readyz"),
    ] {
        let get = probe
            .and_then(|p| p.http_get.as_ref())
            .unwrap_or_else(|| panic!("an httpGet probe of {path}"));
        assert_eq!(get.path.as_deref(), Some(path));
        assert_eq!(get.scheme.as_deref(), Some("HTTPS"));
        assert_eq!(get.port, IntOrString::Int(port));
    }
    let volume = pod
        .volumes
        .as_deref()
        .unwrap_or_default()
        .iter()
        .find(|v| {
            v.secret
                .as_ref()
                .is_some_and(|s| s.secret_name.as_deref() == Some(secret_name.as_str()))
        })
        .expect("a volume of the serving Secret");
    let mount = container
        .volume_mounts
        .as_deref()
        .unwrap_or_default()
        .iter()
        .find(|m| m.name == volume.name)
        .expect("the Secret is mounted");
    for (flag, file) in [
        ("--tls-cert-file", "tls.crt"),
        ("--tls-private-key-file", "tls.key"),
    ] {
        let expected = format!("{flag}={}/{file}", mount.mount_path);
        assert!(args.contains(&expected), "{expected} in {args:?}");
    }
    let claim_name = claim.metadata.name.as_deref().unwrap();
    assert!(
        pod.volumes.as_deref().unwrap_or_default().iter().any(|v| v
            .persistent_volume_claim
            .as_ref()
            .is_some_and(|c| c.claim_name == claim_name)),
        "the data volume uses the claim"
    );

    // The Service is the one the APIService names, and targets the container port.
    let service = one(&m.services, "Service");
    assert_eq!(service.metadata.name.as_deref(), Some("api"));
    assert_eq!(service.metadata.namespace.as_deref(), Some("wardle"));
    let spec = service.spec.as_ref().unwrap();
    let service_port = one(spec.ports.as_deref().unwrap(), "Service port");
    assert_eq!(service_port.port, 443);
    assert_eq!(service_port.target_port, Some(IntOrString::Int(port)));
    let pod_labels = deployment
        .spec
        .as_ref()
        .unwrap()
        .template
        .metadata
        .as_ref()
        .and_then(|m| m.labels.clone())
        .unwrap_or_default();
    let selector = spec.selector.clone().unwrap_or_default();
    assert!(!selector.is_empty());
    assert!(
        selector.iter().all(|(k, v)| pod_labels.get(k) == Some(v)),
        "the Service selects the Deployment's pods"
    );

    // RBAC: read the authentication ConfigMap, delegate authentication and authorization.
    let subject_is_sa = |subjects: &Option<Vec<k8s_openapi::api::rbac::v1::Subject>>| {
        subjects.as_deref().unwrap_or_default().iter().any(|s| {
            s.kind == "ServiceAccount"
                && s.name == sa_name
                && s.namespace.as_deref() == Some("wardle")
        })
    };
    let reader = one(&m.role_bindings, "RoleBinding");
    assert_eq!(reader.metadata.namespace.as_deref(), Some("kube-system"));
    assert_eq!(reader.role_ref.kind, "Role");
    assert_eq!(
        reader.role_ref.name,
        "extension-apiserver-authentication-reader"
    );
    assert!(subject_is_sa(&reader.subjects));
    let delegator = m
        .cluster_role_bindings
        .iter()
        .find(|b| b.role_ref.name == "system:auth-delegator")
        .expect("a ClusterRoleBinding to system:auth-delegator");
    assert_eq!(delegator.role_ref.kind, "ClusterRole");
    assert!(subject_is_sa(&delegator.subjects));
    // Every other ClusterRoleBinding binds a ClusterRole of the manifests.
    for binding in &m.cluster_role_bindings {
        if binding.role_ref.name == "system:auth-delegator" {
            continue;
        }
        assert!(
            m.cluster_roles
                .iter()
                .any(|r| r.metadata.name.as_deref() == Some(binding.role_ref.name.as_str())),
            "{} binds a ClusterRole that is not in the manifests",
            binding.metadata.name.as_deref().unwrap_or_default()
        );
        assert!(subject_is_sa(&binding.subjects));
    }
}

#[test]
fn a_second_run_reuses_the_ca() {
    let dir = tempfile::tempdir().unwrap();
    let first = manifests(dir.path());
    let second = manifests(dir.path());
    let bundle = |m: &Manifests| m.api_services[0].spec.ca_bundle.clone();
    assert_eq!(bundle(&first), bundle(&second));
    let tls_crt = |m: &Manifests| {
        one(&m.secrets, "Secret").data.as_ref().unwrap()["tls.crt"]
            .0
            .clone()
    };
    assert_eq!(tls_crt(&first), tls_crt(&second));

    // Another directory is another CA.
    let other = tempfile::tempdir().unwrap();
    assert_ne!(bundle(&first), bundle(&manifests(other.path())));
}
