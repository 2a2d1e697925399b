//! Service resolution: from an APIService's service reference to the address of a backend.

use std::collections::HashMap;

/// Why a service could not be resolved; each variant is one reason of the `Available`
/// condition, with upstream's message.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ResolveError {
    /// The service does not exist (reason `ServiceNotFound`).
    #[error("service/{name} in {namespace:?} is not present")]
    ServiceNotFound {
        /// Namespace of the service.
        namespace: String,
        /// Name of the service.
        name: String,
    },
    /// The service could not be read (reason `ServiceAccessError`, status `Unknown`).
    #[error("service/{name} in {namespace:?} cannot be checked due to: {error}")]
    ServiceAccessError {
        /// Namespace of the service.
        namespace: String,
        /// Name of the service.
        name: String,
        /// What went wrong.
        error: String,
    },
    /// The service does not expose the port (reason `ServicePortError`).
    #[error("service/{name} in {namespace:?} is not listening on port {port}")]
    ServicePortError {
        /// Namespace of the service.
        namespace: String,
        /// Name of the service.
        name: String,
        /// The port asked for.
        port: u16,
    },
    /// The service has no endpoints (reason `EndpointsNotFound`).
    #[error("cannot find endpointslices for service/{name} in {namespace:?}")]
    EndpointsNotFound {
        /// Namespace of the service.
        namespace: String,
        /// Name of the service.
        name: String,
    },
    /// The service's endpoints have no ready address (reason `MissingEndpoints`).
    #[error(
        "endpointslices for service/{name} in {namespace:?} have no addresses with port name {port_name:?}"
    )]
    MissingEndpoints {
        /// Namespace of the service.
        namespace: String,
        /// Name of the service.
        name: String,
        /// The port's name.
        port_name: String,
    },
}

impl ResolveError {
    /// The `Available` condition's reason for this error.
    pub fn reason(&self) -> &'static str {
        match self {
            ResolveError::ServiceNotFound { .. } => "ServiceNotFound",
            ResolveError::ServiceAccessError { .. } => "ServiceAccessError",
            ResolveError::ServicePortError { .. } => "ServicePortError",
            ResolveError::EndpointsNotFound { .. } => "EndpointsNotFound",
            ResolveError::MissingEndpoints { .. } => "MissingEndpoints",
        }
    }

    /// The `Available` condition's status for this error: `Unknown` when the service could
    /// not be checked, `False` otherwise.
    pub fn condition_status(&self) -> &'static str {
        match self {
            ResolveError::ServiceAccessError { .. } => "Unknown",
            _ => "False",
        }
    }
}

/// Where to reach a backend: the address to connect to and the name its serving certificate
/// must carry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Endpoint {
    /// `host:port` to connect to.
    pub authority: String,
    /// The TLS server name to verify, `<service>.<namespace>.svc` as upstream.
    pub server_name: String,
}

/// Resolves a service reference (namespace, name, port) to an [`Endpoint`].
pub trait ServiceResolver: Send + Sync + 'static {
    /// The endpoint of `namespace/name` on `port`.
    fn resolve(&self, namespace: &str, name: &str, port: u16) -> Result<Endpoint, ResolveError>;
}

/// A fixed map from `namespace/name` to `host:port`, for hosts without real Services (the
/// local development mode, tests). The port of the service reference is ignored: the map
/// names the address to connect to.
#[derive(Clone, Debug, Default)]
pub struct StaticServiceResolver {
    services: HashMap<String, String>,
}

impl StaticServiceResolver {
    /// An empty map.
    pub fn new() -> Self {
        Self::default()
    }

    /// Maps service `namespace/name` to `authority` (`host:port`).
    pub fn with(mut self, namespace: &str, name: &str, authority: impl Into<String>) -> Self {
        self.services
            .insert(format!("{namespace}/{name}"), authority.into());
        self
    }
}

impl ServiceResolver for StaticServiceResolver {
    fn resolve(&self, namespace: &str, name: &str, _port: u16) -> Result<Endpoint, ResolveError> {
        match self.services.get(&format!("{namespace}/{name}")) {
            Some(authority) => Ok(Endpoint {
                authority: authority.clone(),
                server_name: format!("{name}.{namespace}.svc"),
            }),
            None => Err(ResolveError::ServiceNotFound {
                namespace: namespace.into(),
                name: name.into(),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn static_resolver_maps_and_reports_missing_services() {
        let r = StaticServiceResolver::new().with("ns", "api", "127.0.0.1:8443");
        let e = r.resolve("ns", "api", 443).unwrap();
        assert_eq!(e.authority, "127.0.0.1:8443");
        assert_eq!(e.server_name, "api.ns.svc");
        let err = r.resolve("ns", "other", 443).unwrap_err();
        assert_eq!(err.reason(), "ServiceNotFound");
        assert_eq!(err.to_string(), "service/other in \"ns\" is not present");
    }
}
