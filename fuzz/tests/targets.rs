//! Every fuzz target over its seed corpus and generated inputs, on stable Rust: a fixed
//! generator seed and a random one (both printed; `FUZZ_SEED` replays one), `FUZZ_CASES`
//! inputs per seed (default below, sized so that the whole file runs in well under a minute
//! in a debug build on two cores). A finding's input is saved under `target/fuzz-findings/`.

use std::path::PathBuf;
use std::time::Duration;

use apiserver_fuzz::{TARGETS, runner};

/// Generated inputs per generator seed and target, unless `FUZZ_CASES` says otherwise.
const DEFAULT_CASES: usize = 1500;

/// The fixed generator seed.
const FIXED_SEED: u64 = 0x5eed_f022;

/// The most one input of at most 16 KiB may take in a debug build: generous for a noisy
/// machine, far below what a quadratic blow-up on such inputs costs.
const SLOWEST_ALLOWED: Duration = Duration::from_secs(5);

fn findings_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/fuzz-findings")
}

fn cases() -> usize {
    std::env::var("FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(DEFAULT_CASES)
}

fn generator_seeds() -> Vec<u64> {
    if let Some(seed) = std::env::var("FUZZ_SEED").ok().and_then(|v| v.parse().ok()) {
        return vec![seed];
    }
    vec![FIXED_SEED, rand::random()]
}

fn run(name: &str) {
    let target = apiserver_fuzz::target(name).expect("a known target");
    for seed in generator_seeds() {
        let report = runner::run(target, seed, cases(), &findings_dir());
        println!(
            "{name}: FUZZ_SEED={seed}: {} seeds, {} generated inputs, slowest {:?}",
            report.seeds, report.generated, report.slowest
        );
        assert!(
            report.slowest <= SLOWEST_ALLOWED,
            "{name}: an input took {:?} (FUZZ_SEED={seed})",
            report.slowest
        );
    }
}

#[test]
fn every_target_has_a_test_and_a_corpus() {
    let tested = [
        "label_selector",
        "field_selector",
        "request_path",
        "query_options",
        "resource_version",
        "go_duration",
        "continue_token",
        "negotiation",
        "field_manager",
        "json_body",
        "yaml_body",
        "json_patch",
        "merge_patch",
        "strategic_merge_patch",
        "server_side_apply",
        "fields_v1",
        "etcd_wire",
        "protobuf_body",
    ];
    let names: Vec<&str> = TARGETS.iter().map(|t| t.name).collect();
    assert_eq!(names, tested);
    for t in TARGETS {
        assert!(
            runner::corpus_dir(t)
                .read_dir()
                .is_ok_and(|mut d| d.next().is_some()),
            "{}: no seed corpus",
            t.name
        );
    }
}

macro_rules! fuzz_tests {
    ($($name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                run(stringify!($name));
            }
        )*
    };
}

fuzz_tests!(
    label_selector,
    field_selector,
    request_path,
    query_options,
    resource_version,
    go_duration,
    continue_token,
    negotiation,
    field_manager,
    json_body,
    yaml_body,
    json_patch,
    merge_patch,
    strategic_merge_patch,
    server_side_apply,
    fields_v1,
    etcd_wire,
    protobuf_body,
);
