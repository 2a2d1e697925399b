//! Optimistic concurrency against the real `wardle local` binary over HTTPS: 16 writers each
//! increment a counter annotation of one Flunder 50 times by GET → modify → PUT with the
//! resourceVersion they read, retrying on 409. Every update must land exactly once: no lost
//! update, no failure other than 409 `Conflict`, and exactly 800 successful PUTs.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value, json};
use support::{FLUNDERS, Wardle};

const WRITERS: usize = 16;
const INCREMENTS: usize = 50;
const NAME: &str = "counter";
const KEY: &str = "wardle.example.com/count";

#[derive(Default)]
struct Tally {
    successes: AtomicUsize,
}

async fn writer(client: reqwest::Client, url: String, tally: Arc<Tally>) -> Result<(), String> {
    for _ in 0..INCREMENTS {
        // At most this many tries per increment; a writer starved longer is a failure.
        let mut tries = 0;
        loop {
            tries += 1;
            if tries > 10_000 {
                return Err("an increment never landed".into());
            }
            let res = client.get(&url).send().await.map_err(|e| e.to_string())?;
            if res.status().as_u16() != 200 {
                return Err(format!("GET answered {}", res.status()));
            }
            let mut obj: Value = res.json().await.map_err(|e| e.to_string())?;
            let count: u64 = obj["metadata"]["annotations"][KEY]
                .as_str()
                .ok_or("no counter annotation")?
                .parse()
                .map_err(|e| format!("counter: {e}"))?;
            obj["metadata"]["annotations"][KEY] = json!((count + 1).to_string());
            let res = client
                .put(&url)
                .json(&obj)
                .send()
                .await
                .map_err(|e| e.to_string())?;
            let code = res.status().as_u16();
            let body: Value = res.json().await.map_err(|e| e.to_string())?;
            match code {
                200 => {
                    let stored = body["metadata"]["annotations"][KEY].as_str();
                    if stored != Some(&(count + 1).to_string()) {
                        return Err(format!("PUT answered another count: {body}"));
                    }
                    tally.successes.fetch_add(1, Ordering::SeqCst);
                    break;
                }
                409 => {
                    if body["reason"] != "Conflict" {
                        return Err(format!("409 without reason Conflict: {body}"));
                    }
                    let want = format!(
                        "Operation cannot be fulfilled on flunders.wardle.example.com \"{NAME}\": the object has been modified; please apply your changes to the latest version and try again"
                    );
                    if body["message"] != want.as_str()
                        || body["details"]["name"] != NAME
                        || body["details"]["group"] != "wardle.example.com"
                        || body["details"]["kind"] != "flunders"
                    {
                        return Err(format!("unexpected Conflict status: {body}"));
                    }
                }
                other => return Err(format!("PUT answered {other}: {body}")),
            }
        }
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sixteen_writers_lose_no_update() {
    let server = Wardle::start();
    let client = server.client();
    let res = client
        .post(server.at(FLUNDERS))
        .json(&json!({
            "apiVersion": "wardle.example.com/v1alpha1",
            "kind": "Flunder",
            "metadata": {"name": NAME, "annotations": {KEY: "0"}},
            "spec": {"reference": "a", "referenceType": "Fischer"},
        }))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 201);

    let url = server.at(&format!("{FLUNDERS}/{NAME}"));
    let tally = Arc::new(Tally::default());
    let tasks: Vec<_> = (0..WRITERS)
        .map(|_| tokio::spawn(writer(client.clone(), url.clone(), tally.clone())))
        .collect();
    let mut failures = Vec::new();
    for t in tasks {
        if let Err(e) = t.await.unwrap() {
            failures.push(e);
        }
    }
    assert!(
        failures.is_empty(),
        "writers failed: {failures:?}\nserver log:\n{}",
        server.log()
    );
    let total = WRITERS * INCREMENTS;
    assert_eq!(tally.successes.load(Ordering::SeqCst), total);

    let last: Value = client.get(&url).send().await.unwrap().json().await.unwrap();
    assert_eq!(last["metadata"]["annotations"][KEY], total.to_string());
    // The spec was never touched: the generation did not move.
    assert_eq!(last["metadata"]["generation"], 1);
}
