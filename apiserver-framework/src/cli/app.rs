//! [`App`]: a server's resources, admission and command line in one builder.

use std::path::PathBuf;
use std::sync::Arc;

use clap::{Parser, Subcommand};

use crate::admission;
use crate::admission::AdmissionPlugin;
use crate::cli::local::{self, LocalOptions, LocalServer};
use crate::cli::logging::LoggingOptions;
use crate::cli::manifests::{self, GroupVersion, ManifestsOptions};
use crate::cli::serve::{self, ProductionServer, ServeError};
use crate::cli::serve_options::ServeOptions;
use crate::devhost::{self, DevHost, DevHostError, DevHostOptions, Extension};
use crate::host_cluster::client::host_client;
use crate::registry::group::{Group, RegistrationError};
use crate::registry::rest::computed::ResourceProvider;
use crate::registry::rest::subresource::CustomSubresource;
use crate::registry::store::strategy::{DefaultStrategy, Strategy};
use crate::registry::versions::Kind;
use crate::resource::ApiResource;
use crate::server::filters::filter::ChainInner;
use crate::server::filters::{ChainLayers, ChainPosition, ChainService};
use crate::server::generic::{GenericApiServer, GenericApiServerBuilder};
use crate::server::tracing::Tracing;
use crate::server::version::VersionInfo;
use crate::storage::traced::TracedStorage;

/// A server built with the framework: its resources, admission plugins and command line.
///
/// ```text
/// App::new("wardle")
///     .resource::<Flunder>()
///     .resource_with::<Fischer>(FischerStrategy)
///     .admission(BanFlunder)
///     .run()
///     .await
/// ```
///
/// Resources are served in the group and version their `#[derive(ApiResource)]` names;
/// resources of one group form one group (and one group-version per version). [`Group`] is
/// there for what needs the group spelled out; a resource registered in a group other than its
/// type's is an error every command reports ([`App::check`]) before serving anything.
pub struct App {
    name: String,
    groups: Vec<Group>,
    admission: Vec<Arc<dyn AdmissionPlugin>>,
    version: VersionInfo,
    layers: ChainLayers,
}

#[derive(Parser, Debug)]
#[command(
    about = "A Kubernetes extension API server built with apiserver-framework",
    args_conflicts_with_subcommands = true
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// Without a command, the server runs in production mode (`serve`).
    #[command(flatten)]
    serve: Box<ServeOptions>,
    #[command(flatten)]
    logging: LoggingOptions,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Serve in production mode (the default): authentication and authorization delegated
    /// to the host cluster, for use behind its aggregation layer.
    Serve(Box<ServeOptions>),
    /// Serve on loopback for development: self-signed TLS, a generated token, allow-all
    /// authorization, and a kubeconfig for kubectl written once ready.
    Local(Box<LocalOptions>),
    /// Start a local stand-in for a host cluster (aggregator, TokenReview,
    /// SubjectAccessReview, the authentication ConfigMap) to run `serve` behind.
    DevHost(DevHostOptions),
    /// Print the manifests deploying this server to a cluster.
    Manifests(ManifestsOptions),
    /// Rewrite every object of the resources served in several versions into their storage
    /// version (as kube-storage-version-migrator does), so that an old version can be dropped;
    /// with --encryption-provider-config, write every object of the encrypted resources that
    /// an old key wrote again with the first provider, so that the old key can be removed.
    /// With etcd it runs beside the servers; the embedded store is locked by a running server.
    MigrateStorage(Box<MigrateOptions>),
}

/// Flags of `migrate-storage`: the storage to migrate, as the server's flags name it.
#[derive(clap::Args, Debug)]
pub struct MigrateOptions {
    /// The storage and the storage versions.
    #[command(flatten)]
    pub storage: crate::cli::storage_options::StorageOptions,
}

/// Errors of running an [`App`].
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    /// Starting the local server failed.
    #[error(transparent)]
    Local(#[from] local::LocalError),
    /// Starting production mode failed.
    #[error(transparent)]
    Serve(#[from] ServeError),
    /// Starting the development host failed.
    #[error(transparent)]
    DevHost(#[from] DevHostError),
    /// The admission flags are invalid.
    #[error(transparent)]
    Admission(#[from] crate::admission::options::AdmissionOptionsError),
    /// The storage could not be opened.
    #[error("storage: {0}")]
    Storage(#[from] crate::storage::StorageError),
    /// The manifests' certificates could not be created.
    #[error(transparent)]
    Tls(#[from] crate::tls::TlsError),
    /// A `--storage-version` flag is malformed or names a version its kind does not have.
    #[error("{0}")]
    StorageVersion(String),
    /// A resource or subresource cannot be served as registered (see [`RegistrationError`]).
    #[error(transparent)]
    Registration(#[from] RegistrationError),
    /// `--tracing-config-file` is unreadable or invalid, or its exporter could not start.
    #[error(transparent)]
    Tracing(#[from] crate::server::tracing::TracingError),
}

impl App {
    /// A server named `name` (the binary's name, used for the kubeconfig and messages).
    pub fn new(name: impl Into<String>) -> Self {
        App {
            name: name.into(),
            groups: Vec::new(),
            admission: Vec::new(),
            version: VersionInfo::for_kubernetes("1", "33"),
            layers: ChainLayers::default(),
        }
    }

    /// Serves the resources of `group` (added to what the app already serves of that group).
    pub fn group(mut self, group: Group) -> Self {
        match self.groups.iter().position(|g| g.name() == group.name()) {
            Some(i) => {
                let mine = std::mem::replace(&mut self.groups[i], Group::new(""));
                self.groups[i] = mine.merge(group);
            }
            None => self.groups.push(group),
        }
        self
    }

    /// Applies `f` to the group named `name`, created (after the others) if new.
    fn in_group(mut self, name: &str, f: impl FnOnce(Group) -> Group) -> Self {
        let i = match self.groups.iter().position(|g| g.name() == name) {
            Some(i) => i,
            None => {
                self.groups.push(Group::new(name));
                self.groups.len() - 1
            }
        };
        let group = std::mem::replace(&mut self.groups[i], Group::new(""));
        self.groups[i] = f(group);
        self
    }

    /// Serves `T` in the group and version its derive names, with the generic store and the
    /// default strategy.
    pub fn resource<T: ApiResource>(self) -> Self {
        self.resource_with::<T>(DefaultStrategy)
    }

    /// Serves `T` in the group and version its derive names, with the generic store driven by
    /// `strategy`.
    pub fn resource_with<T: ApiResource>(self, strategy: impl Strategy<T>) -> Self {
        let group = T::group(&());
        self.in_group(&group, |g| g.resource_with::<T>(strategy))
    }

    /// Serves every version of a multi-version kind (see [`Kind`]) in the kind's group.
    pub fn kind<H: Send + Sync + 'static>(self, kind: Kind<H>) -> Self {
        let group = kind.group().to_string();
        self.in_group(&group, |g| g.kind(kind))
    }

    /// Serves a custom subresource (see [`crate::registry::rest::subresource`]) of `T`'s resource, in
    /// `T`'s group and version.
    pub fn subresource<T: ApiResource>(self, subresource: Arc<dyn CustomSubresource>) -> Self {
        let group = T::group(&());
        self.in_group(&group, |g| g.subresource::<T>(subresource))
    }

    /// Serves `T` computed by `provider` on each request (see [`crate::registry::rest::computed`]),
    /// in the group and version its derive names: read-only, nothing stored.
    pub fn computed<T: ApiResource>(self, provider: impl ResourceProvider<T>) -> Self {
        let group = T::group(&());
        self.in_group(&group, |g| g.computed::<T>(provider))
    }

    /// Whether everything registered can be served: the first [`RegistrationError`] (a
    /// resource registered in a group other than its type's, naming both; a subresource of a
    /// resource not served…). Every command checks this before it starts anything.
    pub fn check(&self) -> Result<(), AppError> {
        for g in &self.groups {
            g.check()?;
        }
        Ok(())
    }

    /// The server this app describes, on a new in-memory store (for tests and tools; the
    /// commands open the storage their flags choose).
    pub fn build(self) -> Result<GenericApiServer, AppError> {
        Ok(self.server_builder().try_build()?)
    }

    /// Stores `resource` (`<plural>.<group>`, a multi-version kind) in `version` instead of
    /// the storage version its kind declares (what `--storage-version` sets).
    ///
    /// # Panics
    /// When the resource is not a multi-version kind of this app or has no such version.
    pub fn storage_version(self, resource: &str, version: &str) -> Self {
        self.try_storage_version(resource, version)
            .unwrap_or_else(|e| panic!("{e}"))
    }

    fn try_storage_version(mut self, resource: &str, version: &str) -> Result<Self, String> {
        let group = self
            .groups
            .iter_mut()
            .find(|g| resource.ends_with(&format!(".{}", g.name())))
            .ok_or_else(|| format!("--storage-version: no group serves {resource}"))?;
        group
            .set_storage_version(resource, version)
            .map_err(|e| format!("--storage-version: {e}"))?;
        Ok(self)
    }

    fn with_storage_versions(
        mut self,
        opts: &crate::cli::storage_options::StorageOptions,
    ) -> Result<Self, AppError> {
        for (resource, version) in opts
            .parsed_storage_versions()
            .map_err(AppError::StorageVersion)?
        {
            self = self
                .try_storage_version(&resource, &version)
                .map_err(AppError::StorageVersion)?;
        }
        Ok(self)
    }

    /// Rewrites every object of the resources served in several versions into their storage
    /// version (see [`crate::registry::versions::VersionedStorage::migrate`]) and, with
    /// `--encryption-provider-config`, writes every object of the encrypted resources that
    /// the first provider did not write again with it, unchanged (the storage-migration step
    /// of a key rotation, see [`EncryptedStorage::rewrite_stale`]); prints what it did.
    ///
    /// [`EncryptedStorage::rewrite_stale`]: crate::storage::encryption::EncryptedStorage::rewrite_stale
    pub async fn migrate_storage(self, opts: &MigrateOptions) -> Result<(), AppError> {
        let app = self.with_storage_versions(&opts.storage)?;
        let mut storage = opts.storage.clone();
        storage.watch_cache = false;
        app.check()?;
        let opened = storage.open().await?;
        let encrypted = opened.encrypted.clone();
        let server = app.server_builder().storage(opened.storage).try_build()?;
        for r in server.registry().resources() {
            let Some(v) = r.downcast_ref::<crate::registry::versions::VersionedStorage>() else {
                continue;
            };
            if !v.is_storage_version() {
                continue;
            }
            let report = v.migrate().await?;
            println!(
                "{}: {} objects, {} rewritten into {}, {} not convertible",
                r.info().group_resource(),
                report.seen,
                report.migrated,
                v.storage_version(),
                report.failed.len()
            );
            for key in &report.failed {
                println!("  not convertible: {key}");
            }
        }
        // After the version migration, whose writes were encrypted by the first provider.
        if let Some(encrypted) = encrypted {
            let report = encrypted.rewrite_stale("/").await?;
            println!(
                "encryption: {} objects of the encrypted resources, {} written again with the first provider",
                report.seen, report.rewritten
            );
        }
        Ok(())
    }

    /// Adds an admission plugin.
    pub fn admission(mut self, plugin: impl AdmissionPlugin) -> Self {
        self.admission.push(Arc::new(plugin));
        self
    }

    /// Selects the admission plugins as `serve` and `local` do: `host` plugins (production
    /// mode's NamespaceLifecycle and webhooks) before the app's own, then those `options`
    /// enable or leave enabled by default. For servers started piece by piece, as the test kit
    /// (`testing`, with the `testing` feature) does.
    pub fn select_admission(
        mut self,
        host: Vec<Arc<dyn AdmissionPlugin>>,
        options: &crate::admission::options::AdmissionOptions,
    ) -> Result<Self, AppError> {
        let mut plugins = host;
        plugins.append(&mut self.admission);
        self.admission = options.select(plugins, &admission::options::HOST_PLUGINS)?;
        Ok(self)
    }

    /// Sets what `/version` reports.
    pub fn version(mut self, version: VersionInfo) -> Self {
        self.version = version;
        self
    }

    /// Runs `layer` at `position` of the handler chain, in every mode (see
    /// [`GenericApiServerBuilder::layer`]).
    pub fn layer<L>(mut self, position: ChainPosition, layer: L) -> Self
    where
        L: tower::Layer<ChainService> + Send + Sync + 'static,
        L::Service: ChainInner,
    {
        self.layers.add(position, layer);
        self
    }

    /// The server this app describes, as a builder (to add storage, checks or a delegate).
    pub fn server_builder(self) -> GenericApiServerBuilder {
        let mut b = GenericApiServer::builder(self.name)
            .version(self.version)
            .layers(&self.layers);
        for g in self.groups {
            b = b.group(g);
        }
        for p in self.admission {
            b = b.admission_arc(p);
        }
        b
    }

    /// The group-versions this app serves, in registration order.
    pub fn group_versions(&self) -> Vec<GroupVersion> {
        self.groups
            .iter()
            .flat_map(|g| {
                g.versions().iter().map(|v| GroupVersion {
                    group: g.name().to_string(),
                    version: v.clone(),
                })
            })
            .collect()
    }

    /// What a development host needs to know about this app: its name and group-versions.
    pub fn extension(&self) -> Extension {
        Extension {
            name: self.name.clone(),
            groups: self
                .groups
                .iter()
                .map(|g| (g.name().to_string(), g.versions().to_vec()))
                .collect(),
        }
    }

    /// Starts the server in production mode (see `ServeOptions`) on the storage its options
    /// choose, and returns once it listens.
    pub async fn start_serve(self, opts: &ServeOptions) -> Result<ProductionServer, AppError> {
        self.check()?;
        self.with_storage_versions(&opts.storage)?
            .start_serve_inner(opts)
            .await
    }

    async fn start_serve_inner(
        mut self,
        opts: &ServeOptions,
    ) -> Result<ProductionServer, AppError> {
        let host = match &opts.kubeconfig {
            Some(path) => Some(host_client(Some(path)).await.map_err(ServeError::from)?),
            None => match host_client(None).await {
                Ok(client) => Some(client),
                Err(e) => {
                    tracing::warn!(
                        "{e}: NamespaceLifecycle and the admission webhooks are off (they read the host through --kubeconfig)"
                    );
                    None
                }
            },
        };
        let mut plugins = host
            .map(admission::production::host_plugins)
            .unwrap_or_default();
        plugins.append(&mut self.admission);
        self.admission = opts
            .admission
            .select(plugins, &admission::options::HOST_PLUGINS)?;
        let mut opened = opts.storage.open().await?;
        if opts.tracing.enabled() {
            opened.storage = TracedStorage::wrap(opened.storage);
        }
        let mut builder = self.server_builder().storage(opened.storage);
        for check in opened.health_checks {
            builder = builder.health_check(check);
        }
        for check in opened.readiness_checks {
            builder = builder.readiness_check(check);
        }
        for check in opened.healthz_checks {
            builder = builder.healthz_check(check);
        }
        Ok(serve::start(Arc::new(builder.try_build()?), opts).await?)
    }

    /// Starts a development host prepared for this app (see [`DevHostOptions`]).
    pub async fn start_dev_host(&self, opts: &DevHostOptions) -> Result<DevHost, AppError> {
        self.check()?;
        Ok(devhost::DevHost::start(&self.extension(), opts).await?)
    }

    /// Starts the server in local mode (see [`LocalOptions`]) on the storage its options
    /// choose (the embedded store under `--data-dir` by default) and returns once it listens.
    pub async fn start_local(self, opts: &LocalOptions) -> Result<LocalServer, AppError> {
        self.check()?;
        self.with_storage_versions(&opts.storage)?
            .start_local_inner(opts)
            .await
    }

    async fn start_local_inner(mut self, opts: &LocalOptions) -> Result<LocalServer, AppError> {
        let name = self.name.clone();
        let mut opened = opts.storage.open().await.map_err(local::LocalError::from)?;
        if opts.tracing.enabled() {
            opened.storage = TracedStorage::wrap(opened.storage);
        }
        let host = local::host(opened.storage.clone()).await?;
        let mut plugins = local::host_plugins(opened.storage.clone());
        plugins.append(&mut self.admission);
        self.admission = opts
            .admission
            .select(plugins, &admission::options::HOST_PLUGINS)?;
        let mut builder = self
            .server_builder()
            .storage(opened.storage)
            .delegate_to(host);
        for check in opened.health_checks {
            builder = builder.health_check(check);
        }
        for check in opened.readiness_checks {
            builder = builder.readiness_check(check);
        }
        for check in opened.healthz_checks {
            builder = builder.healthz_check(check);
        }
        Ok(local::start(&name, Arc::new(builder.try_build()?), opts).await?)
    }

    /// Parses the process's command line and runs the chosen command until it is stopped
    /// (SIGINT or SIGTERM).
    pub async fn run(self) -> Result<(), AppError> {
        let cli = Cli::parse();
        let command = cli.command.unwrap_or(Command::Serve(cli.serve));
        // As upstream, a bad --tracing-config-file refuses to start.
        // The service name of the spans: the server's name, the development host's its own.
        let (config, service) = match &command {
            Command::Serve(o) => (o.tracing.load()?, self.name.clone()),
            Command::Local(o) => (o.tracing.load()?, self.name.clone()),
            Command::DevHost(o) => (o.tracing.load()?, format!("{}-dev-host", self.name)),
            _ => (None, String::new()),
        };
        let tracing = config
            .map(|config| Tracing::start(&config, &service))
            .transpose()?;
        cli.logging.init_with(tracing.as_ref());
        let result = self.run_command(command).await;
        if let Some(tracing) = tracing {
            tracing.shutdown();
        }
        result
    }

    /// Runs `command` until it is done or stopped.
    async fn run_command(self, command: Command) -> Result<(), AppError> {
        match command {
            Command::Serve(opts) => {
                let name = self.name.clone();
                let server = self.start_serve(&opts).await?;
                println!("{name} is serving on {}", server.url);
                wait_for_first_signal().await;
                tracing::info!("shutting down");
                server.shutdown().await;
                Ok(())
            }
            Command::DevHost(opts) => {
                let host = self.start_dev_host(&opts).await?;
                print_dev_host_instructions(&self.name, &host, &opts);
                wait_for_signal().await;
                tracing::info!("shutting down");
                host.shutdown().await;
                Ok(())
            }
            Command::MigrateStorage(opts) => self.migrate_storage(&opts).await,
            Command::Manifests(opts) => {
                self.check()?;
                print!(
                    "{}",
                    manifests::render(&self.name, &self.group_versions(), &opts)?
                );
                Ok(())
            }
            Command::Local(mut opts) => {
                if opts.write_kubeconfig.is_none() {
                    opts.write_kubeconfig =
                        Some(PathBuf::from(format!("./{}.kubeconfig", self.name)));
                }
                let name = self.name.clone();
                let server = self.start_local(&opts).await?;
                let path = server
                    .kubeconfig_path
                    .as_ref()
                    .map(|p| p.display().to_string())
                    .unwrap_or_default();
                println!("{name} is serving on {}", server.url);
                println!("kubeconfig written to {path}; try:");
                println!("  kubectl --kubeconfig {path} api-resources");
                wait_for_first_signal().await;
                tracing::info!("shutting down");
                server.running.shutdown().await;
                Ok(())
            }
        }
    }
}

/// Tells the developer how to run the server behind the host and drive it with kubectl.
fn print_dev_host_instructions(name: &str, host: &DevHost, opts: &DevHostOptions) {
    let files = &host.files;
    let identity = files.kubeconfig_path(&devhost::files::server_identity(name));
    let admin = files.kubeconfig_path(devhost::files::users::ADMIN);
    let alice = files.kubeconfig_path(devhost::files::users::ALICE);
    let bob = files.kubeconfig_path(devhost::files::users::BOB);
    println!("dev host is serving on {}", host.url);
    println!("run {name} behind it (in another terminal):");
    println!(
        "  cargo run -p {name} -- serve --secure-port {} --bind-address {} \\
    --tls-cert-file {} --tls-private-key-file {} \\
    --authentication-kubeconfig {id} --authorization-kubeconfig {id} --kubeconfig {id}",
        opts.backend_address.port(),
        opts.backend_address.ip(),
        files.backend_cert.cert_path.display(),
        files.backend_cert.key_path.display(),
        id = identity.display(),
    );
    println!("then, as a user of the host:");
    println!(
        "  kubectl --kubeconfig {} get apiservices   # admin (system:masters)",
        admin.display()
    );
    println!(
        "  kubectl --kubeconfig {} api-resources     # alice (editors)",
        alice.display()
    );
    println!(
        "  kubectl --kubeconfig {} get all           # bob (viewers)",
        bob.display()
    );
}

/// Waits for SIGINT or SIGTERM, then exits the process (code 1, as upstream) on a second one
/// while the graceful shutdown runs.
async fn wait_for_first_signal() {
    wait_for_signal().await;
    tokio::spawn(async {
        wait_for_signal().await;
        tracing::warn!("second signal; exiting at once");
        std::process::exit(1);
    });
}

async fn wait_for_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let Ok(mut term) = signal(SignalKind::terminate()) else {
            let _ = tokio::signal::ctrl_c().await;
            return;
        };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logging_flags_go_with_every_command() {
        let cli =
            Cli::try_parse_from(["x", "local", "-v", "4", "--logging-format", "json"]).unwrap();
        assert_eq!(cli.logging.verbosity, 4);
        assert!(matches!(cli.command, Some(Command::Local(_))));
        let cli = Cli::try_parse_from(["x", "serve", "--v=3"]).unwrap();
        assert_eq!(cli.logging.verbosity, 3);
        let cli = Cli::try_parse_from(["x", "--v=5"]).unwrap();
        assert_eq!(cli.logging.verbosity, 5);
        assert!(cli.command.is_none());
    }
}
