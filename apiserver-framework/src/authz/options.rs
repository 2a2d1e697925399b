//! The delegated authorization flags, with upstream's names and defaults
//! (`DelegatingAuthorizationOptions`): where the host cluster is, how long its answers are
//! cached, and which paths need no authorization.

use std::path::PathBuf;
use std::sync::Arc;

use super::delegating::DelegatingAuthorizerConfig;
use super::path::{DEFAULT_ALWAYS_ALLOW_PATHS, InvalidPathPattern};
use super::privileged::SYSTEM_MASTERS;
use super::union::UnionAuthorizer;
use super::webhook::DEFAULT_CACHE_TTL;
use crate::duration::GoDuration;

/// Delegated authorization flags.
#[derive(Clone, Debug, clap::Args)]
pub struct DelegatingAuthorizationOptions {
    /// A kubeconfig pointing at the host cluster, with the right to create
    /// subjectaccessreviews.authorization.k8s.io (default: the in-cluster configuration).
    #[arg(long)]
    pub authorization_kubeconfig: Option<PathBuf>,
    /// How long "authorized" answers of the host cluster are cached.
    #[arg(long, default_value = "10s")]
    pub authorization_webhook_cache_authorized_ttl: GoDuration,
    /// How long "unauthorized" answers of the host cluster are cached.
    #[arg(long, default_value = "10s")]
    pub authorization_webhook_cache_unauthorized_ttl: GoDuration,
    /// HTTP paths authorized without asking the host cluster, comma-separated; a trailing `*`
    /// makes a prefix.
    #[arg(
        long,
        value_delimiter = ',',
        default_values_t = DEFAULT_ALWAYS_ALLOW_PATHS.iter().map(|p| p.to_string())
    )]
    pub authorization_always_allow_paths: Vec<String>,
}

impl Default for DelegatingAuthorizationOptions {
    fn default() -> Self {
        DelegatingAuthorizationOptions {
            authorization_kubeconfig: None,
            authorization_webhook_cache_authorized_ttl: GoDuration(DEFAULT_CACHE_TTL),
            authorization_webhook_cache_unauthorized_ttl: GoDuration(DEFAULT_CACHE_TTL),
            authorization_always_allow_paths: DEFAULT_ALWAYS_ALLOW_PATHS
                .iter()
                .map(|p| p.to_string())
                .collect(),
        }
    }
}

/// Errors of setting up delegated authorization.
#[derive(Debug, thiserror::Error)]
pub enum AuthorizationOptionsError {
    /// An always-allowed path is not a valid pattern.
    #[error(transparent)]
    Path(#[from] InvalidPathPattern),
    /// The kubeconfig could not be read.
    #[error("failed to get delegated authorization kubeconfig: {0}")]
    Kubeconfig(String),
}

impl DelegatingAuthorizationOptions {
    /// The authorizer configuration these flags describe (always allowing `system:masters`).
    pub fn config(&self) -> DelegatingAuthorizerConfig {
        DelegatingAuthorizerConfig {
            always_allow_paths: self.authorization_always_allow_paths.clone(),
            always_allow_groups: vec![SYSTEM_MASTERS.to_string()],
            allow_cache_ttl: self.authorization_webhook_cache_authorized_ttl.0,
            deny_cache_ttl: self.authorization_webhook_cache_unauthorized_ttl.0,
        }
    }

    /// A client of the host cluster: from `--authorization-kubeconfig`, else the in-cluster
    /// configuration.
    pub async fn client(&self) -> Result<kube::Client, AuthorizationOptionsError> {
        crate::host_cluster::client::host_client(self.authorization_kubeconfig.as_deref())
            .await
            .map_err(|e| AuthorizationOptionsError::Kubeconfig(e.to_string()))
    }

    /// The delegating authorizer asking the host cluster through [`Self::client`].
    pub async fn authorizer(&self) -> Result<UnionAuthorizer, AuthorizationOptionsError> {
        let client = self.client().await?;
        Ok(self.config().build(Some(Arc::new(client)))?)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        authz: DelegatingAuthorizationOptions,
    }

    #[test]
    fn defaults_match_upstream() {
        let cli = Cli::try_parse_from(["x"]).unwrap();
        assert_eq!(cli.authz.config(), DelegatingAuthorizerConfig::default());
        assert_eq!(
            cli.authz.authorization_always_allow_paths,
            DelegatingAuthorizationOptions::default().authorization_always_allow_paths
        );
    }

    #[test]
    fn flags() {
        let cli = Cli::try_parse_from([
            "x",
            "--authorization-always-allow-paths=/healthz,/metrics*",
            "--authorization-webhook-cache-authorized-ttl=5m",
            "--authorization-webhook-cache-unauthorized-ttl",
            "30s",
            "--authorization-kubeconfig=/etc/kubeconfig",
        ])
        .unwrap();
        let config = cli.authz.config();
        assert_eq!(config.always_allow_paths, ["/healthz", "/metrics*"]);
        assert_eq!(config.allow_cache_ttl, Duration::from_secs(300));
        assert_eq!(config.deny_cache_ttl, Duration::from_secs(30));
        assert_eq!(
            cli.authz.authorization_kubeconfig.as_deref(),
            Some(std::path::Path::new("/etc/kubeconfig"))
        );
    }

    #[tokio::test]
    async fn a_missing_kubeconfig_is_an_error() {
        let opts = DelegatingAuthorizationOptions {
            authorization_kubeconfig: Some("/nonexistent/kubeconfig".into()),
            ..Default::default()
        };
        let err = opts.authorizer().await.err().unwrap();
        assert!(
            err.to_string()
                .starts_with("failed to get delegated authorization kubeconfig: "),
            "{err}"
        );
    }
}
