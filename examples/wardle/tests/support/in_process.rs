//! wardle served in-process (no child process) by the kit's [`TestServer`], which holds a
//! kube-rs client for it.

use std::sync::Arc;

use apiserver_framework::server::generic::GenericApiServer;
use apiserver_framework::storage::memory::MemoryStorage;
use apiserver_framework::testing::TestServer;
use kube::Client;

/// Starts wardle in-process on a free port with its default memory storage.
pub async fn start() -> TestServer {
    start_with(None).await
}

/// [`start`], as the pair (server, client).
pub async fn start_parts() -> (TestServer, Client) {
    let s = start().await;
    let client = s.client();
    (s, client)
}

/// Starts wardle in-process on `storage` (the default memory storage when `None`).
pub async fn start_with(storage: Option<Arc<MemoryStorage>>) -> TestServer {
    let mut builder = wardle::app().server_builder();
    if let Some(storage) = storage {
        builder = builder.storage(storage);
    }
    serve(Arc::new(builder.build())).await
}

/// Serves `server` in-process as wardle, on a free port.
pub async fn serve(server: Arc<GenericApiServer>) -> TestServer {
    TestServer::serve_local("wardle", server, &[])
        .await
        .expect("start wardle in-process")
}
