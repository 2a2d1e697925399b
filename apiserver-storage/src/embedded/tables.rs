//! The on-disk layout: four redb tables, the encoding of stored versions, and lookups of a
//! key's versions shared by reads and writes.
//!
//! - `meta`: the format version, the current revision and the compacted revision.
//! - `latest`: key → (create revision, mod revision) of every present key, for reads at the
//!   latest revision.
//! - `versions`: (key, revision) → the key's version written at that revision: its value and
//!   create revision, or a tombstone for a delete. Each value is stored once, here.
//! - `log`: revision → key written at that revision, the revision-ordered change log that
//!   watches replay. Revisions are dense: every revision from the compacted one to the current
//!   one has an entry.

use bytes::Bytes;
use redb::{ReadableTable, Table, TableDefinition};

use super::failure::{Failure, corrupt};
use crate::KeyValue;

pub(super) const META: TableDefinition<&str, u64> = TableDefinition::new("meta");
pub(super) const LATEST: TableDefinition<&str, (u64, u64)> = TableDefinition::new("latest");
pub(super) const VERSIONS: TableDefinition<(&str, u64), &[u8]> = TableDefinition::new("versions");
pub(super) const LOG: TableDefinition<u64, &str> = TableDefinition::new("log");

/// `meta` keys.
pub(super) const FORMAT: &str = "format";
pub(super) const REVISION: &str = "revision";
pub(super) const COMPACTED: &str = "compacted";

/// The layout described above.
pub(super) const FORMAT_VERSION: u64 = 1;

/// The first byte of a stored version.
const LIVE: u8 = 0;
const TOMBSTONE: u8 = 1;
/// A live version: `LIVE`, the create revision (8 bytes, little endian), the value.
const LIVE_HEADER: usize = 9;

/// One decoded version of a key.
pub(super) enum Version<'a> {
    /// The key held `value`, created at `create_revision`.
    Live {
        create_revision: u64,
        value: &'a [u8],
    },
    /// The key was deleted.
    Tombstone,
}

pub(super) fn decode(bytes: &[u8]) -> Result<Version<'_>, Failure> {
    match bytes.first() {
        Some(&LIVE) if bytes.len() >= LIVE_HEADER => {
            let mut create = [0u8; 8];
            create.copy_from_slice(&bytes[1..LIVE_HEADER]);
            Ok(Version::Live {
                create_revision: u64::from_le_bytes(create),
                value: &bytes[LIVE_HEADER..],
            })
        }
        Some(&TOMBSTONE) => Ok(Version::Tombstone),
        _ => Err(corrupt("unknown version tag")),
    }
}

type Versions<'txn> = Table<'txn, (&'static str, u64), &'static [u8]>;

/// Stores a live version, writing the value straight into the page.
pub(super) fn put_live(
    versions: &mut Versions<'_>,
    key: &str,
    revision: u64,
    create_revision: u64,
    value: &[u8],
) -> Result<(), Failure> {
    let mut slot = versions.insert_reserve((key, revision), LIVE_HEADER + value.len())?;
    let buf = slot.as_mut();
    buf[0] = LIVE;
    buf[1..LIVE_HEADER].copy_from_slice(&create_revision.to_le_bytes());
    buf[LIVE_HEADER..].copy_from_slice(value);
    Ok(())
}

/// Stores a tombstone: `key` was deleted at `revision`.
pub(super) fn put_tombstone(
    versions: &mut Versions<'_>,
    key: &str,
    revision: u64,
) -> Result<(), Failure> {
    versions.insert((key, revision), [TOMBSTONE].as_slice())?;
    Ok(())
}

/// The live version of `key` written at exactly `revision`, as a [`KeyValue`].
pub(super) fn live_at<T>(versions: &T, key: &str, revision: u64) -> Result<KeyValue, Failure>
where
    T: ReadableTable<(&'static str, u64), &'static [u8]>,
{
    let guard = versions
        .get((key, revision))?
        .ok_or_else(|| corrupt("an indexed version is missing"))?;
    match decode(guard.value())? {
        Version::Live {
            create_revision,
            value,
        } => Ok(KeyValue {
            key: key.into(),
            value: Bytes::copy_from_slice(value),
            create_revision,
            mod_revision: revision,
        }),
        Version::Tombstone => Err(corrupt("an indexed version is a tombstone")),
    }
}

/// The newest version of `key` strictly before `revision`, if it is live.
pub(super) fn live_before<T>(
    versions: &T,
    key: &str,
    revision: u64,
) -> Result<Option<KeyValue>, Failure>
where
    T: ReadableTable<(&'static str, u64), &'static [u8]>,
{
    let Some(entry) = versions.range((key, 0)..(key, revision))?.next_back() else {
        return Ok(None);
    };
    let (k, v) = entry?;
    let mod_revision = k.value().1;
    Ok(match decode(v.value())? {
        Version::Live {
            create_revision,
            value,
        } => Some(KeyValue {
            key: key.into(),
            value: Bytes::copy_from_slice(value),
            create_revision,
            mod_revision,
        }),
        Version::Tombstone => None,
    })
}
