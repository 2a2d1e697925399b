//! Checks of the write operations and of `get`: revisions, create-if-absent, compare-and-swap
//! updates and deletes.

use super::Factory;
use super::support::{b, create, current, delete, get, update};
use crate::{KeyValue, StorageError};

/// Every successful write returns a revision greater than any before it, across keys and
/// across kinds of write, and `current_revision` is the revision of the last write. Writes that
/// fail (AlreadyExists, Conflict, NotFound) do not move the revision.
pub async fn revisions_increase(factory: &Factory) {
    let s = factory().await;
    let s = &*s;
    let mut last = current(s).await;
    let record = |what: &str, rev: u64, last: &mut u64| {
        assert!(
            rev > *last,
            "{what} returned revision {rev}, not greater than the previous revision {last}"
        );
        *last = rev;
    };
    let a1 = create(s, "/rev/a", "a1").await;
    record("create /rev/a", a1, &mut last);
    let b1 = create(s, "/rev/b", "b1").await;
    record("create /rev/b", b1, &mut last);
    let a2 = update(s, "/rev/a", "a2", a1).await;
    record("update /rev/a", a2, &mut last);
    let b2 = update(s, "/rev/b", "b2", b1).await;
    record("update /rev/b", b2, &mut last);
    let (a3, _) = delete(s, "/rev/a").await;
    record("delete /rev/a", a3, &mut last);
    let a4 = create(s, "/rev/a", "again").await;
    record("create /rev/a again", a4, &mut last);
    let (b3, _) = s
        .delete("/rev/b", Some(b2))
        .await
        .unwrap_or_else(|e| panic!("delete /rev/b at {b2}: {e:?}"));
    record("conditional delete /rev/b", b3, &mut last);
    assert_eq!(
        current(s).await,
        last,
        "current_revision is not the revision of the last write"
    );

    // Failed writes leave the revision alone.
    assert!(s.create("/rev/a", b("x")).await.is_err());
    assert!(s.update("/rev/a", b("x"), a1).await.is_err());
    assert!(s.update("/rev/missing", b("x"), a1).await.is_err());
    assert!(s.delete("/rev/a", Some(a1)).await.is_err());
    assert!(s.delete("/rev/missing", None).await.is_err());
    assert_eq!(
        current(s).await,
        last,
        "a failed write moved current_revision"
    );
}

/// `create` stores a key only if it is absent: a second create answers `AlreadyExists` with
/// the key and changes nothing; after a delete the key can be created again, with a new
/// create revision.
pub async fn create_if_absent(factory: &Factory) {
    let s = factory().await;
    let s = &*s;
    let r1 = create(s, "/c/k", "first").await;
    assert_eq!(
        s.create("/c/k", b("second")).await,
        Err(StorageError::AlreadyExists("/c/k".into())),
        "a create of a present key must answer AlreadyExists(key)"
    );
    assert_eq!(
        get(s, "/c/k").await,
        Some(KeyValue {
            key: "/c/k".into(),
            value: b("first"),
            create_revision: r1,
            mod_revision: r1,
        }),
        "a failed create changed the stored value"
    );
    delete(s, "/c/k").await;
    let r2 = create(s, "/c/k", "reborn").await;
    let kv = get(s, "/c/k").await.expect("a re-created key is present");
    assert_eq!(
        (kv.value, kv.create_revision, kv.mod_revision),
        (b("reborn"), r2, r2),
        "a re-created key must start a new life: create_revision = mod_revision = the new revision"
    );
    assert!(r2 > r1);
}

/// `update` is a compare-and-swap on `mod_revision`: it succeeds at the current revision
/// (keeping `create_revision`), answers `Conflict { key, expected, actual }` otherwise, and
/// `NotFound(key)` for an absent key; failed updates change nothing.
pub async fn compare_and_swap(factory: &Factory) {
    let s = factory().await;
    let s = &*s;
    let r1 = create(s, "/cas/k", "v1").await;
    let r2 = update(s, "/cas/k", "v2", r1).await;
    assert_eq!(
        get(s, "/cas/k").await,
        Some(KeyValue {
            key: "/cas/k".into(),
            value: b("v2"),
            create_revision: r1,
            mod_revision: r2,
        }),
        "an update must keep create_revision and set mod_revision to its revision"
    );
    for stale in [r1, r2 + 1000, 0] {
        assert_eq!(
            s.update("/cas/k", b("stale"), stale).await,
            Err(StorageError::Conflict {
                key: "/cas/k".into(),
                expected: stale,
                actual: r2,
            }),
            "an update expecting revision {stale} of a key at {r2} must conflict"
        );
    }
    assert_eq!(
        s.update("/cas/none", b("x"), r1).await,
        Err(StorageError::NotFound("/cas/none".into())),
        "an update of an absent key must answer NotFound(key)"
    );
    assert_eq!(
        get(s, "/cas/none").await,
        None,
        "a failed update created a key"
    );
    let kv = get(s, "/cas/k").await.expect("present");
    assert_eq!(
        (kv.value, kv.mod_revision),
        (b("v2"), r2),
        "a conflicting update changed the stored value"
    );
    let r3 = update(s, "/cas/k", "v3", r2).await;
    assert!(r3 > r2);
}

/// `delete` without a precondition removes a present key and returns the deletion revision and
/// the last value (with its own revisions); with a precondition it only deletes at that
/// revision and answers `Conflict` otherwise; an absent key answers `NotFound`.
pub async fn delete_with_and_without_precondition(factory: &Factory) {
    let s = factory().await;
    let s = &*s;
    let r1 = create(s, "/d/a", "a1").await;
    let r2 = update(s, "/d/a", "a2", r1).await;
    let (rd, last) = delete(s, "/d/a").await;
    assert!(rd > r2, "the deletion revision {rd} must follow {r2}");
    assert_eq!(
        last,
        KeyValue {
            key: "/d/a".into(),
            value: b("a2"),
            create_revision: r1,
            mod_revision: r2,
        },
        "delete must return the last value with its revisions"
    );
    assert_eq!(
        get(s, "/d/a").await,
        None,
        "a deleted key is still readable"
    );
    assert_eq!(
        s.delete("/d/a", None).await,
        Err(StorageError::NotFound("/d/a".into())),
        "deleting an absent key must answer NotFound(key)"
    );
    assert_eq!(
        s.delete("/d/a", Some(r2)).await,
        Err(StorageError::NotFound("/d/a".into())),
        "a conditional delete of an absent key must answer NotFound(key)"
    );

    let b1 = create(s, "/d/b", "b1").await;
    let b2 = update(s, "/d/b", "b2", b1).await;
    assert_eq!(
        s.delete("/d/b", Some(b1)).await,
        Err(StorageError::Conflict {
            key: "/d/b".into(),
            expected: b1,
            actual: b2,
        }),
        "a delete expecting a stale revision must conflict"
    );
    assert_eq!(
        get(s, "/d/b").await.map(|kv| kv.value),
        Some(b("b2")),
        "a conflicting delete removed the key"
    );
    let (bd, last) = s
        .delete("/d/b", Some(b2))
        .await
        .unwrap_or_else(|e| panic!("delete /d/b at its revision {b2}: {e:?}"));
    assert!(bd > b2);
    assert_eq!((last.value, last.mod_revision), (b("b2"), b2));
    assert_eq!(get(s, "/d/b").await, None);
}

/// `get` reads exactly one key: absent keys are `None`, and a key never answers for another
/// key that it is a prefix of.
pub async fn get_reads_one_key(factory: &Factory) {
    let s = factory().await;
    let s = &*s;
    assert_eq!(get(s, "/g/a").await, None, "an empty store has no /g/a");
    let r = create(s, "/g/ab", "ab").await;
    assert_eq!(
        get(s, "/g/a").await,
        None,
        "get /g/a must not answer with /g/ab"
    );
    assert_eq!(
        get(s, "/g/ab").await,
        Some(KeyValue {
            key: "/g/ab".into(),
            value: b("ab"),
            create_revision: r,
            mod_revision: r,
        })
    );
    let empty = s
        .create("/g/empty", bytes::Bytes::new())
        .await
        .unwrap_or_else(|e| panic!("create with an empty value: {e:?}"));
    let kv = get(s, "/g/empty").await.expect("a key with an empty value");
    assert_eq!((kv.value.len(), kv.mod_revision), (0, empty));
}
