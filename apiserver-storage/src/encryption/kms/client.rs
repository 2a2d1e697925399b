//! A client of a KMS v2 plugin: upstream's `v2.KeyManagementService` (`Status`, `Encrypt`,
//! `Decrypt`) over gRPC on the plugin's unix socket, with `tonic`'s generic client
//! (`tonic::client::Grpc` and `tonic_prost::ProstCodec`) and the hand-declared messages of
//! [`proto`](super::proto): no generated code, so no `protoc` to build it.

use std::path::PathBuf;
use std::time::Duration;

use http::uri::PathAndQuery;
use tonic::client::Grpc;
use tonic_prost::ProstCodec;

use super::channel::UnixChannel;
use super::proto::{
    DecryptRequest, DecryptResponse, EncryptRequest, EncryptResponse, StatusRequest, StatusResponse,
};

const STATUS: &str = "/v2.KeyManagementService/Status";
const ENCRYPT: &str = "/v2.KeyManagementService/Encrypt";
const DECRYPT: &str = "/v2.KeyManagementService/Decrypt";

/// A client of one plugin; every call ends within the configured timeout.
#[derive(Clone)]
pub(super) struct KmsClient {
    grpc: Grpc<UnixChannel>,
    timeout: Duration,
}

impl KmsClient {
    /// A client of the plugin at the socket `path`, each call bounded by `timeout`.
    pub(super) fn new(path: PathBuf, timeout: Duration) -> Self {
        KmsClient {
            grpc: Grpc::new(UnixChannel::new(path, timeout)),
            timeout,
        }
    }

    /// The plugin's status.
    pub(super) async fn status(&self) -> Result<StatusResponse, String> {
        self.unary(STATUS, StatusRequest {}).await
    }

    /// `plaintext` encrypted by the plugin's current key.
    pub(super) async fn encrypt(&self, request: EncryptRequest) -> Result<EncryptResponse, String> {
        self.unary(ENCRYPT, request).await
    }

    /// What the plugin decrypts `request` to.
    pub(super) async fn decrypt(&self, request: DecryptRequest) -> Result<DecryptResponse, String> {
        self.unary(DECRYPT, request).await
    }

    async fn unary<Q, R>(&self, path: &'static str, message: Q) -> Result<R, String>
    where
        Q: prost::Message + Send + Sync + 'static,
        R: prost::Message + Default + Send + Sync + 'static,
    {
        let mut grpc = self.grpc.clone();
        let call = async move {
            grpc.ready().await.map_err(|e| e.to_string())?;
            grpc.unary(
                tonic::Request::new(message),
                PathAndQuery::from_static(path),
                ProstCodec::default(),
            )
            .await
            .map(tonic::Response::into_inner)
            .map_err(|s| format!("rpc error: code = {:?} desc = {}", s.code(), s.message()))
        };
        tokio::time::timeout(self.timeout, call)
            .await
            .unwrap_or_else(|_| {
                Err(format!(
                    "rpc error: code = DeadlineExceeded desc = context deadline exceeded after {:?}",
                    self.timeout
                ))
            })
    }
}
