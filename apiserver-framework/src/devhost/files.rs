//! The development host's directory: certificates, the token file, the rules file and one
//! kubeconfig per user, created on first start and reused afterwards.
//!
//! ```text
//! <dir>/ca.crt|key                   the host's CA (serving and client certificates)
//! <dir>/host.crt|key                 the host's serving certificate
//! <dir>/backend.crt|key              a serving certificate for the extension server
//! <dir>/front-proxy-ca.crt|key       the request-header CA
//! <dir>/front-proxy-client.crt|key   the aggregator's client certificate (CN front-proxy-client)
//! <dir>/tokens.csv                   users: token,user,uid,"groups"
//! <dir>/rules.yaml                   who may do what
//! <dir>/<user>.kubeconfig            admin, alice (editor), bob (viewer), the server's identity
//! ```

use std::path::{Path, PathBuf};

use crate::devhost::pki::{Authority, IssuedCert, Usage};
use crate::tls::TlsError;

/// The user names of the generated token file.
pub mod users {
    /// In `system:masters`: may do anything.
    pub const ADMIN: &str = "admin";
    /// In `editors`: may do anything to the extension server's resources.
    pub const ALICE: &str = "alice";
    /// In `viewers`: may read the extension server's resources.
    pub const BOB: &str = "bob";
}

/// The name of the Service the APIServices point at, in the namespace named after the server.
pub(crate) const SERVICE_NAME: &str = "api";

/// The front proxy's common name (the ConfigMap's allowed names).
pub const FRONT_PROXY_CLIENT: &str = "front-proxy-client";

/// The extension server's identity towards the host: `system:serviceaccount:<server>:apiserver`.
pub fn server_identity(server: &str) -> String {
    format!("system:serviceaccount:{server}:apiserver")
}

/// Everything in the host's directory.
pub struct HostFiles {
    /// The directory.
    pub dir: PathBuf,
    /// The host's CA (PEM): trusted by every kubeconfig, and the `caBundle` of the
    /// extension server's APIServices.
    pub ca_pem: String,
    /// The host's serving certificate.
    pub host_cert: IssuedCert,
    /// The extension server's serving certificate (for `--tls-cert-file`).
    pub backend_cert: IssuedCert,
    /// The request-header CA (PEM).
    pub front_proxy_ca_pem: String,
    /// The aggregator's client certificate.
    pub front_proxy_client: IssuedCert,
    /// The token file.
    pub tokens_path: PathBuf,
    /// The rules file.
    pub rules_path: PathBuf,
}

fn random_token() -> String {
    super::tokens::random_token_of(32)
}

fn write_if_missing(path: &Path, contents: impl FnOnce() -> String) -> Result<(), TlsError> {
    if path.exists() {
        return Ok(());
    }
    crate::fs::write_atomically(path, contents().as_bytes(), crate::fs::PRIVATE_FILE).map_err(
        |source| TlsError::Io {
            path: path.to_path_buf(),
            source,
        },
    )
}

/// The default rules: discovery for everyone authenticated, editors and viewers of `groups`,
/// and what the extension server `server` needs from its host.
pub(crate) fn default_rules(server: &str, groups: &[String]) -> String {
    let identity = server_identity(server);
    let groups = serde_json::to_string(groups).unwrap_or_default();
    format!(
        r#"# Who may do what on this development host (RBAC-shaped rules bound to users and groups).
rules:
# Every authenticated user may read discovery, OpenAPI and the version.
- groups: ["system:authenticated"]
  verbs: ["get"]
  nonResourceURLs: ["/api", "/api/*", "/apis", "/apis/*", "/openapi/*", "/version", "/version/"]
# Editors may do anything to the extension server's resources.
- groups: ["editors"]
  verbs: ["*"]
  apiGroups: {groups}
  resources: ["*"]
# Viewers may read them.
- groups: ["viewers"]
  verbs: ["get", "list", "watch"]
  apiGroups: {groups}
  resources: ["*"]
# Getters may get one at a time, but neither list nor watch them.
- groups: ["getters"]
  verbs: ["get"]
  apiGroups: {groups}
  resources: ["*"]
# The extension server delegates authentication and authorization to the host
# (system:auth-delegator) ...
- users: ["{identity}"]
  verbs: ["create"]
  apiGroups: ["authentication.k8s.io", "authorization.k8s.io"]
  resources: ["tokenreviews", "subjectaccessreviews"]
# ... reads kube-system/extension-apiserver-authentication (extension-apiserver-authentication-reader) ...
- users: ["{identity}"]
  verbs: ["get", "list", "watch"]
  apiGroups: [""]
  resources: ["configmaps"]
  namespaces: ["kube-system"]
# ... and watches namespaces.
- users: ["{identity}"]
  verbs: ["get", "list", "watch"]
  apiGroups: [""]
  resources: ["namespaces"]
# ... and reads the webhook configurations and validating admission policies with their
# bindings (its admission webhooks and policies) ...
- users: ["{identity}"]
  verbs: ["get", "list", "watch"]
  apiGroups: ["admissionregistration.k8s.io"]
  resources: ["mutatingwebhookconfigurations", "validatingwebhookconfigurations", "validatingadmissionpolicies", "validatingadmissionpolicybindings", "mutatingadmissionpolicies", "mutatingadmissionpolicybindings"]
# ... and ConfigMaps, the usual parameters of policies.
- users: ["{identity}"]
  verbs: ["get", "list", "watch"]
  apiGroups: [""]
  resources: ["configmaps"]
"#
    )
}

impl HostFiles {
    /// Creates what is missing in `dir` for extension server `server` serving `groups`.
    pub fn prepare(dir: &Path, server: &str, groups: &[String]) -> Result<Self, TlsError> {
        let ca = Authority::load_or_create(dir, "ca", "dev-host-ca")?;
        let local = ["localhost", "127.0.0.1", "::1"];
        let host_cert = ca.load_or_issue(dir, "host", Usage::Server, &local)?;
        // The aggregator checks the backend's name as `<service>.<namespace>.svc`.
        let service_dns = format!("{SERVICE_NAME}.{server}.svc");
        let backend_cert = ca.load_or_issue(
            dir,
            "backend",
            Usage::Server,
            &[&service_dns, "localhost", "127.0.0.1", "::1"],
        )?;
        let fp = Authority::load_or_create(dir, "front-proxy-ca", "dev-host-front-proxy-ca")?;
        let front_proxy_client = fp.load_or_issue(
            dir,
            FRONT_PROXY_CLIENT,
            Usage::Client,
            &[FRONT_PROXY_CLIENT],
        )?;
        let tokens_path = dir.join("tokens.csv");
        let identity = server_identity(server);
        write_if_missing(&tokens_path, || {
            format!(
                "# token,user,uid,\"groups\"\n{},{},1,\"system:masters\"\n{},{},2,\"editors\"\n{},{},3,\"viewers\"\n{},{identity},4,\"system:serviceaccounts\"\n",
                random_token(),
                users::ADMIN,
                random_token(),
                users::ALICE,
                random_token(),
                users::BOB,
                random_token(),
            )
        })?;
        let rules_path = dir.join("rules.yaml");
        write_if_missing(&rules_path, || default_rules(server, groups))?;
        Ok(HostFiles {
            dir: dir.to_path_buf(),
            ca_pem: ca.cert_pem,
            host_cert,
            backend_cert,
            front_proxy_ca_pem: fp.cert_pem,
            front_proxy_client,
            tokens_path,
            rules_path,
        })
    }

    /// The kubeconfig file of `user`.
    pub fn kubeconfig_path(&self, user: &str) -> PathBuf {
        let file = user.rsplit(':').next().unwrap_or(user);
        self.dir.join(format!("{file}.kubeconfig"))
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn mode(path: &Path) -> u32 {
        std::fs::symlink_metadata(path)
            .unwrap()
            .permissions()
            .mode()
            & 0o7777
    }

    #[test]
    fn keys_and_tokens_are_created_private() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("dev-host");
        let files = HostFiles::prepare(&dir, "wardle", &["wardle.example.com".into()]).unwrap();
        assert_eq!(mode(&dir), crate::fs::PRIVATE_DIR);
        let mut keys = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            assert!(!name.contains("tmp"), "left behind: {name}");
            if name.ends_with(".crt") {
                assert_eq!(mode(&path) & 0o022, 0, "{name}");
            } else {
                assert_eq!(mode(&path), crate::fs::PRIVATE_FILE, "{name}");
                keys += name.ends_with(".key") as usize;
            }
        }
        assert_eq!(keys, 5);
        assert_eq!(mode(&files.tokens_path), crate::fs::PRIVATE_FILE);
        assert_eq!(mode(&files.rules_path), crate::fs::PRIVATE_FILE);
    }
}
