//! The host cluster's `kube-system/extension-apiserver-authentication` ConfigMap: parsing it,
//! reading it at start and watching it, so a rotated CA or new header names take effect
//! without a restart.

use std::collections::BTreeMap;
use std::sync::Arc;

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::runtime::{WatchStreamExt, watcher};

use super::ca_bundle::CaBundle;
use super::delegated::{
    AuthSnapshot, DelegatedAuthConfig, RequestHeaderConfig, header_names, header_prefixes,
};
use super::options::{AuthConfigError, AuthenticationOptions, StaticAuthSources};

/// The namespace of the authentication ConfigMap.
pub const AUTH_CONFIGMAP_NAMESPACE: &str = "kube-system";
/// The name of the authentication ConfigMap.
pub const AUTH_CONFIGMAP_NAME: &str = "extension-apiserver-authentication";

/// What the authentication ConfigMap says.
#[derive(Clone, Debug, PartialEq)]
pub struct ConfigMapAuth {
    /// `client-ca-file` (empty when absent).
    pub client_ca: CaBundle,
    /// The `requestheader-*` keys (CA empty and no headers when absent).
    pub request_header: RequestHeaderConfig,
}

/// A JSON array of strings stored in a string ("" or absent: none), as upstream stores the
/// list values of the ConfigMap.
fn string_list(data: &BTreeMap<String, String>, key: &str) -> Result<Vec<String>, AuthConfigError> {
    match data.get(key).map(|v| v.trim()) {
        None | Some("") => Ok(Vec::new()),
        Some(text) => serde_json::from_str(text).map_err(|source| AuthConfigError::Json {
            key: key.to_owned(),
            source,
        }),
    }
}

fn ca(data: &BTreeMap<String, String>, key: &str) -> Result<CaBundle, AuthConfigError> {
    CaBundle::from_pem(data.get(key).map(String::as_str).unwrap_or_default()).map_err(|source| {
        AuthConfigError::Ca {
            what: format!("configmap/{AUTH_CONFIGMAP_NAME} key {key}"),
            source,
        }
    })
}

/// Parses the `data` of the authentication ConfigMap.
pub fn parse_configmap_data(
    data: &BTreeMap<String, String>,
) -> Result<ConfigMapAuth, AuthConfigError> {
    Ok(ConfigMapAuth {
        client_ca: ca(data, "client-ca-file")?,
        request_header: RequestHeaderConfig {
            ca: ca(data, "requestheader-client-ca-file")?,
            allowed_names: string_list(data, "requestheader-allowed-names")?,
            username_headers: header_names(&string_list(data, "requestheader-username-headers")?)?,
            uid_headers: header_names(&string_list(data, "requestheader-uid-headers")?)?,
            group_headers: header_names(&string_list(data, "requestheader-group-headers")?)?,
            extra_headers_prefixes: header_prefixes(&string_list(
                data,
                "requestheader-extra-headers-prefix",
            )?)?,
        },
    })
}

/// Combines the flags and the ConfigMap with upstream's precedence: the client CA from
/// `--client-ca-file` when given, else the ConfigMap's; the front-proxy settings from the
/// flags when `--requestheader-client-ca-file` is given, else the ConfigMap's. What neither
/// provides is left empty (that authentication is off).
pub fn resolve(sources: &StaticAuthSources, configmap: Option<&ConfigMapAuth>) -> AuthSnapshot {
    let client_ca = sources
        .client_ca
        .clone()
        .or_else(|| configmap.map(|c| c.client_ca.clone()))
        .unwrap_or_default();
    let request_header = sources
        .request_header
        .clone()
        .or_else(|| configmap.map(|c| c.request_header.clone()))
        .unwrap_or_else(|| RequestHeaderConfig {
            username_headers: Vec::new(),
            group_headers: Vec::new(),
            extra_headers_prefixes: Vec::new(),
            ..RequestHeaderConfig::default()
        });
    AuthSnapshot::new(client_ca, request_header)
}

/// Applies one version of the ConfigMap (`None`: absent) to `config`; an invalid ConfigMap
/// leaves the configuration as it was.
pub fn apply_configmap(
    config: &DelegatedAuthConfig,
    sources: &StaticAuthSources,
    data: Option<&BTreeMap<String, String>>,
) -> Result<(), AuthConfigError> {
    let parsed = data.map(parse_configmap_data).transpose()?;
    config.replace(resolve(sources, parsed.as_ref()));
    Ok(())
}

/// The delegated authentication configuration and the task keeping it current.
pub struct DelegatedAuthSetup {
    /// The configuration, shared by the authenticator and the TLS verifier.
    pub config: Arc<DelegatedAuthConfig>,
    /// The task watching the ConfigMap, when the cluster is consulted.
    pub watch: Option<tokio::task::JoinHandle<()>>,
}

/// Builds the configuration from the flags, and unless the flags fix everything or
/// `--authentication-skip-lookup` is set, from the host's ConfigMap: it is read once now
/// (a failure is fatal unless `--authentication-tolerate-lookup-failure`; an absent
/// ConfigMap is not a failure) and then watched. Without a client the cluster is not asked
/// (and a warning says what will not work).
pub async fn start_delegated_config(
    options: &AuthenticationOptions,
    client: Option<kube::Client>,
) -> Result<DelegatedAuthSetup, AuthConfigError> {
    let sources = options.static_sources()?;
    let config = Arc::new(DelegatedAuthConfig::new(resolve(&sources, None)));
    if options.authentication_skip_lookup || sources.is_complete() {
        return Ok(DelegatedAuthSetup {
            config,
            watch: None,
        });
    }
    let Some(client) = client else {
        tracing::warn!(
            "no authentication kubeconfig to look up configmap/{AUTH_CONFIGMAP_NAME} in \
             {AUTH_CONFIGMAP_NAMESPACE}: authentication it configures will not work"
        );
        return Ok(DelegatedAuthSetup {
            config,
            watch: None,
        });
    };
    let api = kube::Api::<ConfigMap>::namespaced(client, AUTH_CONFIGMAP_NAMESPACE);
    let first = match api.get_opt(AUTH_CONFIGMAP_NAME).await {
        Ok(found) => found.map(|cm| cm.data.unwrap_or_default()),
        Err(err) if options.authentication_tolerate_lookup_failure => {
            tracing::warn!(
                "error looking up in-cluster authentication configuration: {err}; continuing \
                 without it, which may treat all requests as anonymous (set \
                 --authentication-tolerate-lookup-failure=false to require it)"
            );
            None
        }
        Err(err) => return Err(AuthConfigError::Lookup(err)),
    };
    if first.is_none() {
        tracing::warn!(
            "configmap/{AUTH_CONFIGMAP_NAME} in {AUTH_CONFIGMAP_NAMESPACE} not found: client \
             certificate and front-proxy authentication it configures are off until it appears"
        );
    }
    if let Err(err) = apply_configmap(&config, &sources, first.as_ref()) {
        if !options.authentication_tolerate_lookup_failure {
            return Err(err);
        }
        tracing::warn!("ignoring invalid configmap/{AUTH_CONFIGMAP_NAME}: {err}");
    }
    let watch = tokio::spawn(watch_configmap(config.clone(), sources, api));
    Ok(DelegatedAuthSetup {
        config,
        watch: Some(watch),
    })
}

/// Watches the authentication ConfigMap and applies every change to `config` until the
/// task is dropped (watch errors are retried with backoff).
pub async fn watch_configmap(
    config: Arc<DelegatedAuthConfig>,
    sources: StaticAuthSources,
    api: kube::Api<ConfigMap>,
) {
    let selector = format!("metadata.name={AUTH_CONFIGMAP_NAME}");
    let stream = watcher(api, watcher::Config::default().fields(&selector)).default_backoff();
    futures::pin_mut!(stream);
    // During a (re)list: whether the ConfigMap was seen, so its absence can be applied.
    let mut listed: Option<bool> = None;
    while let Some(event) = stream.next().await {
        let update = match event {
            Ok(watcher::Event::Init) => {
                listed = Some(false);
                continue;
            }
            Ok(watcher::Event::InitApply(cm)) | Ok(watcher::Event::Apply(cm)) => {
                if let Some(seen) = listed.as_mut() {
                    *seen = true;
                }
                Some(cm.data.unwrap_or_default())
            }
            Ok(watcher::Event::InitDone) => match listed.take() {
                Some(false) => None,
                _ => continue,
            },
            Ok(watcher::Event::Delete(_)) => None,
            Err(err) => {
                tracing::warn!("watching configmap/{AUTH_CONFIGMAP_NAME}: {err}");
                continue;
            }
        };
        match apply_configmap(&config, &sources, update.as_ref()) {
            Ok(()) => tracing::info!("loaded configmap/{AUTH_CONFIGMAP_NAME}"),
            Err(err) => {
                tracing::warn!("ignoring invalid configmap/{AUTH_CONFIGMAP_NAME}: {err}")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ca_pem(name: &str) -> String {
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, name);
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params.self_signed(&key).unwrap().pem()
    }

    fn data(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    /// The ConfigMap as kube-apiserver publishes it.
    fn upstream_shaped(client_ca: &str, proxy_ca: &str) -> BTreeMap<String, String> {
        data(&[
            ("client-ca-file", client_ca),
            ("requestheader-allowed-names", "[\"front-proxy-client\"]"),
            ("requestheader-client-ca-file", proxy_ca),
            (
                "requestheader-extra-headers-prefix",
                "[\"X-Remote-Extra-\"]",
            ),
            ("requestheader-group-headers", "[\"X-Remote-Group\"]"),
            ("requestheader-username-headers", "[\"X-Remote-User\"]"),
            ("requestheader-uid-headers", "[\"X-Remote-Uid\"]"),
        ])
    }

    #[test]
    fn parses_the_configmap_kube_apiserver_publishes() {
        let (client, proxy) = (ca_pem("client-ca"), ca_pem("front-proxy-ca"));
        let parsed = parse_configmap_data(&upstream_shaped(&client, &proxy)).unwrap();
        assert_eq!(parsed.client_ca.pem(), client);
        assert_eq!(parsed.client_ca.subjects().len(), 1);
        let rh = &parsed.request_header;
        assert_eq!(rh.ca.pem(), proxy);
        assert_eq!(rh.allowed_names, vec!["front-proxy-client"]);
        assert_eq!(rh.username_headers, vec!["x-remote-user"]);
        assert_eq!(rh.uid_headers, vec!["x-remote-uid"]);
        assert_eq!(rh.group_headers, vec!["x-remote-group"]);
        assert_eq!(rh.extra_headers_prefixes, vec!["x-remote-extra-"]);
    }

    #[test]
    fn absent_and_empty_keys_mean_nothing_configured() {
        let parsed = parse_configmap_data(&data(&[
            ("client-ca-file", ""),
            ("requestheader-allowed-names", ""),
        ]))
        .unwrap();
        assert!(parsed.client_ca.is_empty());
        assert!(parsed.request_header.ca.is_empty());
        assert!(parsed.request_header.allowed_names.is_empty());
        assert!(parsed.request_header.username_headers.is_empty());
        assert!(parsed.request_header.extra_headers_prefixes.is_empty());
    }

    #[test]
    fn invalid_values_are_errors() {
        let bad_json = data(&[("requestheader-group-headers", "X-Remote-Group")]);
        assert!(matches!(
            parse_configmap_data(&bad_json),
            Err(AuthConfigError::Json { .. })
        ));
        let bad_pem = data(&[("client-ca-file", "-----BEGIN CERTIFICATE-----\nnope\n")]);
        assert!(matches!(
            parse_configmap_data(&bad_pem),
            Err(AuthConfigError::Ca { .. })
        ));
        let bad_header = data(&[("requestheader-username-headers", "[\"bad header\"]")]);
        assert!(matches!(
            parse_configmap_data(&bad_header),
            Err(AuthConfigError::Header(_))
        ));
    }

    #[test]
    fn flags_take_precedence_part_by_part() {
        let (client, proxy, flag_ca) = (ca_pem("c"), ca_pem("p"), ca_pem("flag"));
        let cm = parse_configmap_data(&upstream_shaped(&client, &proxy)).unwrap();
        let none = StaticAuthSources::default();
        let snap = resolve(&none, Some(&cm));
        assert_eq!(snap.client_ca.pem(), client);
        assert_eq!(snap.request_header.ca.pem(), proxy);
        assert_eq!(snap.hint_subjects().len(), 2);

        let flag_bundle = CaBundle::from_pem(&flag_ca).unwrap();
        let client_flag = StaticAuthSources {
            client_ca: Some(flag_bundle.clone()),
            request_header: None,
        };
        let snap = resolve(&client_flag, Some(&cm));
        assert_eq!(snap.client_ca.pem(), flag_ca);
        assert_eq!(snap.request_header.ca.pem(), proxy);

        let header_flag = StaticAuthSources {
            client_ca: None,
            request_header: Some(RequestHeaderConfig {
                ca: flag_bundle,
                ..RequestHeaderConfig::default()
            }),
        };
        let snap = resolve(&header_flag, Some(&cm));
        assert_eq!(snap.client_ca.pem(), client);
        assert_eq!(snap.request_header.ca.pem(), flag_ca);
        assert!(snap.request_header.allowed_names.is_empty());

        let snap = resolve(&none, None);
        assert!(snap.client_ca.is_empty() && snap.request_header.ca.is_empty());
        assert!(snap.hint_subjects().is_empty());
    }

    #[test]
    fn an_invalid_update_keeps_the_previous_configuration() {
        let proxy = ca_pem("p");
        let config = DelegatedAuthConfig::unsynced();
        assert!(!config.is_synced());
        let sources = StaticAuthSources::default();
        apply_configmap(&config, &sources, Some(&upstream_shaped("", &proxy))).unwrap();
        assert!(config.is_synced());
        let bad = data(&[("requestheader-allowed-names", "{")]);
        assert!(apply_configmap(&config, &sources, Some(&bad)).is_err());
        assert_eq!(config.current().request_header.ca.pem(), proxy);
        apply_configmap(&config, &sources, None).unwrap();
        assert!(config.current().request_header.ca.is_empty());
    }

    fn unreachable_client() -> kube::Client {
        crate::tls::install_crypto_provider();
        let config = kube::Config::new("https://127.0.0.1:1".parse().unwrap());
        kube::Client::try_from(config).unwrap()
    }

    #[tokio::test]
    async fn a_failed_lookup_is_fatal_unless_tolerated() {
        let options = AuthenticationOptions::default();
        let err = start_delegated_config(&options, Some(unreachable_client()))
            .await
            .err()
            .expect("lookup failure must be fatal");
        assert!(matches!(err, AuthConfigError::Lookup(_)), "{err}");

        let tolerant = AuthenticationOptions {
            authentication_tolerate_lookup_failure: true,
            ..AuthenticationOptions::default()
        };
        let setup = start_delegated_config(&tolerant, Some(unreachable_client()))
            .await
            .unwrap();
        assert!(setup.config.is_synced());
        assert!(setup.config.current().client_ca.is_empty());
        setup.watch.expect("the ConfigMap is still watched").abort();
    }

    #[tokio::test]
    async fn skipping_the_lookup_asks_nobody() {
        let options = AuthenticationOptions {
            authentication_skip_lookup: true,
            ..AuthenticationOptions::default()
        };
        let setup = start_delegated_config(&options, Some(unreachable_client()))
            .await
            .unwrap();
        assert!(setup.watch.is_none());
        assert!(setup.config.current().request_header.ca.is_empty());
    }

    #[tokio::test]
    async fn flags_naming_both_authorities_need_no_lookup() {
        let dir = tempfile::tempdir().unwrap();
        let (client, proxy) = (dir.path().join("client.crt"), dir.path().join("proxy.crt"));
        std::fs::write(&client, ca_pem("client")).unwrap();
        std::fs::write(&proxy, ca_pem("proxy")).unwrap();
        let options = AuthenticationOptions {
            client_ca_file: Some(client),
            requestheader_client_ca_file: Some(proxy),
            requestheader_allowed_names: vec!["front-proxy-client".into()],
            ..AuthenticationOptions::default()
        };
        let setup = start_delegated_config(&options, Some(unreachable_client()))
            .await
            .unwrap();
        assert!(setup.watch.is_none());
        let current = setup.config.current();
        assert!(!current.client_ca.is_empty());
        assert_eq!(
            current.request_header.allowed_names,
            vec!["front-proxy-client"]
        );
        assert_eq!(
            current.request_header.username_headers,
            vec!["x-remote-user"]
        );

        let missing = AuthenticationOptions {
            client_ca_file: Some(dir.path().join("absent.crt")),
            ..AuthenticationOptions::default()
        };
        assert!(matches!(
            start_delegated_config(&missing, None).await,
            Err(AuthConfigError::Io { .. })
        ));
    }
}
