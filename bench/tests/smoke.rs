//! The benchmark's smoke mode, as CI runs it: every scenario against real servers (wardle on the
//! embedded, memory and etcd stores, the baseline over HTTP/1.1 and HTTP/2, etcd, the
//! development host's aggregator in front of `wardle serve`), tiny sizes, and a report with
//! every figure, ratio and chart — without judging the numbers.

use std::process::Command;

#[test]
fn the_smoke_run_measures_every_scenario() {
    let out = tempfile::tempdir().unwrap();
    let run = Command::new(env!("CARGO_BIN_EXE_apiserver-bench"))
        .args(["--smoke", "--out"])
        .arg(out.path())
        .output()
        .expect("run apiserver-bench");
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "apiserver-bench failed:\n{stderr}");

    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.path().join("bench.json")).unwrap()).unwrap();
    assert_eq!(json["mode"], "smoke");
    let rows = json["rows"].as_array().unwrap();
    let scenarios: Vec<&str> = rows
        .iter()
        .map(|r| r["scenario"].as_str().unwrap())
        .collect();
    for expected in [
        "GET one object",
        "GET one object, HTTP/2",
        "LIST 20 objects",
        "LIST 20 objects, Accept-Encoding: gzip",
        "LIST 60 objects, unpaged",
        "CREATE, embedded store",
        "CREATE, memory store",
        "CREATE, etcd",
        "CREATE, etcd: wardle's own CPU per create",
        "WATCH 10 watchers × 20 events",
        "GET, 1 client, HTTP/2",
        "GET, 4 clients, HTTP/2",
        "CREATE, 1 client, HTTP/2",
        "CREATE, 4 clients, HTTP/2",
        "RSS per idle watcher, 40 watchers",
        "WATCH 40 watchers × 10 events",
        "GET one object through the aggregator, HTTP/2",
        "WATCH 10 watchers × 20 events through the aggregator",
        "Start to /readyz 200, embedded store",
        "Idle RSS",
        "RSS with 200 Flunders",
        "Paged LIST of 200 objects, limit=50",
    ] {
        assert!(
            scenarios.contains(&expected),
            "{expected} missing from {scenarios:?}"
        );
    }
    let row = |name: &str| rows.iter().find(|r| r["scenario"] == name).unwrap();
    for row in rows {
        let name = row["scenario"].as_str().unwrap();
        for side in ["framework", "baseline"] {
            let m = &row[side];
            assert_eq!(m["errors"], 0, "{name} ({side}) had errors: {m}");
            assert!(
                m["count"].as_u64().unwrap() > 0,
                "{name} ({side}) counted nothing"
            );
        }
        let ratio = row["ratio"].as_f64();
        if name.starts_with("RSS per idle watcher") {
            // A few dozen watches may fit in memory the server already had.
            assert!(ratio.is_none_or(|r| r >= 0.0), "{name}: {row}");
        } else if name.starts_with("peer: RssAnon per stored object") {
            // A few hundred objects may fit in memory the server already had, and what it
            // freed meanwhile may outweigh them: any figure.
        } else {
            assert!(ratio.unwrap_or(0.0) > 0.0, "{name}: no ratio: {row}");
        }
        if let Some(rps) = row["framework"]["requests_per_second"].as_f64() {
            assert!(rps > 0.0, "{name}: {rps} req/s");
        }
        if let Some(target) = row.get("target") {
            assert!(target["met"].is_boolean(), "{name}: {target}");
        }
    }
    // The peer group, where sample-apiserver and upstream's etcd are built beside this target
    // directory (`scripts/build-upstream`): every row has sample-apiserver's figures.
    let upstream = std::path::Path::new(env!("CARGO_BIN_EXE_apiserver-bench"))
        .parent()
        .and_then(|dir| dir.parent())
        .map(|target| target.join("upstream/bin"));
    if upstream
        .is_some_and(|bin| bin.join("sample-apiserver").is_file() && bin.join("etcd").is_file())
    {
        for name in [
            "peer: start to /readyz 200",
            "peer: idle anonymous memory",
            "peer: GET one object",
            "peer: GET one object, HTTP/2",
            "peer: LIST 20 objects",
            "peer: CREATE",
            "peer: UPDATE",
            "peer: server-side apply",
            "peer: LIST 60 objects, unpaged",
            "peer: loaded anonymous memory",
            "peer: WATCH 10 watchers × 20 events",
            "peer: RssAnon per stored object, 200 Flunders",
            "peer: paged LIST of 200 objects, limit=50",
            "peer: WATCH 40 watchers × 10 events, HTTP/2",
            "peer: WATCH 40 watchers × 10 events",
        ] {
            let peer = &row(name)["peer"];
            assert_eq!(peer["peer"]["errors"], 0, "{name}: {peer}");
            assert!(
                peer["peer"]["count"].as_u64().unwrap() > 0,
                "{name}: {peer}"
            );
            if name.starts_with("peer: RssAnon per stored object") {
                // As above: any figure of a few hundred objects.
                continue;
            }
            let judged = ["per_cpu_second_ratio", "bytes_ratio", "p50_ratio"]
                .iter()
                .any(|r| peer[r].as_f64().is_some_and(|r| r > 0.0));
            assert!(judged, "{name}: no ratio to sample-apiserver: {peer}");
        }
    }
    // Closed-loop scenarios report latency, CPU and memory of both servers.
    for name in [
        "GET one object",
        "GET one object, HTTP/2",
        "GET one object through the aggregator, HTTP/2",
    ] {
        let get = row(name);
        for side in ["framework", "baseline"] {
            for figure in ["p50_ms", "p99_ms", "cpu_seconds", "peak_rss_mib"] {
                assert!(
                    get[side][figure].as_f64().unwrap() > 0.0,
                    "{name} {side} {figure}: {get}"
                );
            }
        }
    }
    // wardle's own CPU on etcd is apart from etcd's.
    let etcd = &row("CREATE, etcd")["framework"];
    assert!(
        etcd["own_cpu_seconds"].as_f64().unwrap() < etcd["cpu_seconds"].as_f64().unwrap(),
        "{etcd}"
    );
    // The aggregator multiplexes its clients' requests on one HTTP/2 connection to wardle.
    let notes = row("GET one object through the aggregator, HTTP/2")["notes"].to_string();
    assert!(notes.contains("held 1 connection(s) to wardle"), "{notes}");
    // The gzip row says what wardle answered with.
    let notes = row("LIST 20 objects, Accept-Encoding: gzip")["notes"].to_string();
    assert!(
        notes.contains("Content-Encoding: gzip") || notes.contains("unencoded"),
        "{notes}"
    );
    // The memory chart's points: idle, then after each step of the fill.
    let curve = json["memory_curve"].as_array().unwrap();
    assert_eq!(curve.len(), 3, "{curve:?}");
    assert_eq!(curve.last().unwrap()["objects"], 200);

    let markdown = std::fs::read_to_string(out.path().join("bench.md")).unwrap();
    assert!(
        markdown.starts_with("| scenario | server | req/s |"),
        "{markdown}"
    );
    assert_eq!(
        markdown.matches("| wardle |").count(),
        rows.len(),
        "{markdown}"
    );
    assert!(
        markdown.contains("| target | scenario | this run |"),
        "{markdown}"
    );
    for (chart, text) in [
        ("latency-vs-concurrency.svg", "CREATE, wardle"),
        ("ratios.svg", "GET one object, HTTP/2"),
        ("memory-vs-objects.svg", "wardle RSS"),
    ] {
        let svg = std::fs::read_to_string(out.path().join(chart)).unwrap();
        assert!(
            svg.starts_with("<svg"),
            "{chart}: {}",
            &svg[..svg.len().min(200)]
        );
        assert!(svg.contains(text), "{chart} has no {text:?}");
    }
}
