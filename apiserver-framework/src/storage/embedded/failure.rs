//! The error type inside the backend: any redb error or a [`StorageError`], so that `?` works
//! on both; it becomes a [`StorageError`] at the [`Storage`](crate::storage::Storage) boundary.

use crate::storage::StorageError;

/// A failed step: redb errors are `Unavailable`.
#[derive(Debug)]
pub(super) struct Failure(pub(super) StorageError);

impl From<StorageError> for Failure {
    fn from(e: StorageError) -> Self {
        Failure(e)
    }
}

impl From<Failure> for StorageError {
    fn from(f: Failure) -> Self {
        f.0
    }
}

macro_rules! from_redb {
    ($($ty:ty),* $(,)?) => {
        $(impl From<$ty> for Failure {
            fn from(e: $ty) -> Self {
                Failure(StorageError::Unavailable(format!("embedded storage: {e}")))
            }
        })*
    };
}

from_redb!(
    redb::Error,
    redb::StorageError,
    redb::TransactionError,
    redb::TableError,
    redb::CommitError,
    redb::DatabaseError,
    redb::SetDurabilityError,
    std::io::Error,
);

/// A record that cannot be decoded: the file is damaged or not ours.
pub(super) fn corrupt(what: &str) -> Failure {
    Failure(StorageError::Unavailable(format!(
        "embedded storage: corrupt record: {what}"
    )))
}
