//! etcd client errors and time-outs, sorted into what the storage seam reports.

use std::future::Future;
use std::time::Duration;

use crate::storage::StorageError;

/// Why a request to etcd failed.
#[derive(Debug)]
pub(super) enum Failure {
    /// A read at a revision older than etcd's compacted revision.
    Compacted,
    /// A read at a revision etcd has not reached.
    Future,
    /// Anything else: connection lost, time-out, rejected request.
    Other(StorageError),
}

impl Failure {
    /// The error to report when the revision of the request does not matter.
    pub(super) fn into_storage(self, what: &str) -> StorageError {
        match self {
            Failure::Compacted => {
                StorageError::Unavailable(format!("etcd {what}: revision compacted"))
            }
            Failure::Future => StorageError::Unavailable(format!("etcd {what}: future revision")),
            Failure::Other(e) => e,
        }
    }
}

/// Sorts an etcd client error.
pub(super) fn classify(what: &str, err: etcd_client::Error) -> Failure {
    if let etcd_client::Error::GRpcStatus(status) = &err {
        let msg = status.message();
        if msg.contains("required revision has been compacted") {
            return Failure::Compacted;
        }
        if msg.contains("required revision is a future revision") {
            return Failure::Future;
        }
    }
    Failure::Other(StorageError::Unavailable(format!("etcd {what}: {err}")))
}

/// Whether a request failed before it left the client: the endpoint it was sent to refused
/// the connection (a member that is down). Such a request is safe to send again, even a
/// transaction, and the client balances it to another endpoint.
fn never_sent(err: &etcd_client::Error) -> bool {
    match err {
        etcd_client::Error::GRpcStatus(status) => {
            let msg = status.message();
            msg.contains("tcp connect error") || msg.contains("Connection refused")
        }
        _ => false,
    }
}

/// Runs an etcd request made by `request`, sending it again (with a short backoff) while it
/// fails before leaving the client, and failing with `Unavailable` once `limit` has passed.
pub(super) async fn bounded_retry<T, F, Fut>(
    limit: Duration,
    what: &str,
    mut request: F,
) -> Result<T, Failure>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, etcd_client::Error>>,
{
    let attempts = async {
        let mut backoff = Duration::from_millis(10);
        loop {
            match request().await {
                Err(e) if never_sent(&e) => {
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(Duration::from_millis(200));
                }
                other => return other,
            }
        }
    };
    bounded(limit, what, attempts).await
}

/// Runs one etcd request, failing with `Unavailable` once `limit` has passed.
pub(super) async fn bounded<T>(
    limit: Duration,
    what: &str,
    request: impl Future<Output = Result<T, etcd_client::Error>>,
) -> Result<T, Failure> {
    match tokio::time::timeout(limit, request).await {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(classify(what, e)),
        Err(_) => Err(Failure::Other(StorageError::Unavailable(format!(
            "etcd {what}: no answer within {limit:?}"
        )))),
    }
}
