//! [`TestServer`]: an app served in the test process, with clients for it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use clap::Parser;

use crate::ApiResource;
use crate::admission::production::host_plugins;
use crate::cli::App;
use crate::cli::local::{self, LocalOptions, LocalServer};
use crate::cli::serve::{self, ProductionServer};
use crate::cli::serve_options::ServeOptions;
use crate::devhost::files::server_identity;
use crate::devhost::{DevHost, DevHostOptions};
use crate::registry::scheme::Registry;
use crate::registry::store::Store;
use crate::server::generic::GenericApiServer;

/// The users of [`TestServer::production`]'s development host.
pub mod users {
    pub use crate::devhost::files::users::{ADMIN, ALICE, BOB};
}

/// How long [`TestServer::production`] waits for the app's APIServices to become available.
const AVAILABLE_TIMEOUT: Duration = Duration::from_secs(30);

/// Errors of starting a [`TestServer`].
#[derive(Debug, thiserror::Error)]
pub enum TestServerError {
    /// The temporary directory or a file in it could not be created or read.
    #[error("test server files: {0}")]
    Io(#[from] std::io::Error),
    /// The flags the test server builds were refused (a framework bug).
    #[error("test server options: {0}")]
    Options(String),
    /// The app could not start.
    #[error(transparent)]
    App(#[from] crate::cli::app::AppError),
    /// A kubeconfig could not be turned into a client.
    #[error("client for {user}: {message}")]
    Client {
        /// Whose client.
        user: String,
        /// Why.
        message: String,
    },
    /// The development host did not report the app's APIServices available in time.
    #[error("the app's APIServices are not available behind the dev host: {0}")]
    NotAvailable(String),
}

/// How the app is being served.
enum Serving {
    Local(LocalServer),
    Production {
        server: ProductionServer,
        host: Box<DevHost>,
    },
}

/// An app served in the test process on a free loopback port, with clients for it.
///
/// The server runs on the test's tokio runtime and stops with it (or with
/// [`TestServer::shutdown`]); its files (certificates, kubeconfigs) live in a temporary
/// directory that is removed when the `TestServer` is dropped.
pub struct TestServer {
    serving: Serving,
    server: Arc<GenericApiServer>,
    clients: BTreeMap<String, kube::Client>,
    kubeconfigs: BTreeMap<String, PathBuf>,
    url: String,
    dir: tempfile::TempDir,
}

/// Options parsed as the command line parses them, so every default is the command line's.
#[derive(Parser)]
struct LocalCli {
    #[command(flatten)]
    local: LocalOptions,
}

#[derive(Parser)]
struct ServeCli {
    #[command(flatten)]
    serve: ServeOptions,
}

fn parse<P: Parser>(args: &[String]) -> Result<P, TestServerError> {
    P::try_parse_from(std::iter::once("test-server".to_string()).chain(args.iter().cloned()))
        .map_err(|e| TestServerError::Options(e.to_string()))
}

fn path_arg(path: &Path) -> String {
    path.display().to_string()
}

/// `local` mode's options for a test server of `name` in `dir`: a free port of 127.0.0.1, the
/// certificates and the kubeconfig in `dir`, the memory store, then `flags`.
fn local_options(
    name: &str,
    dir: &Path,
    flags: &[String],
) -> Result<LocalOptions, TestServerError> {
    let mut args = vec![
        "--secure-port=0".into(),
        "--bind-address=127.0.0.1".into(),
        format!("--cert-dir={}", path_arg(&dir.join("certificates"))),
        format!(
            "--write-kubeconfig={}",
            path_arg(&dir.join(format!("{name}.kubeconfig")))
        ),
        "--storage-backend=memory".into(),
    ];
    args.extend(flags.iter().cloned());
    Ok(parse::<LocalCli>(&args)?.local)
}

/// A kube-rs client configured from the kubeconfig file at `path`.
async fn client_from(user: &str, path: &Path) -> Result<kube::Client, TestServerError> {
    let failed = |message: String| TestServerError::Client {
        user: user.to_string(),
        message,
    };
    let kubeconfig =
        kube::config::Kubeconfig::read_from(path).map_err(|e| failed(e.to_string()))?;
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .map_err(|e| failed(e.to_string()))?;
    kube::Client::try_from(config).map_err(|e| failed(e.to_string()))
}

/// A port free on 127.0.0.1 right now (for an address a server must be told before it
/// listens, as the dev host's backend address).
pub fn free_port() -> std::io::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

impl TestServer {
    /// Serves `app` as `<server> local` does — self-signed TLS, a random bearer token, every
    /// request allowed, the local host's namespaces (`default`, `kube-system`, `kube-public`)
    /// and self reviews — on a free port of 127.0.0.1, with the memory store, and
    /// `NamespaceLifecycle` over the local host's namespaces before the app's admission plugins
    /// (objects go only into namespaces that exist), and returns once it listens.
    ///
    /// [`TestServer::client`] is a ready kube-rs client; [`TestServer::kubeconfig`] is a file
    /// for `kubectl --kubeconfig`.
    pub async fn start(app: App) -> Result<TestServer, TestServerError> {
        let name = app.extension().name;
        let dir = tempfile::tempdir()?;
        let opts = local_options(&name, dir.path(), &[])?;
        let opened = opts
            .storage
            .open()
            .await
            .map_err(crate::cli::app::AppError::from)?;
        let host = local::host(opened.storage.clone())
            .await
            .map_err(crate::cli::app::AppError::from)?;
        let server = app
            .select_admission(local::host_plugins(opened.storage.clone()), &opts.admission)?
            .server_builder()
            .storage(opened.storage)
            .delegate_to(host)
            .try_build()
            .map_err(crate::cli::app::AppError::from)?;
        Self::local(&name, Arc::new(server), dir, &opts).await
    }

    /// Serves `server`, assembled by the test itself (a delegation chain built by hand, a
    /// store on storage the test holds), as `local` mode serves an app: self-signed TLS, a
    /// random bearer token, every request allowed, on a free port of 127.0.0.1. `flags` are
    /// more of `local` mode's flags (an audit policy, limits), after the kit's own. Unlike
    /// [`TestServer::start`], nothing is added to the chain: `server` is served as given.
    ///
    /// [`TestServer::local_server`] gives the token and the CA for clients of the test's own.
    pub async fn serve_local(
        name: &str,
        server: impl Into<Arc<GenericApiServer>>,
        flags: &[String],
    ) -> Result<TestServer, TestServerError> {
        let dir = tempfile::tempdir()?;
        let opts = local_options(name, dir.path(), flags)?;
        Self::local(name, server.into(), dir, &opts).await
    }

    /// Serves `server` with `opts` as `local` mode does, with a client of its kubeconfig.
    async fn local(
        name: &str,
        server: Arc<GenericApiServer>,
        dir: tempfile::TempDir,
        opts: &LocalOptions,
    ) -> Result<TestServer, TestServerError> {
        let running = local::start(name, server.clone(), opts)
            .await
            .map_err(crate::cli::app::AppError::from)?;
        let kubeconfig = dir.path().join(format!("{name}.kubeconfig"));
        let client = client_from(name, &kubeconfig).await?;
        Ok(TestServer {
            url: running.url.clone(),
            serving: Serving::Local(running),
            server,
            clients: BTreeMap::from([(name.to_string(), client)]),
            kubeconfigs: BTreeMap::from([(name.to_string(), kubeconfig)]),
            dir,
        })
    }

    /// Serves `app` as `<server> serve` does, behind a development host started for it (see
    /// [`crate::devhost`]): the host proxies the app's APIServices to it with its front-proxy
    /// certificate, answers its TokenReviews and SubjectAccessReviews from the host's users and
    /// rules, and its admission plugins (NamespaceLifecycle, the admission webhooks) run before
    /// the app's own. Returns once the host reports the app's APIServices available.
    ///
    /// [`TestServer::client`] is `admin` (in `system:masters`); [`TestServer::user`] gives
    /// `alice` (may do anything to the app's resources) and `bob` (may read them). All requests
    /// go through the host, as in a cluster; [`TestServer::url`] is the host's.
    pub async fn production(app: App) -> Result<TestServer, TestServerError> {
        let extension = app.extension();
        let name = extension.name.clone();
        let dir = tempfile::tempdir()?;
        let backend_port = free_port()?;
        let host_opts = DevHostOptions {
            secure_port: 0,
            dir: dir.path().join("dev-host"),
            backend_address: ([127, 0, 0, 1], backend_port).into(),
            availability_check_interval: crate::duration::GoDuration(Duration::from_millis(200)),
            ..DevHostOptions::default()
        };
        let host = crate::devhost::DevHost::start(&extension, &host_opts)
            .await
            .map_err(crate::cli::app::AppError::from)?;
        let files = &host.files;
        let identity = path_arg(&files.kubeconfig_path(&server_identity(&name)));
        let opts = parse::<ServeCli>(&[
            "--bind-address=127.0.0.1".into(),
            format!("--secure-port={backend_port}"),
            format!(
                "--tls-cert-file={}",
                path_arg(&files.backend_cert.cert_path)
            ),
            format!(
                "--tls-private-key-file={}",
                path_arg(&files.backend_cert.key_path)
            ),
            format!("--authentication-kubeconfig={identity}"),
            format!("--authorization-kubeconfig={identity}"),
            format!("--kubeconfig={identity}"),
            "--storage-backend=memory".into(),
        ])?
        .serve;
        let host_client = client_from(&identity, Path::new(&identity)).await?;
        let opened = opts
            .storage
            .open()
            .await
            .map_err(crate::cli::app::AppError::from)?;
        let server = Arc::new(
            app.select_admission(host_plugins(host_client), &opts.admission)?
                .server_builder()
                .storage(opened.storage)
                .try_build()
                .map_err(crate::cli::app::AppError::from)?,
        );
        let running = serve::start(server.clone(), &opts)
            .await
            .map_err(crate::cli::app::AppError::from)?;
        let mut clients = BTreeMap::new();
        let mut kubeconfigs = BTreeMap::new();
        for user in [users::ADMIN, users::ALICE, users::BOB] {
            let path = files.kubeconfig_path(user);
            clients.insert(user.to_string(), client_from(user, &path).await?);
            kubeconfigs.insert(user.to_string(), path);
        }
        let test_server = TestServer {
            url: host.url.clone(),
            serving: Serving::Production {
                server: running,
                host: Box::new(host),
            },
            server,
            clients,
            kubeconfigs,
            dir,
        };
        test_server.wait_available(&extension).await?;
        Ok(test_server)
    }

    /// Waits until the host marks every APIService of `extension` `Available`.
    async fn wait_available(
        &self,
        extension: &crate::devhost::Extension,
    ) -> Result<(), TestServerError> {
        let client = self.client();
        for (group, versions) in &extension.groups {
            for version in versions {
                let path = format!("/apis/apiregistration.k8s.io/v1/apiservices/{version}.{group}");
                let what = format!("{path} to be available");
                super::wait::poll(&what, AVAILABLE_TIMEOUT, || async {
                    let object = get_json(&client, &path)
                        .await
                        .map_err(|e| format!("{path}: {e}"))?;
                    let conditions = object["status"]["conditions"].as_array().cloned();
                    let available = conditions
                        .unwrap_or_default()
                        .into_iter()
                        .find(|c| c["type"] == "Available");
                    match available {
                        Some(c) if c["status"] == "True" => Ok(()),
                        Some(c) => Err(format!("{path}: {c}")),
                        None => Err(format!("{path}: no Available condition yet")),
                    }
                })
                .await
                .map_err(|e| TestServerError::NotAvailable(e.to_string()))?;
            }
        }
        Ok(())
    }

    /// A ready kube-rs client: the local user (in `system:masters`) of [`TestServer::start`],
    /// `admin` of [`TestServer::production`].
    pub fn client(&self) -> kube::Client {
        match &self.serving {
            Serving::Local(_) => self.clients.values().next(),
            Serving::Production { .. } => self.clients.get(users::ADMIN),
        }
        .cloned()
        .expect("a test server always has a client")
    }

    /// The client of the development host's user `name` ([`users::ADMIN`], [`users::ALICE`],
    /// [`users::BOB`]) in [`TestServer::production`]; `None` for other names and in
    /// [`TestServer::start`] (which has one user, [`TestServer::client`]).
    pub fn user(&self, name: &str) -> Option<kube::Client> {
        match self.serving {
            Serving::Local(_) => None,
            Serving::Production { .. } => self.clients.get(name).cloned(),
        }
    }

    /// The base URL clients talk to: the app itself in [`TestServer::start`], the development
    /// host in [`TestServer::production`].
    pub fn url(&self) -> &str {
        &self.url
    }

    /// A kubeconfig file for [`TestServer::client`]'s user, for `kubectl --kubeconfig`.
    pub fn kubeconfig(&self) -> &Path {
        match &self.serving {
            Serving::Local(_) => self.kubeconfigs.values().next(),
            Serving::Production { .. } => self.kubeconfigs.get(users::ADMIN),
        }
        .expect("a test server always has a kubeconfig")
    }

    /// The kubeconfig file of the development host's user `name` in
    /// [`TestServer::production`].
    pub fn user_kubeconfig(&self, name: &str) -> Option<&Path> {
        match self.serving {
            Serving::Local(_) => None,
            Serving::Production { .. } => self.kubeconfigs.get(name).map(PathBuf::as_path),
        }
    }

    /// A `kubectl` command (the one on `PATH`) with `--kubeconfig` set to
    /// [`TestServer::kubeconfig`] and its cache in the server's temporary directory. It is
    /// tokio's `Command`: `.output().await` lets the server, which runs on the test's runtime,
    /// answer meanwhile (a blocking `std::process::Command` would starve it).
    pub fn kubectl(&self) -> tokio::process::Command {
        let mut command = tokio::process::Command::new("kubectl");
        command
            .arg("--kubeconfig")
            .arg(self.kubeconfig())
            .arg("--cache-dir")
            .arg(self.dir.path().join("kubectl-cache"))
            .stdin(std::process::Stdio::null());
        command
    }

    /// The app's registry: every resource it serves, for assertions below the HTTP API.
    pub fn registry(&self) -> &Arc<Registry> {
        self.server.registry()
    }

    /// The store of resource `T` (read it with `cached_objects`, or write to it directly).
    pub fn store<T: ApiResource>(&self) -> Option<&Store<T>> {
        self.server.registry().store::<T>()
    }

    /// The app's server (its registry, lifecycle and delegate).
    pub fn server(&self) -> &Arc<GenericApiServer> {
        &self.server
    }

    /// The development host of [`TestServer::production`] (its review logs, files and
    /// aggregator).
    pub fn dev_host(&self) -> Option<&DevHost> {
        match &self.serving {
            Serving::Local(_) => None,
            Serving::Production { host, .. } => Some(host),
        }
    }

    /// The server of [`TestServer::start`] and [`TestServer::serve_local`] (its bearer token
    /// and CA, for clients of the test's own); `None` in [`TestServer::production`].
    pub fn local_server(&self) -> Option<&LocalServer> {
        match &self.serving {
            Serving::Local(local) => Some(local),
            Serving::Production { .. } => None,
        }
    }

    /// The temporary directory holding the server's files.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Stops the server (and the development host) gracefully.
    pub async fn shutdown(self) {
        match self.serving {
            Serving::Local(local) => local.running.shutdown().await,
            Serving::Production { server, host } => {
                server.shutdown().await;
                (*host).shutdown().await;
            }
        }
    }
}

/// GETs `path` as JSON with `client`.
pub(crate) async fn get_json(
    client: &kube::Client,
    path: &str,
) -> Result<serde_json::Value, kube::Error> {
    let request = http::Request::get(path)
        .header(http::header::ACCEPT, "application/json")
        .body(Vec::new())
        .map_err(kube::Error::HttpError)?;
    let text = client.request_text(request).await?;
    serde_json::from_str(&text).map_err(kube::Error::SerdeError)
}
