//! The flags of production mode, with upstream's names and defaults
//! (`k8s.io/apiserver`'s secure serving, delegated authentication and authorization options).

use std::net::{IpAddr, Ipv4Addr};
use std::path::PathBuf;

use crate::auth::options::AuthenticationOptions;
use crate::authz::options::DelegatingAuthorizationOptions;
use crate::cli::storage_options::StorageOptions;

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
    /// kubeconfig file pointing at the host cluster, for what the server itself reads from it
    /// (in-cluster configuration when empty).
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// Where objects are stored.
    #[command(flatten)]
    pub storage: StorageOptions,
}
