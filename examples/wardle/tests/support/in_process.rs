//! wardle served in-process (no child process), with a kube-rs client for it.

use std::sync::Arc;

use apiserver_framework::cli::{LocalOptions, LocalServer, local};
use apiserver_framework::server::generic::GenericApiServer;
use apiserver_framework::storage::memory::MemoryStorage;
use kube::{Client, Config};

/// A running in-process wardle and a kube-rs client for it; the temporary directory holds its
/// certificates and goes away with it.
pub struct InProcess {
    /// The server; it stops when dropped.
    pub server: LocalServer,
    /// A client configured from the server's kubeconfig.
    pub client: Client,
    /// The certificates' directory.
    pub dir: tempfile::TempDir,
}

/// Starts wardle in-process on a free port with its default memory storage.
pub async fn start() -> InProcess {
    start_with(None).await
}

/// [`start`], as the tuple (server, client, directory).
pub async fn start_parts() -> (LocalServer, Client, tempfile::TempDir) {
    let s = start().await;
    (s.server, s.client, s.dir)
}

/// Starts wardle in-process on `storage` (the default memory storage when `None`).
pub async fn start_with(storage: Option<Arc<MemoryStorage>>) -> InProcess {
    let mut builder = wardle::app().server_builder();
    if let Some(storage) = storage {
        builder = builder.storage(storage);
    }
    serve(Arc::new(builder.build())).await
}

/// Serves `server` in-process as wardle, on a free port.
pub async fn serve(server: Arc<GenericApiServer>) -> InProcess {
    let dir = tempfile::tempdir().expect("create a temporary directory");
    let opts = LocalOptions {
        secure_port: 0,
        cert_dir: dir.path().join("certs"),
        ..Default::default()
    };
    let server = local::start("wardle", server, &opts)
        .await
        .expect("start wardle in-process");
    let kubeconfig =
        kube::config::Kubeconfig::from_yaml(&server.kubeconfig).expect("parse the kubeconfig");
    let config = Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .expect("configure the client");
    let client = Client::try_from(config).expect("build the client");
    InProcess {
        server,
        client,
        dir,
    }
}
