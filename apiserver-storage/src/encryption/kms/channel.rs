//! The channel the KMS v2 client sends its gRPC calls on: one HTTP/2 connection (`hyper`) to
//! the plugin's unix socket, made by the first call that needs it and made again by the next
//! call once it has broken (a plugin that was restarted).

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use http::Uri;
use hyper::client::conn::http2::SendRequest;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tonic::body::Body;

/// An error of the channel, as tonic takes it.
type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Calls to the plugin at a unix socket. Cheap to clone; clones share the connection.
#[derive(Clone)]
pub(super) struct UnixChannel {
    path: Arc<PathBuf>,
    dial_timeout: Duration,
    connection: Arc<tokio::sync::Mutex<Option<SendRequest<Body>>>>,
}

impl UnixChannel {
    /// The channel to the socket at `path`, not connected.
    pub(super) fn new(path: PathBuf, dial_timeout: Duration) -> Self {
        UnixChannel {
            path: Arc::new(path),
            dial_timeout,
            connection: Arc::new(tokio::sync::Mutex::new(None)),
        }
    }

    /// The open connection, made first when there is none or it has closed.
    async fn sender(&self) -> Result<SendRequest<Body>, BoxError> {
        let mut connection = self.connection.lock().await;
        if let Some(send) = connection.as_ref()
            && !send.is_closed()
        {
            return Ok(send.clone());
        }
        *connection = None;
        let stream = tokio::time::timeout(
            self.dial_timeout,
            tokio::net::UnixStream::connect(self.path.as_ref()),
        )
        .await
        .map_err(|_| format!("connecting to {}: timed out", self.path.display()))?
        .map_err(|e| format!("connecting to {}: {e}", self.path.display()))?;
        let (send, conn) = hyper::client::conn::http2::Builder::new(TokioExecutor::new())
            .handshake(TokioIo::new(stream))
            .await?;
        tokio::spawn(async move {
            if let Err(e) = conn.await {
                tracing::debug!(error = %e, "the KMS plugin's connection ended");
            }
        });
        *connection = Some(send.clone());
        Ok(send)
    }
}

impl tower::Service<http::Request<Body>> for UnixChannel {
    type Response = http::Response<hyper::body::Incoming>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, mut request: http::Request<Body>) -> Self::Future {
        let channel = self.clone();
        Box::pin(async move {
            // tonic gives the path; HTTP/2 wants a scheme and an authority too (gRPC's Go
            // client names a unix socket's authority `localhost`).
            let mut uri = std::mem::take(request.uri_mut()).into_parts();
            uri.scheme = Some(http::uri::Scheme::HTTP);
            uri.authority = Some(http::uri::Authority::from_static("localhost"));
            *request.uri_mut() = Uri::from_parts(uri)?;
            let mut send = channel.sender().await?;
            send.ready().await?;
            Ok(send.send_request(request).await?)
        })
    }
}
