//! The audit flags, with upstream's names and defaults (`k8s.io/apiserver`'s
//! `AuditOptions`: policy file, log backend and webhook backend).

use std::path::PathBuf;
use std::sync::Arc;

use super::backend::{AuditBackend, LogBackend, Union};
use super::filter::Auditor;
use super::policy::{Policy, PolicyError};
use super::webhook_options::AuditWebhookOptions;

/// Flags of auditing.
#[derive(Clone, Debug, Default, clap::Args)]
pub struct AuditOptions {
    /// Path to the file that defines the audit policy configuration.
    #[arg(long)]
    pub audit_policy_file: Option<PathBuf>,
    /// If set, all requests coming to the apiserver will be logged to this file. '-' means
    /// standard out.
    #[arg(long)]
    pub audit_log_path: Option<String>,
    /// The maximum size in megabytes of the audit log file before it gets rotated (0: 100).
    #[arg(long, default_value_t = 0)]
    pub audit_log_maxsize: u64,
    /// The maximum number of old audit log files to retain. Setting a value of 0 will mean
    /// there's no restriction on the number of files.
    #[arg(long, default_value_t = 0)]
    pub audit_log_maxbackup: usize,
    /// The maximum number of days to retain old audit log files based on the timestamp
    /// encoded in their filename (0: no limit).
    #[arg(long, default_value_t = 0)]
    pub audit_log_maxage: u64,
    /// The webhook backend's flags (`--audit-webhook-*`).
    #[command(flatten)]
    pub webhook: AuditWebhookOptions,
}

/// Auditing could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    /// The policy file is not valid.
    #[error(transparent)]
    Policy(#[from] PolicyError),
    /// The log file could not be opened.
    #[error("failed to open audit log file {path}: {source}")]
    Log {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// The webhook backend's flags or its kubeconfig are not valid.
    #[error("audit webhook: {0}")]
    Webhook(String),
}

impl AuditOptions {
    /// The auditor these flags ask for: `None` without a policy file, or without a backend
    /// (a log path or a webhook config file; as upstream, nothing is recorded then). With a
    /// webhook, it starts the webhook's batching task, so it is called on a tokio runtime.
    pub fn build(&self) -> Result<Option<Auditor>, AuditError> {
        let Some(policy_file) = &self.audit_policy_file else {
            return Ok(None);
        };
        let policy = Policy::from_file(policy_file)?;
        let mut backends: Vec<Arc<dyn AuditBackend>> = Vec::new();
        if let Some(path) = self.audit_log_path.as_deref().filter(|p| !p.is_empty()) {
            let backend = LogBackend::open(
                path,
                self.audit_log_maxsize,
                self.audit_log_maxbackup,
                self.audit_log_maxage,
            )
            .map_err(|source| AuditError::Log {
                path: path.to_string(),
                source,
            })?;
            backends.push(Arc::new(backend));
        }
        if let Some(webhook) = self.webhook.build()? {
            backends.push(webhook);
        }
        let backend: Arc<dyn AuditBackend> = match backends.len() {
            0 => return Ok(None),
            1 => backends.remove(0),
            _ => Arc::new(Union(backends)),
        };
        Ok(Some(Auditor::new(policy, backend)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        audit: AuditOptions,
    }

    #[test]
    fn upstream_flag_names() {
        let d = Cli::try_parse_from(["x"]).unwrap().audit;
        assert!(d.audit_policy_file.is_none() && d.audit_log_path.is_none());
        assert_eq!(
            (
                d.audit_log_maxsize,
                d.audit_log_maxbackup,
                d.audit_log_maxage
            ),
            (0, 0, 0)
        );
        assert!(d.build().unwrap().is_none());
        let o = Cli::try_parse_from([
            "x",
            "--audit-policy-file=p.yaml",
            "--audit-log-path=-",
            "--audit-log-maxsize=10",
            "--audit-log-maxbackup=3",
            "--audit-log-maxage=7",
        ])
        .unwrap()
        .audit;
        assert_eq!(o.audit_policy_file, Some(PathBuf::from("p.yaml")));
        assert_eq!(o.audit_log_path.as_deref(), Some("-"));
        assert_eq!(
            (
                o.audit_log_maxsize,
                o.audit_log_maxbackup,
                o.audit_log_maxage
            ),
            (10, 3, 7)
        );
        assert!(matches!(
            o.build(),
            Err(AuditError::Policy(PolicyError::Read { .. }))
        ));
    }
}
