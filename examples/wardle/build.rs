//! Places the functions wardle runs at start-up (and a few requests of each kind run) together at
//! the front of its release executable's code, in the order `startup.order` lists them.
//!
//! The kernel maps an executable's code 64 KiB at a time around each page the process runs, so
//! start-up code scattered over the whole executable keeps most of it resident in an idle
//! server; together it fills a few MB. `./scripts/startup-order` regenerates the file. Symbols
//! it names that a build lacks are skipped, and functions it does not name keep their usual
//! place: a stale file costs memory, never correctness.
//!
//! Only release builds for `x86_64-unknown-linux-gnu`, whose default linker (rust-lld, since
//! Rust 1.90, the README's minimum) reads the file. Set `WARDLE_STARTUP_ORDER=off` to link
//! without it, for example with a linker that lacks `--symbol-ordering-file` (GNU ld).

use std::path::PathBuf;

fn main() {
    println!("cargo::rerun-if-changed=startup.order");
    println!("cargo::rerun-if-env-changed=WARDLE_STARTUP_ORDER");
    let off = std::env::var("WARDLE_STARTUP_ORDER").is_ok_and(|value| value == "off");
    let release = std::env::var("PROFILE").is_ok_and(|profile| profile == "release");
    let linux_gnu =
        std::env::var("TARGET").is_ok_and(|target| target == "x86_64-unknown-linux-gnu");
    let file = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default())
        .join("startup.order");
    if off || !release || !linux_gnu || !file.is_file() {
        return;
    }
    println!(
        "cargo::rustc-link-arg-bins=-Wl,--symbol-ordering-file={}",
        file.display()
    );
    println!("cargo::rustc-link-arg-bins=-Wl,--no-warn-symbol-ordering");
}
