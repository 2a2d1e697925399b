//! The framework's own etcd client against a real etcd: reads, writes and transactions, a
//! member's status, watches (events, progress, cancel, compaction), and the options it refuses.

mod support_etcd;

use std::time::{Duration, Instant};

use apiserver_framework::storage::Storage;
use apiserver_framework::storage::etcd::client::Watch;
use apiserver_framework::storage::etcd::proto::{
    Compare, CompareResult, EventType, OpResult, RangeRequest, RequestOp, TxnRequest,
    WatchCreateRequest, WatchResponse,
};
use apiserver_framework::storage::etcd::{ConnectError, EtcdClient, EtcdOptions, EtcdStorage};
use apiserver_framework::testing::wait;
use support_etcd::Etcd;

async fn client(etcd: &Etcd) -> EtcdClient {
    EtcdClient::connect(&etcd.options(""))
        .await
        .expect("a client of the test etcd")
}

/// The URL of a loopback port nothing listens on: connections to it are refused.
fn refusing_url() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    format!("http://{addr}")
}

/// The member id in the header of a status answer.
async fn member_id(c: &EtcdClient) -> Result<u64, tonic::Status> {
    Ok(c.status().await?.header.unwrap().member_id)
}

async fn next(watch: &mut Watch) -> WatchResponse {
    tokio::time::timeout(Duration::from_secs(10), watch.message())
        .await
        .expect("a watch response within 10 s")
        .expect("the watch stream works")
        .expect("the watch stream is open")
}

#[tokio::test]
async fn puts_gets_and_status() {
    let etcd = Etcd::start().expect("etcd starts");
    let c = client(&etcd).await;
    let put = c.put("/k/a", "one").await.unwrap();
    let r1 = put.header.unwrap().revision;
    assert!(r1 > 0);
    let kv = c.get("/k/a").await.unwrap().unwrap();
    assert_eq!(
        (kv.key.as_slice(), &kv.value[..]),
        (&b"/k/a"[..], &b"one"[..])
    );
    assert_eq!(
        (kv.create_revision, kv.mod_revision, kv.version),
        (r1, r1, 1)
    );
    let r2 = c.put("/k/a", "two").await.unwrap().header.unwrap().revision;
    assert!(r2 > r1);
    let kv = c.get("/k/a").await.unwrap().unwrap();
    assert_eq!((&kv.value[..], kv.create_revision), (&b"two"[..], r1));
    assert_eq!((kv.mod_revision, kv.version), (r2, 2));
    assert_eq!(c.get("/k/b").await.unwrap(), None);

    // A range with a limit counts the whole range.
    c.put("/k/b", "three").await.unwrap();
    let page = c
        .range(RangeRequest {
            key: b"/k/".to_vec(),
            range_end: b"/k0".to_vec(),
            limit: 1,
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!((page.kvs.len(), page.more, page.count), (1, true, 2));
    assert_eq!(page.kvs[0].key, b"/k/a");

    // A single member leads itself.
    let status = c.status().await.unwrap();
    let member = status.header.unwrap().member_id;
    assert_ne!(member, 0);
    assert_eq!(status.leader, member);
    assert!(status.version.starts_with("3."), "{}", status.version);
}

#[tokio::test]
async fn transactions_guard_on_revisions() {
    let etcd = Etcd::start().expect("etcd starts");
    let c = client(&etcd).await;
    let create = |value: &'static str| TxnRequest {
        compare: vec![Compare::create_revision(
            b"/t".to_vec(),
            CompareResult::Equal,
            0,
        )],
        success: vec![RequestOp::put(b"/t".to_vec(), value.into())],
        failure: vec![RequestOp::get(b"/t".to_vec())],
    };
    let first = c.txn(create("first")).await.unwrap();
    assert!(first.succeeded);
    let rev = first.header.unwrap().revision;
    // The key exists now: the guard fails and the failure branch reads it.
    let second = c.txn(create("second")).await.unwrap();
    assert!(!second.succeeded);
    let Some(OpResult::Range(read)) = &second.responses[0].response else {
        panic!("{second:?}")
    };
    assert_eq!(
        (&read.kvs[0].value[..], read.kvs[0].mod_revision),
        (&b"first"[..], rev)
    );

    // Delete at the right revision, returning the deleted value.
    let delete = |at: i64| TxnRequest {
        compare: vec![Compare::mod_revision(
            b"/t".to_vec(),
            CompareResult::Equal,
            at,
        )],
        success: vec![RequestOp::delete_returning(b"/t".to_vec())],
        failure: vec![],
    };
    assert!(!c.txn(delete(rev + 100)).await.unwrap().succeeded);
    let deleted = c.txn(delete(rev)).await.unwrap();
    assert!(deleted.succeeded);
    let Some(OpResult::DeleteRange(del)) = &deleted.responses[0].response else {
        panic!("{deleted:?}")
    };
    assert_eq!(del.deleted, 1);
    assert_eq!(&del.prev_kvs[0].value[..], b"first");
    assert_eq!(c.get("/t").await.unwrap(), None);
}

#[tokio::test]
async fn watches_report_events_progress_and_cancel() {
    let etcd = Etcd::start().expect("etcd starts");
    let c = client(&etcd).await;
    let r0 = c
        .put("/w/a", "zero")
        .await
        .unwrap()
        .header
        .unwrap()
        .revision;
    let mut watch = c
        .watch(WatchCreateRequest {
            key: b"/w/".to_vec(),
            range_end: b"/w0".to_vec(),
            start_revision: r0 + 1,
            prev_kv: true,
            ..Default::default()
        })
        .await
        .unwrap();
    let created = next(&mut watch).await;
    assert!(created.created && !created.canceled, "{created:?}");
    let id = created.watch_id;

    let r1 = c.put("/w/a", "one").await.unwrap().header.unwrap().revision;
    let resp = next(&mut watch).await;
    assert_eq!(resp.watch_id, id);
    let ev = &resp.events[0];
    assert_eq!(ev.r#type(), EventType::Put);
    let kv = ev.kv.as_ref().unwrap();
    assert_eq!((&kv.value[..], kv.mod_revision), (&b"one"[..], r1));
    assert_eq!(&ev.prev_kv.as_ref().unwrap().value[..], b"zero");

    // A progress response carries no events and the revision the stream has reached.
    watch.request_progress().await.unwrap();
    let progress = next(&mut watch).await;
    assert!(progress.events.is_empty(), "{progress:?}");
    assert!(!progress.created && !progress.canceled, "{progress:?}");
    assert_eq!(progress.header.unwrap().revision, r1);

    watch.cancel(id).await.unwrap();
    let canceled = next(&mut watch).await;
    assert!(canceled.canceled, "{canceled:?}");
    assert_eq!(canceled.watch_id, id);
    // Nothing is reported after the cancel.
    c.put("/w/a", "two").await.unwrap();
    let after = tokio::time::timeout(Duration::from_millis(500), watch.message()).await;
    assert!(after.is_err(), "{after:?}");
}

#[tokio::test]
async fn a_watch_from_a_compacted_revision_is_canceled_with_the_oldest_revision() {
    let etcd = Etcd::start().expect("etcd starts");
    let c = client(&etcd).await;
    let r1 = c.put("/c/a", "1").await.unwrap().header.unwrap().revision;
    c.put("/c/a", "2").await.unwrap();
    let r3 = c.put("/c/a", "3").await.unwrap().header.unwrap().revision;
    c.compact(r3).await.unwrap();
    let err = c
        .range(RangeRequest {
            key: b"/c/a".to_vec(),
            revision: r1,
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert!(
        err.message()
            .contains("required revision has been compacted"),
        "{err:?}"
    );
    let mut watch = c
        .watch(WatchCreateRequest {
            key: b"/c/a".to_vec(),
            start_revision: r1,
            ..Default::default()
        })
        .await
        .unwrap();
    // etcd confirms the creation, then cancels the watch (or cancels at once).
    let mut resp = next(&mut watch).await;
    if resp.created && !resp.canceled {
        resp = next(&mut watch).await;
    }
    assert!(resp.canceled, "{resp:?}");
    assert_eq!(resp.compact_revision, r3);
}

#[tokio::test]
async fn options_that_make_no_client_are_refused() {
    let files = tempfile::tempdir().unwrap();
    let (_, tls) = support_etcd::tls_files(files.path()).expect("test certificates");
    let not_pem = files.path().join("not.pem");
    std::fs::write(&not_pem, "not a certificate").unwrap();
    let with = |servers: &[&str]| EtcdOptions {
        servers: servers.iter().map(|s| s.to_string()).collect(),
        ..Default::default()
    };
    let refused = |opts: EtcdOptions| async move {
        EtcdClient::connect(&opts)
            .await
            .expect_err(&format!("{opts:?} must be refused"))
    };
    assert!(matches!(refused(with(&[])).await, ConnectError::NoServers));
    for url in [
        "ftp://127.0.0.1:2379",
        "http://not a url",
        "https://127.0.0.1:2379",
    ] {
        assert!(
            matches!(refused(with(&[url])).await, ConnectError::BadServer { .. }),
            "{url}"
        );
    }
    let tls_opts = EtcdOptions {
        ca_file: Some(tls.ca_file.clone()),
        cert_file: Some(tls.cert_file.clone()),
        key_file: Some(tls.key_file.clone()),
        ..with(&["https://127.0.0.1:2379"])
    };
    EtcdClient::connect(&tls_opts).await.unwrap();
    // One of the servers is http:// while TLS files are given.
    let mixed = EtcdOptions {
        servers: vec![
            "https://127.0.0.1:2379".into(),
            "http://127.0.0.1:2380".into(),
        ],
        ..tls_opts.clone()
    };
    assert!(matches!(
        refused(mixed).await,
        ConnectError::BadServer { .. }
    ));
    let half = EtcdOptions {
        key_file: None,
        ..tls_opts.clone()
    };
    assert!(matches!(refused(half).await, ConnectError::HalfIdentity));
    let missing = EtcdOptions {
        ca_file: Some(files.path().join("absent.pem")),
        ..tls_opts.clone()
    };
    assert!(matches!(refused(missing).await, ConnectError::Read { .. }));
    // A CA file without a certificate is refused at once, not found out at every call.
    let no_ca = EtcdOptions {
        ca_file: Some(not_pem.clone()),
        ..tls_opts.clone()
    };
    let err = refused(no_ca).await;
    assert!(
        matches!(&err, ConnectError::Tls(text) if text.contains("CA file") && text.contains("no certificate")),
        "{err}"
    );
    let bad_key = EtcdOptions {
        key_file: Some(not_pem),
        ..tls_opts
    };
    assert!(matches!(refused(bad_key).await, ConnectError::Tls(_)));
}

#[tokio::test]
async fn calls_go_to_the_members_in_turn() {
    // Two separate etcds stand for two members: their member ids tell them apart.
    let (a, b) = (
        Etcd::start().expect("etcd starts"),
        Etcd::start().expect("etcd starts"),
    );
    let opts = EtcdOptions {
        servers: vec![a.url(), b.url()],
        ..Default::default()
    };
    let c = EtcdClient::connect(&opts).await.unwrap();
    let mut ids = Vec::new();
    for _ in 0..8 {
        ids.push(member_id(&c).await.unwrap());
    }
    assert_ne!(ids[0], ids[1], "{ids:x?}");
    for (k, id) in ids.iter().enumerate() {
        assert_eq!(
            *id,
            ids[k % 2],
            "call {k} went to the wrong member: {ids:x?}"
        );
    }
}

#[tokio::test]
async fn a_member_that_refuses_connections_is_left_out_for_a_second() {
    let live = Etcd::start().expect("etcd starts");
    let opts = EtcdOptions {
        servers: vec![refusing_url(), live.url()],
        ..Default::default()
    };
    let c = EtcdClient::connect(&opts).await.unwrap();
    // The first call goes to the first member, which refuses it; the next ones all go to the
    // live member, although it is the refusing member's turn every other call.
    let first = member_id(&c).await.unwrap_err();
    assert!(first.message().contains("refused"), "{first:?}");
    let started = Instant::now();
    for k in 0..10 {
        member_id(&c)
            .await
            .unwrap_or_else(|e| panic!("call {k} after the refusal: {e:?}"));
    }
    assert!(started.elapsed() < Duration::from_millis(900));
    // Once the second is over, the member is tried again. The measured subject: the refused
    // member's one-second back-off, waited out on purpose.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let mut again = Vec::new();
    for _ in 0..2 {
        again.push(member_id(&c).await.is_err());
    }
    assert_eq!(
        again.iter().filter(|&&failed| failed).count(),
        1,
        "{again:?}"
    );

    // A store sends a call that was refused again, to the other member: none fails.
    let storage = EtcdStorage::connect(opts).await.unwrap();
    for k in 0..10 {
        storage
            .get(&format!("/k{k}"))
            .await
            .unwrap_or_else(|e| panic!("get {k}: {e}"));
        storage
            .check_health()
            .await
            .unwrap_or_else(|e| panic!("health check {k}: {e}"));
    }
}

#[tokio::test]
async fn the_connection_is_made_again_when_the_member_comes_back() {
    let mut etcd = Etcd::start().expect("etcd starts");
    let c = client(&etcd).await;
    c.put("/r/a", "before").await.unwrap();
    let mut watch = c
        .watch(WatchCreateRequest {
            key: b"/r/a".to_vec(),
            ..Default::default()
        })
        .await
        .unwrap();
    assert!(next(&mut watch).await.created);
    etcd.kill();
    // The open watch ends with an error, and calls fail, rather than hang.
    let ended = tokio::time::timeout(Duration::from_secs(10), watch.message())
        .await
        .expect("the watch ends once etcd is gone");
    assert!(matches!(ended, Err(_) | Ok(None)), "{ended:?}");
    let down = tokio::time::timeout(Duration::from_secs(10), c.get("/r/a"))
        .await
        .expect("an answer while etcd is down");
    assert!(down.is_err(), "{down:?}");
    etcd.restart().expect("etcd restarts");
    let kv = wait::poll(
        "calls to succeed with etcd back",
        Duration::from_secs(10),
        || c.get("/r/a"),
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"))
    .unwrap();
    assert_eq!(&kv.value[..], b"before");
}

#[tokio::test]
async fn a_server_certificate_the_client_does_not_trust_fails_at_once() {
    let files = tempfile::tempdir().unwrap();
    let (server, client) = support_etcd::tls_files(files.path()).expect("test certificates");
    let other = tempfile::tempdir().unwrap();
    let (_, stranger) = support_etcd::tls_files(other.path()).expect("test certificates");
    let etcd = Etcd::start_tls(server).expect("etcd starts with TLS");
    // The right client certificate, but a CA that did not sign etcd's certificate.
    let opts = EtcdOptions {
        ca_file: Some(stranger.ca_file),
        cert_file: Some(client.cert_file),
        key_file: Some(client.key_file),
        ..etcd.options("/registry")
    };
    let c = EtcdClient::connect(&opts).await.unwrap();
    let err = c.status().await.unwrap_err();
    assert!(err.message().contains("certificate"), "{err:?}");
    // Not a member that is down: the store reports the certificate, not a time-out.
    let storage = EtcdStorage::connect(opts).await.unwrap();
    let started = Instant::now();
    let health = storage.check_health().await.unwrap_err();
    assert!(health.contains("certificate"), "{health}");
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
}
