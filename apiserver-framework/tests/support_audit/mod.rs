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
use apiserver_framework::server::serve::{HandlerChain, RunningServer};

use crate::support_chain::serve_chain_in;
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
        let log_name = setup.log;
        let served = serve_chain_in(|dir| {
            let server = GenericApiServer::builder(setup.name)
                .group(Group::new("wardle.example.com").resource::<Flunder>())
                .build();
            let policy = dir.join("policy.yaml");
            std::fs::write(&policy, setup.policy).unwrap();
            let auditor: Auditor = AuditOptions {
                audit_policy_file: Some(policy),
                audit_log_path: Some(dir.join(log_name).display().to_string()),
                ..setup.options
            }
            .build()
            .unwrap()
            .unwrap();
            HandlerChain::new(Arc::new(server), Arc::new(setup.users), setup.authorizer)
                .with_audit(Arc::new(auditor))
        })
        .await
        .unwrap();
        let http = setup
            .client
            .use_preconfigured_tls(apiserver_framework::testing::tls::http1_config(
                &served.ca_pem,
            ))
            .build()
            .unwrap();
        Audited {
            url: served.url,
            running: served.running,
            http,
            log: served.dir.path().join(log_name),
            dir: served.dir,
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
