//! How the store's failures reach the client: storage errors mapped to upstream's Status, and
//! the typed failure of a write that lost a race.

use crate::error::{ApiError, StatusCause, StatusDetails};
use crate::resource::ResourceInfo;
use crate::storage::StorageError;

/// Maps a storage error of operation `op` (`get`, `list`, `create`…) on object `name` of
/// resource `info` to the Status upstream answers.
pub(super) fn storage_error(
    info: &ResourceInfo,
    op: &str,
    name: &str,
    err: StorageError,
) -> ApiError {
    match err {
        StorageError::NotFound(_) => ApiError::not_found(info, name),
        StorageError::AlreadyExists(_) => ApiError::already_exists(info, name),
        StorageError::Conflict { .. } => ApiError::stale(info, name),
        StorageError::Compacted { .. } => {
            ApiError::expired("The resourceVersion for the provided list is too old.")
        }
        StorageError::FutureRevision { requested, current } => ApiError::new(
            504,
            "Timeout",
            format!("Timeout: Too large resource version: {requested}, current: {current}"),
        )
        .with_details(StatusDetails {
            retry_after_seconds: 1,
            causes: vec![StatusCause {
                reason: "ResourceVersionTooLarge".into(),
                message: "Too large resource version".into(),
                field: String::new(),
            }],
            ..Default::default()
        }),
        StorageError::Unavailable(msg) => {
            tracing::warn!(error = %msg, "storage unavailable");
            ApiError::new(
                500,
                "ServerTimeout",
                format!(
                    "The {op} operation against {} could not be completed at this time, please try again.",
                    info.group_resource()
                ),
            )
            .with_details(StatusDetails {
                name: op.into(),
                group: info.group.clone(),
                kind: info.plural.clone(),
                retry_after_seconds: 2,
                ..Default::default()
            })
        }
        StorageError::Internal(msg) => {
            tracing::warn!(error = %msg, "storage failed");
            ApiError::internal(msg)
        }
    }
}

/// A failed write of the store. A write that lost a race (the object changed between the read
/// and the write, or the request's `resourceVersion` is not the stored one) is told apart by
/// type from every other failure, so that a caller retries exactly those; both answer the
/// client with their [`ApiError`].
#[derive(Debug)]
pub(super) enum WriteError {
    /// The object is not at the revision the write expected: 409 `Conflict`.
    Conflict(ApiError),
    /// Any other failure.
    Failed(ApiError),
}

impl WriteError {
    /// A storage error of write `op` on `name`: a compare-and-swap that found another revision
    /// is a [`WriteError::Conflict`], anything else a [`WriteError::Failed`].
    pub(super) fn storage(info: &ResourceInfo, op: &str, name: &str, err: StorageError) -> Self {
        match err {
            StorageError::Conflict { .. } => {
                WriteError::Conflict(storage_error(info, op, name, err))
            }
            err => WriteError::Failed(storage_error(info, op, name, err)),
        }
    }
}

impl From<ApiError> for WriteError {
    fn from(e: ApiError) -> Self {
        WriteError::Failed(e)
    }
}

impl From<WriteError> for ApiError {
    fn from(e: WriteError) -> Self {
        match e {
            WriteError::Conflict(e) | WriteError::Failed(e) => e,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::store::fixture::{self, Widget};
    use crate::resource::ApiResource;
    use crate::storage::Storage;

    fn info() -> ResourceInfo {
        Widget::resource_info()
    }

    #[test]
    fn each_storage_error_answers_upstreams_status() {
        let map = |e| storage_error(&info(), "get", "w1", e);
        let e = map(StorageError::NotFound("k".into()));
        assert_eq!((e.code, e.reason.as_str()), (404, "NotFound"));
        assert_eq!(e.message, r#"widgets.test.example.com "w1" not found"#);
        let e = map(StorageError::AlreadyExists("k".into()));
        assert_eq!((e.code, e.reason.as_str()), (409, "AlreadyExists"));
        let e = map(StorageError::Conflict {
            key: "k".into(),
            expected: 1,
            actual: 2,
        });
        assert_eq!((e.code, e.reason.as_str()), (409, "Conflict"));
        assert!(e.message.contains("the object has been modified"), "{e:?}");
        let e = map(StorageError::Compacted {
            requested: 1,
            compacted: 5,
        });
        assert_eq!((e.code, e.reason.as_str()), (410, "Expired"));
        let e = map(StorageError::Internal("disk full".into()));
        assert_eq!((e.code, e.reason.as_str()), (500, "InternalError"));
        assert!(e.message.contains("disk full"));
    }

    #[test]
    fn a_future_revision_is_a_504_with_the_too_large_cause() {
        let e = storage_error(
            &info(),
            "list",
            "",
            StorageError::FutureRevision {
                requested: 9,
                current: 3,
            },
        );
        assert_eq!((e.code, e.reason.as_str()), (504, "Timeout"));
        assert_eq!(
            e.message,
            "Timeout: Too large resource version: 9, current: 3"
        );
        let d = e.details.unwrap();
        assert_eq!(d.retry_after_seconds, 1);
        assert_eq!(d.causes[0].reason, "ResourceVersionTooLarge");
    }

    #[test]
    fn an_unavailable_storage_is_a_server_timeout_naming_the_operation() {
        let e = storage_error(
            &info(),
            "create",
            "w1",
            StorageError::Unavailable("x".into()),
        );
        assert_eq!((e.code, e.reason.as_str()), (500, "ServerTimeout"));
        assert_eq!(
            e.message,
            "The create operation against widgets.test.example.com could not be completed at this time, please try again."
        );
        let d = e.details.unwrap();
        assert_eq!((d.name.as_str(), d.kind.as_str()), ("create", "widgets"));
        assert_eq!(d.retry_after_seconds, 2);
    }

    #[tokio::test]
    async fn a_lost_compare_and_swap_of_the_memory_storage_is_a_typed_conflict() {
        let (_, storage) = fixture::store();
        let rev = storage.create("/k", "a".into()).await.unwrap();
        storage.update("/k", "b".into(), rev).await.unwrap();
        let err = storage.update("/k", "c".into(), rev).await.unwrap_err();
        match WriteError::storage(&info(), "update", "w1", err) {
            WriteError::Conflict(e) => assert_eq!((e.code, e.reason.as_str()), (409, "Conflict")),
            other => panic!("not a conflict: {other:?}"),
        }
        // Other failures, even a 409 of another kind, are not conflicts.
        let err = storage.create("/k", "d".into()).await.unwrap_err();
        match WriteError::storage(&info(), "create", "w1", err) {
            WriteError::Failed(e) => assert_eq!(e.reason, "AlreadyExists"),
            other => panic!("{other:?}"),
        }
        let api: ApiError = WriteError::Failed(ApiError::bad_request("x")).into();
        assert_eq!(api.code, 400);
    }
}
