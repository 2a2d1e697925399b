//! The delegated authentication flags, named as upstream's
//! `DelegatingAuthenticationOptions` names them.

use std::path::{Path, PathBuf};

use crate::duration::GoDuration;

use super::ca_bundle::{CaBundle, CaBundleError};
use super::delegated::{InvalidHeaderName, RequestHeaderConfig, header_names, header_prefixes};

/// Errors of loading the delegated authentication configuration.
#[derive(Debug, thiserror::Error)]
pub enum AuthConfigError {
    /// A file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// A CA bundle is invalid.
    #[error("{what}: {source}")]
    Ca {
        /// Where the bundle comes from (a flag, a ConfigMap key).
        what: String,
        /// The error.
        source: CaBundleError,
    },
    /// A header name is invalid.
    #[error(transparent)]
    Header(#[from] InvalidHeaderName),
    /// A ConfigMap value that should hold a JSON array of strings does not.
    #[error("configmap key {key}: {source}")]
    Json {
        /// The key.
        key: String,
        /// The error.
        source: serde_json::Error,
    },
    /// Reading the authentication ConfigMap from the cluster failed (and failures are not
    /// tolerated).
    #[error(
        "unable to load configmap based request-header-client-ca-file: {0}; \
         usually fixed by 'kubectl create rolebinding -n kube-system ROLEBINDING_NAME \
         --role=extension-apiserver-authentication-reader --serviceaccount=YOUR_NS:YOUR_SA'"
    )]
    Lookup(kube::Error),
}

/// The delegated authentication flags of an extension API server.
#[derive(Clone, Debug, clap::Args)]
pub struct AuthenticationOptions {
    /// If set, any request presenting a client certificate signed by one of the authorities
    /// in the client-ca-file is authenticated with an identity corresponding to the
    /// CommonName of the client certificate.
    #[arg(long)]
    pub client_ca_file: Option<PathBuf>,
    /// Root certificate bundle to use to verify client certificates on incoming requests
    /// before trusting usernames in headers specified by --requestheader-username-headers.
    #[arg(long)]
    pub requestheader_client_ca_file: Option<PathBuf>,
    /// List of client certificate common names to allow to provide usernames in headers
    /// specified by --requestheader-username-headers. If empty, any client certificate
    /// validated by the authorities in --requestheader-client-ca-file is allowed.
    #[arg(long, value_delimiter = ',')]
    pub requestheader_allowed_names: Vec<String>,
    /// List of request headers to inspect for usernames. X-Remote-User is common.
    #[arg(long, value_delimiter = ',', default_value = "x-remote-user")]
    pub requestheader_username_headers: Vec<String>,
    /// List of request headers to inspect for UIDs. X-Remote-Uid is suggested.
    #[arg(long, value_delimiter = ',')]
    pub requestheader_uid_headers: Vec<String>,
    /// List of request headers to inspect for groups. X-Remote-Group is suggested.
    #[arg(long, value_delimiter = ',', default_value = "x-remote-group")]
    pub requestheader_group_headers: Vec<String>,
    /// List of request header prefixes to inspect. X-Remote-Extra- is suggested.
    #[arg(long, value_delimiter = ',', default_value = "x-remote-extra-")]
    pub requestheader_extra_headers_prefix: Vec<String>,
    /// If false, the authentication-kubeconfig will be used to lookup missing authentication
    /// configuration from the cluster.
    #[arg(long)]
    pub authentication_skip_lookup: bool,
    /// If true, failures to look up missing authentication configuration from the cluster
    /// are not considered fatal. Note that this can result in authentication that treats all
    /// requests as anonymous.
    #[arg(long)]
    pub authentication_tolerate_lookup_failure: bool,
    /// The duration to cache responses from the webhook token authenticator.
    #[arg(long, default_value = "10s")]
    pub authentication_token_webhook_cache_ttl: GoDuration,
}

impl Default for AuthenticationOptions {
    fn default() -> Self {
        AuthenticationOptions {
            client_ca_file: None,
            requestheader_client_ca_file: None,
            requestheader_allowed_names: Vec::new(),
            requestheader_username_headers: vec!["x-remote-user".into()],
            requestheader_uid_headers: Vec::new(),
            requestheader_group_headers: vec!["x-remote-group".into()],
            requestheader_extra_headers_prefix: vec!["x-remote-extra-".into()],
            authentication_skip_lookup: false,
            authentication_tolerate_lookup_failure: false,
            authentication_token_webhook_cache_ttl: GoDuration(std::time::Duration::from_secs(10)),
        }
    }
}

/// What the flags fix: each part is `None` when it must come from the cluster's
/// authentication ConfigMap instead.
#[derive(Clone, Debug, Default)]
pub struct StaticAuthSources {
    /// The client CA from `--client-ca-file`.
    pub client_ca: Option<CaBundle>,
    /// The front-proxy settings, when `--requestheader-client-ca-file` is given.
    pub request_header: Option<RequestHeaderConfig>,
}

impl StaticAuthSources {
    /// Whether the flags fix everything, so the cluster need not be asked.
    pub fn is_complete(&self) -> bool {
        self.client_ca.is_some() && self.request_header.is_some()
    }
}

fn read_ca(path: &Path, flag: &str) -> Result<CaBundle, AuthConfigError> {
    let pem = std::fs::read_to_string(path).map_err(|source| AuthConfigError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let bundle = CaBundle::from_pem(&pem).map_err(|source| AuthConfigError::Ca {
        what: format!("--{flag} {}", path.display()),
        source,
    })?;
    if bundle.is_empty() {
        return Err(AuthConfigError::Ca {
            what: format!("--{flag} {}", path.display()),
            source: CaBundleError::Pem("no certificate found".into()),
        });
    }
    Ok(bundle)
}

impl AuthenticationOptions {
    /// Reads the files the flags name.
    pub fn static_sources(&self) -> Result<StaticAuthSources, AuthConfigError> {
        let client_ca = self
            .client_ca_file
            .as_deref()
            .map(|p| read_ca(p, "client-ca-file"))
            .transpose()?;
        let request_header = match &self.requestheader_client_ca_file {
            None => None,
            Some(path) => Some(RequestHeaderConfig {
                ca: read_ca(path, "requestheader-client-ca-file")?,
                allowed_names: self.requestheader_allowed_names.clone(),
                username_headers: header_names(&self.requestheader_username_headers)?,
                uid_headers: header_names(&self.requestheader_uid_headers)?,
                group_headers: header_names(&self.requestheader_group_headers)?,
                extra_headers_prefixes: header_prefixes(&self.requestheader_extra_headers_prefix)?,
            }),
        };
        Ok(StaticAuthSources {
            client_ca,
            request_header,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        authn: AuthenticationOptions,
    }

    #[test]
    fn flags_parse_with_upstream_defaults() {
        let defaults = Cli::try_parse_from(["server"]).unwrap().authn;
        assert_eq!(
            defaults.requestheader_username_headers,
            vec!["x-remote-user"]
        );
        assert_eq!(defaults.requestheader_group_headers, vec!["x-remote-group"]);
        assert_eq!(
            defaults.requestheader_extra_headers_prefix,
            vec!["x-remote-extra-"]
        );
        assert!(defaults.requestheader_uid_headers.is_empty());
        assert_eq!(
            defaults.authentication_token_webhook_cache_ttl.0,
            std::time::Duration::from_secs(10)
        );
        assert!(!defaults.authentication_skip_lookup);
        assert!(!defaults.authentication_tolerate_lookup_failure);

        let set = Cli::try_parse_from([
            "server",
            "--client-ca-file=/pki/ca.crt",
            "--requestheader-client-ca-file=/pki/front-proxy-ca.crt",
            "--requestheader-allowed-names=front-proxy-client,aggregator",
            "--requestheader-username-headers=X-Remote-User",
            "--requestheader-uid-headers=X-Remote-Uid",
            "--requestheader-group-headers=X-Remote-Group",
            "--requestheader-extra-headers-prefix=X-Remote-Extra-",
            "--authentication-skip-lookup",
            "--authentication-tolerate-lookup-failure",
            "--authentication-token-webhook-cache-ttl=1m",
        ])
        .unwrap()
        .authn;
        assert_eq!(
            set.requestheader_allowed_names,
            vec!["front-proxy-client", "aggregator"]
        );
        assert_eq!(set.requestheader_uid_headers, vec!["X-Remote-Uid"]);
        assert!(set.authentication_skip_lookup && set.authentication_tolerate_lookup_failure);
        assert_eq!(
            set.authentication_token_webhook_cache_ttl.0,
            std::time::Duration::from_secs(60)
        );
    }
}
