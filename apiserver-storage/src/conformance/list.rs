//! Checks of `list`: prefixes, paging with `limit`/`more`/`remaining`/`start_after`, reads at
//! a fixed or older revision, and the revision errors.

use super::Factory;
use super::support::{Model, create, current, delete, get, keys, list, list_all, update};
use crate::{ListRequest, StorageError};

/// A list returns exactly the keys that start with the prefix, as a plain string prefix, in
/// byte order: `/a/1/` does not see `/a/10/y`, `/a/1` sees both, `/a/` sees keys whose next
/// character is multi-byte, and the empty prefix sees everything.
pub async fn list_by_prefix(factory: &Factory) {
    let s = factory().await;
    let s = &*s;
    let all = [
        "/a/1",
        "/a/1/x",
        "/a/10",
        "/a/10/y",
        "/a/2",
        "/a/\u{e9}",
        "/a/\u{10FFFF}",
        "/a0",
        "/b/1",
    ];
    // Created out of order, so that the order of a list is the store's doing.
    for key in all.iter().rev() {
        create(s, key, key).await;
    }
    let cases: [(&str, &[&str]); 7] = [
        ("/a/1/", &["/a/1/x"]),
        ("/a/1", &["/a/1", "/a/1/x", "/a/10", "/a/10/y"]),
        ("/a/10/", &["/a/10/y"]),
        (
            "/a/",
            &[
                "/a/1",
                "/a/1/x",
                "/a/10",
                "/a/10/y",
                "/a/2",
                "/a/\u{e9}",
                "/a/\u{10FFFF}",
            ],
        ),
        ("/a/\u{e9}", &["/a/\u{e9}"]),
        ("", &all),
        ("/none/", &[]),
    ];
    for (prefix, want) in cases {
        let page = list_all(s, prefix, None).await;
        assert_eq!(keys(&page), want, "list of prefix {prefix:?}");
        assert!(!page.more, "a list without a limit has no more items");
        assert_eq!(
            page.remaining, 0,
            "a list without a limit has none remaining"
        );
        for kv in &page.items {
            assert_eq!(
                Some(kv),
                get(s, &kv.key).await.as_ref(),
                "a listed item differs from get"
            );
        }
    }
}

/// `limit` cuts a list, `more` and `remaining` tell what follows, and continuing with
/// `start_after` at the first page's `revision` sees the store as it was then: creates,
/// updates and deletes made between pages are invisible.
pub async fn list_pages_at_a_fixed_revision(factory: &Factory) {
    let s = factory().await;
    let s = &*s;
    let mut revs = Vec::new();
    for i in 0..7 {
        revs.push(create(s, &format!("/p/{i}"), &format!("v{i}")).await);
    }
    create(s, "/p0x", "outside").await;
    create(s, "/q/x", "outside").await;
    let page = |start_after: Option<&str>, limit: usize, revision: Option<u64>| ListRequest {
        prefix: "/p/".into(),
        start_after: start_after.map(str::to_string),
        limit,
        revision,
        from_cache: false,
    };

    let first = list(s, page(None, 3, None)).await;
    assert_eq!(keys(&first), ["/p/0", "/p/1", "/p/2"], "first page");
    assert!(first.more, "the first page must say more items follow");
    assert_eq!(first.remaining, 4, "the first page's remaining count");
    assert_eq!(
        first.revision,
        current(s).await,
        "a latest list is read at the current revision"
    );

    // Writes between pages.
    create(s, "/p/7", "late").await;
    delete(s, "/p/4").await;
    update(s, "/p/5", "changed", revs[5]).await;
    create(s, "/p/35", "late").await;

    let second = list(s, page(Some("/p/2"), 3, Some(first.revision))).await;
    assert_eq!(
        keys(&second),
        ["/p/3", "/p/4", "/p/5"],
        "the second page at the first page's revision"
    );
    assert_eq!(
        second.revision, first.revision,
        "a page read at a revision reports it"
    );
    assert_eq!(
        second.items[2].value.as_ref(),
        b"v5",
        "a later update is visible in a page read at an older revision"
    );
    assert_eq!(second.items[2].mod_revision, revs[5]);
    assert!(second.more);
    assert_eq!(second.remaining, 1);
    let third = list(s, page(Some("/p/5"), 3, Some(first.revision))).await;
    assert_eq!(keys(&third), ["/p/6"], "the last page");
    assert!(!third.more, "the last page must say nothing follows");
    assert_eq!(third.remaining, 0);

    // The latest state, with a limit equal to, above and at zero.
    let latest = [
        "/p/0", "/p/1", "/p/2", "/p/3", "/p/35", "/p/5", "/p/6", "/p/7",
    ];
    for limit in [0, 8, 100] {
        let all = list(s, page(None, limit, None)).await;
        assert_eq!(keys(&all), latest, "latest list with limit {limit}");
        assert!(!all.more, "limit {limit} covers the whole list");
        assert_eq!(all.remaining, 0);
    }
    let tail = list(s, page(Some("/p/35"), 2, None)).await;
    assert_eq!(keys(&tail), ["/p/5", "/p/6"]);
    assert_eq!((tail.more, tail.remaining), (true, 1));
    let after_last = list(s, page(Some("/p/7"), 2, None)).await;
    assert!(after_last.items.is_empty() && !after_last.more);
    // A continue key that is not itself stored still continues after it.
    let between = list(s, page(Some("/p/30"), 1, Some(first.revision))).await;
    assert_eq!(keys(&between), ["/p/4"]);
}

/// A list at every past revision returns the store as it was then: values, revisions, keys
/// created later absent, keys deleted later present, re-created keys with their old life.
pub async fn list_at_old_revisions(factory: &Factory) {
    let s = factory().await;
    let s = &*s;
    let mut model = Model::default();
    let mut snapshots = vec![(current(s).await, model.clone())];
    let steps: [(&str, &str); 14] = [
        ("create", "/h/a"),
        ("create", "/h/b"),
        ("create", "/hx"),
        ("update", "/h/a"),
        ("create", "/h/c"),
        ("delete", "/h/b"),
        ("update", "/h/c"),
        ("create", "/h/b"),
        ("update", "/hx"),
        ("delete", "/h/a"),
        ("update", "/h/b"),
        ("create", "/h/d"),
        ("delete", "/h/d"),
        ("create", "/h/a"),
    ];
    for (i, (op, key)) in steps.into_iter().enumerate() {
        let value = format!("{key}@{i}");
        let rev = match op {
            "create" => {
                let rev = create(s, key, &value).await;
                model.created(key, &value, rev);
                rev
            }
            "update" => {
                let at = model.data[key].mod_revision;
                let rev = update(s, key, &value, at).await;
                model.updated(key, &value, rev);
                rev
            }
            _ => {
                let (rev, _) = delete(s, key).await;
                model.deleted(key);
                rev
            }
        };
        snapshots.push((rev, model.clone()));
    }
    for (rev, model) in &snapshots {
        let page = list_all(s, "/h/", Some(*rev)).await;
        assert_eq!(page.revision, *rev, "a list at {rev} reports that revision");
        assert_eq!(
            page.items,
            model.items("/h/"),
            "list of /h/ at revision {rev}"
        );
        // The same, in pages of two.
        let mut paged = Vec::new();
        let mut start_after = None;
        loop {
            let p = list(
                s,
                ListRequest {
                    prefix: "/h/".into(),
                    start_after: start_after.clone(),
                    limit: 2,
                    revision: Some(*rev),
                    from_cache: false,
                },
            )
            .await;
            let left = model.items("/h/").len() - paged.len() - p.items.len();
            assert_eq!(
                (p.more, p.remaining),
                (left > 0, left as u64),
                "more/remaining of a page at revision {rev}"
            );
            start_after = p.items.last().map(|kv| kv.key.to_string());
            paged.extend(p.items);
            if !p.more {
                break;
            }
        }
        assert_eq!(paged, model.items("/h/"), "paged list at revision {rev}");
    }
}

/// A list at a revision the store has not reached answers `FutureRevision`; a list at a
/// revision below the compacted one answers `Compacted`; at the compacted revision itself it
/// still works.
pub async fn list_revision_errors(factory: &Factory) {
    let s = factory().await;
    let s = &*s;
    let r1 = create(s, "/e/a", "1").await;
    let r2 = update(s, "/e/a", "2", r1).await;
    let r3 = update(s, "/e/a", "3", r2).await;
    let req = |revision| ListRequest {
        prefix: "/e/".into(),
        revision: Some(revision),
        ..Default::default()
    };
    match s.list(req(r3 + 10)).await {
        Err(StorageError::FutureRevision { requested, current }) => {
            assert_eq!(
                requested,
                r3 + 10,
                "FutureRevision names the requested revision"
            );
            assert!(
                current < requested,
                "FutureRevision's current revision {current}"
            );
        }
        other => panic!("list at a future revision: expected FutureRevision, got {other:?}"),
    }
    s.compact(r2)
        .await
        .unwrap_or_else(|e| panic!("compact {r2}: {e:?}"));
    match s.list(req(r1)).await {
        Err(StorageError::Compacted { requested, .. }) => {
            assert_eq!(requested, r1, "Compacted names the requested revision");
        }
        other => panic!("list at a compacted revision: expected Compacted, got {other:?}"),
    }
    let at = list(s, req(r2)).await;
    assert_eq!(
        at.items
            .iter()
            .map(|kv| kv.value.as_ref())
            .collect::<Vec<_>>(),
        [b"2"],
        "a list at the compacted revision itself"
    );
    let latest = list_all(s, "/e/", None).await;
    assert_eq!(latest.items[0].value.as_ref(), b"3");
}
