//! Found by the robustness harness's full-disk fault: once a write of the embedded store failed
//! because its disk was full, the store refused every later write ("Previous I/O error
//! occurred. Please close and re-open the database.", answered as 500 ServerTimeout) even after
//! space was free again, until the server restarted, while /readyz and /livez kept answering
//! 200.
//!
//! Now, against a real wardle process with its store on a 16 MiB tmpfs (mounting it needs
//! root; the test fails, it does not skip, where it cannot): writes on the full disk answer
//! 500 InternalError with the cause, /readyz fails (its `embedded-storage-readiness` check says
//! why) while reads and /livez go on, and once the disk has room /readyz passes again by itself
//! and writes succeed.

use std::sync::Arc;
use std::time::Duration;

use apiserver_framework::testing::wait;
use apiserver_robustness::api::{COLLECTION, Target, flunder};
use apiserver_robustness::disk::Tmpfs;
use apiserver_robustness::server::WardleProcess;
use serde_json::Value;

/// Calls `f` until it answers `Ok` (the kit's `wait::poll`), for at most `limit`; panics with
/// the last answer and the server's log.
async fn eventually<F, Fut>(what: &str, limit: Duration, log: impl Fn() -> String, f: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<(), String>>,
{
    if let Err(e) = wait::poll(what, limit, f).await {
        panic!("{e}\nserver log:\n{}", log());
    }
}

#[tokio::test]
async fn the_embedded_store_takes_writes_again_once_its_disk_has_room() {
    let dir = tempfile::tempdir().unwrap();
    let disk = Tmpfs::mount(&dir.path().join("disk"), 16 * 1024 * 1024)
        .expect("mount a 16 MiB tmpfs (needs root)");
    let data = disk.dir().join("data").display().to_string();
    let server = WardleProcess::start(
        std::path::Path::new(env!("CARGO_BIN_EXE_robustness-wardle")),
        &dir.path().join("server"),
        vec!["--data-dir".into(), data],
        "disk-full-token",
    )
    .expect("start wardle");
    let target = Arc::new(Target::new(
        server.url(),
        "disk-full-token".into(),
        server.ca_pem.clone(),
    ));
    let http = target.http(Some(Duration::from_secs(10)));
    let url = |path: &str| format!("{}{path}", target.url());
    let create = |name: String| {
        http.post(url(COLLECTION))
            .json(&flunder(&name, &name))
            .send()
    };
    let get = |path: &str| http.get(url(path)).send();
    let log = || server.log_tail(10);
    assert_eq!(create("before".into()).await.unwrap().status(), 201);
    assert_eq!(get("/readyz").await.unwrap().status(), 200);

    disk.fill().expect("fill the disk");
    // A write fails once the store's file needs room (it may have some inside at first).
    let mut failure = None;
    for i in 0..50 {
        let res = create(format!("while-full-{i}")).await.unwrap();
        if !res.status().is_success() {
            failure = Some((res.status(), res.json::<Value>().await.unwrap()));
            break;
        }
    }
    let (code, status) = failure.expect("a write fails on the full disk");
    assert_eq!(code, 500, "{status}");
    assert_eq!(status["reason"], "InternalError", "{status}");
    let message = status["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with("Internal error occurred: ")
            && message.contains("No space left on device"),
        "{status}"
    );

    // Not ready while it cannot write; the check says why. Reads and liveness go on.
    let res = get("/readyz").await.unwrap();
    assert_eq!(res.status(), 500);
    assert!(
        res.text()
            .await
            .unwrap()
            .contains("[-]embedded-storage-readiness failed: reason withheld\n")
    );
    let res = get("/readyz/embedded-storage-readiness").await.unwrap();
    assert_eq!(res.status(), 500);
    let why = res.text().await.unwrap();
    assert!(why.contains("No space left on device"), "{why}");
    eventually(
        "reads and /livez on the full disk",
        Duration::from_secs(10),
        log,
        || async {
            for path in ["/livez", &format!("{COLLECTION}/before")] {
                let res = get(path).await.map_err(|e| e.to_string())?;
                if res.status() != 200 {
                    return Err(format!(
                        "{path}: {} {}",
                        res.status(),
                        res.text().await.unwrap_or_default()
                    ));
                }
            }
            Ok(())
        },
    )
    .await;

    // Room again: ready by itself, without a write, then writes succeed.
    disk.free().expect("free the disk");
    eventually(
        "/readyz once the disk has room",
        Duration::from_secs(10),
        log,
        || async {
            let res = get("/readyz?verbose").await.map_err(|e| e.to_string())?;
            match res.status().as_u16() {
                200 => Ok(()),
                code => Err(format!("{code} {}", res.text().await.unwrap_or_default())),
            }
        },
    )
    .await;
    let res = create("after".into()).await.unwrap();
    assert_eq!(
        res.status(),
        201,
        "{}",
        res.text().await.unwrap_or_default()
    );
    let res = get("/readyz?verbose").await.unwrap();
    assert_eq!(res.status(), 200);
    let checks = res.text().await.unwrap();
    assert!(
        checks.contains("[+]embedded-storage ok\n")
            && checks.contains("[+]embedded-storage-readiness ok\n"),
        "{checks}"
    );
}
