//! The audit webhook's flags, with upstream's names and defaults (`k8s.io/apiserver`'s
//! `AuditWebhookOptions` with its batch and truncate options).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use super::AuditError;
use super::backend::AuditBackend;
use super::blocking::BlockingBackend;
use super::buffered::{BatchConfig, BufferedBackend};
use super::truncate::Truncate;
use super::webhook::{Backoff, WebhookClient};
use crate::duration::GoDuration;

/// Flags of the audit webhook backend.
#[derive(Clone, Debug, clap::Args)]
pub struct AuditWebhookOptions {
    /// Path to a kubeconfig formatted file that defines the audit webhook configuration.
    #[arg(long)]
    pub audit_webhook_config_file: Option<PathBuf>,
    /// The amount of time to wait before retrying the first failed request.
    #[arg(long, default_value = "10s")]
    pub audit_webhook_initial_backoff: GoDuration,
    /// Strategy for sending audit events. Blocking indicates sending events should block
    /// server responses. Batch causes the backend to buffer and write events asynchronously.
    /// Known modes are batch,blocking,blocking-strict.
    #[arg(long, default_value = "batch")]
    pub audit_webhook_mode: String,
    /// The size of the buffer to store events before batching and writing.
    #[arg(long, default_value_t = 10000)]
    pub audit_webhook_batch_buffer_size: usize,
    /// The maximum size of a batch.
    #[arg(long, default_value_t = 400)]
    pub audit_webhook_batch_max_size: usize,
    /// The amount of time to wait before force writing the batch that hadn't reached the max
    /// size.
    #[arg(long, default_value = "30s")]
    pub audit_webhook_batch_max_wait: GoDuration,
    /// Whether batching throttling is enabled.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub audit_webhook_batch_throttle_enable: bool,
    /// Maximum average number of batches per second.
    #[arg(long, default_value_t = 10.0)]
    pub audit_webhook_batch_throttle_qps: f64,
    /// Maximum number of requests sent at the same moment if ThrottleQPS was not utilized
    /// before.
    #[arg(long, default_value_t = 15)]
    pub audit_webhook_batch_throttle_burst: u32,
    /// Whether event and batch truncating is enabled.
    #[arg(long, default_value_t = false, action = clap::ArgAction::Set)]
    pub audit_webhook_truncate_enabled: bool,
    /// Maximum size of the batch sent to the underlying backend, in bytes.
    #[arg(long, default_value_t = 10 * 1024 * 1024)]
    pub audit_webhook_truncate_max_batch_size: usize,
    /// Maximum size of the audit event sent to the underlying backend, in bytes.
    #[arg(long, default_value_t = 100 * 1024)]
    pub audit_webhook_truncate_max_event_size: usize,
    /// API group and version used for serializing audit events written to webhook.
    #[arg(long, default_value = "audit.k8s.io/v1")]
    pub audit_webhook_version: String,
}

impl Default for AuditWebhookOptions {
    fn default() -> Self {
        AuditWebhookOptions {
            audit_webhook_config_file: None,
            audit_webhook_initial_backoff: GoDuration(Duration::from_secs(10)),
            audit_webhook_mode: "batch".into(),
            audit_webhook_batch_buffer_size: 10000,
            audit_webhook_batch_max_size: 400,
            audit_webhook_batch_max_wait: GoDuration(Duration::from_secs(30)),
            audit_webhook_batch_throttle_enable: true,
            audit_webhook_batch_throttle_qps: 10.0,
            audit_webhook_batch_throttle_burst: 15,
            audit_webhook_truncate_enabled: false,
            audit_webhook_truncate_max_batch_size: 10 * 1024 * 1024,
            audit_webhook_truncate_max_event_size: 100 * 1024,
            audit_webhook_version: "audit.k8s.io/v1".into(),
        }
    }
}

impl AuditWebhookOptions {
    /// The webhook backend these flags ask for: `None` without a config file. In batch mode
    /// it starts its batching task, so it is called on a tokio runtime.
    pub(crate) fn build(&self) -> Result<Option<Arc<dyn AuditBackend>>, AuditError> {
        let Some(path) = &self.audit_webhook_config_file else {
            return Ok(None);
        };
        let invalid = |message: String| AuditError::Webhook(message);
        let mode = self.audit_webhook_mode.as_str();
        if !matches!(mode, "batch" | "blocking" | "blocking-strict") {
            return Err(invalid(format!(
                "invalid audit webhook mode {mode}, allowed modes are \"batch,blocking,blocking-strict\""
            )));
        }
        if self.audit_webhook_version != "audit.k8s.io/v1" {
            return Err(invalid(format!(
                "--audit-webhook-version {:?}: only audit.k8s.io/v1 is served",
                self.audit_webhook_version
            )));
        }
        if self.audit_webhook_batch_buffer_size == 0 || self.audit_webhook_batch_max_size == 0 {
            return Err(invalid(
                "--audit-webhook-batch-buffer-size and --audit-webhook-batch-max-size must be positive"
                    .into(),
            ));
        }
        let truncate = Truncate {
            limits: self.truncate_limits()?,
        };
        let backoff = Backoff::from_initial(self.audit_webhook_initial_backoff.0);
        let client = WebhookClient::from_kubeconfig(path, backoff)
            .map_err(|e| invalid(format!("{}: {e}", path.display())))?;
        if mode != "batch" {
            let strict = mode == "blocking-strict";
            return Ok(Some(Arc::new(BlockingBackend::new(
                client, truncate, strict,
            ))));
        }
        let config = BatchConfig {
            buffer_size: self.audit_webhook_batch_buffer_size,
            max_batch_size: self.audit_webhook_batch_max_size,
            max_batch_wait: self.audit_webhook_batch_max_wait.0,
            throttle: self.audit_webhook_batch_throttle_enable.then_some((
                self.audit_webhook_batch_throttle_qps,
                self.audit_webhook_batch_throttle_burst,
            )),
        };
        Ok(Some(Arc::new(BufferedBackend::start(
            config, truncate, client,
        ))))
    }

    /// The truncating limits, checked as upstream checks them; `None` when truncating is off.
    fn truncate_limits(&self) -> Result<Option<(usize, usize)>, AuditError> {
        if !self.audit_webhook_truncate_enabled {
            return Ok(None);
        }
        let (event, batch) = (
            self.audit_webhook_truncate_max_event_size,
            self.audit_webhook_truncate_max_batch_size,
        );
        if event == 0 {
            return Err(AuditError::Webhook(format!(
                "invalid audit truncate webhook max event size {event}, must be a positive number"
            )));
        }
        if batch < event {
            return Err(AuditError::Webhook(format!(
                "invalid audit truncate webhook max batch size {batch}, must be greater than max event size ({event})"
            )));
        }
        Ok(Some((event, batch)))
    }
}
