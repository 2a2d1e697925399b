//! etcd's v3 API messages, written by hand as `prost` messages.
//!
//! The etcd clients on crates.io generate these from etcd's `.proto` files at build time,
//! which needs `protoc` (and protobuf's own `.proto` includes) on the building machine. The
//! framework declares the messages itself instead, so that building the etcd backend needs
//! nothing but cargo. Field numbers and types are those of etcd's
//! `api/etcdserverpb/rpc.proto` and `api/mvccpb/kv.proto` (etcd never renumbers a field; every
//! field here exists since etcd 3.4); only the messages and fields the backend uses are
//! declared. Fields a message leaves out are never sent, and in a response they are skipped,
//! as protobuf does with any field it does not know.

use bytes::Bytes;

/// What every etcd response starts with (`etcdserverpb.ResponseHeader`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct ResponseHeader {
    /// The cluster that answered.
    #[prost(uint64, tag = "1")]
    pub cluster_id: u64,
    /// The member that answered.
    #[prost(uint64, tag = "2")]
    pub member_id: u64,
    /// The store's revision when the request was applied; in a watch progress response, the
    /// revision every later event of the stream is above.
    #[prost(int64, tag = "3")]
    pub revision: i64,
    /// The raft term when the request was applied.
    #[prost(uint64, tag = "4")]
    pub raft_term: u64,
}

/// A key and its value (`mvccpb.KeyValue`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct KeyValue {
    /// The key.
    #[prost(bytes = "vec", tag = "1")]
    pub key: Vec<u8>,
    /// The revision of the key's last creation.
    #[prost(int64, tag = "2")]
    pub create_revision: i64,
    /// The revision of the key's last change.
    #[prost(int64, tag = "3")]
    pub mod_revision: i64,
    /// How many times the key changed since its creation (1 when created).
    #[prost(int64, tag = "4")]
    pub version: i64,
    /// The value.
    #[prost(bytes = "bytes", tag = "5")]
    pub value: Bytes,
}

/// A change seen by a watch (`mvccpb.Event`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct Event {
    /// What happened: an [`EventType`].
    #[prost(enumeration = "EventType", tag = "1")]
    pub r#type: i32,
    /// The key after a put; after a delete, the key with the deletion's revision.
    #[prost(message, optional, tag = "2")]
    pub kv: Option<KeyValue>,
    /// The key before the change, when the watch asked for it and etcd still has it.
    #[prost(message, optional, tag = "3")]
    pub prev_kv: Option<KeyValue>,
}

/// The kind of an [`Event`] (`mvccpb.Event.EventType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum EventType {
    /// The key was created or changed.
    Put = 0,
    /// The key was deleted.
    Delete = 1,
}

/// A read of a key or a range of keys (`etcdserverpb.RangeRequest`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct RangeRequest {
    /// The key, or the first key of the range.
    #[prost(bytes = "vec", tag = "1")]
    pub key: Vec<u8>,
    /// The end of the range `[key, range_end)`; empty for the key alone, `\0` for every key
    /// from `key` on.
    #[prost(bytes = "vec", tag = "2")]
    pub range_end: Vec<u8>,
    /// At most this many keys; 0 for no limit.
    #[prost(int64, tag = "3")]
    pub limit: i64,
    /// The revision to read at; 0 for the newest.
    #[prost(int64, tag = "4")]
    pub revision: i64,
    /// Only count the keys (and read the header): no key-values in the response.
    #[prost(bool, tag = "9")]
    pub count_only: bool,
}

/// The answer to a [`RangeRequest`] (`etcdserverpb.RangeResponse`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct RangeResponse {
    /// The response header.
    #[prost(message, optional, tag = "1")]
    pub header: Option<ResponseHeader>,
    /// The keys read, in key order.
    #[prost(message, repeated, tag = "2")]
    pub kvs: Vec<KeyValue>,
    /// Whether the limit left keys of the range out.
    #[prost(bool, tag = "3")]
    pub more: bool,
    /// How many keys the range holds, whatever the limit.
    #[prost(int64, tag = "4")]
    pub count: i64,
}

/// A write of one key (`etcdserverpb.PutRequest`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct PutRequest {
    /// The key.
    #[prost(bytes = "vec", tag = "1")]
    pub key: Vec<u8>,
    /// Its new value.
    #[prost(bytes = "bytes", tag = "2")]
    pub value: Bytes,
}

/// The answer to a [`PutRequest`] (`etcdserverpb.PutResponse`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct PutResponse {
    /// The response header; its revision is the put's.
    #[prost(message, optional, tag = "1")]
    pub header: Option<ResponseHeader>,
}

/// A delete of one key (`etcdserverpb.DeleteRangeRequest` without a range end).
#[derive(Clone, PartialEq, prost::Message)]
pub struct DeleteRangeRequest {
    /// The key.
    #[prost(bytes = "vec", tag = "1")]
    pub key: Vec<u8>,
    /// Return the deleted key-value.
    #[prost(bool, tag = "3")]
    pub prev_kv: bool,
}

/// The answer to a [`DeleteRangeRequest`] (`etcdserverpb.DeleteRangeResponse`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct DeleteRangeResponse {
    /// The response header.
    #[prost(message, optional, tag = "1")]
    pub header: Option<ResponseHeader>,
    /// How many keys were deleted.
    #[prost(int64, tag = "2")]
    pub deleted: i64,
    /// The deleted key-values, when asked for.
    #[prost(message, repeated, tag = "3")]
    pub prev_kvs: Vec<KeyValue>,
}

/// One comparison of a transaction's guard (`etcdserverpb.Compare`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct Compare {
    /// How the key's field compares with the given value: a [`CompareResult`].
    #[prost(enumeration = "CompareResult", tag = "1")]
    pub result: i32,
    /// Which field of the key is compared: a `CompareTarget`.
    #[prost(enumeration = "CompareTarget", tag = "2")]
    pub target: i32,
    /// The key.
    #[prost(bytes = "vec", tag = "3")]
    pub key: Vec<u8>,
    /// The value compared with (etcd's `target_union`); it matches `target`.
    #[prost(oneof = "CompareWith", tags = "4, 5, 6")]
    pub with: Option<CompareWith>,
}

/// The value a [`Compare`] compares the key's field with (etcd's `Compare.target_union`).
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum CompareWith {
    /// The key's version: how many times it changed since its creation (0: absent).
    #[prost(int64, tag = "4")]
    Version(i64),
    /// The key's creation revision (0: the key does not exist).
    #[prost(int64, tag = "5")]
    CreateRevision(i64),
    /// The key's last modification revision.
    #[prost(int64, tag = "6")]
    ModRevision(i64),
}

/// The comparison of a [`Compare`] (`etcdserverpb.Compare.CompareResult`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum CompareResult {
    /// The key's field equals the value.
    Equal = 0,
    /// The key's field is greater than the value.
    Greater = 1,
    /// The key's field is less than the value.
    Less = 2,
    /// The key's field differs from the value.
    NotEqual = 3,
}

/// The field a [`Compare`] looks at (`etcdserverpb.Compare.CompareTarget`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub(crate) enum CompareTarget {
    /// The key's version.
    Version = 0,
    /// The key's creation revision.
    Create = 1,
    /// The key's last modification revision.
    Mod = 2,
    /// The key's value.
    Value = 3,
    /// The key's lease.
    Lease = 4,
}

impl Compare {
    /// Compares `target` of `key` with `with`.
    fn of(key: Vec<u8>, result: CompareResult, target: CompareTarget, with: CompareWith) -> Self {
        Compare {
            result: result as i32,
            target: target as i32,
            key,
            with: Some(with),
        }
    }

    /// Compares the version of `key` (0 when the key is absent) with `version`.
    pub fn version(key: Vec<u8>, result: CompareResult, version: i64) -> Self {
        Compare::of(
            key,
            result,
            CompareTarget::Version,
            CompareWith::Version(version),
        )
    }

    /// Compares the creation revision of `key` with `revision` (0 when the key is absent).
    pub fn create_revision(key: Vec<u8>, result: CompareResult, revision: i64) -> Self {
        Compare::of(
            key,
            result,
            CompareTarget::Create,
            CompareWith::CreateRevision(revision),
        )
    }

    /// Compares the last modification revision of `key` with `revision`.
    pub fn mod_revision(key: Vec<u8>, result: CompareResult, revision: i64) -> Self {
        Compare::of(
            key,
            result,
            CompareTarget::Mod,
            CompareWith::ModRevision(revision),
        )
    }
}

/// One operation of a transaction (`etcdserverpb.RequestOp`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct RequestOp {
    /// The operation.
    #[prost(oneof = "Op", tags = "1, 2, 3")]
    pub request: Option<Op>,
}

/// The operation of a [`RequestOp`] (etcd's `RequestOp.request`).
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum Op {
    /// A read.
    #[prost(message, tag = "1")]
    Range(RangeRequest),
    /// A write.
    #[prost(message, tag = "2")]
    Put(PutRequest),
    /// A delete.
    #[prost(message, tag = "3")]
    DeleteRange(DeleteRangeRequest),
}

impl RequestOp {
    /// A read of `key`.
    pub fn get(key: Vec<u8>) -> Self {
        RequestOp {
            request: Some(Op::Range(RangeRequest {
                key,
                ..Default::default()
            })),
        }
    }

    /// A write of `value` to `key`.
    pub fn put(key: Vec<u8>, value: Bytes) -> Self {
        RequestOp {
            request: Some(Op::Put(PutRequest { key, value })),
        }
    }

    /// A delete of `key` that returns the deleted key-value.
    pub fn delete_returning(key: Vec<u8>) -> Self {
        RequestOp {
            request: Some(Op::DeleteRange(DeleteRangeRequest { key, prev_kv: true })),
        }
    }
}

/// The result of one operation of a transaction (`etcdserverpb.ResponseOp`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct ResponseOp {
    /// The result.
    #[prost(oneof = "OpResult", tags = "1, 2, 3")]
    pub response: Option<OpResult>,
}

/// The result of a [`ResponseOp`] (etcd's `ResponseOp.response`).
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum OpResult {
    /// Of a read.
    #[prost(message, tag = "1")]
    Range(RangeResponse),
    /// Of a write.
    #[prost(message, tag = "2")]
    Put(PutResponse),
    /// Of a delete.
    #[prost(message, tag = "3")]
    DeleteRange(DeleteRangeResponse),
}

/// A transaction: if every comparison holds, the `success` operations, else the `failure`
/// ones, atomically (`etcdserverpb.TxnRequest`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct TxnRequest {
    /// The guard: comparisons that must all hold.
    #[prost(message, repeated, tag = "1")]
    pub compare: Vec<Compare>,
    /// What to do when the guard holds.
    #[prost(message, repeated, tag = "2")]
    pub success: Vec<RequestOp>,
    /// What to do when it does not.
    #[prost(message, repeated, tag = "3")]
    pub failure: Vec<RequestOp>,
}

/// The answer to a [`TxnRequest`] (`etcdserverpb.TxnResponse`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct TxnResponse {
    /// The response header; after writes, its revision is the transaction's.
    #[prost(message, optional, tag = "1")]
    pub header: Option<ResponseHeader>,
    /// Whether the guard held (the `success` operations ran).
    #[prost(bool, tag = "2")]
    pub succeeded: bool,
    /// The results of the operations that ran, in order.
    #[prost(message, repeated, tag = "3")]
    pub responses: Vec<ResponseOp>,
}

/// A compaction of the history up to a revision (`etcdserverpb.CompactionRequest`).
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct CompactionRequest {
    /// Revisions before this one are forgotten.
    #[prost(int64, tag = "1")]
    pub revision: i64,
}

/// The answer to a `CompactionRequest` (`etcdserverpb.CompactionResponse`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct CompactionResponse {
    /// The response header.
    #[prost(message, optional, tag = "1")]
    pub header: Option<ResponseHeader>,
}

/// A message on a watch stream from the client (`etcdserverpb.WatchRequest`).
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct WatchRequest {
    /// What the client asks.
    #[prost(oneof = "WatchRequestKind", tags = "1, 2, 3")]
    pub request: Option<WatchRequestKind>,
}

/// What a [`WatchRequest`] asks (etcd's `WatchRequest.request_union`).
#[derive(Clone, PartialEq, prost::Oneof)]
pub(crate) enum WatchRequestKind {
    /// Start watching.
    #[prost(message, tag = "1")]
    Create(WatchCreateRequest),
    /// Stop a watch.
    #[prost(message, tag = "2")]
    Cancel(WatchCancelRequest),
    /// Report the stream's progress (etcd 3.4 or newer).
    #[prost(message, tag = "3")]
    Progress(WatchProgressRequest),
}

/// Start watching a key or a range of keys (`etcdserverpb.WatchCreateRequest`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct WatchCreateRequest {
    /// The key, or the first key of the range.
    #[prost(bytes = "vec", tag = "1")]
    pub key: Vec<u8>,
    /// The end of the range `[key, range_end)`, as in [`RangeRequest::range_end`].
    #[prost(bytes = "vec", tag = "2")]
    pub range_end: Vec<u8>,
    /// The first revision to report (inclusive); 0 for changes from now on.
    #[prost(int64, tag = "3")]
    pub start_revision: i64,
    /// Have etcd send an empty response now and then when nothing changes, whose header
    /// revision tells how far the watch has got.
    #[prost(bool, tag = "4")]
    pub progress_notify: bool,
    /// Send each event with the key-value before the change.
    #[prost(bool, tag = "6")]
    pub prev_kv: bool,
}

/// Stop a watch (`etcdserverpb.WatchCancelRequest`).
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct WatchCancelRequest {
    /// The watch, as its creation response named it.
    #[prost(int64, tag = "1")]
    pub watch_id: i64,
}

/// Ask for an empty response whose header revision tells the stream's progress
/// (`etcdserverpb.WatchProgressRequest`).
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct WatchProgressRequest {}

/// A message on a watch stream from etcd (`etcdserverpb.WatchResponse`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct WatchResponse {
    /// The response header.
    #[prost(message, optional, tag = "1")]
    pub header: Option<ResponseHeader>,
    /// The watch the response is for (-1 for a progress response to the whole stream).
    #[prost(int64, tag = "2")]
    pub watch_id: i64,
    /// The response to a creation.
    #[prost(bool, tag = "3")]
    pub created: bool,
    /// The watch is over: canceled by the client or by etcd.
    #[prost(bool, tag = "4")]
    pub canceled: bool,
    /// When nonzero, the watch's start revision was compacted: the oldest revision etcd has.
    #[prost(int64, tag = "5")]
    pub compact_revision: i64,
    /// Why etcd canceled the watch.
    #[prost(string, tag = "6")]
    pub cancel_reason: String,
    /// The changes, in revision order.
    #[prost(message, repeated, tag = "11")]
    pub events: Vec<Event>,
}

/// Ask a member for its status (`etcdserverpb.StatusRequest`).
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct StatusRequest {}

/// A member's status (`etcdserverpb.StatusResponse`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct StatusResponse {
    /// The response header; `member_id` names the member that answered.
    #[prost(message, optional, tag = "1")]
    pub header: Option<ResponseHeader>,
    /// The member's etcd version.
    #[prost(string, tag = "2")]
    pub version: String,
    /// The member the answering member takes for the leader (0: none).
    #[prost(uint64, tag = "4")]
    pub leader: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Message;

    /// A guard on a key's absence compares its creation revision with 0: the 0 must be on the
    /// wire (a oneof member is sent even when it holds its type's default).
    #[test]
    fn a_compare_with_zero_sends_the_zero() {
        let absent = Compare::create_revision(b"k".to_vec(), CompareResult::Equal, 0);
        // result (0) and target are proto3 scalars: the default result is not sent.
        assert_eq!(
            absent.encode_to_vec(),
            [0x10, 0x01, 0x1a, 0x01, b'k', 0x28, 0x00]
        );
        let version = Compare::version(b"k".to_vec(), CompareResult::Equal, 0);
        assert_eq!(version.encode_to_vec(), [0x1a, 0x01, b'k', 0x20, 0x00]);
        let modified = Compare::mod_revision(b"k".to_vec(), CompareResult::Greater, 300);
        assert_eq!(
            modified.encode_to_vec(),
            [0x08, 0x01, 0x10, 0x02, 0x1a, 0x01, b'k', 0x30, 0xac, 0x02]
        );
    }

    /// Field numbers of etcd's messages, checked against bytes encoded by hand from
    /// `rpc.proto` and `kv.proto`.
    #[test]
    fn field_numbers_are_etcds() {
        let range = RangeRequest {
            key: b"a".to_vec(),
            range_end: b"b".to_vec(),
            limit: 2,
            revision: 3,
            count_only: true,
        };
        assert_eq!(
            range.encode_to_vec(),
            [0x0a, 1, b'a', 0x12, 1, b'b', 0x18, 2, 0x20, 3, 0x48, 1]
        );
        let create = WatchRequest {
            request: Some(WatchRequestKind::Create(WatchCreateRequest {
                key: b"a".to_vec(),
                range_end: vec![0],
                start_revision: 5,
                progress_notify: true,
                prev_kv: true,
            })),
        };
        assert_eq!(
            create.encode_to_vec(),
            [
                0x0a, 12, 0x0a, 1, b'a', 0x12, 1, 0, 0x18, 5, 0x20, 1, 0x30, 1
            ]
        );
        let progress = WatchRequest {
            request: Some(WatchRequestKind::Progress(WatchProgressRequest {})),
        };
        assert_eq!(progress.encode_to_vec(), [0x1a, 0]);

        // A watch response with one delete event, as etcd sends it.
        let wire = [
            0x0a, 0x02, 0x18, 0x07, // header { revision: 7 }
            0x10, 0x04, // watch_id: 4
            0x28, 0x03, // compact_revision: 3
            0x32, 0x01, b'x', // cancel_reason: "x"
            0x5a, 0x10, // events[0], 16 bytes
            0x08, 0x01, // type: DELETE
            0x12, 0x05, 0x0a, 0x01, b'k', 0x18, 0x07, // kv { key: "k", mod_revision: 7 }
            0x1a, 0x05, 0x0a, 0x01, b'k', 0x2a, 0x00, // prev_kv { key: "k", value: "" }
        ];
        let resp = WatchResponse::decode(&wire[..]).unwrap();
        assert_eq!(resp.header.unwrap().revision, 7);
        assert_eq!((resp.watch_id, resp.compact_revision), (4, 3));
        assert_eq!(resp.cancel_reason, "x");
        let ev = &resp.events[0];
        assert_eq!(ev.r#type(), EventType::Delete);
        assert_eq!(ev.kv.as_ref().unwrap().mod_revision, 7);
        assert_eq!(ev.prev_kv.as_ref().unwrap().key, b"k");
    }
}
