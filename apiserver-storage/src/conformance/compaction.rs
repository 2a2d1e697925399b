//! Checks of `compact`: what survives, what expires, and the errors.

use super::Factory;
use super::support::{Model, create, current, delete, get, list_all, update};
use crate::{ListRequest, StorageError};

/// Compacting at a revision keeps the store as it was at that revision readable (lists at it
/// and later, values last written before it) and makes older revisions answer `Compacted`.
/// Compacting again at or below the compacted revision changes nothing (it may answer
/// `Compacted`); compacting beyond the current revision answers `FutureRevision`.
pub async fn compaction_keeps_the_present(factory: &Factory) {
    let s = factory().await;
    let s = &*s;
    let mut model = Model::default();
    let a1 = create(s, "/k/a", "a1").await;
    model.created("/k/a", "a1", a1);
    let b1 = create(s, "/k/b", "b1").await;
    model.created("/k/b", "b1", b1);
    let c1 = create(s, "/k/c", "c1").await;
    model.created("/k/c", "c1", c1);
    let d1 = create(s, "/k/d", "d1").await;
    model.created("/k/d", "d1", d1);
    let a2 = update(s, "/k/a", "a2", a1).await;
    model.updated("/k/a", "a2", a2);
    delete(s, "/k/b").await;
    model.deleted("/k/b");
    let a3 = update(s, "/k/a", "a3", a2).await;
    model.updated("/k/a", "a3", a3);
    let at_compaction = model.clone();
    let compact_at = a3;

    let (dd, _) = delete(s, "/k/d").await;
    model.deleted("/k/d");
    let c2 = update(s, "/k/c", "c2", c1).await;
    model.updated("/k/c", "c2", c2);
    let e1 = create(s, "/k/e", "e1").await;
    model.created("/k/e", "e1", e1);

    s.compact(compact_at)
        .await
        .unwrap_or_else(|e| panic!("compact {compact_at}: {e:?}"));
    for old in [a1, b1, a2, compact_at - 1] {
        match s
            .list(ListRequest {
                prefix: "/k/".into(),
                revision: Some(old),
                ..Default::default()
            })
            .await
        {
            Err(StorageError::Compacted { requested, .. }) => assert_eq!(requested, old),
            other => panic!("list at {old}, below the compaction at {compact_at}: {other:?}"),
        }
    }
    let at = list_all(s, "/k/", Some(compact_at)).await;
    assert_eq!(
        at.items,
        at_compaction.items("/k/"),
        "a list at the compacted revision"
    );
    let at_delete = list_all(s, "/k/", Some(dd)).await;
    assert_eq!(
        at_delete
            .items
            .iter()
            .map(|kv| &*kv.key)
            .collect::<Vec<_>>(),
        ["/k/a", "/k/c"],
        "a list between compaction and now"
    );
    let latest = list_all(s, "/k/", None).await;
    assert_eq!(
        latest.items,
        model.items("/k/"),
        "the latest list after compaction"
    );
    for (key, kv) in &model.data {
        assert_eq!(
            get(s, key).await.as_ref(),
            Some(kv),
            "get {key} after compaction"
        );
    }
    assert_eq!(get(s, "/k/b").await, None);

    // Again, and below: nothing changes.
    for again in [compact_at, a1] {
        match s.compact(again).await {
            Ok(()) | Err(StorageError::Compacted { .. }) => {}
            Err(e) => panic!("compacting again at {again}: {e:?}"),
        }
    }
    assert_eq!(
        list_all(s, "/k/", Some(compact_at)).await.items,
        at_compaction.items("/k/"),
        "a list at the compacted revision after compacting again"
    );

    let now = current(s).await;
    match s.compact(now + 5).await {
        Err(StorageError::FutureRevision { requested, .. }) => assert_eq!(requested, now + 5),
        other => panic!("compact at a future revision: expected FutureRevision, got {other:?}"),
    }
    // And the failed compaction did not compact anything.
    assert_eq!(
        list_all(s, "/k/", Some(now)).await.items,
        model.items("/k/")
    );
    s.compact(now)
        .await
        .unwrap_or_else(|e| panic!("compact at the current revision {now}: {e:?}"));
    assert_eq!(
        list_all(s, "/k/", Some(now)).await.items,
        model.items("/k/")
    );
    let f1 = create(s, "/k/f", "f1").await;
    assert!(
        f1 > now,
        "writes after a compaction go on from the current revision"
    );
}
