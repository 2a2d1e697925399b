//! The processes the tests run, and what they measure of a server process.
//!
//! A test file that uses nothing else of `support` includes this module alone:
//! `#[path = "support/process.rs"] mod process;`.

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::process::{ChildStdout, Command, Output};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The lines a child process prints, read on a thread of their own as they come.
pub struct Lines(mpsc::Receiver<String>);

impl Lines {
    /// Reads the lines of `stdout`.
    pub fn of(stdout: ChildStdout) -> Lines {
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Lines(rx)
    }

    /// The next line that contains `needle` (the lines before it are passed over); fails the
    /// test when none comes within `timeout`.
    pub fn wait_for(&self, needle: &str, timeout: Duration) -> String {
        let deadline = Instant::now() + timeout;
        loop {
            match self
                .0
                .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            {
                Ok(line) if line.contains(needle) => return line,
                Ok(_) => {}
                Err(_) => panic!("no line with {needle:?} within {timeout:?}"),
            }
        }
    }
}

/// Runs `command` to completion and fails the test, naming it `what` and showing its output,
/// unless it succeeds.
pub fn run_ok(command: &mut Command, what: &str) -> Output {
    let out = command
        .output()
        .unwrap_or_else(|e| panic!("run {what}: {e}"));
    assert!(
        out.status.success(),
        "{what} failed ({})\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The resident memory of process `pid` (`VmRSS` of its `/proc/<pid>/status`), in MiB.
pub fn rss_mib(pid: u32) -> f64 {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("read proc status");
    let kib: f64 = text
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("no VmRSS in {text}"));
    kib / 1024.0
}
