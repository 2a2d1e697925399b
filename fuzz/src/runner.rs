//! Runs a target over its seed corpus and generated inputs on stable Rust, reporting the
//! input of a finding.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rand::SeedableRng;
use rand::rngs::StdRng;

use crate::Target;
use crate::mutate::mutate;

/// What a run did.
#[derive(Debug, Default)]
pub struct Report {
    /// Seeds run.
    pub seeds: usize,
    /// Generated inputs run.
    pub generated: usize,
    /// The slowest input's time.
    pub slowest: Duration,
}

/// The seed corpus directory of `target`.
pub fn corpus_dir(target: &Target) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("corpus")
        .join(target.name)
}

/// The seeds of `target` (at least the empty input), sorted by file name.
pub fn seeds(target: &Target) -> Vec<Vec<u8>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(corpus_dir(target))
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    files.sort();
    let mut seeds: Vec<Vec<u8>> = files.iter().filter_map(|f| std::fs::read(f).ok()).collect();
    if seeds.is_empty() {
        seeds.push(Vec::new());
    }
    seeds
}

/// Runs one input; on a panic, saves the input under `findings` and panics with its path and
/// text.
fn run_one(target: &Target, input: &[u8], findings: &Path, slowest: &mut Duration) {
    let started = Instant::now();
    let outcome = catch_unwind(AssertUnwindSafe(|| (target.run)(input)));
    *slowest = (*slowest).max(started.elapsed());
    if let Err(panic) = outcome {
        let message = panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        let _ = std::fs::create_dir_all(findings);
        let hash = input.iter().fold(0xcbf29ce484222325u64, |h, b| {
            (h ^ *b as u64).wrapping_mul(0x100000001b3)
        });
        let file = findings.join(format!("{}-{hash:016x}", target.name));
        let _ = std::fs::write(&file, input);
        panic!(
            "{}: finding on input {:?} (saved to {}): {message}",
            target.name,
            String::from_utf8_lossy(input),
            file.display()
        );
    }
}

/// Runs every seed, then `cases` inputs generated from the seeds by a generator seeded with
/// `rng_seed`. A finding's input is saved under `findings`.
pub fn run(target: &Target, rng_seed: u64, cases: usize, findings: &Path) -> Report {
    let seeds = seeds(target);
    let mut report = Report::default();
    for seed in &seeds {
        run_one(target, seed, findings, &mut report.slowest);
        report.seeds += 1;
    }
    let mut rng = StdRng::seed_from_u64(rng_seed);
    for _ in 0..cases {
        let input = mutate(&mut rng, &seeds, target.dictionary);
        run_one(target, &input, findings, &mut report.slowest);
        report.generated += 1;
    }
    report
}
