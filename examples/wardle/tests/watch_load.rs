//! `kubectl get -w` keeps up with a steady stream of writes on the embedded default storage:
//! 2,000 creates paced at 200 a second, and the watch reports every one exactly once.

mod support;

use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::json;
use support::{FLUNDERS, Wardle};

const RATE_PER_SECOND: u64 = 200;
const SECONDS: u64 = 10;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_watch_sees_every_write_at_200_per_second() {
    let w = Wardle::start();
    let mut watch = w.kubectl_background(
        "watch",
        &["get", "flunders", "--watch-only", "--output-watch-events"],
    );
    // The watch is established before the first write.
    w.wait_for_watchers(1);

    let total = RATE_PER_SECOND * SECONDS;
    let client = w.client();
    let url = w.at(FLUNDERS);
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..total {
        // Paced: write i is sent at i / RATE seconds.
        let due = started + Duration::from_micros(i * 1_000_000 / RATE_PER_SECOND);
        tokio::time::sleep_until(due.into()).await;
        let (client, url) = (client.clone(), url.clone());
        tasks.spawn(async move {
            let body = json!({
                "apiVersion": "wardle.example.com/v1alpha1",
                "kind": "Flunder",
                "metadata": {"name": format!("load-{i}")},
                "spec": {},
            });
            let res = client.post(url).json(&body).send().await.unwrap();
            assert_eq!(res.status(), StatusCode::CREATED);
        });
    }
    while let Some(done) = tasks.join_next().await {
        done.unwrap();
    }
    let elapsed = started.elapsed();
    let count = |out: &str| out.lines().filter(|l| l.starts_with("ADDED")).count() as u64;
    let seen_all = watch.wait_for(Duration::from_secs(30), |out| count(out) >= total);
    let (out, err) = watch.stop();
    assert!(
        seen_all,
        "the watch reported {} of {total} creates; stderr: {err}",
        count(&out)
    );
    assert_eq!(count(&out), total, "no event twice");
    // How fast the writes went is the benchmark's business (`./scripts/bench`), not a test's:
    // on a loaded machine the paced writes fall behind, and that says nothing about the watch.
    eprintln!("{total} paced writes took {elapsed:?}");
}
