//! Graceful shutdown of the real `wardle local` binary: SIGTERM during a burst of requests.
//! `/readyz` turns unready (`[-]shutdown failed`) while the server still serves, for the
//! `--shutdown-delay-duration`; then the listener closes; every request either completed or
//! was never accepted (refused at connect); an open watch ends cleanly; the exit code is 0.

mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use apiserver_framework::testing::wait;
use futures::StreamExt;
use serde_json::json;
use std::sync::Mutex;
use support::checks::answer;
use support::{FLUNDERS, Wardle};

/// What one request of the burst came to.
#[derive(Debug)]
enum Outcome {
    /// A whole response was read.
    Completed(u16),
    /// The connection was never established (the listener had closed).
    Refused,
    /// Anything else: a connection reset or closed mid-request, which must not happen.
    Broken(String),
}

async fn one_request(client: &reqwest::Client, wardle_url: &str, i: usize) -> Outcome {
    let url = format!("{wardle_url}{FLUNDERS}");
    let req = if i.is_multiple_of(2) {
        client.get(&url)
    } else {
        client.post(&url).json(&json!({
            "apiVersion": "wardle.example.com/v1alpha1",
            "kind": "Flunder",
            "metadata": {"generateName": "burst-"},
            "spec": {"reference": "a", "referenceType": "Fischer"},
        }))
    };
    match req.send().await {
        Ok(res) => {
            let status = res.status().as_u16();
            match res.bytes().await {
                Ok(_) => Outcome::Completed(status),
                Err(e) => Outcome::Broken(format!("body: {e:?}")),
            }
        }
        Err(e) if e.is_connect() => Outcome::Refused,
        Err(e) => Outcome::Broken(format!("{e:?}")),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sigterm_drains_and_exits_zero() {
    let mut wardle = Wardle::start_with_args(&["--shutdown-delay-duration=2s"]);
    // A new connection per request, so that each request meets the listener as it is.
    let client = wardle
        .client_builder()
        .pool_max_idle_per_host(0)
        .default_headers({
            let mut h = reqwest::header::HeaderMap::new();
            h.insert(
                reqwest::header::AUTHORIZATION,
                format!("Bearer {}", wardle.token).parse().unwrap(),
            );
            h
        })
        .build()
        .unwrap();
    let readyz = answer(client.get(wardle.at("/readyz?verbose"))).await;
    assert_eq!(readyz.status(), 200);
    assert!(readyz.text().await.unwrap().contains("[+]shutdown ok\n"));

    // A watch open across the shutdown.
    let watch = wardle
        .client()
        .get(wardle.at(&format!("{FLUNDERS}?watch=true")))
        .send()
        .await
        .unwrap();
    assert_eq!(watch.status(), 200);
    let watch_task = tokio::spawn(async move {
        let mut body = watch.bytes_stream();
        while let Some(chunk) = body.next().await {
            if let Err(e) = chunk {
                return Err(format!("{e:?}"));
            }
        }
        Ok(Instant::now())
    });

    let outcomes: Arc<Mutex<Vec<(Instant, Outcome)>>> = Arc::default();
    let mut workers = Vec::new();
    for w in 0..8 {
        let client = client.clone();
        let url = wardle.url.clone();
        let outcomes = outcomes.clone();
        workers.push(tokio::spawn(async move {
            for i in 0.. {
                let outcome = one_request(&client, &url, w + i).await;
                let refused = matches!(outcome, Outcome::Refused);
                outcomes.lock().unwrap().push((Instant::now(), outcome));
                if refused {
                    break;
                }
            }
        }));
    }
    // /readyz as a load balancer polls it.
    let probe = {
        let client = client.clone();
        let url = wardle.at("/readyz");
        tokio::spawn(async move {
            let mut unready_at = None;
            loop {
                match client.get(&url).send().await {
                    Ok(res) => {
                        let status = res.status().as_u16();
                        let body = res.text().await.unwrap_or_default();
                        if status == 500 && body.contains("[-]shutdown failed") {
                            unready_at.get_or_insert(Instant::now());
                        }
                    }
                    Err(e) if e.is_connect() => return (unready_at, Some(Instant::now())),
                    Err(_) => {}
                }
                // The probe's period, as a load balancer's: the measured subject is when
                // /readyz turns unready.
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        })
    };

    // The signal comes under load: once every worker could have had an answer.
    wait::eventually(
        "the workers' first answers",
        Duration::from_secs(20),
        || async { outcomes.lock().unwrap().len() >= 8 },
    )
    .await;
    let sigterm = Instant::now();
    wardle.signal("TERM");
    for w in workers {
        w.await.unwrap();
    }
    let (unready_at, refused_at) = probe.await.unwrap();
    let status = tokio::task::spawn_blocking(move || {
        let status = wardle.wait_exit(Duration::from_secs(30));
        (status, wardle.log())
    })
    .await
    .unwrap();
    let (status, log) = status;
    assert_eq!(
        status.and_then(|s| s.code()),
        Some(0),
        "exit status {status:?}; log:\n{log}"
    );

    let outcomes = std::mem::take(&mut *outcomes.lock().unwrap());
    let broken: Vec<&str> = outcomes
        .iter()
        .filter_map(|(_, o)| match o {
            Outcome::Broken(e) => Some(e.as_str()),
            _ => None,
        })
        .collect();
    assert!(broken.is_empty(), "requests broken mid-way: {broken:?}");
    let completed_after_signal = outcomes
        .iter()
        .filter(|(t, o)| *t > sigterm && matches!(o, Outcome::Completed(_)))
        .count();
    assert!(
        completed_after_signal > 0,
        "requests are still served during the shutdown delay"
    );
    let failures: Vec<_> = outcomes
        .iter()
        .filter_map(|(_, o)| match o {
            Outcome::Completed(s) if !(200..300).contains(s) => Some(*s),
            _ => None,
        })
        .collect();
    assert!(failures.is_empty(), "non-2xx answers: {failures:?}");

    let unready_at = unready_at.expect("/readyz never reported the shutdown");
    let refused_at = refused_at.expect("the listener never closed");
    assert!(unready_at < refused_at);
    eprintln!(
        "{} requests, {completed_after_signal} completed after SIGTERM; unready after {:?}, refused after {:?}",
        outcomes.len(),
        unready_at.duration_since(sigterm),
        refused_at.duration_since(sigterm)
    );
    assert!(
        refused_at.duration_since(sigterm) >= Duration::from_millis(1900),
        "the listener closed {:?} after SIGTERM, before the 2 s delay",
        refused_at.duration_since(sigterm)
    );
    let watch_end = watch_task.await.unwrap().expect("the watch ends cleanly");
    assert!(watch_end > sigterm + Duration::from_millis(1900));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn second_signal_exits_at_once() {
    let mut wardle = Wardle::start_with_args(&["--shutdown-delay-duration=60s"]);
    let client = wardle.client();
    wardle.signal("TERM");
    // The first signal starts the delay: still serving, but unready.
    let readyz = wardle.at("/readyz");
    wait::eventually(
        "/readyz to turn unready after SIGTERM",
        Duration::from_secs(1),
        || async {
            let res = client.get(&readyz).send().await.unwrap();
            res.status() == 500
        },
    )
    .await;
    assert!(wardle.wait_exit(Duration::from_millis(200)).is_none());
    wardle.signal("INT");
    let status = tokio::task::spawn_blocking(move || wardle.wait_exit(Duration::from_secs(5)))
        .await
        .unwrap();
    assert_eq!(status.and_then(|s| s.code()), Some(1), "{status:?}");
}
