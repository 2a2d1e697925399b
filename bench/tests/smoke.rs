//! The benchmark's smoke mode, as CI runs it: every scenario against real servers (wardle on the
//! embedded, memory and etcd stores, the baseline, etcd), tiny sizes, and a report with every
//! figure and ratio filled in.

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
        "LIST 20 objects",
        "CREATE, embedded store",
        "CREATE, memory store",
        "CREATE, etcd",
        "WATCH 10 watchers × 20 events",
        "Start to /readyz 200, embedded store",
        "Idle RSS",
        "RSS with 200 Flunders",
    ] {
        assert!(
            scenarios.contains(&expected),
            "{expected} missing from {scenarios:?}"
        );
    }
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
        let ratio = row["ratio"].as_f64().unwrap_or(0.0);
        assert!(ratio > 0.0, "{name}: no ratio: {row}");
        if let Some(rps) = row["framework"]["requests_per_second"].as_f64() {
            assert!(rps > 0.0, "{name}: {rps} req/s");
        }
        if let Some(target) = row.get("target") {
            assert!(target["met"].is_boolean(), "{name}: {target}");
        }
    }
    // Closed-loop scenarios report latency, CPU and memory of both servers.
    let get = &rows[0];
    for side in ["framework", "baseline"] {
        for figure in ["p50_ms", "p99_ms", "cpu_seconds", "peak_rss_mib"] {
            assert!(
                get[side][figure].as_f64().unwrap() > 0.0,
                "GET {side} {figure}: {get}"
            );
        }
    }

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
}
