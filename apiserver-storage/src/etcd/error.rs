//! etcd client errors and time-outs, sorted into what the storage seam reports.

use std::future::Future;
use std::time::Duration;

use tonic::Status;

use super::channel::{Unreached, error_chain};
use crate::StorageError;

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
pub(super) fn classify(what: &str, status: Status) -> Failure {
    let msg = status.message();
    if msg.contains("required revision has been compacted") {
        return Failure::Compacted;
    }
    if msg.contains("required revision is a future revision") {
        return Failure::Future;
    }
    Failure::Other(StorageError::Unavailable(format!(
        "etcd {what}: {}",
        describe(&status)
    )))
}

/// A status as text: its code, message and the errors behind it (for a connection that
/// failed, the message alone says little).
pub(super) fn describe(status: &Status) -> String {
    let mut text = status.message().to_string();
    if let Some(source) = std::error::Error::source(status) {
        let chain = error_chain(source);
        if !text.contains(&chain) {
            text = format!("{text}: {chain}");
        }
    }
    format!("{text} (gRPC {:?})", status.code())
}

/// Whether a request failed before it left the client: the member it was sent to could not be
/// reached (a member that is down refuses the connection). Such a request is safe to send
/// again, even a transaction, and the client sends it to another member.
fn never_sent(status: &Status) -> bool {
    std::error::Error::source(status).is_some_and(|e| e.is::<Unreached>())
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
    Fut: Future<Output = Result<T, Status>>,
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
    request: impl Future<Output = Result<T, Status>>,
) -> Result<T, Failure> {
    match tokio::time::timeout(limit, request).await {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(classify(what, e)),
        Err(_) => Err(Failure::Other(StorageError::Unavailable(format!(
            "etcd {what}: no answer within {limit:?}"
        )))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::etcd::{EtcdClient, EtcdOptions};

    /// A request to a member that refuses connections failed before it was sent: the one case
    /// the backend sends again, to another member.
    #[tokio::test]
    async fn a_refused_connection_is_never_sent() {
        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = closed.local_addr().unwrap();
        drop(closed);
        let opts = EtcdOptions {
            servers: vec![format!("http://{addr}")],
            ..Default::default()
        };
        let client = EtcdClient::connect(&opts).await.unwrap();
        let status = client.status().await.unwrap_err();
        assert!(never_sent(&status), "{}", describe(&status));
        let failure = classify("status", status);
        assert!(
            matches!(&failure, Failure::Other(StorageError::Unavailable(m)) if m.contains("refused")),
            "{failure:?}"
        );
        // An answer from etcd is not retried.
        let answered = Status::failed_precondition("etcdserver: permission denied");
        assert!(!never_sent(&answered));
    }
}
