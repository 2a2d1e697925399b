//! What a run records: every client operation with its invoke and return times, and every watch
//! stream with the events it delivered. The checker reads nothing else.

use serde::{Deserialize, Serialize};

/// Nanoseconds since the start of the run.
pub type Time = u64;

/// A time after every other: the return of an operation whose outcome is unknown.
pub const NEVER: Time = u64::MAX;

/// The kind of a patch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum PatchType {
    /// `application/json-patch+json` (RFC 6902).
    Json,
    /// `application/merge-patch+json` (RFC 7386).
    Merge,
    /// `application/strategic-merge-patch+json`.
    Strategic,
}

/// What a client asked for. Every write carries a value no other write in the run carries, so
/// that a read tells which write it sees.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Request {
    /// POST of a new object.
    Create {
        /// The object's name.
        key: String,
        /// The value written.
        value: String,
    },
    /// GET of one object.
    Get {
        /// The object's name.
        key: String,
    },
    /// LIST of the collection.
    List {
        /// The page size (`limit`), if paged.
        limit: Option<u32>,
        /// `resourceVersion=0` (served from the watch cache, may be stale) rather than a
        /// consistent read.
        any_version: bool,
    },
    /// PUT of a whole object.
    Update {
        /// The object's name.
        key: String,
        /// The value written.
        value: String,
        /// `metadata.resourceVersion` in the body (none: the server must refuse the update).
        precondition: Option<u64>,
    },
    /// PATCH of the value.
    Patch {
        /// The object's name.
        key: String,
        /// The value written.
        value: String,
        /// The patch type.
        patch_type: PatchType,
        /// A `metadata.resourceVersion` the patch sets (a compare-and-set).
        precondition: Option<u64>,
    },
    /// Server-side apply (`force=true`): creates or updates.
    Apply {
        /// The object's name.
        key: String,
        /// The value written.
        value: String,
    },
    /// DELETE of one object.
    Delete {
        /// The object's name.
        key: String,
        /// `preconditions.resourceVersion` of the DeleteOptions.
        precondition: Option<u64>,
    },
    /// DELETE of the collection.
    DeleteCollection,
}

impl Request {
    /// The key a single-object request addresses.
    pub fn key(&self) -> Option<&str> {
        match self {
            Request::Create { key, .. }
            | Request::Get { key }
            | Request::Update { key, .. }
            | Request::Patch { key, .. }
            | Request::Apply { key, .. }
            | Request::Delete { key, .. } => Some(key),
            Request::List { .. } | Request::DeleteCollection => None,
        }
    }

    /// The value a write request writes.
    pub fn value(&self) -> Option<&str> {
        match self {
            Request::Create { value, .. }
            | Request::Update { value, .. }
            | Request::Patch { value, .. }
            | Request::Apply { value, .. } => Some(value),
            _ => None,
        }
    }

    /// A short name of the operation, for counts.
    pub fn name(&self) -> &'static str {
        match self {
            Request::Create { .. } => "create",
            Request::Get { .. } => "get",
            Request::List { limit: Some(_), .. } => "list-paged",
            Request::List {
                any_version: true, ..
            } => "list-any",
            Request::List { .. } => "list",
            Request::Update {
                precondition: Some(_),
                ..
            } => "update",
            Request::Update { .. } => "update-no-rv",
            Request::Patch {
                patch_type: PatchType::Json,
                ..
            } => "patch-json",
            Request::Patch {
                patch_type: PatchType::Merge,
                ..
            } => "patch-merge",
            Request::Patch {
                patch_type: PatchType::Strategic,
                ..
            } => "patch-strategic",
            Request::Apply { .. } => "apply",
            Request::Delete {
                precondition: Some(_),
                ..
            } => "delete-precondition",
            Request::Delete { .. } => "delete",
            Request::DeleteCollection => "deletecollection",
        }
    }
}

/// An object as a response or an event shows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Seen {
    /// Its name.
    pub key: String,
    /// Its resourceVersion.
    pub rv: u64,
    /// Its value (`spec.reference`).
    pub value: String,
}

/// What came back.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Outcome {
    /// The object (create, get, update, patch, apply).
    Object(Seen),
    /// 200 for a delete.
    Deleted,
    /// A list (or the items a deletecollection deleted), at `rv`.
    List {
        /// The list's resourceVersion.
        rv: u64,
        /// The items.
        items: Vec<Seen>,
    },
    /// A definite refusal (a 4xx Status): nothing was written.
    Error {
        /// The HTTP status code.
        code: u16,
        /// The Status `reason`.
        reason: String,
    },
    /// No answer (timeout, connection reset, server killed) or a 5xx: a write may or may not
    /// have taken effect.
    Unknown {
        /// What happened.
        detail: String,
    },
}

impl Outcome {
    /// Whether the outcome is unknown.
    pub fn is_unknown(&self) -> bool {
        matches!(self, Outcome::Unknown { .. })
    }
}

/// One client operation.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Operation {
    /// Its number in the run.
    pub id: u64,
    /// The client that ran it.
    pub client: u32,
    /// What was asked.
    pub request: Request,
    /// What came back.
    pub outcome: Outcome,
    /// When it was sent.
    pub invoke: Time,
    /// When its answer came back (or it gave up).
    pub ret: Time,
}

/// The type of a watch event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum EventType {
    /// ADDED.
    Added,
    /// MODIFIED.
    Modified,
    /// DELETED.
    Deleted,
    /// BOOKMARK.
    Bookmark,
    /// ERROR (its code in [`WatchEvent::code`]).
    Error,
}

/// One event a watch delivered.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WatchEvent {
    /// The type.
    pub kind: EventType,
    /// The object's name (empty for bookmarks and errors).
    pub key: String,
    /// The object's resourceVersion (the bookmark's; 0 for errors).
    pub rv: u64,
    /// The object's value (`spec.reference`; empty for bookmarks and errors).
    pub value: String,
    /// Part of the initial events of a `sendInitialEvents` watch (or the bookmark ending them).
    pub initial: bool,
    /// The Status code of an ERROR event.
    pub code: u16,
    /// When the harness read it.
    pub at: Time,
}

/// How a watch stream began.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum StreamStart {
    /// After a consistent list at this revision (a reflector).
    AfterList,
    /// With `sendInitialEvents=true`: the state first, then the changes.
    InitialEvents,
    /// From a revision seen earlier in the run, possibly compacted.
    OldRevision,
    /// Resuming the watcher's previous stream from the last revision it delivered.
    Resume,
}

/// How a watch stream ended.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum StreamEnd {
    /// The server ended it (its timeout).
    Closed,
    /// 410 Gone (as the response, or an ERROR event): the revision was compacted.
    Expired {
        /// The Status message.
        message: String,
    },
    /// Another error (connection reset, server killed, another status).
    Failed {
        /// What happened.
        detail: String,
    },
    /// The harness stopped it (a random restart, or the end of the run).
    Stopped,
}

/// One watch request and what it delivered.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct WatchStream {
    /// Its number in the run.
    pub id: u64,
    /// The watcher that opened it.
    pub watcher: u32,
    /// How it began.
    pub start: StreamStart,
    /// The resourceVersion it asked for (0 with `sendInitialEvents`: the latest).
    pub from: u64,
    /// The single object it selects (`fieldSelector=metadata.name=…`), if any.
    pub key: Option<String>,
    /// Whether it asked for bookmarks.
    pub bookmarks: bool,
    /// When it was sent.
    pub opened: Time,
    /// The events, in the order they came.
    pub events: Vec<WatchEvent>,
    /// How it ended.
    pub end: StreamEnd,
    /// When it ended.
    pub closed: Time,
}

impl WatchStream {
    /// Whether the stream selects `key`.
    pub fn selects(&self, key: &str) -> bool {
        self.key.as_deref().is_none_or(|k| k == key)
    }
}

/// Everything a run recorded.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct History {
    /// The keys the clients used (the final-state check compares them).
    pub keys: Vec<String>,
    /// The revision of a consistent list read before the clients started: every change of the
    /// run is after it.
    pub start_rv: u64,
    /// Client operations, in the order they were recorded.
    pub operations: Vec<Operation>,
    /// Watch streams, in the order they were recorded.
    pub streams: Vec<WatchStream>,
    /// The consistent list read after the run, once the faults stopped and the server was
    /// ready (also in `operations`).
    pub final_list: Option<u64>,
}
