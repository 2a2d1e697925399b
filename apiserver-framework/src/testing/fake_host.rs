//! A test double of a host cluster's API: an axum router served over plain HTTP on loopback.

/// Serves `router` over plain HTTP on a free port of 127.0.0.1 for as long as the test's
/// runtime runs, and returns its base URL (`http://127.0.0.1:<port>`), for a kubeconfig or a
/// client that stands in for the host cluster.
pub async fn serve_http(router: axum::Router) -> std::io::Result<String> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}", listener.local_addr()?);
    tokio::spawn(async move { axum::serve(listener, router).await });
    Ok(url)
}
