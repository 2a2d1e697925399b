//! Checks under load: concurrent writers and large values.

use std::sync::Arc;

use bytes::Bytes;

use super::Factory;
use super::support::{b, create, current, delete, get, list_all, next_event, watch};
use crate::{EventKind, StorageError};

/// Writers racing on one key with compare-and-swap: 8 tasks each add 1 fifty times, retrying
/// on `Conflict`. The final value is exact, every successful update has its own revision, and a
/// watcher sees the updates one by one, each with the value before it.
pub async fn concurrent_compare_and_swap(factory: &Factory) {
    const TASKS: u64 = 8;
    const EACH: u64 = 50;
    let s = factory().await;
    let r0 = create(&*s, "/cnt", "0").await;
    let mut w = watch(&*s, "/cnt", r0).await;
    let mut tasks = Vec::new();
    for _ in 0..TASKS {
        let s = Arc::clone(&s);
        tasks.push(tokio::spawn(async move {
            let mut revs = Vec::new();
            while (revs.len() as u64) < EACH {
                let kv = get(&*s, "/cnt").await.expect("the counter exists");
                let n: u64 = std::str::from_utf8(&kv.value)
                    .ok()
                    .and_then(|v| v.parse().ok())
                    .expect("the counter holds a number");
                match s
                    .update("/cnt", b(&(n + 1).to_string()), kv.mod_revision)
                    .await
                {
                    Ok(rev) => revs.push(rev),
                    Err(StorageError::Conflict { .. }) => tokio::task::yield_now().await,
                    Err(e) => panic!("a counter update failed with {e:?}"),
                }
            }
            revs
        }));
    }
    let mut revs = Vec::new();
    for t in tasks {
        let mine = t.await.expect("a writer task panicked");
        assert!(
            mine.windows(2).all(|p| p[0] < p[1]),
            "one writer's revisions are not increasing"
        );
        revs.extend(mine);
    }
    revs.sort_unstable();
    revs.dedup();
    assert_eq!(
        revs.len() as u64,
        TASKS * EACH,
        "successful updates must have distinct revisions"
    );
    let kv = get(&*s, "/cnt").await.expect("the counter exists");
    assert_eq!(
        kv.value,
        b(&(TASKS * EACH).to_string()),
        "lost or doubled increments"
    );
    assert_eq!(kv.mod_revision, *revs.last().unwrap());
    assert_eq!(kv.create_revision, r0);
    for i in 1..=TASKS * EACH {
        let ev = next_event(&mut w, &format!("counter update {i}")).await;
        assert_eq!(ev.kind, EventKind::Updated);
        assert_eq!(ev.kv.value, b(&i.to_string()), "the watcher's update {i}");
        assert_eq!(
            ev.prev.map(|p| p.value),
            Some(b(&(i - 1).to_string())),
            "the previous value of update {i}"
        );
        assert_eq!(ev.kv.mod_revision, revs[(i - 1) as usize]);
    }
}

/// Writers racing to create one key: exactly one wins, the others get `AlreadyExists`; writers
/// of distinct keys all succeed with distinct revisions.
pub async fn concurrent_creates(factory: &Factory) {
    let s = factory().await;
    let before = current(&*s).await;
    let mut tasks = Vec::new();
    for t in 0..8 {
        let s = Arc::clone(&s);
        tasks.push(tokio::spawn(async move {
            let race = s.create("/race", b(&t.to_string())).await;
            let mut revs = Vec::new();
            for i in 0..20 {
                revs.push(create(&*s, &format!("/own/{t}/{i}"), "v").await);
            }
            (race, revs)
        }));
    }
    let mut winners = 0;
    let mut all = Vec::new();
    for t in tasks {
        let (race, revs) = t.await.expect("a writer task panicked");
        match race {
            Ok(_) => winners += 1,
            Err(StorageError::AlreadyExists(key)) => assert_eq!(key, "/race"),
            Err(e) => panic!("a racing create failed with {e:?}"),
        }
        assert!(revs.windows(2).all(|p| p[0] < p[1]));
        all.extend(revs);
    }
    assert_eq!(winners, 1, "exactly one racing create must win");
    all.sort_unstable();
    all.dedup();
    assert_eq!(all.len(), 160, "concurrent creates shared a revision");
    assert!(all[0] > before);
    assert_eq!(list_all(&*s, "/own/", None).await.items.len(), 160);
}

/// Values of 1.5 MiB go through create, get, list, update, delete and watch (replayed and
/// live) unchanged.
pub async fn large_values(factory: &Factory) {
    let big = |seed: u8| -> Bytes {
        (0..1536 * 1024)
            .map(|i: usize| (i as u8).wrapping_mul(31).wrapping_add(seed))
            .collect::<Vec<u8>>()
            .into()
    };
    let (v1, v2) = (big(1), big(2));
    let s = factory().await;
    let s = &*s;
    let r0 = current(s).await;
    let mut live = watch(s, "/big/", 0).await;
    let r1 = s
        .create("/big/a", v1.clone())
        .await
        .unwrap_or_else(|e| panic!("create a 1.5 MiB value: {e:?}"));
    assert!(
        get(s, "/big/a").await.expect("present").value == v1,
        "get of a large value"
    );
    let page = list_all(s, "/big/", None).await;
    assert!(
        page.items.len() == 1 && page.items[0].value == v1,
        "list of a large value"
    );
    let r2 = s
        .update("/big/a", v2.clone(), r1)
        .await
        .unwrap_or_else(|e| panic!("update to a 1.5 MiB value: {e:?}"));
    let old = list_all(s, "/big/", Some(r1)).await;
    assert!(
        old.items[0].value == v1,
        "list of a large value at an older revision"
    );
    let (_, last) = delete(s, "/big/a").await;
    assert!(last.value == v2, "delete returns the large last value");
    let mut replay = watch(s, "/big/", r0).await;
    for (w, what) in [(&mut live, "live"), (&mut replay, "replayed")] {
        let ev = next_event(w, &format!("{what} create")).await;
        assert!(
            ev.kind == EventKind::Created && ev.kv.value == v1,
            "{what} create"
        );
        let ev = next_event(w, &format!("{what} update")).await;
        assert!(
            ev.kv.mod_revision == r2 && ev.kv.value == v2 && ev.prev.is_some_and(|p| p.value == v1),
            "{what} update"
        );
        let ev = next_event(w, &format!("{what} delete")).await;
        assert!(
            ev.kind == EventKind::Deleted && ev.kv.value == v2,
            "{what} delete"
        );
    }
}
