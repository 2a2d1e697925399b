//! How the store's failures reach the client: storage errors mapped to upstream's Status, and
//! the typed failure of a write that lost a race.

use crate::error::{ApiError, StatusCause, StatusDetails};
use crate::resource::ResourceInfo;
use crate::storage::{CorruptValue, StorageError};

/// Maps a storage error of operation `op` (`get`, `list`, `create`…) on object `name` of
/// resource `info` to the Status upstream answers.
pub(crate) fn storage_error(
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
        StorageError::Corrupt(values) => corrupt(info, op, name, values),
    }
}

/// The most undecodable objects a failed read names (upstream's bound).
const MAX_CORRUPT_CAUSES: usize = 100;

/// Stored objects that do not decode: a list (where `name` is the prefix it read) answers
/// `500 StorageReadError` naming each of them, any other read upstream's corrupt-object
/// `500 InternalError`.
fn corrupt(info: &ResourceInfo, op: &str, name: &str, values: Vec<CorruptValue>) -> ApiError {
    // One line per failed read, however many objects it met.
    if let Some(first) = values.first() {
        tracing::warn!(resource = %info.group_resource(), count = values.len(), key = %first.key, error = %first.message, "stored objects do not decode");
    }
    if op != "list" {
        let first = values.into_iter().next().unwrap_or(CorruptValue {
            key: name.to_string(),
            message: String::new(),
        });
        return ApiError::internal(format!(
            "StorageError: corrupt object, Code: 7, Key: {}, ResourceVersion: 0, AdditionalErrorMsg: {}",
            first.key, first.message
        ));
    }
    ApiError::new(
        500,
        "StorageReadError",
        format!(
            "failed to read one or more {} from the storage",
            info.group_resource()
        ),
    )
    .with_details(StatusDetails {
        name: name.to_string(),
        group: info.group.clone(),
        kind: info.plural.clone(),
        causes: values
            .into_iter()
            .take(MAX_CORRUPT_CAUSES)
            .map(|v| StatusCause {
                reason: "UnexpectedServerResponse".into(),
                message: v.message,
                field: v.key,
            })
            .collect(),
        ..Default::default()
    })
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

    #[test]
    fn undecodable_objects_fail_a_get_as_corrupt_and_a_list_naming_at_most_100() {
        let values = |n: usize| {
            StorageError::Corrupt(
                (0..n)
                    .map(|i| CorruptValue {
                        key: format!("/widgets/w{i}"),
                        message: format!("bad {i}"),
                    })
                    .collect(),
            )
        };
        let e = storage_error(&info(), "get", "w0", values(1));
        assert_eq!((e.code, e.reason.as_str()), (500, "InternalError"));
        assert_eq!(
            e.message,
            "Internal error occurred: StorageError: corrupt object, Code: 7, Key: /widgets/w0, ResourceVersion: 0, AdditionalErrorMsg: bad 0"
        );
        let e = storage_error(&info(), "list", "/widgets/", values(150));
        assert_eq!((e.code, e.reason.as_str()), (500, "StorageReadError"));
        assert_eq!(
            e.message,
            "failed to read one or more widgets.test.example.com from the storage"
        );
        let d = e.details.unwrap();
        assert_eq!((d.name.as_str(), d.kind.as_str()), ("/widgets/", "widgets"));
        assert_eq!(d.causes.len(), MAX_CORRUPT_CAUSES);
        assert_eq!(d.causes[1].field, "/widgets/w1");
        assert_eq!(d.causes[1].message, "bad 1");
        assert_eq!(d.causes[1].reason, "UnexpectedServerResponse");
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
