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

    /// Every endpoint of `namespace/name` on `port` (the addresses of each replica behind the
    /// service), at least one. By default the one [`resolve`](Self::resolve) names.
    fn resolve_all(
        &self,
        namespace: &str,
        name: &str,
        port: u16,
    ) -> Result<Vec<Endpoint>, ResolveError> {
        self.resolve(namespace, name, port).map(|e| vec![e])
    }
}

/// A fixed map from `namespace/name` to `host:port`, for hosts without real Services (the
/// local development mode, tests). The port of the service reference is ignored: the map
/// names the address to connect to.
#[derive(Clone, Debug, Default)]
pub struct StaticServiceResolver {
    /// By namespace, then name: the endpoints as [`ServiceResolver::resolve_all`] answers them,
    /// made once here rather than at every proxied request (looked up by `&str`, no key built).
    services: HashMap<String, HashMap<String, Vec<Endpoint>>>,
}

impl StaticServiceResolver {
    /// An empty map.
    pub fn new() -> Self {
        Self::default()
    }

    /// Maps service `namespace/name` to `authority` (`host:port`).
    pub fn with(self, namespace: &str, name: &str, authority: impl Into<String>) -> Self {
        self.with_endpoints(namespace, name, [authority])
    }

    /// Maps service `namespace/name` to several `host:port` addresses (its replicas); an
    /// empty list is a service without endpoints.
    pub fn with_endpoints(
        mut self,
        namespace: &str,
        name: &str,
        authorities: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        let server_name = format!("{name}.{namespace}.svc");
        let endpoints = authorities
            .into_iter()
            .map(|authority| Endpoint {
                authority: authority.into(),
                server_name: server_name.clone(),
            })
            .collect();
        self.services
            .entry(namespace.to_string())
            .or_default()
            .insert(name.to_string(), endpoints);
        self
    }
}

impl ServiceResolver for StaticServiceResolver {
    fn resolve(&self, namespace: &str, name: &str, port: u16) -> Result<Endpoint, ResolveError> {
        let mut all = self.resolve_all(namespace, name, port)?;
        Ok(all.swap_remove(0))
    }

    fn resolve_all(
        &self,
        namespace: &str,
        name: &str,
        _port: u16,
    ) -> Result<Vec<Endpoint>, ResolveError> {
        match self
            .services
            .get(namespace)
            .and_then(|names| names.get(name))
        {
            Some(endpoints) if endpoints.is_empty() => Err(ResolveError::EndpointsNotFound {
                namespace: namespace.into(),
                name: name.into(),
            }),
            Some(endpoints) => Ok(endpoints.clone()),
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
        let r = r.with_endpoints("ns", "ha", ["127.0.0.1:1", "127.0.0.1:2"]);
        let all = r.resolve_all("ns", "ha", 443).unwrap();
        assert_eq!(all.len(), 2);
        assert_eq!(all[1].authority, "127.0.0.1:2");
        assert_eq!(all[1].server_name, "ha.ns.svc");
        let r = r.with_endpoints("ns", "none", Vec::<String>::new());
        let err = r.resolve_all("ns", "none", 443).unwrap_err();
        assert_eq!(err.reason(), "EndpointsNotFound");
        let err = r.resolve("ns", "other", 443).unwrap_err();
        assert_eq!(err.reason(), "ServiceNotFound");
        assert_eq!(err.to_string(), "service/other in \"ns\" is not present");
        let err = r.resolve("other", "api", 443).unwrap_err();
        assert_eq!(err.reason(), "ServiceNotFound");
        assert_eq!(
            r.resolve("ns", "api", 443).unwrap().authority,
            "127.0.0.1:8443"
        );
    }

    #[test]
    fn static_resolver_keeps_namespace_and_name_apart() {
        let r = StaticServiceResolver::new().with("a/b", "c", "127.0.0.1:1");
        assert_eq!(r.resolve("a/b", "c", 443).unwrap().server_name, "c.a/b.svc");
        assert_eq!(
            r.resolve("a", "b/c", 443).unwrap_err().reason(),
            "ServiceNotFound"
        );
    }
}
