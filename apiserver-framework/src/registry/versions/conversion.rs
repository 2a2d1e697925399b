//! Conversion between the versions of one kind through its hub, on JSON objects.
//!
//! Every served version converts to and from the kind's hub type (see
//! [`crate::registry::versions::Kind`]); converting from version A to version B goes
//! A → hub → B. `metadata` is shared by every version: it is carried over unchanged whatever the
//! user's conversions do with it, so `uid`, `generation`, `resourceVersion` and
//! `managedFields` are the same through every version.
//!
//! `ConvertingStorage` puts conversion at the storage boundary: whatever version an object
//! was stored in, the store of the storage version reads it in the storage version.
//! [`migrate`] rewrites every stored object into the storage version.

use std::sync::Arc;

use bytes::Bytes;
use futures::StreamExt;
use serde_json::Value;

use crate::error::FieldError;
use crate::registry::cache::checked_values::CheckedValues;
use crate::registry::store::strategy::Strategy;
use crate::storage::{
    CorruptValue, EventKind, KeyValue, ListPage, ListRequest, Storage, StorageError, StorageEvent,
    WatchStream,
};

/// Why an object could not be converted.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ConversionError {
    /// The bytes are not a JSON object.
    #[error("the object is not JSON: {0}")]
    NotJson(String),
    /// The object names a version this kind does not have.
    #[error("no conversion from or to {0:?}")]
    UnknownVersion(String),
    /// The object does not decode as its version's type, or a conversion refused it.
    #[error("converting {from} to {to}: {message}")]
    Failed {
        /// The object's `apiVersion`.
        from: String,
        /// The requested `apiVersion`.
        to: String,
        /// What went wrong.
        message: String,
    },
}

/// Converts the objects of one kind between its versions (type-erased over the hub).
pub trait Converter: Send + Sync + 'static {
    /// Converts `obj` (whose `apiVersion` names its version) to `to` (a `<group>/<version>`).
    /// `metadata` is carried over unchanged.
    fn convert(&self, obj: Value, to: &str) -> Result<Value, ConversionError>;

    /// Checks that `obj`, in version `api_version`, decodes as that version's type.
    fn check(&self, obj: &[u8], api_version: &str) -> Result<(), ConversionError>;

    /// Every `<group>/<version>` this kind converts between.
    fn api_versions(&self) -> Vec<String>;

    /// The kind's validation (its strategy's, on the hub) of `obj` in its own version, before
    /// it is converted to a storage version that may not hold all of it; with `old`, of an
    /// update.
    fn validate(
        &self,
        obj: &Value,
        old: Option<&Value>,
    ) -> Result<Vec<FieldError>, ConversionError>;
}

/// Decodes a version's JSON into the hub.
pub(crate) type ToHub<H> = Box<dyn Fn(Value) -> Result<H, String> + Send + Sync>;
/// Encodes the hub as a version's JSON.
pub(crate) type FromHub<H> = Box<dyn Fn(H) -> Result<Value, String> + Send + Sync>;
/// Checks that bytes decode as a version's type.
pub(crate) type Check = Box<dyn Fn(&[u8]) -> Result<(), String> + Send + Sync>;

/// One version of a kind, as the hub sees it.
pub(crate) struct Spoke<H> {
    pub api_version: String,
    pub kind: String,
    pub to_hub: ToHub<H>,
    pub from_hub: FromHub<H>,
    pub check: Check,
}

/// The conversions of a kind whose hub is `H`.
pub(crate) struct HubConversion<H> {
    pub spokes: Vec<Spoke<H>>,
    pub strategy: Arc<dyn Strategy<H>>,
}

impl<H: 'static> HubConversion<H> {
    fn spoke(&self, api_version: &str) -> Result<&Spoke<H>, ConversionError> {
        self.spokes
            .iter()
            .find(|s| s.api_version == api_version)
            .ok_or_else(|| ConversionError::UnknownVersion(api_version.to_string()))
    }
}

impl<H: Send + Sync + 'static> Converter for HubConversion<H> {
    fn convert(&self, obj: Value, to: &str) -> Result<Value, ConversionError> {
        let from = api_version_of(&obj)?;
        if from == to {
            return Ok(obj);
        }
        let failed = |message: String| ConversionError::Failed {
            from: from.clone(),
            to: to.to_string(),
            message,
        };
        let (src, dst) = (self.spoke(&from)?, self.spoke(to)?);
        let metadata = obj.get("metadata").cloned();
        let hub = (src.to_hub)(obj).map_err(failed)?;
        let mut out = (dst.from_hub)(hub).map_err(failed)?;
        let map = out
            .as_object_mut()
            .ok_or_else(|| failed("the conversion did not produce an object".into()))?;
        map.insert("apiVersion".into(), Value::String(to.to_string()));
        map.insert("kind".into(), Value::String(dst.kind.clone()));
        match metadata {
            Some(m) => map.insert("metadata".into(), m),
            None => map.remove("metadata"),
        };
        Ok(out)
    }

    fn check(&self, obj: &[u8], api_version: &str) -> Result<(), ConversionError> {
        (self.spoke(api_version)?.check)(obj).map_err(|message| ConversionError::Failed {
            from: api_version.to_string(),
            to: api_version.to_string(),
            message,
        })
    }

    fn api_versions(&self) -> Vec<String> {
        self.spokes.iter().map(|s| s.api_version.clone()).collect()
    }

    fn validate(
        &self,
        obj: &Value,
        old: Option<&Value>,
    ) -> Result<Vec<FieldError>, ConversionError> {
        let hub = |v: &Value| -> Result<H, ConversionError> {
            let from = api_version_of(v)?;
            (self.spoke(&from)?.to_hub)(v.clone()).map_err(|message| ConversionError::Failed {
                from: from.clone(),
                to: "the hub".into(),
                message,
            })
        };
        let new = hub(obj)?;
        Ok(match old {
            Some(old) => self.strategy.validate_update(&new, &hub(old)?),
            None => self.strategy.validate(&new),
        })
    }
}

fn api_version_of(obj: &Value) -> Result<String, ConversionError> {
    obj.get("apiVersion")
        .and_then(Value::as_str)
        .map(str::to_string)
        .ok_or_else(|| ConversionError::NotJson("the object has no apiVersion".into()))
}

/// Whether serialized `object` starts the way objects the framework writes do
/// (`{"apiVersion":"…"`) with `api_version`. An object written another way answers `false`
/// whatever its version (it is read the slow way). (A [`VersionPrefix`] answers the same,
/// faster, for many objects.)
pub(crate) fn starts_in_version(object: &[u8], api_version: &str) -> bool {
    const PREFIX: &[u8] = b"{\"apiVersion\":\"";
    let version = api_version.as_bytes();
    object.len() > PREFIX.len() + version.len()
        && object[PREFIX.len() + version.len()] == b'"'
        && object.starts_with(PREFIX)
        && &object[PREFIX.len()..PREFIX.len() + version.len()] == version
        && !version.iter().any(|&c| c == b'"' || c == b'\\')
}

/// The start of the objects of one version as the framework writes them,
/// `{"apiVersion":"<version>"`, made once and compared with every object read.
#[derive(Clone, Debug)]
pub(crate) struct VersionPrefix {
    /// `None` for a version that has a quote or backslash (no object starts with it the simple
    /// way).
    prefix: Option<Box<[u8]>>,
}

impl VersionPrefix {
    /// The prefix of the objects of `api_version`.
    pub(crate) fn new(api_version: &str) -> Self {
        let simple = !api_version.contains(['"', '\\']);
        VersionPrefix {
            prefix: simple.then(|| {
                format!("{{\"apiVersion\":\"{api_version}\"")
                    .into_bytes()
                    .into()
            }),
        }
    }

    /// Whether `object` starts with this prefix.
    pub(crate) fn starts(&self, object: &[u8]) -> bool {
        self.prefix.as_ref().is_some_and(|p| object.starts_with(p))
    }
}

/// Converts serialized `object` to `to`, checking it decodes: bytes already in `to` are
/// checked and returned as they are.
pub(crate) fn convert_bytes(
    converter: &dyn Converter,
    object: &[u8],
    to: &str,
) -> Result<Bytes, ConversionError> {
    if starts_in_version(object, to) {
        converter.check(object, to)?;
        return Ok(Bytes::copy_from_slice(object));
    }
    let value: Value =
        serde_json::from_slice(object).map_err(|e| ConversionError::NotJson(e.to_string()))?;
    let from = api_version_of(&value)?;
    if from == to {
        converter.check(object, to)?;
        return Ok(Bytes::copy_from_slice(object));
    }
    // An OpenTelemetry span of the conversion itself (`--tracing-config-file`; nothing when off).
    let span = tracing::trace_span!(
        target: crate::storage::traced::TRACE_TARGET,
        "conversion",
        otel.name = "Convert",
        otel.kind = "internal",
        otel.status_code = tracing::field::Empty,
        from = from.as_str(),
        to,
    );
    let _entered = span.enter();
    let out = converter.convert(value, to).inspect_err(|_| {
        span.record("otel.status_code", "error");
    })?;
    serde_json::to_vec(&out)
        .map(Bytes::from)
        .map_err(|e| ConversionError::NotJson(e.to_string()))
}

/// A [`Storage`] that reads every object in one version (the storage version of a kind): the
/// generic store of the storage version sits on it and so never sees another version. Writes
/// pass through unchanged (they are in the storage version already).
///
/// Reads are checked: a value that does not decode as the storage version's type (or does not
/// convert to it) fails the read with [`StorageError::Corrupt`] naming its key, as upstream
/// fails reads of corrupt objects. Each value is checked once (per key and revision): later reads
/// of the same revision pass its bytes through untouched. A value written through this storage
/// needs no check: its writer, the storage version's store, encoded it from the storage
/// version's type, and it is remembered at the revision it was written at (a value written
/// around the server, by another release or directly in the backend, has a revision of its
/// own and is checked when it is first read). Watch events and deleted values are converted
/// where they can be and passed on as stored otherwise, for the layer above to report.
pub(crate) struct ConvertingStorage {
    inner: Arc<dyn Storage>,
    converter: Arc<dyn Converter>,
    storage_version: String,
    /// The start of the objects of the storage version.
    in_storage_version: VersionPrefix,
    checked: CheckedValues,
}

impl ConvertingStorage {
    /// Reads `inner` converting every value to `storage_version` (a `<group>/<version>`).
    pub fn new(
        inner: Arc<dyn Storage>,
        converter: Arc<dyn Converter>,
        storage_version: impl Into<String>,
    ) -> Self {
        let storage_version = storage_version.into();
        ConvertingStorage {
            inner,
            converter,
            in_storage_version: VersionPrefix::new(&storage_version),
            storage_version,
            checked: CheckedValues::default(),
        }
    }

    fn convert(&self, mut kv: KeyValue) -> KeyValue {
        kv.value = convert_value(
            self.converter.as_ref(),
            kv.value,
            &self.storage_version,
            &self.in_storage_version,
        );
        kv
    }

    /// Remembers the value written to `key` at `revision` as decoding, when it starts in the
    /// storage version (`in_storage_version`): it is the store's own encoding of the storage
    /// version's type (the store of that version is this storage's only writer), so its first
    /// read does not decode it again.
    fn written(&self, key: &str, revision: u64, in_storage_version: bool) {
        if in_storage_version {
            self.checked.record(std::iter::once((key, revision)));
        }
    }

    /// Whether `kv` is stored in the storage version and known to decode.
    fn is_checked(&self, kv: &KeyValue) -> bool {
        self.in_storage_version.starts(&kv.value) && self.checked.contains(&kv.key, kv.mod_revision)
    }

    /// `items` in the storage version, each checked to decode once per revision; the values
    /// that do not, all of them, fail the read.
    fn checked(&self, mut items: Vec<KeyValue>) -> Result<Vec<KeyValue>, StorageError> {
        let to = self.storage_version.as_str();
        // A remembered revision was stored in the storage version; the prefix is checked
        // anyway, so that nothing but such a value is ever passed through unconverted.
        let known = self.checked.known();
        let unchecked: Vec<usize> = items
            .iter()
            .enumerate()
            .filter(|(_, kv)| {
                !(self.in_storage_version.starts(&kv.value)
                    && known.contains(&kv.key, kv.mod_revision))
            })
            .map(|(i, _)| i)
            .collect();
        drop(known);
        if unchecked.is_empty() {
            return Ok(items);
        }
        let mut corrupt = Vec::new();
        let mut good = Vec::with_capacity(unchecked.len());
        for i in unchecked {
            let kv = &mut items[i];
            let stored_as_read = self.in_storage_version.starts(&kv.value);
            match convert_bytes(self.converter.as_ref(), &kv.value, to) {
                Ok(value) => {
                    // A value stored in another version is converted on every read (until a
                    // migration rewrites it); only values stored as they are read are
                    // remembered.
                    if stored_as_read {
                        good.push(i);
                    } else {
                        kv.value = value;
                    }
                }
                Err(e) => corrupt.push(CorruptValue {
                    key: kv.key.to_string(),
                    message: e.to_string(),
                }),
            }
        }
        if !corrupt.is_empty() {
            return Err(StorageError::Corrupt(corrupt));
        }
        self.checked.record(
            good.into_iter()
                .map(|i| (&*items[i].key, items[i].mod_revision)),
        );
        Ok(items)
    }
}

/// `value` in `to`, or `value` itself when it is in `to` already (it starts with `prefix`,
/// `to`'s [`VersionPrefix`]) or does not convert.
fn convert_value(
    converter: &dyn Converter,
    value: Bytes,
    to: &str,
    prefix: &VersionPrefix,
) -> Bytes {
    if prefix.starts(&value) {
        return value;
    }
    convert_bytes(converter, &value, to).unwrap_or(value)
}

#[async_trait::async_trait]
impl Storage for ConvertingStorage {
    async fn get(&self, key: &str) -> Result<Option<KeyValue>, StorageError> {
        match self.inner.get(key).await? {
            Some(kv) if self.is_checked(&kv) => Ok(Some(kv)),
            Some(kv) => Ok(self.checked(vec![kv])?.pop()),
            None => Ok(None),
        }
    }

    async fn list(&self, req: ListRequest) -> Result<ListPage, StorageError> {
        let mut page = self.inner.list(req).await?;
        page.items = self.checked(std::mem::take(&mut page.items))?;
        Ok(page)
    }

    async fn create(&self, key: &str, value: Bytes) -> Result<u64, StorageError> {
        let written = self.in_storage_version.starts(&value);
        let revision = self.inner.create(key, value).await?;
        self.written(key, revision, written);
        Ok(revision)
    }

    async fn update(&self, key: &str, value: Bytes, expected: u64) -> Result<u64, StorageError> {
        let written = self.in_storage_version.starts(&value);
        let revision = self.inner.update(key, value, expected).await?;
        self.written(key, revision, written);
        Ok(revision)
    }

    async fn delete(
        &self,
        key: &str,
        expected: Option<u64>,
    ) -> Result<(u64, KeyValue), StorageError> {
        let (rev, kv) = self.inner.delete(key, expected).await?;
        self.checked.forget(key);
        Ok((rev, self.convert(kv)))
    }

    async fn watch(&self, prefix: &str, after: u64) -> Result<WatchStream, StorageError> {
        let stream = self.inner.watch(prefix, after).await?;
        let converter = self.converter.clone();
        let to = self.storage_version.clone();
        // Compared with every event of the watch: the prefix is made once.
        let prefix = self.in_storage_version.clone();
        Ok(stream
            .map(move |event| {
                event.map(|mut e: StorageEvent| {
                    if e.kind == EventKind::Progress {
                        return e;
                    }
                    e.kv.value = convert_value(converter.as_ref(), e.kv.value, &to, &prefix);
                    if let Some(prev) = e.prev.as_mut() {
                        let value = std::mem::take(&mut prev.value);
                        prev.value = convert_value(converter.as_ref(), value, &to, &prefix);
                    }
                    e
                })
            })
            .boxed())
    }

    async fn current_revision(&self) -> Result<u64, StorageError> {
        self.inner.current_revision().await
    }

    async fn compact(&self, revision: u64) -> Result<(), StorageError> {
        self.inner.compact(revision).await
    }

    fn local_revision(&self) -> Option<u64> {
        self.inner.local_revision()
    }

    fn request_progress(&self) {
        self.inner.request_progress();
    }
}

/// What a storage-version migration did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MigrationReport {
    /// Objects read.
    pub seen: usize,
    /// Objects rewritten into the storage version.
    pub migrated: usize,
    /// Objects that do not convert (left as they are; see the server's log).
    pub failed: Vec<String>,
}

/// How many objects a migration reads per page.
const MIGRATION_PAGE: usize = 500;

/// Rewrites every object under `prefix` that is not stored in `storage_version` into it, with
/// a compare-and-swap per object (an object written meanwhile is read again), page by page.
///
/// Safe while servers run (a write that lands first wins; it is in the storage version
/// already) and resumable: objects already in the storage version are skipped, so a migration
/// that stopped half-way is finished by running it again.
pub async fn migrate(
    storage: &Arc<dyn Storage>,
    converter: &dyn Converter,
    prefix: &str,
    storage_version: &str,
) -> Result<MigrationReport, StorageError> {
    let mut report = MigrationReport::default();
    let mut start_after = None;
    loop {
        let page = storage
            .list(ListRequest {
                prefix: prefix.to_string(),
                start_after: start_after.take(),
                limit: MIGRATION_PAGE,
                ..Default::default()
            })
            .await?;
        for kv in &page.items {
            report.seen += 1;
            let mut current = kv.clone();
            loop {
                if starts_in_version(&current.value, storage_version) {
                    break;
                }
                let converted = match convert_bytes(converter, &current.value, storage_version) {
                    Ok(c) => c,
                    Err(e) => {
                        tracing::warn!(key = %current.key, error = %e, "object not migrated");
                        report.failed.push(current.key.to_string());
                        break;
                    }
                };
                match storage
                    .update(&current.key, converted, current.mod_revision)
                    .await
                {
                    Ok(_) => {
                        report.migrated += 1;
                        break;
                    }
                    Err(StorageError::Conflict { .. }) => match storage.get(&current.key).await? {
                        Some(latest) => current = latest,
                        None => break,
                    },
                    Err(StorageError::NotFound(_)) => break,
                    Err(e) => return Err(e),
                }
            }
        }
        if !page.more {
            return Ok(report);
        }
        start_after = page.items.last().map(|kv| kv.key.to_string());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starts_in_version_reads_the_framework_layout_only() {
        let object = br#"{"apiVersion":"g/v1","kind":"K"}"#;
        assert!(starts_in_version(object, "g/v1"));
        assert!(!starts_in_version(object, "g/v"));
        assert!(!starts_in_version(object, "g/v1\","));
        assert!(!starts_in_version(object, "g/v10"));
        assert!(!starts_in_version(
            br#"{"kind":"K","apiVersion":"g/v1"}"#,
            "g/v1"
        ));
        assert!(!starts_in_version(
            br#"{"apiVersion":"g\"/v1"}"#,
            r#"g\"/v1"#
        ));
        assert!(!starts_in_version(br#"{"apiVersion":"g/v1"#, "g/v1"));
        // Only the start is read.
        assert!(starts_in_version(br#"{"apiVersion":"g/v1""#, "g/v1"));
        assert!(!starts_in_version(b"garbage", "g/v1"));
        assert!(!starts_in_version(b"", ""));
    }

    #[test]
    fn a_version_prefix_answers_as_starts_in_version() {
        let objects: [&[u8]; 8] = [
            br#"{"apiVersion":"g/v1","kind":"K"}"#,
            br#"{"apiVersion":"g/v1""#,
            br#"{"apiVersion":"g/v1"#,
            br#"{"apiVersion":"g/v10","kind":"K"}"#,
            br#"{"apiVersion":"g\"/v1"}"#,
            br#"{"apiVersion":"","kind":"K"}"#,
            br#"{"kind":"K","apiVersion":"g/v1"}"#,
            b"",
        ];
        for version in ["g/v1", "g/v", "g/v10", "g/v1\",", r#"g\"/v1"#, r#"g\"#, ""] {
            let prefix = VersionPrefix::new(version);
            for object in objects {
                assert_eq!(
                    prefix.starts(object),
                    starts_in_version(object, version),
                    "{version:?} {:?}",
                    String::from_utf8_lossy(object)
                );
            }
        }
        assert!(VersionPrefix::new("g/v1").starts(objects[0]));
        assert!(VersionPrefix::new("").starts(objects[5]));
    }

    use std::sync::atomic::{AtomicUsize, Ordering};

    use crate::storage::memory::MemoryStorage;

    /// Two versions, `g/v1` (stored) and `g/v2`, whose objects hold a number `n`; counts the
    /// decode checks.
    #[derive(Default)]
    struct Numbers {
        checks: AtomicUsize,
    }

    impl Converter for Numbers {
        fn convert(&self, mut obj: Value, to: &str) -> Result<Value, ConversionError> {
            self.check(obj.to_string().as_bytes(), &api_version_of(&obj)?)?;
            obj["apiVersion"] = Value::String(to.to_string());
            Ok(obj)
        }

        fn check(&self, obj: &[u8], api_version: &str) -> Result<(), ConversionError> {
            self.checks.fetch_add(1, Ordering::Relaxed);
            let value: Value =
                serde_json::from_slice(obj).map_err(|e| ConversionError::Failed {
                    from: api_version.into(),
                    to: api_version.into(),
                    message: e.to_string(),
                })?;
            match value["n"].is_number() {
                true => Ok(()),
                false => Err(ConversionError::Failed {
                    from: api_version.into(),
                    to: api_version.into(),
                    message: "n is not a number".into(),
                }),
            }
        }

        fn api_versions(&self) -> Vec<String> {
            vec!["g/v1".into(), "g/v2".into()]
        }

        fn validate(
            &self,
            _: &Value,
            _: Option<&Value>,
        ) -> Result<Vec<FieldError>, ConversionError> {
            Ok(Vec::new())
        }
    }

    fn object(version: &str, n: &str) -> Bytes {
        Bytes::from(format!(
            r#"{{"apiVersion":"g/{version}","kind":"K","n":{n}}}"#
        ))
    }

    fn list_all() -> ListRequest {
        ListRequest {
            prefix: "/k/".into(),
            start_after: None,
            limit: 0,
            revision: None,
            from_cache: false,
        }
    }

    /// A memory store, the counting converter, and a converting storage for `g/v1` on both.
    fn counted() -> (Arc<dyn Storage>, Arc<Numbers>, ConvertingStorage) {
        let raw: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
        let numbers = Arc::new(Numbers::default());
        let storage = ConvertingStorage::new(raw.clone(), numbers.clone(), "g/v1");
        (raw, numbers, storage)
    }

    #[tokio::test]
    async fn reads_check_each_stored_value_once() {
        let (raw, numbers, storage) = counted();
        let checks = || numbers.checks.load(Ordering::Relaxed);
        raw.create("/k/a", object("v1", "1")).await.unwrap();
        raw.create("/k/b", object("v1", "2")).await.unwrap();
        assert_eq!(storage.list(list_all()).await.unwrap().items.len(), 2);
        assert_eq!(checks(), 2);
        // Read again, as a list and one by one: no value is decoded again, and the bytes are
        // the stored ones.
        let page = storage.list(list_all()).await.unwrap();
        let a = storage.get("/k/a").await.unwrap().unwrap();
        assert_eq!(checks(), 2);
        assert_eq!(page.items[0].value, object("v1", "1"));
        assert_eq!(a.value, object("v1", "1"));
        // A new revision of a key is checked again.
        let rev = a.mod_revision;
        raw.update("/k/a", object("v1", "3"), rev).await.unwrap();
        storage.get("/k/a").await.unwrap().unwrap();
        assert_eq!(checks(), 3);
        // A value stored in another version is converted on every read.
        raw.create("/k/c", object("v2", "4")).await.unwrap();
        for _ in 0..2 {
            let c = storage.get("/k/c").await.unwrap().unwrap();
            assert_eq!(
                c.value,
                Bytes::from(r#"{"apiVersion":"g/v1","kind":"K","n":4}"#)
            );
        }
        assert_eq!(checks(), 5);
    }

    #[tokio::test]
    async fn a_value_written_through_it_is_not_decoded_again_when_read() {
        let (raw, numbers, storage) = counted();
        let checks = || numbers.checks.load(Ordering::Relaxed);
        let rev = storage.create("/k/a", object("v1", "1")).await.unwrap();
        storage.create("/k/b", object("v1", "2")).await.unwrap();
        storage
            .update("/k/a", object("v1", "3"), rev)
            .await
            .unwrap();
        let page = storage.list(list_all()).await.unwrap();
        assert_eq!(page.items.len(), 2);
        assert_eq!(page.items[0].value, object("v1", "3"));
        storage.get("/k/b").await.unwrap().unwrap();
        assert_eq!(checks(), 0);
        // What was written around it is checked at its first read, even for a key written
        // through it before.
        let rev = raw.get("/k/a").await.unwrap().unwrap().mod_revision;
        raw.update("/k/a", object("v1", "4"), rev).await.unwrap();
        storage.get("/k/a").await.unwrap().unwrap();
        assert_eq!(checks(), 1);
        // A write the backend refuses answers its error, and a value written in another
        // version is not taken as checked: it is converted (and so checked) when read.
        storage
            .update("/k/a", object("v1", "5"), rev)
            .await
            .unwrap_err();
        storage.create("/k/c", object("v2", "6")).await.unwrap();
        storage.get("/k/c").await.unwrap().unwrap();
        assert_eq!(checks(), 2);
    }

    #[tokio::test]
    async fn a_value_that_does_not_decode_fails_the_read_naming_its_key() {
        let raw: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
        let storage = ConvertingStorage::new(raw.clone(), Arc::new(Numbers::default()), "g/v1");
        raw.create("/k/a", object("v1", "1")).await.unwrap();
        raw.create("/k/b", object("v1", "2")).await.unwrap();
        storage.list(list_all()).await.unwrap();
        // Corrupted after it was read and remembered: the new revision is read as new.
        let rev = raw.get("/k/b").await.unwrap().unwrap().mod_revision;
        raw.update("/k/b", object("v1", r#""two""#), rev)
            .await
            .unwrap();
        raw.create("/k/c", object("v2", "[]")).await.unwrap();
        let corrupt = |err: StorageError| match err {
            StorageError::Corrupt(values) => values.into_iter().map(|v| v.key).collect::<Vec<_>>(),
            other => panic!("not a corrupt-value error: {other}"),
        };
        let err = storage.list(list_all()).await.unwrap_err();
        assert_eq!(corrupt(err), ["/k/b", "/k/c"]);
        let err = storage.get("/k/b").await.unwrap_err();
        assert_eq!(corrupt(err), ["/k/b"]);
        // The readable one still reads; a deleted corrupt one no longer fails the list.
        storage.get("/k/a").await.unwrap().unwrap();
        raw.delete("/k/b", None).await.unwrap();
        storage.delete("/k/c", None).await.unwrap();
        assert_eq!(storage.list(list_all()).await.unwrap().items.len(), 1);
    }
}
