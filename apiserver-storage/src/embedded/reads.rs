//! Reads from one consistent snapshot of the database (a redb read transaction): the revisions,
//! `get`, `list` at the latest or an older revision, and the change log for watches.

use std::ops::Bound;

use redb::{Database, ReadTransaction, ReadableDatabase, ReadableTable};

use super::failure::{Failure, corrupt};
use super::tables::{
    COMPACTED, LATEST, LOG, META, REVISION, VERSIONS, Version, decode, live_at, live_before,
};
use crate::page_counts::PageCounts;
use crate::{EventKind, KeyValue, ListPage, ListRequest, StorageError, StorageEvent};

/// A batch of the change log, read for a watch.
pub(super) struct LogBatch {
    /// The events under the watch's prefix, in revision order.
    pub(super) events: Vec<StorageEvent>,
    /// Every revision up to this one has been looked at.
    pub(super) scanned: u64,
    /// Whether `scanned` is the snapshot's current revision.
    pub(super) reached_end: bool,
}

/// A read transaction.
pub(super) struct Snapshot(pub(super) ReadTransaction);

impl Snapshot {
    /// A snapshot of the latest commit of `db`.
    pub(super) fn begin(db: &Database) -> Result<Snapshot, Failure> {
        Ok(Snapshot(db.begin_read()?))
    }

    /// The current and the compacted revision.
    pub(super) fn revisions(&self) -> Result<(u64, u64), Failure> {
        let meta = self.0.open_table(META)?;
        let read = |name| -> Result<u64, Failure> {
            Ok(meta
                .get(name)?
                .ok_or_else(|| corrupt("meta has no revision"))?
                .value())
        };
        Ok((read(REVISION)?, read(COMPACTED)?))
    }

    /// The latest value of `key`.
    pub(super) fn get(&self, key: &str) -> Result<Option<KeyValue>, Failure> {
        let latest = self.0.open_table(LATEST)?;
        let Some(mod_revision) = latest.get(key)?.map(|g| g.value().1) else {
            return Ok(None);
        };
        let versions = self.0.open_table(VERSIONS)?;
        live_at(&versions, key, mod_revision).map(Some)
    }

    /// A list, at the latest or an older revision. A page that continues one whose count of
    /// the keys after it is in `counts` reads only its own items (see [`PageCounts`]).
    pub(super) fn list(&self, req: &ListRequest, counts: &PageCounts) -> Result<ListPage, Failure> {
        let (current, compacted) = self.revisions()?;
        let mut page = Page::new(req, counts, req.revision.unwrap_or(current));
        match req.revision {
            None => self.list_latest(req, &mut page)?,
            Some(rev) if rev > current => {
                return Err(StorageError::FutureRevision {
                    requested: rev,
                    current,
                }
                .into());
            }
            Some(rev) if rev == current => self.list_latest(req, &mut page)?,
            Some(rev) if rev < compacted => {
                return Err(StorageError::Compacted {
                    requested: rev,
                    compacted,
                }
                .into());
            }
            Some(rev) => self.list_at(req, rev, &mut page)?,
        }
        Ok(page.finish(req, counts))
    }

    /// The latest state, through the `latest` index.
    fn list_latest(&self, req: &ListRequest, page: &mut Page) -> Result<(), Failure> {
        let latest = self.0.open_table(LATEST)?;
        let versions = self.0.open_table(VERSIONS)?;
        let prefix = req.prefix.as_str();
        let start = match req.start_after.as_deref() {
            Some(after) if after >= prefix => Bound::Excluded(after),
            _ => Bound::Included(prefix),
        };
        for entry in latest.range::<&str>((start, Bound::Unbounded))? {
            let (k, v) = entry?;
            let key = k.value();
            if !key.starts_with(prefix) {
                break;
            }
            if page.wants_item() {
                page.items.push(live_at(&versions, key, v.value().1)?);
            } else if page.counted() {
                break;
            }
        }
        Ok(())
    }

    /// The state at an older revision, from the versions: for each key, its newest version at
    /// or below `rev`, unless that is a tombstone.
    fn list_at(&self, req: &ListRequest, rev: u64, page: &mut Page) -> Result<(), Failure> {
        let versions = self.0.open_table(VERSIONS)?;
        let prefix = req.prefix.as_str();
        let start = match req.start_after.as_deref() {
            Some(after) if after >= prefix => Bound::Excluded((after, u64::MAX)),
            _ => Bound::Included((prefix, 0)),
        };
        // The key being scanned and its newest version at or below `rev`: (revision, live).
        let mut key: Option<String> = None;
        let mut found: Option<(u64, bool)> = None;
        let emit = |key: &str, found: Option<(u64, bool)>, page: &mut Page| {
            if let Some((at, true)) = found
                && page.wants_item()
            {
                page.items.push(live_at(&versions, key, at)?);
            }
            Ok::<_, Failure>(())
        };
        for entry in versions.range::<(&str, u64)>((start, Bound::Unbounded))? {
            let (k, v) = entry?;
            let (this, at) = k.value();
            if !this.starts_with(prefix) {
                break;
            }
            if key.as_deref() != Some(this) {
                if let Some(done) = key.take() {
                    emit(&done, found.take(), page)?;
                    if page.counted() {
                        return Ok(());
                    }
                }
                key = Some(this.to_string());
            }
            if at <= rev {
                found = Some((at, matches!(decode(v.value())?, Version::Live { .. })));
            }
        }
        if let Some(done) = key {
            emit(&done, found, page)?;
        }
        Ok(())
    }

    /// The changes after revision `after` under `prefix`, in revision order, stopping early
    /// once `max_events` events or `max_bytes` bytes of values are collected.
    pub(super) fn log(
        &self,
        prefix: &str,
        after: u64,
        max_events: usize,
        max_bytes: usize,
    ) -> Result<LogBatch, Failure> {
        let (current, compacted) = self.revisions()?;
        if after < compacted {
            return Err(StorageError::Compacted {
                requested: after,
                compacted,
            }
            .into());
        }
        let log = self.0.open_table(LOG)?;
        let versions = self.0.open_table(VERSIONS)?;
        let mut batch = LogBatch {
            events: Vec::new(),
            scanned: current.max(after),
            reached_end: true,
        };
        let mut bytes = 0;
        for entry in log.range(after + 1..=current)? {
            let (rev, key) = entry?;
            let (rev, key) = (rev.value(), key.value());
            if key.starts_with(prefix) {
                let event = event_at(&versions, key, rev)?;
                bytes += event.kv.value.len() + event.prev.as_ref().map_or(0, |p| p.value.len());
                batch.events.push(event);
                if (batch.events.len() >= max_events || bytes >= max_bytes) && rev < current {
                    batch.scanned = rev;
                    batch.reached_end = false;
                    break;
                }
            }
        }
        Ok(batch)
    }
}

/// The change to `key` at revision `rev`, rebuilt from its versions.
fn event_at<T>(versions: &T, key: &str, rev: u64) -> Result<StorageEvent, Failure>
where
    T: ReadableTable<(&'static str, u64), &'static [u8]>,
{
    let guard = versions
        .get((key, rev))?
        .ok_or_else(|| corrupt("a logged version is missing"))?;
    match decode(guard.value())? {
        Version::Live {
            create_revision,
            value,
        } => {
            let kv = KeyValue {
                key: key.into(),
                value: bytes::Bytes::copy_from_slice(value),
                create_revision,
                mod_revision: rev,
            };
            if create_revision == rev {
                Ok(StorageEvent {
                    kind: EventKind::Created,
                    kv,
                    prev: None,
                })
            } else {
                Ok(StorageEvent {
                    kind: EventKind::Updated,
                    kv,
                    prev: live_before(versions, key, rev)?,
                })
            }
        }
        Version::Tombstone => {
            let prev = live_before(versions, key, rev)?
                .ok_or_else(|| corrupt("a delete without a previous value"))?;
            let mut kv = prev.clone();
            kv.mod_revision = rev;
            Ok(StorageEvent {
                kind: EventKind::Deleted,
                kv,
                prev: Some(prev),
            })
        }
    }
}

/// A list page being filled: items up to the limit, then a count of the rest.
struct Page {
    items: Vec<KeyValue>,
    limit: usize,
    /// The revision the page is read at.
    revision: u64,
    /// Items after the limit seen so far.
    remaining: u64,
    /// The number of keys after the page's start, when a previous page counted them: then
    /// the items after the limit need not be walked.
    known: Option<u64>,
}

impl Page {
    fn new(req: &ListRequest, counts: &PageCounts, revision: u64) -> Self {
        let known = match (&req.start_after, req.limit) {
            (Some(after), limit) if limit > 0 => counts.after(revision, &req.prefix, after),
            _ => None,
        };
        Page {
            items: Vec::new(),
            limit: req.limit,
            revision,
            remaining: 0,
            known,
        }
    }

    /// Whether the next item goes into the page; if not, it is counted as remaining.
    fn wants_item(&mut self) -> bool {
        if self.limit == 0 || self.items.len() < self.limit {
            true
        } else {
            self.remaining += 1;
            false
        }
    }

    /// Whether the page is full, more items follow, and their number is known without walking
    /// them.
    fn counted(&self) -> bool {
        self.remaining > 0 && self.known.is_some()
    }

    fn finish(self, req: &ListRequest, counts: &PageCounts) -> ListPage {
        let remaining = match self.known {
            Some(known) if self.remaining > 0 => known.saturating_sub(self.items.len() as u64),
            _ => self.remaining,
        };
        if remaining > 0
            && let Some(last) = self.items.last()
        {
            counts.remember(self.revision, &req.prefix, &last.key, remaining);
        }
        ListPage {
            items: self.items,
            revision: self.revision,
            more: remaining > 0,
            remaining,
        }
    }
}
