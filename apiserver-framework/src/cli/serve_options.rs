//! The flags of production mode, with upstream's names and defaults
//! (`k8s.io/apiserver`'s secure serving, delegated authentication and authorization options).

use std::net::{IpAddr, Ipv4Addr};
use std::path::PathBuf;

use crate::admission::options::AdmissionOptions;
use crate::audit::AuditOptions;
use crate::authn::options::AuthenticationOptions;
use crate::authz::options::DelegatingAuthorizationOptions;
use crate::cli::server_run_options::ServerRunOptions;
use crate::cli::storage_options::StorageOptions;
use crate::server::tracing::TracingOptions;

/// The minimum TLS version a server accepts (`--tls-min-version`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum TlsMinVersion {
    /// TLS 1.2 (the default).
    #[default]
    #[value(name = "VersionTLS12")]
    Tls12,
    /// TLS 1.3.
    #[value(name = "VersionTLS13")]
    Tls13,
}

/// Flags of serving over HTTPS.
#[derive(Clone, Debug, clap::Args)]
pub struct SecureServingOptions {
    /// The port on which to serve HTTPS with authentication and authorization.
    #[arg(long, default_value_t = 443)]
    pub secure_port: u16,
    /// The IP address on which to listen for the --secure-port port.
    #[arg(long, default_value = "0.0.0.0")]
    pub bind_address: IpAddr,
    /// File containing the default x509 certificate for HTTPS (CA cert, if any, concatenated
    /// after the server cert). Reloaded when it changes. If neither --tls-cert-file nor
    /// --tls-private-key-file is given, a self-signed certificate is generated in --cert-dir.
    #[arg(long, requires = "tls_private_key_file")]
    pub tls_cert_file: Option<PathBuf>,
    /// File containing the default x509 private key matching --tls-cert-file.
    #[arg(long, requires = "tls_cert_file")]
    pub tls_private_key_file: Option<PathBuf>,
    /// The directory where the self-signed TLS certificate is kept; ignored with
    /// --tls-cert-file and --tls-private-key-file.
    #[arg(long, default_value = "apiserver.local.config/certificates")]
    pub cert_dir: PathBuf,
    /// Minimum TLS version supported.
    #[arg(long, value_enum, default_value = "VersionTLS12")]
    pub tls_min_version: TlsMinVersion,
}

impl Default for SecureServingOptions {
    fn default() -> Self {
        SecureServingOptions {
            secure_port: 443,
            bind_address: IpAddr::V4(Ipv4Addr::UNSPECIFIED),
            tls_cert_file: None,
            tls_private_key_file: None,
            cert_dir: PathBuf::from("apiserver.local.config/certificates"),
            tls_min_version: TlsMinVersion::Tls12,
        }
    }
}

/// Options of production mode (`<server> serve`, also the default command).
#[derive(Clone, Debug, Default, clap::Args)]
pub struct ServeOptions {
    /// HTTPS serving.
    #[command(flatten)]
    pub serving: SecureServingOptions,
    /// kubeconfig file pointing at the 'core' kubernetes server with enough rights to create
    /// tokenreviews.authentication.k8s.io and read the authentication ConfigMap (in-cluster
    /// configuration when empty).
    #[arg(long)]
    pub authentication_kubeconfig: Option<PathBuf>,
    /// Delegated authentication.
    #[command(flatten)]
    pub authentication: AuthenticationOptions,
    /// Delegated authorization.
    #[command(flatten)]
    pub authorization: DelegatingAuthorizationOptions,
    /// kubeconfig file pointing at the 'core' kubernetes server, for what the server itself
    /// reads from it (`ProductionServer::host`; in-cluster configuration when empty).
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// Where objects are stored.
    #[command(flatten)]
    pub storage: StorageOptions,
    /// Auditing.
    #[command(flatten)]
    pub audit: AuditOptions,
    /// Request limits and the shutdown delay.
    #[command(flatten)]
    pub run: ServerRunOptions,
    /// Which admission plugins run.
    #[command(flatten)]
    pub admission: AdmissionOptions,
    /// OpenTelemetry tracing.
    #[command(flatten)]
    pub tracing: TracingOptions,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        serve: ServeOptions,
    }

    #[test]
    fn upstream_flag_names_and_defaults() {
        let d = Cli::try_parse_from(["x"]).unwrap().serve;
        assert_eq!(d.serving.secure_port, 443);
        assert_eq!(d.serving.bind_address.to_string(), "0.0.0.0");
        assert_eq!(d.serving.tls_min_version, TlsMinVersion::Tls12);
        assert_eq!(
            d.serving.cert_dir,
            PathBuf::from("apiserver.local.config/certificates")
        );
        assert!(!d.authentication.authentication_skip_lookup);
        assert_eq!(
            d.authentication
                .authentication_token_webhook_cache_ttl
                .0
                .as_secs(),
            10
        );
        assert_eq!(
            d.authorization.authorization_always_allow_paths,
            ["/healthz", "/readyz", "/livez"]
        );

        let o = Cli::try_parse_from([
            "x",
            "--secure-port=8443",
            "--bind-address=127.0.0.1",
            "--tls-cert-file=c.crt",
            "--tls-private-key-file=c.key",
            "--cert-dir=d",
            "--tls-min-version=VersionTLS13",
            "--authentication-kubeconfig=a.kubeconfig",
            "--authorization-kubeconfig=z.kubeconfig",
            "--kubeconfig=k.kubeconfig",
            "--client-ca-file=ca.crt",
            "--requestheader-client-ca-file=fp.crt",
            "--requestheader-allowed-names=front-proxy-client,other",
            "--requestheader-username-headers=X-Remote-User",
            "--requestheader-uid-headers=X-Remote-Uid",
            "--requestheader-group-headers=X-Remote-Group",
            "--requestheader-extra-headers-prefix=X-Remote-Extra-",
            "--authentication-skip-lookup",
            "--authentication-tolerate-lookup-failure",
            "--authentication-token-webhook-cache-ttl=30s",
            "--authorization-webhook-cache-authorized-ttl=1m",
            "--authorization-webhook-cache-unauthorized-ttl=5s",
            "--authorization-always-allow-paths=/healthz,/metrics*",
        ])
        .unwrap()
        .serve;
        assert_eq!(o.serving.secure_port, 8443);
        assert_eq!(o.serving.tls_min_version, TlsMinVersion::Tls13);
        assert_eq!(o.kubeconfig, Some(PathBuf::from("k.kubeconfig")));
        assert_eq!(
            o.authentication_kubeconfig,
            Some(PathBuf::from("a.kubeconfig"))
        );
        let a = &o.authentication;
        assert_eq!(
            a.requestheader_allowed_names,
            ["front-proxy-client", "other"]
        );
        assert_eq!(a.requestheader_uid_headers, ["X-Remote-Uid"]);
        assert!(a.authentication_skip_lookup && a.authentication_tolerate_lookup_failure);
        assert_eq!(a.authentication_token_webhook_cache_ttl.0.as_secs(), 30);
        let z = &o.authorization;
        assert_eq!(z.authorization_webhook_cache_authorized_ttl.0.as_secs(), 60);
        assert_eq!(
            z.authorization_always_allow_paths,
            ["/healthz", "/metrics*"]
        );
        assert!(Cli::try_parse_from(["x", "--tls-cert-file=c.crt"]).is_err());
    }
}
