//! Fuzz targets for the parsers of apiserver-framework that read client input.
//!
//! Every target is a function of raw bytes that panics when it finds a bug: a panic in the
//! code under test, or a broken invariant (a printed value that parses differently, a patch
//! result over its bound, an error that is not a 4xx). The same functions run in two ways:
//!
//! - on stable Rust, by `tests/targets.rs`: every seed of `corpus/<target>/` and a bounded
//!   number of inputs [`mutate`]d from them with a seeded generator (a fixed seed and a random
//!   one, both printed);
//! - coverage-guided, by cargo-fuzz (`fuzz/libfuzzer`, nightly): one `fuzz_targets/<name>.rs`
//!   per target calls the same function.
//!
//! Written here because the fuzzers (libFuzzer through cargo-fuzz) need the targets and the
//! stable run needs a generator; both are small.

pub mod mutate;
pub mod runner;
pub mod schema;
pub mod targets;

/// A fuzz target: its name (the corpus directory and the cargo-fuzz target) and its function.
#[derive(Clone, Copy)]
pub struct Target {
    /// The name, e.g. `label_selector`.
    pub name: &'static str,
    /// Runs one input; panics on a finding.
    pub run: fn(&[u8]),
    /// Tokens of the input's grammar, which the mutator inserts.
    pub dictionary: &'static [&'static str],
}

/// Every target.
pub const TARGETS: &[Target] = targets::ALL;

/// The target named `name`.
pub fn target(name: &str) -> Option<&'static Target> {
    TARGETS.iter().find(|t| t.name == name)
}
