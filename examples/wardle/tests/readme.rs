//! The README's "Using it with kubectl" commands, run as written (by bash, with the machine's
//! kubectl) against `wardle local`, and what their comments say checked: the replace leaves a
//! Flunder that refers to the Flunder `another-flunder`.

mod support;

use std::process::{Command, Stdio};

use serde_json::Value;
use support::{Wardle, kubectl_binary};

/// The shell block of the README's section `heading`.
fn readme_block(heading: &str) -> String {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md"))
        .expect("the README");
    let section = readme
        .split(&format!("\n{heading}\n"))
        .nth(1)
        .unwrap_or_else(|| panic!("the README has no {heading}"));
    let start = section.find("```sh\n").expect("a sh block") + "```sh\n".len();
    let end = start + section[start..].find("\n```").expect("the block's end");
    section[start..end].to_string()
}

#[test]
fn readme_kubectl_commands_do_what_their_comments_say() {
    let w = Wardle::start();
    let block = readme_block("## Using it with kubectl");
    // The server's own kubeconfig instead of the one `local` writes in the repository root;
    // a watch streams until stopped, so it is left out. The delete waits for the check below.
    let (before_delete, rest) = block
        .split_once("kubectl delete fl my-first-flunder")
        .expect("the README deletes the Flunder");
    let script: String = before_delete
        .lines()
        .filter(|l| !l.starts_with("export KUBECONFIG=") && !l.contains(" -w "))
        .map(|l| format!("{l}\n"))
        .collect();
    let kubectl_dir = kubectl_binary(33);
    let kubectl_dir = kubectl_dir.parent().expect("kubectl's directory");
    let run = |script: &str| {
        let out = Command::new("bash")
            .args(["-euo", "pipefail", "-c", script])
            .env("KUBECONFIG", &w.kubeconfig)
            .env(
                "PATH",
                format!(
                    "{}:{}",
                    kubectl_dir.display(),
                    std::env::var("PATH").unwrap_or_default()
                ),
            )
            .current_dir(w.dir())
            .stdin(Stdio::null())
            .output()
            .expect("run bash");
        assert!(
            out.status.success(),
            "the README's commands failed:\n{script}\nstdout:\n{}\nstderr:\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    run(&script);
    let object: Value = serde_json::from_str(&w.kubectl_ok(&[
        "get",
        "flunders.v1alpha1.wardle.example.com",
        "my-first-flunder",
        "-o",
        "json",
    ]))
    .expect("the Flunder");
    assert_eq!(object["spec"]["reference"], "another-flunder", "{object}");
    assert_eq!(object["spec"]["referenceType"], "Flunder", "{object}");
    assert_eq!(object["metadata"]["labels"]["env"], "dev", "{object}");
    run(&format!("kubectl delete fl my-first-flunder{rest}"));
    let out = w.kubectl(&["get", "fl", "my-first-flunder"]);
    assert!(!out.status.success(), "the Flunder is deleted");
}
