//! Compile-fail tests of `#[derive(ApiResource)]`: every mistake gets a message saying what to
//! write. The expected messages live in `tests/ui/*.stderr`; regenerate them with
//! `TRYBUILD=overwrite cargo test -p apiserver-framework --test derive_ui` and review the diff.

#[test]
fn derive_errors() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
}
