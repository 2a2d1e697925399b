//! The flags of production mode, with upstream's names and defaults
//! (`k8s.io/apiserver`'s secure serving, delegated authentication and authorization options).

use std::net::{IpAddr, Ipv4Addr};
use std::path::PathBuf;
use std::time::Duration;

use crate::cli::duration::GoDuration;
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

/// Flags of authentication delegated to the host cluster.
#[derive(Clone, Debug, clap::Args)]
pub struct AuthenticationOptions {
    /// kubeconfig file pointing at the 'core' kubernetes server with enough rights to create
    /// tokenreviews.authentication.k8s.io (in-cluster configuration when empty).
    #[arg(long)]
    pub authentication_kubeconfig: Option<PathBuf>,
    /// If false, the authentication-kubeconfig is used to look up missing authentication
    /// configuration from the cluster (the extension-apiserver-authentication ConfigMap).
    #[arg(long, default_value_t = false, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub authentication_skip_lookup: bool,
    /// If true, failures to look up missing authentication configuration from the cluster are
    /// not considered fatal (requests may then be treated as anonymous).
    #[arg(long, default_value_t = false, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub authentication_tolerate_lookup_failure: bool,
    /// The duration to cache responses from the webhook token authenticator.
    #[arg(long, default_value = "10s")]
    pub authentication_token_webhook_cache_ttl: GoDuration,
    /// If set, any request presenting a client certificate signed by one of the authorities
    /// in the client-ca-file is authenticated with an identity corresponding to the
    /// CommonName of the client certificate.
    #[arg(long)]
    pub client_ca_file: Option<PathBuf>,
    /// Root certificate bundle to verify client certificates on incoming requests before
    /// trusting usernames in headers specified by --requestheader-username-headers.
    #[arg(long)]
    pub requestheader_client_ca_file: Option<PathBuf>,
    /// List of client certificate common names to allow to provide usernames in headers
    /// specified by --requestheader-username-headers. If empty, any client certificate
    /// validated by the authorities in --requestheader-client-ca-file is allowed.
    #[arg(long, value_delimiter = ',')]
    pub requestheader_allowed_names: Vec<String>,
    /// List of request headers to inspect for usernames. X-Remote-User is common.
    #[arg(long, value_delimiter = ',')]
    pub requestheader_username_headers: Vec<String>,
    /// List of request headers to inspect for UIDs. X-Remote-Uid is suggested.
    #[arg(long, value_delimiter = ',')]
    pub requestheader_uid_headers: Vec<String>,
    /// List of request headers to inspect for groups. X-Remote-Group is suggested.
    #[arg(long, value_delimiter = ',')]
    pub requestheader_group_headers: Vec<String>,
    /// List of request header prefixes to inspect. X-Remote-Extra- is suggested.
    #[arg(long, value_delimiter = ',')]
    pub requestheader_extra_headers_prefix: Vec<String>,
}

impl Default for AuthenticationOptions {
    fn default() -> Self {
        AuthenticationOptions {
            authentication_kubeconfig: None,
            authentication_skip_lookup: false,
            authentication_tolerate_lookup_failure: false,
            authentication_token_webhook_cache_ttl: GoDuration(Duration::from_secs(10)),
            client_ca_file: None,
            requestheader_client_ca_file: None,
            requestheader_allowed_names: Vec::new(),
            requestheader_username_headers: Vec::new(),
            requestheader_uid_headers: Vec::new(),
            requestheader_group_headers: Vec::new(),
            requestheader_extra_headers_prefix: Vec::new(),
        }
    }
}

/// Flags of authorization delegated to the host cluster.
#[derive(Clone, Debug, clap::Args)]
pub struct AuthorizationOptions {
    /// kubeconfig file pointing at the 'core' kubernetes server with enough rights to create
    /// subjectaccessreviews.authorization.k8s.io (in-cluster configuration when empty).
    #[arg(long)]
    pub authorization_kubeconfig: Option<PathBuf>,
    /// The duration to cache 'authorized' responses from the webhook authorizer.
    #[arg(long, default_value = "10s")]
    pub authorization_webhook_cache_authorized_ttl: GoDuration,
    /// The duration to cache 'unauthorized' responses from the webhook authorizer.
    #[arg(long, default_value = "10s")]
    pub authorization_webhook_cache_unauthorized_ttl: GoDuration,
    /// A list of HTTP paths to skip during authorization, i.e. these are authorized without
    /// contacting the 'core' kubernetes server (a trailing `*` is a prefix).
    #[arg(long, value_delimiter = ',', default_value = "/healthz,/readyz,/livez")]
    pub authorization_always_allow_paths: Vec<String>,
}

impl Default for AuthorizationOptions {
    fn default() -> Self {
        AuthorizationOptions {
            authorization_kubeconfig: None,
            authorization_webhook_cache_authorized_ttl: GoDuration(Duration::from_secs(10)),
            authorization_webhook_cache_unauthorized_ttl: GoDuration(Duration::from_secs(10)),
            authorization_always_allow_paths: vec![
                "/healthz".into(),
                "/readyz".into(),
                "/livez".into(),
            ],
        }
    }
}

/// Options of production mode (`<server> serve`, also the default command).
#[derive(Clone, Debug, Default, clap::Args)]
pub struct ServeOptions {
    /// HTTPS serving.
    #[command(flatten)]
    pub serving: SecureServingOptions,
    /// Delegated authentication.
    #[command(flatten)]
    pub authentication: AuthenticationOptions,
    /// Delegated authorization.
    #[command(flatten)]
    pub authorization: AuthorizationOptions,
    /// kubeconfig file pointing at the host cluster, for what the server itself reads from it
    /// (in-cluster configuration when empty).
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// Where objects are stored.
    #[command(flatten)]
    pub storage: StorageOptions,
}
