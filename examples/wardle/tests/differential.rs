//! The differential conformance suite (issue 46): one corpus of requests sent in the same order,
//! as the same users, to Kubernetes' sample-apiserver (the server wardle ports, of the release
//! `scripts/build-upstream` pins, on etcd 3.6) and to wardle twice, on etcd and on its embedded
//! store, each behind a dev host of its own and asked directly. Every answer of wardle is
//! compared with upstream's after normalising what must differ (`differential/normalise.rs`):
//! the status, the headers that matter and the body, parsed (a watch as its events, OpenAPI as
//! documents). Each difference is printed as the request, upstream's answer and ours; one that
//! `differential/decided.rs` does not name is undecided and fails the suite, as does a decided
//! one that no longer occurs. The last line says `N compared, M undecided differences`.
//!
//! `scripts/differential` runs this suite alone.

#[allow(dead_code)]
#[path = "support/client_go.rs"]
mod client_go;
#[allow(dead_code)]
#[path = "production/stack.rs"]
mod stack;

mod differential {
    pub mod answer;
    pub mod compare;
    pub mod corpus;
    pub mod decided;
    pub mod normalise;
    pub mod openapi;
    pub mod request;
    pub mod targets;
}

use std::collections::BTreeMap;

use differential::answer::Answer;
use differential::compare::{Difference, compare};
use differential::decided::decided;
use differential::normalise::normalise;
use differential::targets::Targets;

/// The corpus must be at least this large (issue 46).
const MIN_REQUESTS: usize = 250;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wardle_answers_as_sample_apiserver_does() {
    let corpus = differential::corpus::corpus();
    assert!(
        corpus.len() >= MIN_REQUESTS,
        "the corpus has {} requests, fewer than {MIN_REQUESTS}",
        corpus.len()
    );
    let mut names = std::collections::BTreeSet::new();
    for req in &corpus {
        assert!(
            names.insert(req.name.as_str()),
            "two requests are named {}",
            req.name
        );
    }
    let decided = decided();
    // The book lists every decided difference, by the name the suite gives it.
    let book =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../book/src/compatibility.md");
    let page = std::fs::read_to_string(&book).expect("the book's compatibility page");
    for d in &decided {
        assert!(
            page.contains(&format!("| `{}` |", d.name)),
            "{} does not list the decided difference {}",
            book.display(),
            d.name
        );
    }
    let mut targets = Targets::start().await;
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    let mut undecided = 0;
    let mut compared = 0;
    for req in &corpus {
        if req.compact_first {
            targets.compact_and_restart().await;
        }
        let answers: Vec<Answer> = futures::future::join_all(
            targets
                .targets
                .iter_mut()
                .map(|t| async { t.answer(req).await }),
        )
        .await;
        let normalised: Vec<Answer> = answers
            .iter()
            .zip(&targets.targets)
            .map(|(a, t)| normalise(a, &t.vars))
            .collect();
        compared += 1;
        if show(&req.name) {
            for (a, t) in normalised.iter().zip(&targets.targets) {
                println!(
                    "SHOW {} [{}]: {} {:?}\n  {}",
                    req.name,
                    t.name,
                    a.status,
                    a.headers,
                    differential::compare::show_full(&a.body)
                );
            }
        }
        for (ours, target) in normalised.iter().zip(&targets.targets).skip(1) {
            for difference in compare(&normalised[0], ours) {
                match decided.iter().find(|d| (d.matches)(req, &difference)) {
                    Some(d) => *seen.entry(d.name).or_default() += 1,
                    None => {
                        undecided += 1;
                        report(req, target.name, &difference);
                    }
                }
            }
        }
    }
    println!("\ndecided differences seen:");
    let mut unseen = Vec::new();
    for d in &decided {
        match seen.get(d.name) {
            Some(n) => println!("  {} ({n}×): {}", d.name, d.reason),
            None => unseen.push(d.name),
        }
    }
    for name in &unseen {
        println!("decided difference {name} no longer occurs: remove it (and from the book)");
    }
    println!("{compared} compared, {undecided} undecided differences");
    assert!(
        undecided == 0 && unseen.is_empty(),
        "{undecided} undecided differences, decided differences no longer seen: {unseen:?}\n{}",
        targets.logs()
    );
}

/// Whether the answers to the request `name` are printed in full: `DIFFERENTIAL_SHOW` holds
/// comma-separated parts of the names to show.
fn show(name: &str) -> bool {
    std::env::var("DIFFERENTIAL_SHOW").is_ok_and(|s| {
        s.split(',')
            .any(|part| !part.is_empty() && name.contains(part))
    })
}

/// Prints one undecided difference: the request, upstream's answer, ours.
fn report(req: &differential::request::Request, target: &str, d: &Difference) {
    println!(
        "DIFFERENCE {} ({} {}) at {} [{target}]\n  upstream: {}\n  ours:     {}",
        req.name,
        req.method,
        req.path,
        d.location,
        differential::compare::cut(&d.upstream),
        differential::compare::cut(&d.ours)
    );
}
