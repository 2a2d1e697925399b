//! The error type inside the backend: any redb error or a [`StorageError`], so that `?` works
//! on both; it becomes a [`StorageError`] at the [`Storage`](crate::Storage) boundary.
//!
//! A redb error is the store failing, not a timeout: [`StorageError::Internal`]. One caused by
//! the file's I/O (a full disk, a failed fsync) also marks the database as broken: redb then
//! refuses every later transaction ("Previous I/O error occurred") until the database is closed
//! and opened again, which the writer does (see [`super::recovery`]).

use crate::StorageError;

/// A failed step.
#[derive(Debug)]
pub(super) struct Failure {
    /// What the caller is answered.
    pub(super) error: StorageError,
    /// Whether the database must be closed and opened again before it works again.
    pub(super) broken: bool,
}

impl Failure {
    /// A failure of the store that leaves the database usable.
    pub(super) fn internal(message: String) -> Self {
        Failure {
            error: StorageError::Internal(message),
            broken: false,
        }
    }
}

impl From<StorageError> for Failure {
    fn from(error: StorageError) -> Self {
        Failure {
            error,
            broken: false,
        }
    }
}

impl From<Failure> for StorageError {
    fn from(f: Failure) -> Self {
        f.error
    }
}

impl From<redb::Error> for Failure {
    fn from(e: redb::Error) -> Self {
        let broken = matches!(
            e,
            redb::Error::Io(_)
                | redb::Error::PreviousIo
                | redb::Error::Backend(_)
                | redb::Error::DatabaseClosed
        );
        Failure {
            error: StorageError::Internal(format!("embedded storage: {e}")),
            broken,
        }
    }
}

macro_rules! through_redb_error {
    ($($ty:ty),* $(,)?) => {
        $(impl From<$ty> for Failure {
            fn from(e: $ty) -> Self {
                Failure::from(redb::Error::from(e))
            }
        })*
    };
}

through_redb_error!(
    redb::StorageError,
    redb::TransactionError,
    redb::TableError,
    redb::CommitError,
    redb::DatabaseError,
    redb::SetDurabilityError,
);

impl From<std::io::Error> for Failure {
    fn from(e: std::io::Error) -> Self {
        Failure::from(redb::Error::Io(e))
    }
}

/// A record that cannot be decoded: the file is damaged or not ours.
pub(super) fn corrupt(what: &str) -> Failure {
    Failure::internal(format!("embedded storage: corrupt record: {what}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io_errors_break_the_database_and_answer_internal() {
        let full = std::io::Error::from_raw_os_error(28);
        let f = Failure::from(redb::StorageError::Io(full));
        assert!(f.broken);
        assert!(matches!(&f.error, StorageError::Internal(m) if m.contains("No space left")));
        assert!(Failure::from(redb::StorageError::PreviousIo).broken);
        let f = Failure::from(redb::StorageError::ValueTooLarge(1));
        assert!(!f.broken);
        assert!(matches!(f.error, StorageError::Internal(_)));
        assert!(!corrupt("x").broken);
    }
}
