//! The etcd storage backend against a real etcd (started per test by `support_etcd`):
//! revisions, create-if-absent, compare-and-swap, delete, paged lists at a revision, watch
//! replay and live events, compaction, prefixes, large values, concurrent writers, TLS, and
//! an etcd that goes away and comes back.

mod support_etcd;
mod support_storage;

use std::sync::Arc;
use std::time::{Duration, Instant};

use apiserver_framework::storage::etcd::{EtcdOptions, EtcdStorage};
use apiserver_framework::storage::{EventKind, ListRequest, Storage, StorageError};
use apiserver_framework::testing::wait;
use bytes::Bytes;
use futures::StreamExt;
use support_etcd::Etcd;
use support_storage::{after, b, first_page};

fn list(prefix: &str) -> ListRequest {
    ListRequest {
        prefix: prefix.into(),
        ..Default::default()
    }
}

/// The next watch event, failing the test if none comes within 5 s.
async fn next_event(
    w: &mut apiserver_framework::storage::WatchStream,
) -> Result<apiserver_framework::storage::StorageEvent, StorageError> {
    tokio::time::timeout(Duration::from_secs(5), w.next())
        .await
        .expect("a watch event within 5 s")
        .expect("the watch stream ended")
}

#[tokio::test]
async fn revisions_cas_and_delete() {
    let etcd = Etcd::start().expect("etcd starts");
    let s = etcd
        .storage("/registry")
        .await
        .expect("connect to the test etcd");
    let r0 = s.current_revision().await.unwrap();
    let r1 = s.create("/a/1", b("one")).await.unwrap();
    assert!(r1 > r0);
    assert_eq!(s.current_revision().await.unwrap(), r1);
    assert_eq!(
        s.create("/a/1", b("again")).await,
        Err(StorageError::AlreadyExists("/a/1".into()))
    );
    let r2 = s.update("/a/1", b("two"), r1).await.unwrap();
    assert!(r2 > r1);
    assert_eq!(
        s.update("/a/1", b("stale"), r1).await,
        Err(StorageError::Conflict {
            key: "/a/1".into(),
            expected: r1,
            actual: r2
        })
    );
    // Expecting revision 0 never matches an existing key (and never creates a missing one).
    assert!(matches!(
        s.update("/a/1", b("zero"), 0).await,
        Err(StorageError::Conflict { actual, .. }) if actual == r2
    ));
    let kv = s.get("/a/1").await.unwrap().unwrap();
    assert_eq!(
        (&*kv.key, kv.value, kv.create_revision, kv.mod_revision),
        ("/a/1", b("two"), r1, r2)
    );
    assert_eq!(
        s.delete("/a/1", Some(r1)).await,
        Err(StorageError::Conflict {
            key: "/a/1".into(),
            expected: r1,
            actual: r2
        })
    );
    let (r3, last) = s.delete("/a/1", Some(r2)).await.unwrap();
    assert!(r3 > r2);
    assert_eq!(
        (last.value, last.create_revision, last.mod_revision),
        (b("two"), r1, r2)
    );
    assert_eq!(s.get("/a/1").await.unwrap(), None);
    assert_eq!(
        s.update("/a/1", b("x"), r3).await,
        Err(StorageError::NotFound("/a/1".into()))
    );
    assert_eq!(
        s.update("/a/1", b("x"), 0).await,
        Err(StorageError::NotFound("/a/1".into()))
    );
    assert_eq!(
        s.delete("/a/1", None).await,
        Err(StorageError::NotFound("/a/1".into()))
    );
    // An unconditional delete of a present key.
    let r4 = s.create("/a/1", b("back")).await.unwrap();
    let (r5, last) = s.delete("/a/1", None).await.unwrap();
    assert_eq!(
        (last.value, last.create_revision, r5),
        (b("back"), r4, r4 + 1)
    );
}

#[tokio::test]
async fn paged_lists_at_a_fixed_revision() {
    let etcd = Etcd::start().expect("etcd starts");
    let s = etcd
        .storage("/registry")
        .await
        .expect("connect to the test etcd");
    for i in 0..5 {
        s.create(&format!("/p/{i}"), b(&i.to_string()))
            .await
            .unwrap();
    }
    s.create("/q/x", b("other prefix")).await.unwrap();
    // A key that shares the string prefix `/p` but not the prefix `/p/`.
    s.create("/pp", b("sibling")).await.unwrap();
    let first = s.list(first_page("/p/", 2)).await.unwrap();
    let keys: Vec<_> = first.items.iter().map(|kv| &*kv.key).collect();
    assert_eq!(keys, ["/p/0", "/p/1"]);
    assert!(first.more);
    assert_eq!(first.remaining, 3);
    assert_eq!(first.revision, s.current_revision().await.unwrap());
    // A write after the first page is not visible in later pages at the same revision.
    s.create("/p/9", b("late")).await.unwrap();
    s.delete("/p/3", None).await.unwrap();
    let second = s
        .list(ListRequest {
            limit: 2,
            from_cache: false,
            ..after(&first, "/p/")
        })
        .await
        .unwrap();
    let keys: Vec<_> = second.items.iter().map(|kv| &*kv.key).collect();
    assert_eq!(keys, ["/p/2", "/p/3"]);
    assert_eq!((second.more, second.remaining), (true, 1));
    assert_eq!(second.revision, first.revision);
    let rest = s
        .list(ListRequest {
            prefix: "/p/".into(),
            start_after: Some("/p/3".into()),
            revision: Some(first.revision),
            ..Default::default()
        })
        .await
        .unwrap();
    let keys: Vec<_> = rest.items.iter().map(|kv| &*kv.key).collect();
    assert_eq!(keys, ["/p/4"]);
    assert_eq!((rest.more, rest.remaining), (false, 0));
    let now = s.list(list("/p/")).await.unwrap();
    let keys: Vec<_> = now.items.iter().map(|kv| &*kv.key).collect();
    assert_eq!(keys, ["/p/0", "/p/1", "/p/2", "/p/4", "/p/9"]);
    assert_eq!(now.revision, s.current_revision().await.unwrap());
    // Everything in the store, in key order.
    let all = s.list(list("")).await.unwrap();
    let keys: Vec<_> = all.items.iter().map(|kv| &*kv.key).collect();
    assert_eq!(
        keys,
        ["/p/0", "/p/1", "/p/2", "/p/4", "/p/9", "/pp", "/q/x"]
    );
}

#[tokio::test]
async fn a_list_at_a_future_revision_is_refused() {
    let etcd = Etcd::start().expect("etcd starts");
    let s = etcd
        .storage("/registry")
        .await
        .expect("connect to the test etcd");
    let current = s.create("/f/a", b("a")).await.unwrap();
    let err = s
        .list(ListRequest {
            prefix: "/f/".into(),
            revision: Some(current + 10),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(
        err,
        StorageError::FutureRevision {
            requested: current + 10,
            current
        }
    );
}

#[tokio::test]
async fn watch_replays_history_then_follows_live() {
    let etcd = Etcd::start().expect("etcd starts");
    let s = etcd
        .storage("/registry")
        .await
        .expect("connect to the test etcd");
    let r1 = s.create("/w/a", b("a")).await.unwrap();
    let r2 = s.update("/w/a", b("a2"), r1).await.unwrap();
    s.create("/other/x", b("x")).await.unwrap();
    s.create("/wx", b("sibling of the prefix")).await.unwrap();
    let mut w = s.watch("/w/", r1).await.unwrap();
    let ev = next_event(&mut w).await.unwrap();
    assert_eq!(
        (ev.kind, &*ev.kv.key, ev.kv.mod_revision),
        (EventKind::Updated, "/w/a", r2)
    );
    assert_eq!(ev.kv.value, b("a2"));
    let prev = ev.prev.unwrap();
    assert_eq!((prev.value, prev.mod_revision), (b("a"), r1));
    let (rd, _) = s.delete("/w/a", None).await.unwrap();
    let ev = next_event(&mut w).await.unwrap();
    assert_eq!(ev.kind, EventKind::Deleted);
    assert_eq!(
        (&*ev.kv.key, ev.kv.value.clone(), ev.kv.mod_revision),
        ("/w/a", b("a2"), rd)
    );
    assert_eq!(ev.prev.unwrap().mod_revision, r2);
    let r = s.create("/w/b", b("b")).await.unwrap();
    let ev = next_event(&mut w).await.unwrap();
    assert_eq!(
        (ev.kind, &*ev.kv.key, ev.kv.mod_revision),
        (EventKind::Created, "/w/b", r)
    );
    assert_eq!(ev.prev, None);
    // A key created again after its deletion is created, not updated.
    let r = s.create("/w/a", b("again")).await.unwrap();
    let ev = next_event(&mut w).await.unwrap();
    assert_eq!((ev.kind, ev.kv.create_revision), (EventKind::Created, r));
    // Nothing else arrived: not the other prefixes.
    assert!(
        tokio::time::timeout(Duration::from_millis(300), w.next())
            .await
            .is_err()
    );
}

#[tokio::test]
async fn watch_from_now_sees_only_later_changes() {
    let etcd = Etcd::start().expect("etcd starts");
    let s = etcd
        .storage("/registry")
        .await
        .expect("connect to the test etcd");
    s.create("/n/old", b("old")).await.unwrap();
    let mut w = s.watch("/n/", 0).await.unwrap();
    let r = s.create("/n/new", b("new")).await.unwrap();
    let ev = next_event(&mut w).await.unwrap();
    assert_eq!(
        (ev.kind, &*ev.kv.key, ev.kv.mod_revision),
        (EventKind::Created, "/n/new", r)
    );
    // Watching from the current revision is the same.
    let mut w = s.watch("/n/", r).await.unwrap();
    let r2 = s.update("/n/new", b("newer"), r).await.unwrap();
    let ev = next_event(&mut w).await.unwrap();
    assert_eq!((ev.kind, ev.kv.mod_revision), (EventKind::Updated, r2));
}

#[tokio::test]
async fn compaction_expires_old_revisions() {
    let etcd = Etcd::start().expect("etcd starts");
    let s = etcd
        .storage("/registry")
        .await
        .expect("connect to the test etcd");
    let r1 = s.create("/c/a", b("a")).await.unwrap();
    let r2 = s.update("/c/a", b("b"), r1).await.unwrap();
    let r3 = s.update("/c/a", b("c"), r2).await.unwrap();
    s.compact(r2).await.unwrap();
    // Compacting again, or below, is no error.
    s.compact(r2).await.unwrap();
    s.compact(r1).await.unwrap();
    let watch_err = match s.watch("/c/", r1).await {
        Err(e) => e,
        Ok(mut w) => next_event(&mut w).await.unwrap_err(),
    };
    assert_eq!(
        watch_err,
        StorageError::Compacted {
            requested: r1,
            compacted: r2
        }
    );
    assert_eq!(
        s.list(ListRequest {
            prefix: "/c/".into(),
            revision: Some(r1),
            ..Default::default()
        })
        .await
        .unwrap_err(),
        StorageError::Compacted {
            requested: r1,
            compacted: r2
        }
    );
    // The compaction point itself is still readable and watchable.
    let page = s
        .list(ListRequest {
            prefix: "/c/".into(),
            revision: Some(r2),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(page.items[0].value, b("b"));
    let mut w = s.watch("/c/", r2).await.unwrap();
    let ev = next_event(&mut w).await.unwrap();
    assert_eq!((ev.kind, ev.kv.mod_revision), (EventKind::Updated, r3));
    // A compaction past the current revision is refused.
    assert_eq!(
        s.compact(r3 + 5).await,
        Err(StorageError::FutureRevision {
            requested: r3 + 5,
            current: r3
        })
    );
}

#[tokio::test]
async fn stores_with_different_prefixes_share_revisions_but_not_keys() {
    let etcd = Etcd::start().expect("etcd starts");
    let one = etcd
        .storage("/one")
        .await
        .expect("connect to the test etcd");
    let two = etcd
        .storage("/two/")
        .await
        .expect("connect to the test etcd"); // a trailing slash is dropped
    let raw = etcd.storage("").await.expect("connect to the test etcd");
    let r1 = one.create("/k/a", b("in one")).await.unwrap();
    let mut w = two.watch("/k/", r1).await.unwrap();
    let r2 = two.create("/k/a", b("in two")).await.unwrap();
    assert!(r2 > r1, "revisions are global to the etcd cluster");
    assert_eq!(one.current_revision().await.unwrap(), r2);
    assert_eq!(one.get("/k/a").await.unwrap().unwrap().value, b("in one"));
    assert_eq!(two.get("/k/a").await.unwrap().unwrap().value, b("in two"));
    let keys = |page: apiserver_framework::storage::ListPage| -> Vec<(String, Bytes)> {
        page.items
            .into_iter()
            .map(|kv| (kv.key.to_string(), kv.value))
            .collect()
    };
    assert_eq!(
        keys(one.list(list("")).await.unwrap()),
        [("/k/a".to_string(), b("in one"))]
    );
    assert_eq!(
        keys(two.list(list("/k/")).await.unwrap()),
        [("/k/a".to_string(), b("in two"))]
    );
    // The etcd keys are the prefix followed by the storage key.
    assert_eq!(
        keys(raw.list(list("/")).await.unwrap()),
        [
            ("/one/k/a".to_string(), b("in one")),
            ("/two/k/a".to_string(), b("in two"))
        ]
    );
    // The watcher of `two` sees its own create, and not `one`'s later update.
    let ev = next_event(&mut w).await.unwrap();
    assert_eq!((ev.kind, &*ev.kv.key), (EventKind::Created, "/k/a"));
    one.update("/k/a", b("one again"), r1).await.unwrap();
    assert!(
        tokio::time::timeout(Duration::from_millis(300), w.next())
            .await
            .is_err()
    );
    assert!(matches!(
        two.delete("/k/a", Some(r1)).await,
        Err(StorageError::Conflict { actual, .. }) if actual == r2
    ));
}

#[tokio::test]
async fn values_of_one_and_a_half_mebibytes() {
    let etcd = Etcd::start().expect("etcd starts");
    let s = etcd
        .storage("/registry")
        .await
        .expect("connect to the test etcd");
    let big = |fill: u8| Bytes::from(vec![fill; 3 * 512 * 1024]);
    let mut w = s.watch("/big/", 0).await.unwrap();
    let r1 = s.create("/big/a", big(b'a')).await.unwrap();
    let r2 = s.update("/big/a", big(b'b'), r1).await.unwrap();
    s.create("/big/c", big(b'c')).await.unwrap();
    s.create("/big/d", big(b'd')).await.unwrap();
    assert_eq!(s.get("/big/a").await.unwrap().unwrap().value, big(b'b'));
    // A list larger than gRPC's default 4 MiB message.
    let page = s.list(list("/big/")).await.unwrap();
    assert_eq!(page.items.len(), 3);
    assert_eq!(page.items[2].value, big(b'd'));
    let ev = next_event(&mut w).await.unwrap();
    assert_eq!((ev.kind, ev.kv.value), (EventKind::Created, big(b'a')));
    let ev = next_event(&mut w).await.unwrap();
    assert_eq!(ev.kv.value, big(b'b'));
    assert_eq!(ev.prev.unwrap().value, big(b'a'));
    let (_, last) = s.delete("/big/a", Some(r2)).await.unwrap();
    assert_eq!(last.value, big(b'b'));
}

#[tokio::test]
async fn concurrent_writers_get_distinct_increasing_revisions() {
    let etcd = Etcd::start().expect("etcd starts");
    let s = Arc::new(
        etcd.storage("/registry")
            .await
            .expect("connect to the test etcd"),
    );
    support_storage::concurrent_writers_get_distinct_increasing_revisions(s.clone()).await;
    assert_eq!(s.list(list("/cc/")).await.unwrap().items.len(), 400);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_compare_and_swap_loses_no_increment() {
    let etcd = Etcd::start().expect("etcd starts");
    let s = Arc::new(
        etcd.storage("/registry")
            .await
            .expect("connect to the test etcd"),
    );
    s.create("/counter", b("0")).await.unwrap();
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let s = s.clone();
        tasks.push(tokio::spawn(async move {
            let (mut done, mut conflicts) = (0, 0);
            while done < 50 {
                let kv = s.get("/counter").await.unwrap().unwrap();
                let n: u64 = std::str::from_utf8(&kv.value).unwrap().parse().unwrap();
                match s
                    .update("/counter", b(&(n + 1).to_string()), kv.mod_revision)
                    .await
                {
                    Ok(rev) => {
                        assert!(rev > kv.mod_revision);
                        done += 1;
                    }
                    Err(StorageError::Conflict {
                        expected, actual, ..
                    }) => {
                        assert_eq!(expected, kv.mod_revision);
                        assert!(actual > expected);
                        conflicts += 1;
                    }
                    Err(e) => panic!("unexpected error: {e}"),
                }
            }
            conflicts
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let kv = s.get("/counter").await.unwrap().unwrap();
    assert_eq!(kv.value, b("400"));
}

#[tokio::test]
async fn an_etcd_that_goes_away_answers_unavailable_then_serves_again() {
    let mut etcd = Etcd::start().expect("etcd starts");
    let s = etcd
        .storage("/registry")
        .await
        .expect("connect to the test etcd");
    let r1 = s.create("/d/a", b("a")).await.unwrap();
    s.check_health().await.unwrap();
    let mut w = s.watch("/d/", r1).await.unwrap();

    etcd.kill();
    // The watch ends with an error rather than waiting forever.
    let end = next_event(&mut w).await;
    assert!(matches!(end, Err(StorageError::Unavailable(_))), "{end:?}");
    let timeout = etcd.options("").request_timeout;
    let started = Instant::now();
    let err = s.get("/d/a").await.unwrap_err();
    assert!(matches!(err, StorageError::Unavailable(_)), "{err:?}");
    assert!(
        started.elapsed() < timeout + Duration::from_secs(1),
        "took {:?}",
        started.elapsed()
    );
    let started = Instant::now();
    assert!(matches!(
        s.create("/d/b", b("b")).await,
        Err(StorageError::Unavailable(_))
    ));
    assert!(matches!(
        s.watch("/d/", r1).await,
        Err(StorageError::Unavailable(_))
    ));
    assert!(started.elapsed() < 2 * timeout + Duration::from_secs(1));
    assert!(s.check_health().await.is_err());

    etcd.restart().expect("etcd restarts");
    // The client reconnects on its own; give it a few seconds.
    wait::eventually("etcd to come back", Duration::from_secs(15), || async {
        s.check_health().await.is_ok()
    })
    .await;
    assert_eq!(s.get("/d/a").await.unwrap().unwrap().mod_revision, r1);
    let r2 = s.create("/d/b", b("b")).await.unwrap();
    assert!(r2 > r1);
    let mut w = s.watch("/d/", r1).await.unwrap();
    let ev = next_event(&mut w).await.unwrap();
    assert_eq!((ev.kind, &*ev.kv.key), (EventKind::Created, "/d/b"));
}

#[tokio::test]
async fn a_hung_etcd_times_out_instead_of_hanging_requests() {
    let mut etcd = Etcd::start().expect("etcd starts");
    let timeout = Duration::from_millis(1500);
    // Keep-alive pings every 30 s (the default): only the request timeout ends a request.
    let patient = EtcdOptions {
        request_timeout: timeout,
        health_timeout: Duration::from_millis(500),
        ..etcd.options("/registry")
    };
    // Pings every 0.5 s: a silent connection is given up after about a second.
    let pinging = EtcdOptions {
        keep_alive_interval: Duration::from_millis(500),
        keep_alive_timeout: Duration::from_millis(500),
        ..patient.clone()
    };
    let s = EtcdStorage::connect(patient.clone()).await.unwrap();
    let p = EtcdStorage::connect(pinging).await.unwrap();
    let r1 = s.create("/h/a", b("a")).await.unwrap();
    let mut w = p.watch("/h/", r1).await.unwrap();

    etcd.freeze().expect("etcd freezes");
    let within = |what: &str, started: Instant, low: Duration, high: Duration| {
        let took = started.elapsed();
        assert!(took >= low && took < high, "{what} took {took:?}");
    };
    let started = Instant::now();
    let err = s.get("/h/a").await.unwrap_err();
    assert!(matches!(err, StorageError::Unavailable(_)), "{err:?}");
    within("get", started, timeout, timeout + Duration::from_secs(1));
    let started = Instant::now();
    assert!(matches!(
        s.update("/h/a", b("b"), r1).await,
        Err(StorageError::Unavailable(_))
    ));
    within("update", started, timeout, timeout + Duration::from_secs(1));
    let started = Instant::now();
    assert!(s.check_health().await.is_err());
    within(
        "health check",
        started,
        patient.health_timeout,
        patient.health_timeout + Duration::from_secs(1),
    );
    // A store that connects only now: the connection is accepted but never answered.
    let fresh = EtcdStorage::connect(patient.clone()).await.unwrap();
    let started = Instant::now();
    assert!(matches!(
        fresh.watch("/h/", 0).await,
        Err(StorageError::Unavailable(_))
    ));
    within("watch", started, timeout, timeout + Duration::from_secs(1));
    // The open watch notices the silent connection through unanswered keep-alive pings.
    let end = tokio::time::timeout(Duration::from_secs(10), w.next())
        .await
        .expect("the watch ends within 10 s");
    assert!(
        matches!(end, Some(Err(StorageError::Unavailable(_)))),
        "{end:?}"
    );
    assert!(w.next().await.is_none(), "the stream ends after its error");

    etcd.thaw().expect("etcd thaws");
    wait::eventually("etcd to answer again", Duration::from_secs(15), || async {
        s.check_health().await.is_ok() && fresh.check_health().await.is_ok()
    })
    .await;
    // A request that timed out is ambiguous (etcd may still apply it once thawed), so the
    // next write goes from what is stored now.
    let current = s.get("/h/a").await.unwrap().unwrap().mod_revision;
    assert!(current >= r1);
    let r2 = s.update("/h/a", b("c"), current).await.unwrap();
    assert_eq!(fresh.get("/h/a").await.unwrap().unwrap().mod_revision, r2);
}

#[tokio::test]
async fn tls_with_client_certificates() {
    let certs = tempfile::tempdir().unwrap();
    let (server, client) = support_etcd::tls_files(certs.path()).expect("test certificates");
    let etcd = Etcd::start_tls(server).expect("etcd starts with TLS");
    let opts = EtcdOptions {
        ca_file: Some(client.ca_file.clone()),
        cert_file: Some(client.cert_file.clone()),
        key_file: Some(client.key_file.clone()),
        ..etcd.options("/registry")
    };
    let s = EtcdStorage::connect(opts.clone()).await.unwrap();
    let r = s.create("/t/a", b("over tls")).await.unwrap();
    assert_eq!(s.get("/t/a").await.unwrap().unwrap().mod_revision, r);
    s.check_health().await.unwrap();

    // Without a client certificate etcd refuses the connection.
    let anonymous = EtcdStorage::connect(EtcdOptions {
        cert_file: None,
        key_file: None,
        ..opts.clone()
    })
    .await
    .unwrap();
    assert!(matches!(
        anonymous.get("/t/a").await,
        Err(StorageError::Unavailable(_))
    ));
    assert!(anonymous.check_health().await.is_err());
}

#[tokio::test]
async fn bad_options_are_refused_at_connect() {
    let cases = [
        EtcdOptions {
            servers: vec![],
            ..Default::default()
        },
        EtcdOptions {
            cert_file: Some("/nonexistent/client.crt".into()),
            ..Default::default()
        },
        EtcdOptions {
            ca_file: Some("/nonexistent/ca.crt".into()),
            ..Default::default()
        },
        EtcdOptions {
            servers: vec!["http://not a url".into()],
            ..Default::default()
        },
    ];
    for opts in cases {
        let err = EtcdStorage::connect(opts.clone()).await.unwrap_err();
        assert!(matches!(err, StorageError::Unavailable(_)), "{opts:?}");
    }
}

/// The shared conformance suite, each check on a store of its own prefix on one etcd.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_conforms() {
    use apiserver_framework::storage::conformance::{self, NewStore};
    use std::sync::atomic::{AtomicUsize, Ordering};
    let etcd = Arc::new(Etcd::start().expect("etcd starts"));
    let count = Arc::new(AtomicUsize::new(0));
    conformance::run_all(&move || -> NewStore {
        let (etcd, n) = (etcd.clone(), count.fetch_add(1, Ordering::Relaxed));
        Box::pin(async move {
            // `/c0000/`, `/c0001/`, …: no prefix is a string prefix of another.
            Arc::new(
                etcd.storage(&format!("/c{n:04}"))
                    .await
                    .expect("connect to the test etcd"),
            ) as Arc<dyn Storage>
        })
    })
    .await;
}
