//! Clients of the host cluster: from a kubeconfig file, or the in-cluster configuration
//! (service account token and CA) when none is given, as upstream's delegated options do.

use std::path::Path;

/// Errors of building a client of the host cluster.
#[derive(Debug, thiserror::Error)]
pub enum HostClientError {
    /// The kubeconfig file could not be read or used.
    #[error("kubeconfig {path}: {message}")]
    Kubeconfig {
        /// The file.
        path: String,
        /// What went wrong.
        message: String,
    },
    /// No kubeconfig was given and the in-cluster configuration is not available.
    #[error(
        "no kubeconfig given and not running in a cluster ({0}); pass --authentication-kubeconfig, --authorization-kubeconfig or --kubeconfig"
    )]
    InCluster(String),
    /// The client could not be built from the configuration.
    #[error("host client: {0}")]
    Client(String),
}

/// A client of the host cluster from `kubeconfig`, or from the in-cluster configuration when
/// `kubeconfig` is `None`.
pub(crate) async fn host_client(
    kubeconfig: Option<&Path>,
) -> Result<kube::Client, HostClientError> {
    let config = match kubeconfig {
        Some(path) => {
            let err = |e: &dyn std::fmt::Display| HostClientError::Kubeconfig {
                path: path.display().to_string(),
                message: e.to_string(),
            };
            let kc = kube::config::Kubeconfig::read_from(path).map_err(|e| err(&e))?;
            kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
                .await
                .map_err(|e| err(&e))?
        }
        None => kube::Config::incluster().map_err(|e| HostClientError::InCluster(e.to_string()))?,
    };
    kube::Client::try_from(config).map_err(|e| HostClientError::Client(e.to_string()))
}
