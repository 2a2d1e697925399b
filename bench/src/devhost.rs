//! The development host as a process of its own (`wardle dev-host`: the framework's aggregator,
//! token file, authorization rules and namespaces), and the flags that put an extension server
//! behind it with delegated authentication and authorization, as upstream's extension servers
//! spell them.

use std::path::{Path, PathBuf};
use std::time::Duration;

use apiserver_framework::devhost::files::{self, HostFiles};
use apiserver_framework::devhost::tokens::TokenFile;
use bytes::Bytes;
use http::{Method, StatusCode};

use crate::client::{Error, Target, Trust};
use crate::process::{Proc, free_addr};
use crate::requests::call;
use crate::tls::Pki;

/// The extension's name: its namespace and identity on the host.
pub const EXTENSION: &str = "wardle";

/// How long the host may take to become ready.
const READY_WITHIN: Duration = Duration::from_secs(60);

/// A running development host, killed when dropped.
pub struct Host {
    /// The process.
    pub proc: Proc,
    /// Its files: CA, serving and backend certificates, tokens, kubeconfigs.
    pub files: HostFiles,
    /// The host itself, as its admin (`system:masters`).
    pub via: Target,
    /// Client settings trusting the host's CA (which also issued the backend certificate).
    pub trust: Trust,
    /// The admin's bearer token.
    pub admin: String,
}

impl Host {
    /// Starts a host in `dir` (made afresh) whose APIService points at `backend`, checked for
    /// availability every `check_every`, and waits until it is ready.
    pub async fn start(
        dir: &Path,
        backend: std::net::SocketAddr,
        check_every: &str,
    ) -> Result<Host, Error> {
        let host_dir = dir.join("dev-host");
        // The host's files, made here so that the bench knows the CA and the admin's token;
        // the host reuses them.
        let host_files = HostFiles::prepare(&host_dir, EXTENSION, &["wardle.example.com".into()])?;
        let tokens = TokenFile::read(&host_files.tokens_path)?;
        let admin = tokens
            .token_of(files::users::ADMIN)
            .ok_or("the host's token file has no admin")?
            .to_string();
        let trust = Trust::from_pem(host_files.ca_pem.as_bytes())?;
        let host_addr = free_addr();
        let args: Vec<String> = vec![
            "dev-host".into(),
            "--bind-address".into(),
            "127.0.0.1".into(),
            "--secure-port".into(),
            host_addr.port().to_string(),
            "--dir".into(),
            path(&host_dir),
            "--backend-address".into(),
            backend.to_string(),
            "--availability-check-interval".into(),
            check_every.into(),
        ];
        let log = dir.join("dev-host.log");
        let mut proc = Proc::role("wardle", &args, dir, &log)?;
        let via = Target::new(host_addr, trust.clone(), &admin);
        proc.wait_ready(&via, READY_WITHIN)
            .await
            .map_err(|e| format!("the dev host: {e}; its log ends with:\n{}", log_tail(&log)))?;
        Ok(Host {
            proc,
            files: host_files,
            via,
            trust,
            admin,
        })
    }

    /// The flags that serve an extension of this host on `port` of 127.0.0.1: the host's
    /// backend certificate, and the extension identity's kubeconfig for delegated
    /// authentication, authorization and the host's API.
    pub fn serving_args(&self, port: u16) -> Vec<String> {
        let identity = path(
            &self
                .files
                .kubeconfig_path(&files::server_identity(EXTENSION)),
        );
        vec![
            "--bind-address".into(),
            "127.0.0.1".into(),
            "--secure-port".into(),
            port.to_string(),
            "--tls-cert-file".into(),
            path(&self.files.backend_cert.cert_path),
            "--tls-private-key-file".into(),
            path(&self.files.backend_cert.key_path),
            "--authentication-kubeconfig".into(),
            identity.clone(),
            "--authorization-kubeconfig".into(),
            identity.clone(),
            "--kubeconfig".into(),
            identity,
        ]
    }

    /// The backend certificate and key, and trust of the host's CA: what a bare server beside
    /// the extensions serves with.
    pub fn backend_pki(&self) -> Pki {
        Pki {
            cert_file: self.files.backend_cert.cert_path.clone(),
            key_file: self.files.backend_cert.key_path.clone(),
            trust: self.trust.clone(),
        }
    }

    /// `addr` as the host's admin, with the host's trust: how the bench reaches an extension
    /// directly (a bearer token the extension reviews with the host).
    pub fn target(&self, addr: std::net::SocketAddr) -> Target {
        Target::new(addr, self.trust.clone(), &self.admin)
    }

    /// Creates the namespace `name` on the host.
    pub async fn namespace(&self, name: &str) -> Result<(), Error> {
        let body = serde_json::to_vec(&serde_json::json!({
            "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name},
        }))?;
        call(
            &self.via,
            Method::POST,
            "/api/v1/namespaces",
            Bytes::from(body),
            StatusCode::CREATED,
        )
        .await?;
        Ok(())
    }
}

fn path(p: &Path) -> String {
    p.display().to_string()
}

/// The last lines of a server's log, for an error message (the work directory is removed when
/// the run ends).
pub fn log_tail(path: &Path) -> String {
    let log =
        std::fs::read_to_string(path).unwrap_or_else(|e| format!("({}: {e})", path.display()));
    let lines: Vec<&str> = log.lines().collect();
    lines[lines.len().saturating_sub(20)..].join("\n")
}

/// A fresh directory `name` under `work`.
pub fn fresh_dir(work: &Path, name: &str) -> Result<PathBuf, Error> {
    let dir = work.join(name);
    if dir.exists() {
        std::fs::remove_dir_all(&dir)?;
    }
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}
