//! `/metrics` of the real `wardle local` binary over HTTPS: the Prometheus text format,
//! request counters and durations with upstream's labels, the in-flight, long-running and
//! watcher gauges while a watch is open, the storage metrics, authentication in front of it,
//! and request logs as JSON lines at `-v=3 --logging-format json`.

mod support;

use std::collections::BTreeMap;
use std::time::Duration;

use apiserver_framework::testing::wait;
use serde_json::{Value, json};
use support::checks::answer;
use support::prometheus::{Series, parse, value};
use support::{FLUNDERS, Wardle};

/// The labels of a wardle `flunders` request in namespace `default`.
fn flunders<'a>(verb: &'a str, scope: &'a str) -> Vec<(&'a str, &'a str)> {
    vec![
        ("verb", verb),
        ("dry_run", ""),
        ("group", "wardle.example.com"),
        ("version", "v1alpha1"),
        ("resource", "flunders"),
        ("subresource", ""),
        ("scope", scope),
        ("component", "apiserver"),
    ]
}

fn with<'a>(
    mut labels: Vec<(&'a str, &'a str)>,
    more: &[(&'a str, &'a str)],
) -> Vec<(&'a str, &'a str)> {
    labels.extend_from_slice(more);
    labels
}

async fn scrape(w: &Wardle, client: &reqwest::Client) -> BTreeMap<Series, f64> {
    let res = client.get(w.at("/metrics")).send().await.expect("scrape");
    assert_eq!(res.status(), 200);
    assert_eq!(
        res.headers()["content-type"],
        "text/plain; version=0.0.4; charset=utf-8"
    );
    parse(&res.text().await.expect("metrics body"))
}

#[tokio::test]
async fn metrics_move_with_requests_and_watches() {
    let w = Wardle::start_with_args(&["-v", "3", "--logging-format", "json"]);
    let client = w.client();

    // Behind authentication: no credentials, no metrics.
    let anonymous = w
        .anonymous_client()
        .get(w.at("/metrics"))
        .send()
        .await
        .unwrap();
    assert_eq!(anonymous.status(), 401);

    // The root index lists it, as upstream's.
    let index: Value = support::get_json(&client, w.at("/")).await;
    assert!(
        index["paths"]
            .as_array()
            .unwrap()
            .contains(&json!("/metrics")),
        "{index}"
    );

    let before = scrape(&w, &client).await;
    let total = "apiserver_request_total";

    let created = client
        .post(w.at(FLUNDERS))
        .json(&json!({
            "apiVersion": "wardle.example.com/v1alpha1",
            "kind": "Flunder",
            "metadata": {"name": "m1"},
            "spec": {"reference": "r", "referenceType": "Flunder"},
        }))
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), 201);
    // The object, a missing one, a subresource the resource has (a label) and one it does not
    // have (not a label).
    for (path, code) in [
        ("m1", 200),
        ("nope", 404),
        ("m1/status", 200),
        ("m1/bogus", 404),
    ] {
        let got = answer(client.get(w.at(&format!("{FLUNDERS}/{path}")))).await;
        assert_eq!(got.status(), code, "{path}");
    }
    let listed = client.get(w.at(FLUNDERS)).send().await.unwrap();
    assert_eq!(listed.status(), 200);
    let listed = listed.bytes().await.unwrap();
    let dry = client
        .post(w.at(&format!("{FLUNDERS}?dryRun=All")))
        .json(&json!({
            "apiVersion": "wardle.example.com/v1alpha1",
            "kind": "Flunder",
            "metadata": {"name": "dry"},
            "spec": {"reference": "r", "referenceType": "Flunder"},
        }))
        .send()
        .await
        .unwrap();
    assert_eq!(dry.status(), 201);
    let unrouted = answer(client.get(w.at("/apis/nothing.example.com/v1/things"))).await;
    assert_eq!(unrouted.status(), 404);
    let watch = answer(client.get(w.at(&format!("{FLUNDERS}?watch=true")))).await;
    assert_eq!(watch.status(), 200);

    let during = scrape(&w, &client).await;
    let moved = |name: &str, labels: &[(&str, &str)]| {
        value(&during, name, labels) - value(&before, name, labels)
    };
    // The missing object's 404 and the unknown subresource's 404 share a series.
    let cases: [(&str, &str, &str, f64); 5] = [
        ("POST", "resource", "201", 1.0),
        ("GET", "resource", "200", 1.0),
        ("GET", "resource", "404", 2.0),
        ("LIST", "namespace", "200", 1.0),
        ("WATCH", "namespace", "200", 1.0),
    ];
    for (verb, scope, code, count) in cases {
        assert_eq!(
            moved(total, &with(flunders(verb, scope), &[("code", code)])),
            count,
            "{verb} {scope} {code}"
        );
    }
    let dry_labels = [
        ("verb", "POST"),
        ("dry_run", "All"),
        ("group", "wardle.example.com"),
        ("version", "v1alpha1"),
        ("resource", "flunders"),
        ("subresource", ""),
        ("scope", "resource"),
        ("component", "apiserver"),
        ("code", "201"),
    ];
    assert_eq!(moved(total, &dry_labels), 1.0);
    let mut status_labels = with(flunders("GET", "resource"), &[("code", "200")]);
    status_labels.retain(|(name, _)| *name != "subresource");
    status_labels.push(("subresource", "status"));
    assert_eq!(moved(total, &status_labels), 1.0);
    // A path no server routes is counted without its path parts.
    let unrouted_labels = [
        ("verb", "LIST"),
        ("dry_run", ""),
        ("group", ""),
        ("version", ""),
        ("resource", ""),
        ("subresource", ""),
        ("scope", "cluster"),
        ("component", "apiserver"),
        ("code", "404"),
    ];
    assert_eq!(moved(total, &unrouted_labels), 1.0);
    // The first scrape was recorded once answered: a non-resource request with its path.
    let scrape_labels = [
        ("verb", "GET"),
        ("dry_run", ""),
        ("group", ""),
        ("version", ""),
        ("resource", ""),
        ("subresource", "/metrics"),
        ("scope", ""),
        ("component", ""),
        ("code", "200"),
    ];
    assert_eq!(moved(total, &scrape_labels), 1.0);
    // The unauthenticated scrape was refused and counted as such.
    assert!(
        value(
            &during,
            total,
            &with(scrape_labels[..8].to_vec(), &[("code", "401")])
        ) >= 1.0
    );

    // Durations: one observation per request, in upstream's buckets.
    let duration = "apiserver_request_duration_seconds_count";
    assert_eq!(moved(duration, &flunders("POST", "resource")), 1.0);
    // The object, the missing one and the unknown subresource.
    assert_eq!(moved(duration, &flunders("GET", "resource")), 3.0);
    let bucket = with(flunders("POST", "resource"), &[("le", "60")]);
    assert_eq!(
        moved("apiserver_request_duration_seconds_bucket", &bucket),
        1.0
    );
    let first_bucket = with(flunders("POST", "resource"), &[("le", "0.005")]);
    assert!(
        during.contains_key(&(
            "apiserver_request_duration_seconds_bucket".to_string(),
            first_bucket
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        ))
    );

    // Response sizes of reads: one observation per GET above, in bytes, in upstream's buckets
    // written as Go writes them.
    let reads: Vec<(&str, &str)> = flunders("GET", "resource")
        .into_iter()
        .filter(|(k, _)| *k != "dry_run")
        .collect();
    assert_eq!(moved("apiserver_response_sizes_count", &reads), 3.0);
    assert!(moved("apiserver_response_sizes_sum", &reads) > 100.0);
    let largest = with(reads.clone(), &[("le", "1e+09")]);
    assert_eq!(moved("apiserver_response_sizes_bucket", &largest), 3.0);
    let lists: Vec<(&str, &str)> = flunders("LIST", "namespace")
        .into_iter()
        .filter(|(k, _)| *k != "dry_run")
        .collect();
    assert_eq!(moved("apiserver_response_sizes_count", &lists), 1.0);
    assert_eq!(
        moved("apiserver_response_sizes_sum", &lists),
        listed.len() as f64
    );

    // The SLI latency: one observation per read, as the duration (no webhook took time).
    assert_eq!(
        moved("apiserver_request_sli_duration_seconds_count", &reads),
        3.0
    );
    let sli_first = with(reads.clone(), &[("le", "0.05")]);
    assert!(
        value(
            &during,
            "apiserver_request_sli_duration_seconds_bucket",
            &sli_first
        ) >= 3.0,
        "upstream's SLI buckets start at 0.05"
    );

    // Admission: the validating step ran for the create and the dry run, and BanFlunder in it.
    let step = [
        ("type", "validate"),
        ("operation", "CREATE"),
        ("rejected", "false"),
    ];
    assert_eq!(
        moved(
            "apiserver_admission_step_admission_duration_seconds_count",
            &step
        ),
        2.0
    );
    let plugin = with(step.to_vec(), &[("name", "BanFlunder")]);
    assert_eq!(
        moved(
            "apiserver_admission_controller_admission_duration_seconds_count",
            &plugin
        ),
        2.0
    );

    // flight (watches are long-running, not in flight).
    let watch_labels: Vec<(&str, &str)> = flunders("WATCH", "namespace")
        .into_iter()
        .filter(|(k, _)| *k != "dry_run")
        .collect();
    assert_eq!(
        value(&during, "apiserver_longrunning_requests", &watch_labels),
        1.0
    );
    let watcher = [
        ("group", "wardle.example.com"),
        ("version", "v1alpha1"),
        ("kind", "Flunder"),
    ];
    assert_eq!(
        value(&during, "apiserver_registered_watchers", &watcher),
        1.0
    );
    let inflight = "apiserver_current_inflight_requests";
    assert_eq!(
        value(&during, inflight, &[("request_kind", "readOnly")]),
        1.0
    );
    assert_eq!(
        value(&during, inflight, &[("request_kind", "mutating")]),
        0.0
    );

    // Storage: the create reached the store, and the object is counted.
    let storage = [
        ("operation", "create"),
        ("group", "wardle.example.com"),
        ("resource", "flunders"),
    ];
    assert!(moved("etcd_requests_total", &storage) >= 1.0);
    assert!(moved("etcd_request_duration_seconds_count", &storage) >= 1.0);
    assert_eq!(
        value(
            &during,
            "apiserver_storage_objects",
            &[("resource", "flunders.wardle.example.com")]
        ),
        1.0
    );

    // The watch sent the stored Flunder as its first event: counted, with its size.
    let resource = [
        ("group", "wardle.example.com"),
        ("version", "v1alpha1"),
        ("resource", "flunders"),
    ];
    let sent = wait::poll(
        "the watch's first event to be counted",
        Duration::from_secs(10),
        || async {
            let now = scrape(&w, &client).await;
            let events = value(&now, "apiserver_watch_events_total", &resource)
                - value(&before, "apiserver_watch_events_total", &resource);
            let bytes = value(&now, "apiserver_watch_events_sizes_sum", &resource)
                - value(&before, "apiserver_watch_events_sizes_sum", &resource);
            if events >= 1.0 && bytes > 100.0 {
                Ok(())
            } else {
                Err(format!("{events} events of {bytes} bytes"))
            }
        },
    )
    .await;
    if let Err(e) = sent {
        panic!("{e}");
    }

    // Closing the watch brings the gauges down.
    drop(watch);
    let down = wait::poll(
        "the watch gauges to come down",
        Duration::from_secs(10),
        || async {
            let after = scrape(&w, &client).await;
            let open = value(&after, "apiserver_longrunning_requests", &watch_labels)
                + value(&after, "apiserver_registered_watchers", &watcher);
            if open == 0.0 {
                Ok(())
            } else {
                Err(format!("watch gauges stayed up: {open}"))
            }
        },
    )
    .await;
    if let Err(e) = down {
        panic!("{e}");
    }

    // -v=3 logs every request; --logging-format json makes them JSON lines.
    let log = w.log();
    let lines: Vec<Value> = log
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .collect();
    assert!(!lines.is_empty(), "no JSON log lines:\n{log}");
    let created_log = lines.iter().find(|l| {
        l["target"] == "apiserver_framework::httplog"
            && l["fields"]["verb"] == "POST"
            && l["fields"]["resp"] == 201
    });
    let created_log = created_log.unwrap_or_else(|| panic!("no request log of the create:\n{log}"));
    assert_eq!(created_log["fields"]["uri"], FLUNDERS);
    assert_eq!(created_log["level"], "DEBUG");
}
