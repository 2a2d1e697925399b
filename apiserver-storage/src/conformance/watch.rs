//! Checks of `watch`: replay from a revision, live events, prefixes, compaction and watchers
//! that read slowly.

use std::sync::Arc;

use futures::StreamExt;

use super::Factory;
use super::support::{
    EVENT_TIMEOUT, b, create, current, delete, expect_compacted_watch, expect_end, expect_quiet,
    next_event, update, watch,
};
use crate::{EventKind, KeyValue, StorageError, StorageEvent};

fn kv(key: &str, value: &str, create_revision: u64, mod_revision: u64) -> KeyValue {
    KeyValue {
        key: key.into(),
        value: b(value),
        create_revision,
        mod_revision,
    }
}

/// A watch from a revision replays every later change under its prefix, in order, with the
/// previous values (a delete carries the last value at the deletion revision), then follows
/// live writes.
pub async fn watch_replays_history_then_follows_live(factory: &Factory) {
    let s = factory().await;
    let s = &*s;
    let r0 = current(s).await;
    let a1 = create(s, "/w/a", "a1").await;
    let a2 = update(s, "/w/a", "a2", a1).await;
    create(s, "/x/other", "x").await;
    let (ad, _) = delete(s, "/w/a").await;
    let b1 = create(s, "/w/b", "b1").await;
    let a3 = create(s, "/w/a", "a3").await;

    let want = [
        StorageEvent {
            kind: EventKind::Created,
            kv: kv("/w/a", "a1", a1, a1),
            prev: None,
        },
        StorageEvent {
            kind: EventKind::Updated,
            kv: kv("/w/a", "a2", a1, a2),
            prev: Some(kv("/w/a", "a1", a1, a1)),
        },
        StorageEvent {
            kind: EventKind::Deleted,
            kv: kv("/w/a", "a2", a1, ad),
            prev: Some(kv("/w/a", "a2", a1, a2)),
        },
        StorageEvent {
            kind: EventKind::Created,
            kv: kv("/w/b", "b1", b1, b1),
            prev: None,
        },
        StorageEvent {
            kind: EventKind::Created,
            kv: kv("/w/a", "a3", a3, a3),
            prev: None,
        },
    ];
    let mut w = watch(s, "/w/", r0).await;
    for (i, want) in want.iter().enumerate() {
        let ev = next_event(&mut w, &format!("replayed event {i}")).await;
        assert_eq!(&ev, want, "replayed event {i} of a watch from {r0}");
    }
    // From the middle of the history: only what came after.
    let mut mid = watch(s, "/w/", ad).await;
    let ev = next_event(&mut mid, "watch from the deletion").await;
    assert_eq!(
        ev, want[3],
        "a watch replays only changes after its revision"
    );

    let b2 = update(s, "/w/b", "b2", b1).await;
    create(s, "/x/other2", "x").await;
    let (bd, _) = delete(s, "/w/b").await;
    let live = [
        StorageEvent {
            kind: EventKind::Updated,
            kv: kv("/w/b", "b2", b1, b2),
            prev: Some(kv("/w/b", "b1", b1, b1)),
        },
        StorageEvent {
            kind: EventKind::Deleted,
            kv: kv("/w/b", "b2", b1, bd),
            prev: Some(kv("/w/b", "b2", b1, b2)),
        },
    ];
    for (i, want) in live.iter().enumerate() {
        let ev = next_event(&mut w, &format!("live event {i}")).await;
        assert_eq!(&ev, want, "live event {i}");
    }
    assert_eq!(next_event(&mut mid, "mid: a3").await, want[4]);
    assert_eq!(next_event(&mut mid, "mid: live 0").await, live[0]);
    assert_eq!(next_event(&mut mid, "mid: live 1").await, live[1]);
    expect_quiet(&mut w, "after the last write").await;
}

/// A watch from revision 0 starts now: it sees nothing of the past, then every later write.
pub async fn watch_from_now(factory: &Factory) {
    let s = factory().await;
    let s = &*s;
    let r1 = create(s, "/n/a", "a1").await;
    let mut w = watch(s, "/n/", 0).await;
    expect_quiet(&mut w, "a watch from now, before any write").await;
    let r2 = update(s, "/n/a", "a2", r1).await;
    let ev = next_event(&mut w, "first write after a watch from now").await;
    assert_eq!(
        (ev.kind, ev.kv.mod_revision),
        (EventKind::Updated, r2),
        "a watch from now sees the next write"
    );
}

/// A watch sees only keys under its prefix, as a plain string prefix: `/w/1/` does not see
/// `/w/10/x`.
pub async fn watch_sees_only_its_prefix(factory: &Factory) {
    let s = factory().await;
    let s = &*s;
    let r0 = current(s).await;
    let mut live = watch(s, "/w/1/", 0).await;
    for key in ["/w/10/x", "/w/1", "/w/2/x", "/w/1x", "/v/1/x"] {
        create(s, key, "outside").await;
    }
    let inside = create(s, "/w/1/a", "inside").await;
    let mut replay = watch(s, "/w/1/", r0).await;
    for (w, what) in [(&mut live, "live"), (&mut replay, "replayed")] {
        let ev = next_event(w, what).await;
        assert_eq!(
            (&*ev.kv.key, ev.kv.mod_revision),
            ("/w/1/a", inside),
            "the first {what} event of /w/1/ must be /w/1/a"
        );
    }
    let mut wide = watch(s, "/w/1", r0).await;
    let mut seen = Vec::new();
    for _ in 0..4 {
        seen.push(next_event(&mut wide, "/w/1").await.kv.key.to_string());
    }
    assert_eq!(
        seen,
        ["/w/10/x", "/w/1", "/w/1x", "/w/1/a"],
        "keys seen by /w/1"
    );
}

/// A watch from below the compacted revision fails with `Compacted`; from the compacted
/// revision on it replays the later changes, whose previous values may predate the
/// compaction.
pub async fn watch_across_compaction(factory: &Factory) {
    let s = factory().await;
    let s = &*s;
    let r0 = current(s).await;
    let a1 = create(s, "/wc/a", "a1").await;
    let b1 = create(s, "/wc/b", "b1").await;
    let c1 = create(s, "/wc/c", "c1").await;
    let a2 = update(s, "/wc/a", "a2", a1).await;
    s.compact(a2)
        .await
        .unwrap_or_else(|e| panic!("compact {a2}: {e:?}"));
    let b2 = update(s, "/wc/b", "b2", b1).await;
    let (cd, _) = delete(s, "/wc/c").await;

    expect_compacted_watch(s, "/wc/", r0).await;
    expect_compacted_watch(s, "/wc/", a1).await;
    let mut w = watch(s, "/wc/", a2).await;
    assert_eq!(
        next_event(&mut w, "update after compaction").await,
        StorageEvent {
            kind: EventKind::Updated,
            kv: kv("/wc/b", "b2", b1, b2),
            prev: Some(kv("/wc/b", "b1", b1, b1)),
        },
        "an update whose previous value predates the compaction"
    );
    assert_eq!(
        next_event(&mut w, "delete after compaction").await,
        StorageEvent {
            kind: EventKind::Deleted,
            kv: kv("/wc/c", "c1", c1, cd),
            prev: Some(kv("/wc/c", "c1", c1, c1)),
        },
        "a delete whose last value predates the compaction"
    );
    // A watcher that is already running goes on across a compaction.
    let now = current(s).await;
    s.compact(now)
        .await
        .unwrap_or_else(|e| panic!("compact {now}: {e:?}"));
    let a3 = update(s, "/wc/a", "a3", a2).await;
    let ev = next_event(&mut w, "live event after a second compaction").await;
    assert_eq!(
        (ev.kind, ev.kv.mod_revision, ev.prev.map(|p| p.value)),
        (EventKind::Updated, a3, Some(b("a2")))
    );
}

/// A watch from a revision the store has not reached yet delivers only the changes after it.
pub async fn watch_from_a_future_revision(factory: &Factory) {
    let s = factory().await;
    let s = &*s;
    let now = current(s).await;
    let mut w = watch(s, "/f/", now + 3).await;
    for i in 0..5 {
        create(s, &format!("/f/{i}"), "v").await;
    }
    let mut seen = Vec::new();
    loop {
        let ev = next_event(&mut w, "watch from a future revision").await;
        assert!(
            ev.kv.mod_revision > now + 3,
            "a watch after {} delivered revision {}",
            now + 3,
            ev.kv.mod_revision
        );
        seen.push(ev.kv.key.to_string());
        if seen.last().map(String::as_str) == Some("/f/4") {
            break;
        }
    }
}

/// Watchers started while concurrent writers are busy, some from now and some from a few
/// revisions back (so that replay and live events overlap), each see every later write exactly
/// once, in order of strictly increasing revisions: nothing is lost or repeated where the
/// replayed history meets the live events.
pub async fn watchers_started_during_writes(factory: &Factory) {
    const TASKS: usize = 4;
    const EACH: usize = 50;
    let s = factory().await;
    let mut writers = Vec::new();
    for t in 0..TASKS {
        let s = Arc::clone(&s);
        writers.push(tokio::spawn(async move {
            let mut revs = Vec::new();
            for i in 0..EACH {
                revs.push(create(&*s, &format!("/o/{t}/{i}"), "v").await);
            }
            revs
        }));
    }
    // (the revision it watches after, or None for "now"; the watch)
    let mut watchers = Vec::new();
    for i in 0..100 {
        let after = if i % 2 == 0 {
            None
        } else {
            Some(current(&*s).await.saturating_sub(3).max(1))
        };
        watchers.push((after, watch(&*s, "/o/", after.unwrap_or(0)).await));
        tokio::task::yield_now().await;
    }
    let mut written = Vec::new();
    for w in writers {
        written.extend(w.await.expect("a writer task panicked"));
    }
    // A last write that every watcher sees, even one started after the writers were done.
    let last = create(&*s, "/o/end", "v").await;
    written.push(last);
    written.sort_unstable();
    for (i, (after, mut w)) in watchers.into_iter().enumerate() {
        let mut got = Vec::new();
        while got.last() != Some(&last) {
            let ev = next_event(&mut w, &format!("watcher {i} (after {after:?})")).await;
            assert_eq!(ev.kind, EventKind::Created);
            got.push(ev.kv.mod_revision);
        }
        // A watch from now starts wherever "now" was; from there on it must see everything.
        let from = after.unwrap_or_else(|| got[0] - 1);
        let want: Vec<u64> = written.iter().copied().filter(|&r| r > from).collect();
        assert_eq!(
            got, want,
            "watcher {i} (after {after:?}) lost, repeated or reordered events"
        );
    }
}

/// A watcher that does not read while many writes happen never silently misses an event: it
/// either gets every event in order, or a gap-free beginning of them followed by an error
/// (`Compacted`: relist), after which the stream ends.
pub async fn slow_watcher_misses_nothing(factory: &Factory) {
    const WRITES: usize = 5000;
    const TASKS: usize = 10;
    let s = factory().await;
    let mut w = watch(&*s, "/slow/", 0).await;
    let mut writers = Vec::new();
    for t in 0..TASKS {
        let s = Arc::clone(&s);
        writers.push(tokio::spawn(async move {
            let mut revs = Vec::new();
            for i in 0..WRITES / TASKS {
                revs.push(create(&*s, &format!("/slow/{t}/{i}"), "v").await);
            }
            revs
        }));
    }
    let mut written = Vec::new();
    for writer in writers {
        written.extend(writer.await.expect("a writer task panicked"));
    }
    written.sort_unstable();
    let mut got = 0;
    loop {
        let item = tokio::time::timeout(EVENT_TIMEOUT, w.next()).await;
        match item {
            Ok(Some(Ok(ev))) => {
                assert_eq!(
                    ev.kv.mod_revision, written[got],
                    "event {got} of a slow watcher skipped or repeated a revision"
                );
                got += 1;
                if got == written.len() {
                    break;
                }
            }
            Ok(Some(Err(StorageError::Compacted { .. }))) => {
                expect_end(&mut w, "a slow watcher").await;
                break;
            }
            Ok(Some(Err(e))) => panic!("a slow watcher failed with {e:?}, expected Compacted"),
            Ok(None) => panic!("a slow watcher ended after {got} events without an error"),
            Err(_) => panic!("a slow watcher got no event within {EVENT_TIMEOUT:?}"),
        }
    }
}
