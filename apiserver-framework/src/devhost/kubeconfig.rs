//! Writing a kubeconfig that points `kubectl` and kube-rs at a local server.

use std::path::Path;

use base64::Engine;
use serde_json::json;

/// The kubeconfig (YAML) for a server at `server_url` trusted through `ca_pem`, with a bearer
/// `token`; cluster, user and context are all named `name`.
pub fn render(name: &str, server_url: &str, ca_pem: &str, token: &str) -> String {
    let ca = base64::engine::general_purpose::STANDARD.encode(ca_pem.as_bytes());
    let doc = json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": {"server": server_url, "certificate-authority-data": ca}}],
        "users": [{"name": name, "user": {"token": token}}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name}}],
        "current-context": name,
        "preferences": {},
    });
    serde_yaml_ng::to_string(&doc).unwrap_or_default()
}

/// Writes the kubeconfig atomically (under a random temporary name, then renamed), created
/// readable only by the owner since it holds a credential.
pub fn write(path: &Path, contents: &str) -> std::io::Result<()> {
    crate::fs::write_atomically(path, contents.as_bytes(), crate::fs::PRIVATE_FILE)
}
