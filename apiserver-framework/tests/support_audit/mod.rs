//! An audited server of flunders over real HTTPS on loopback, for the audit tests: an audit
//! policy file and a JSON-lines log set up as the real flags do.

#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::Arc;

use apiserver_framework::audit::{AuditOptions, Auditor};
use apiserver_framework::authn::StaticTokens;
use apiserver_framework::authz::Authorizer;
use apiserver_framework::prelude::*;
use apiserver_framework::server::GenericApiServer;
use apiserver_framework::server::serve::{self, HandlerChain, RunningServer};
use apiserver_framework::tls::{ServingCert, install_crypto_provider};

pub use crate::support_kinds::Flunder;

/// The flunders of namespace `ns`.
pub fn flunders(ns: &str) -> String {
    format!("/apis/wardle.example.com/v1alpha1/namespaces/{ns}/flunders")
}

/// A running audited server and how to reach it.
pub struct Audited {
    /// The listener.
    pub running: RunningServer,
    /// A client trusting the server's CA.
    pub http: reqwest::Client,
    /// `https://127.0.0.1:<port>`.
    pub url: String,
    /// The audit log.
    pub log: PathBuf,
    /// The temporary directory (certificates, policy, log).
    pub dir: tempfile::TempDir,
}

/// What [`Audited::start_with`] serves.
pub struct Setup<'a> {
    /// The server's name.
    pub name: &'a str,
    /// The audit policy (YAML).
    pub policy: &'a str,
    /// The audit log's path in the temporary directory.
    pub log: &'a str,
    /// The audit options; the policy file and the log path are set by [`Audited::start_with`].
    pub options: AuditOptions,
    /// The bearer tokens and their users.
    pub users: StaticTokens,
    /// The authorizer.
    pub authorizer: Arc<dyn Authorizer>,
    /// The client, to which the server's CA is added.
    pub client: reqwest::ClientBuilder,
}

impl Audited {
    /// Serves flunders as `setup` says.
    pub async fn start_with(setup: Setup<'_>) -> Audited {
        install_crypto_provider();
        let dir = tempfile::tempdir().unwrap();
        let cert =
            ServingCert::self_signed(&dir.path().join("certs"), &["127.0.0.1".into()]).unwrap();
        let server = GenericApiServer::builder(setup.name)
            .group(Group::new("wardle.example.com").resource::<Flunder>())
            .build();
        let policy = dir.path().join("policy.yaml");
        std::fs::write(&policy, setup.policy).unwrap();
        let log = dir.path().join(setup.log);
        let auditor: Auditor = AuditOptions {
            audit_policy_file: Some(policy),
            audit_log_path: Some(log.display().to_string()),
            ..setup.options
        }
        .build()
        .unwrap()
        .unwrap();
        let chain = HandlerChain::new(Arc::new(server), Arc::new(setup.users), setup.authorizer)
            .with_audit(Arc::new(auditor));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let running =
            serve::RunningServer::start(listener, cert.server_config().unwrap(), Arc::new(chain))
                .unwrap();
        let http = setup
            .client
            .use_preconfigured_tls(apiserver_framework::testing::tls::http1_config(
                &cert.ca_pem,
            ))
            .build()
            .unwrap();
        Audited {
            url: format!("https://127.0.0.1:{}", running.addr.port()),
            running,
            http,
            log,
            dir,
        }
    }
}

impl Audited {
    /// A request `method path` to the server as the bearer of `token`.
    pub fn request(
        &self,
        token: &str,
        method: reqwest::Method,
        path: &str,
    ) -> reqwest::RequestBuilder {
        self.http
            .request(method, format!("{}{path}", self.url))
            .bearer_auth(token)
    }
}

/// The `Audit-Id` header of the answer `res` (empty when it has none).
pub fn audit_id(res: &reqwest::Response) -> String {
    res.headers()
        .get("audit-id")
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default()
}
