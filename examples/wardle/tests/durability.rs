//! The embedded default storage of `wardle local`: objects survive a restart with the same
//! resourceVersions, and every acknowledged write survives `kill -9`.

mod support;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use apiserver_framework::testing::wait;
use reqwest::StatusCode;
use serde_json::Value;
use support::checks::answer;
use support::fixtures::flunder_to;
use support::{FLUNDERS, Wardle};

/// The stored Flunders: name → resourceVersion.
async fn stored(w: &Wardle) -> BTreeMap<String, u64> {
    let res = w.client().get(w.at(FLUNDERS)).send().await.unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    let list: Value = res.json().await.unwrap();
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["metadata"]["name"].as_str().unwrap().to_string(),
                i["metadata"]["resourceVersion"]
                    .as_str()
                    .unwrap()
                    .parse()
                    .unwrap(),
            )
        })
        .collect()
}

async fn create(w: &Wardle, client: &reqwest::Client, name: &str) -> Option<u64> {
    let res = client
        .post(w.at(FLUNDERS))
        .json(&flunder_to(name, "r", "Flunder"))
        .send()
        .await
        .ok()?;
    if res.status() != StatusCode::CREATED {
        return None;
    }
    let obj: Value = res.json().await.ok()?;
    obj["metadata"]["resourceVersion"].as_str()?.parse().ok()
}

#[tokio::test]
async fn a_restart_serves_the_same_objects_and_resource_versions() {
    let w = Wardle::start_with_args(&["--data-dir", "{dir}/store"]);
    let client = w.client();
    for i in 0..5 {
        create(&w, &client, &format!("f{i}")).await.unwrap();
    }
    let res = answer(client.delete(w.at(&format!("{FLUNDERS}/f3")))).await;
    assert_eq!(res.status(), StatusCode::OK);
    let before = stored(&w).await;
    assert_eq!(before.len(), 4);
    let last = *before.values().max().unwrap();

    let w = w.kill_and_restart();
    assert!(
        w.dir().join("store/storage.redb").exists(),
        "--data-dir is used"
    );
    assert_eq!(
        stored(&w).await,
        before,
        "same objects, same resourceVersions"
    );
    let next = create(&w, &w.client(), "after").await.unwrap();
    assert!(
        next > last + 1,
        "revisions continue after the delete: {next} > {}",
        last + 1
    );
}

#[tokio::test]
async fn acknowledged_creates_survive_kill_9() {
    let mut w = Wardle::start();
    let mut acknowledged: BTreeMap<String, u64> = BTreeMap::new();
    let mut highest = 0;
    let mut n = 0;
    // Several kill points, each in the middle of a stream of concurrent creates.
    for round in 0..4 {
        let client = w.client();
        let stop = Arc::new(AtomicBool::new(false));
        let url = Arc::new(w.at(FLUNDERS));
        let mut writers = Vec::new();
        for writer in 0..4 {
            let (client, stop, url) = (client.clone(), stop.clone(), url.clone());
            let start = n + writer * 10_000;
            writers.push(tokio::spawn(async move {
                let mut acks = Vec::new();
                let mut i = start;
                while !stop.load(Ordering::Relaxed) {
                    let name = format!("r{round}-{i}");
                    i += 1;
                    let Ok(res) = client
                        .post(url.as_str())
                        .json(&flunder_to(&name, "r", "Flunder"))
                        .send()
                        .await
                    else {
                        break;
                    };
                    if res.status() != StatusCode::CREATED {
                        break;
                    }
                    let Ok(obj) = res.json::<Value>().await else {
                        break;
                    };
                    let rv: u64 = obj["metadata"]["resourceVersion"]
                        .as_str()
                        .unwrap()
                        .parse()
                        .unwrap();
                    acks.push((name, rv));
                }
                acks
            }));
        }
        n += 100_000;
        // Let at least 60 writes through, then kill mid-stream.
        // (After 30 s it kills whatever went through: the checks below hold for any number.)
        let _ = wait::poll(
            "60 writes to go through",
            Duration::from_secs(30),
            || async {
                let count = stored(&w).await.len() - acknowledged.len();
                if count >= 60 {
                    Ok(())
                } else {
                    Err(format!("{count} went through"))
                }
            },
        )
        .await;
        let restarted = w.kill_and_restart();
        stop.store(true, Ordering::Relaxed);
        for writer in writers {
            for (name, rv) in writer.await.unwrap() {
                acknowledged.insert(name, rv);
            }
        }
        w = restarted;
        let now = stored(&w).await;
        for (name, rv) in &acknowledged {
            assert_eq!(
                now.get(name),
                Some(rv),
                "acknowledged {name} at {rv} is missing or changed after kill -9 (round {round})"
            );
        }
        let after = create(&w, &w.client(), &format!("probe-{round}"))
            .await
            .unwrap();
        let max = *now.values().max().unwrap();
        assert!(after > max, "revisions keep increasing: {after} > {max}");
        assert!(after > highest);
        highest = after;
        acknowledged.insert(format!("probe-{round}"), after);
    }
    assert!(
        acknowledged.len() >= 200,
        "at least 200 acknowledged writes across the kills, got {}",
        acknowledged.len()
    );
}
