//! Starting the development host: the aggregator in front of the host's own resources,
//! seeded with namespaces, the authentication ConfigMap and one APIService per group-version
//! of the extension server.

use std::net::SocketAddr;
use std::sync::Arc;

use serde_json::{Value, json};

use crate::admission::AdmissionChain;
use crate::aggregator::apiservice;
use crate::aggregator::{Aggregator, AggregatorOptions};
use crate::authz::Authorizer;
use crate::authz::privileged::{PrivilegedGroups, SYSTEM_MASTERS};
use crate::authz::union::{NamedAuthorizer, UnionAuthorizer};
use crate::devhost::core::{ConfigMap, Namespace};
use crate::devhost::files::{self, HostFiles, SERVICE_NAME};
use crate::devhost::kubeconfig;
use crate::devhost::options::DevHostOptions;
use crate::devhost::policies::{
    MutatingAdmissionPolicy, MutatingAdmissionPolicyBinding, ValidatingAdmissionPolicy,
    ValidatingAdmissionPolicyBinding,
};
use crate::devhost::policy_checks::PolicyChecks;
use crate::devhost::protobuf;
use crate::devhost::reviews::{ReviewLog, SubjectAccessReviews, TokenReviews};
use crate::devhost::rules::{RulesFile, RulesFileError};
use crate::devhost::self_reviews::{
    AUTHENTICATION_GROUP, AUTHORIZATION_GROUP, BasicUser, PrivilegedRules, SelfReviews,
};
use crate::devhost::tokens::{TokenFile, TokenFileError};
use crate::devhost::webhooks::{
    self, MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use crate::error::ApiError;
use crate::host_cluster::resolver::StaticServiceResolver;
use crate::registry::group::Group;
use crate::registry::rest::RequestContext;
use crate::registry::rest::options::WriteOptions;
use crate::server::generic::GenericApiServer;
use crate::server::serve::{self, HandlerChain, RunningServer};
use crate::storage::Storage;
use crate::storage::memory::MemoryStorage;
use crate::tls::{ServingCert, TlsError, install_crypto_provider};
use crate::user::UserInfo;

/// The name of the host's authentication ConfigMap in `kube-system`.
pub(crate) const AUTHENTICATION_CONFIGMAP: &str = "extension-apiserver-authentication";

/// Errors of starting the development host.
#[derive(Debug, thiserror::Error)]
pub enum DevHostError {
    /// Certificates could not be created or read.
    #[error(transparent)]
    Tls(#[from] TlsError),
    /// The token file is unusable.
    #[error(transparent)]
    Tokens(#[from] TokenFileError),
    /// The rules file is unusable.
    #[error(transparent)]
    Rules(#[from] RulesFileError),
    /// The aggregator could not be set up.
    #[error("aggregator: {0}")]
    Aggregator(String),
    /// Seeding the host's objects failed.
    #[error("seeding {what}: {error}")]
    Seed {
        /// What was being created.
        what: String,
        /// The error.
        error: ApiError,
    },
    /// Binding or writing files failed.
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// The extension server the host is prepared for: its name and served group-versions.
#[derive(Clone, Debug)]
pub struct Extension {
    /// The server's name (its namespace and identity on the host).
    pub name: String,
    /// `(group, versions)` pairs it serves.
    pub groups: Vec<(String, Vec<String>)>,
}

/// A running development host.
pub struct DevHost {
    /// The listener.
    pub running: RunningServer,
    /// `https://<address>:<port>`.
    pub url: String,
    /// The host's files (certificates, tokens, rules, kubeconfigs).
    pub files: HostFiles,
    /// The users of the token file.
    pub tokens: Arc<TokenFile>,
    /// Every TokenReview the host answered.
    pub token_reviews: Arc<ReviewLog>,
    /// Every SubjectAccessReview the host answered.
    pub access_reviews: Arc<ReviewLog>,
    /// The aggregator server (first of the chain).
    pub server: Arc<GenericApiServer>,
    /// The aggregator that server hands requests to first.
    pub aggregator: Arc<Aggregator>,
    controller: tokio::task::JoinHandle<()>,
}

impl DevHost {
    /// Starts the development host for `extension`.
    pub async fn start(extension: &Extension, opts: &DevHostOptions) -> Result<Self, DevHostError> {
        start_host(extension, opts).await
    }

    /// Stops the availability controller and the listener.
    pub async fn shutdown(self) {
        self.controller.abort();
        self.running.shutdown().await;
    }
}

fn admin() -> UserInfo {
    UserInfo::new(
        "system:dev-host",
        &["system:masters", "system:authenticated"],
    )
}

/// Creates an object through the chain's storage as the host itself; an existing one is
/// replaced (`replace`) or kept.
async fn seed(
    server: &Arc<GenericApiServer>,
    (group, version, plural): (&str, &str, &str),
    namespace: Option<&str>,
    object: Value,
    replace: bool,
) -> Result<(), DevHostError> {
    let mut current = Some(server.clone());
    let what = format!("{plural} {}", object["metadata"]["name"]);
    while let Some(s) = current {
        if let Some(rest) = s.registry().find(group, version, plural).cloned() {
            let ctx = RequestContext {
                namespace: namespace.map(str::to_string),
                user: admin(),
                admission: Arc::new(AdmissionChain::new(Vec::new())),
                registry: s.registry().clone(),
                request_resource: None,
                notes: Default::default(),
            };
            let name = object["metadata"]["name"]
                .as_str()
                .unwrap_or("")
                .to_string();
            let opts = WriteOptions::default();
            return match rest.create(&ctx, object.clone(), &opts).await {
                Ok(_) => Ok(()),
                Err(e) if e.code == 409 && !replace => Ok(()),
                Err(e) if e.code == 409 => {
                    let replace = async {
                        let current: Value = serde_json::from_slice(&rest.get(&ctx, &name).await?)
                            .map_err(ApiError::internal)?;
                        let mut object = object;
                        object["metadata"]["resourceVersion"] =
                            current["metadata"]["resourceVersion"].clone();
                        rest.update(&ctx, &name, None, object, &opts).await
                    };
                    replace
                        .await
                        .map(|_| ())
                        .map_err(|error| DevHostError::Seed { what, error })
                }
                Err(error) => Err(DevHostError::Seed { what, error }),
            };
        }
        current = s.delegate().cloned();
    }
    Err(DevHostError::Seed {
        what,
        error: ApiError::route_not_found(),
    })
}

/// The `kube-system/extension-apiserver-authentication` ConfigMap of the host's files.
pub fn authentication_configmap(files: &HostFiles, allowed_names: &[&str]) -> Value {
    let list = |v: &[&str]| serde_json::to_string(v).unwrap_or_default();
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": AUTHENTICATION_CONFIGMAP, "namespace": "kube-system"},
        "data": {
            "client-ca-file": files.ca_pem,
            "requestheader-client-ca-file": files.front_proxy_ca_pem,
            "requestheader-allowed-names": list(allowed_names),
            "requestheader-username-headers": list(&["X-Remote-User"]),
            "requestheader-uid-headers": list(&["X-Remote-Uid"]),
            "requestheader-group-headers": list(&["X-Remote-Group"]),
            "requestheader-extra-headers-prefix": list(&["X-Remote-Extra-"]),
        }
    })
}

/// Replaces the host's authentication ConfigMap (e.g. to rotate a CA or change the allowed
/// names while extension servers run).
pub async fn write_authentication_configmap(
    server: &Arc<GenericApiServer>,
    configmap: Value,
) -> Result<(), DevHostError> {
    seed(
        server,
        ("", "v1", "configmaps"),
        Some("kube-system"),
        configmap,
        true,
    )
    .await
}

/// Starts the development host for `extension` ([`DevHost::start`]).
async fn start_host(extension: &Extension, opts: &DevHostOptions) -> Result<DevHost, DevHostError> {
    install_crypto_provider();
    let group_names: Vec<String> = extension.groups.iter().map(|(g, _)| g.clone()).collect();
    let files = HostFiles::prepare(&opts.dir, &extension.name, &group_names)?;
    let tokens = Arc::new(TokenFile::read(&files.tokens_path)?);
    let rules = Arc::new(RulesFile::read(&files.rules_path)?);
    let token_reviews = Arc::new(ReviewLog::default());
    let access_reviews = Arc::new(ReviewLog::default());
    let authorizer: Arc<dyn Authorizer> = Arc::new(UnionAuthorizer::new(vec![
        NamedAuthorizer::new("privileged", Arc::new(PrivilegedGroups::system_masters())),
        NamedAuthorizer::new("basic-user", Arc::new(BasicUser)),
        NamedAuthorizer::new("rules", rules),
    ]));
    let self_reviews = SelfReviews::new(
        authorizer.clone(),
        Arc::new(PrivilegedRules::new([SYSTEM_MASTERS])),
    );
    let mut authentication = Group::new(AUTHENTICATION_GROUP).storage(Arc::new(TokenReviews::new(
        tokens.clone(),
        token_reviews.clone(),
    )));
    for storage in self_reviews.authentication {
        authentication = authentication.storage(storage);
    }
    let mut authorization = Group::new(AUTHORIZATION_GROUP).storage(Arc::new(
        SubjectAccessReviews::new(authorizer.clone(), access_reviews.clone()),
    ));
    for storage in self_reviews.authorization {
        authorization = authorization.storage(storage);
    }
    // As a cluster, the host runs NamespaceLifecycle over its own namespaces: nothing is
    // created in a namespace it does not have, and `default` cannot be deleted.
    let core_storage: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
    let core = GenericApiServer::builder("dev-host-core")
        .storage(core_storage.clone())
        .admission_arc(crate::devhost::core::namespace_lifecycle(core_storage))
        .group(
            Group::new("")
                .built_in::<Namespace>(protobuf::namespace)
                .built_in::<ConfigMap>(protobuf::config_map)
                .computed::<crate::devhost::node::Node>(crate::devhost::node::ThisMachine),
        )
        .group(
            Group::new(webhooks::GROUP)
                .resource_with::<MutatingWebhookConfiguration>(PolicyChecks)
                .resource_with::<ValidatingWebhookConfiguration>(PolicyChecks)
                .resource_with::<ValidatingAdmissionPolicy>(PolicyChecks)
                .resource_with::<ValidatingAdmissionPolicyBinding>(PolicyChecks)
                .resource_with::<MutatingAdmissionPolicy>(PolicyChecks)
                .resource_with::<MutatingAdmissionPolicyBinding>(PolicyChecks),
        )
        .group(authentication)
        .group(authorization)
        .build();
    let resolver = StaticServiceResolver::new().with_endpoints(
        &extension.name,
        SERVICE_NAME,
        std::iter::once(&opts.backend_address)
            .chain(&opts.more_backend_addresses)
            .map(ToString::to_string),
    );
    let aggregator = Arc::new(
        Aggregator::new(AggregatorOptions {
            proxy_client_cert_pem: files.front_proxy_client.cert_pem.clone(),
            proxy_client_key_pem: files.front_proxy_client.key_pem.clone(),
            resolver: Arc::new(resolver),
            check_interval: opts.availability_check_interval.0,
            replay_budget_bytes: opts.aggregator_replay_budget_bytes,
        })
        .map_err(|e| DevHostError::Aggregator(e.to_string()))?,
    );
    let server = Arc::new(
        GenericApiServer::builder("dev-host")
            .group(apiservice::group())
            .aggregator(aggregator.clone())
            .build()
            .delegate_to(core),
    );
    for ns in [
        "default",
        "kube-system",
        "kube-public",
        extension.name.as_str(),
    ] {
        let object = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns},
                            "status": {"phase": "Active"}});
        seed(&server, ("", "v1", "namespaces"), None, object, false).await?;
    }
    write_authentication_configmap(
        &server,
        authentication_configmap(&files, &[files::FRONT_PROXY_CLIENT]),
    )
    .await?;
    let ca_bundle = base64::Engine::encode(
        &base64::engine::general_purpose::STANDARD,
        files.ca_pem.as_bytes(),
    );
    for (group, versions) in &extension.groups {
        for version in versions {
            let object = json!({
                "apiVersion": "apiregistration.k8s.io/v1",
                "kind": "APIService",
                "metadata": {"name": format!("{version}.{group}")},
                "spec": {
                    "group": group, "version": version,
                    "service": {"namespace": extension.name, "name": SERVICE_NAME, "port": 443},
                    "caBundle": ca_bundle,
                    "groupPriorityMinimum": 1000, "versionPriority": 15,
                },
            });
            seed(
                &server,
                (apiservice::GROUP, "v1", "apiservices"),
                None,
                object,
                true,
            )
            .await?;
        }
    }
    let controller = aggregator.start(&server);
    let tls = ServingCert::from_files(&files.host_cert.cert_path, &files.host_cert.key_path)?
        .server_config()?;
    let listener =
        tokio::net::TcpListener::bind(SocketAddr::new(opts.bind_address, opts.secure_port)).await?;
    let chain = Arc::new(
        HandlerChain::new(server.clone(), tokens.clone(), authorizer)
            .with_tracing(opts.tracing.enabled()),
    );
    // The kubeconfigs are written before the host answers anything, so that whoever waits for
    // it to be ready finds them.
    let url = serve::https_url(listener.local_addr()?);
    for user in [
        files::users::ADMIN.to_string(),
        files::users::ALICE.to_string(),
        files::users::BOB.to_string(),
        files::server_identity(&extension.name),
    ] {
        if let Some(token) = tokens.token_of(&user) {
            let text = kubeconfig::render("dev-host", &url, &files.ca_pem, token);
            kubeconfig::write(&files.kubeconfig_path(&user), &text)?;
        }
    }
    let running = serve::RunningServer::start(listener, tls, chain)?;
    Ok(DevHost {
        running,
        url,
        files,
        tokens,
        token_reviews,
        access_reviews,
        server,
        aggregator,
        controller,
    })
}
