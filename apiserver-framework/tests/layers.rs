//! The framework's layering, checked on every test run.
//!
//! `src/lib.rs` is the layer table: it declares the top-level modules bottom layer first, each
//! group under a `// Layer N: name` comment. A module may import modules of its own layer or of
//! lower ones, never of a higher one, and no two top-level modules may depend on each other
//! (directly or through others). A crate the root re-exports as a module under a layer comment
//! (`pub use apiserver_storage as storage;`) belongs to that layer; its sources are not read here
//! (Cargo keeps it from importing the framework). Test modules (`#[cfg(test)]`) are not checked.
//! The checker is in `layers/checker.rs`; to see the module graph, run
//! `cargo test -p apiserver-framework --test layers -- --nocapture` (with `LAYERS_VERBOSE=1`,
//! every reference too).

#[path = "layers/checker.rs"]
mod checker;

use std::path::Path;

#[test]
fn no_module_imports_a_higher_layer_and_none_import_each_other() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let report = checker::check(&src).unwrap_or_else(|e| panic!("layer check: {e}"));
    println!("{}", report.describe());
    if std::env::var_os("LAYERS_VERBOSE").is_some() {
        for r in &report.references {
            println!("{} -> {}: {r}", r.from, r.to);
        }
    }
    assert!(
        report.violations.is_empty(),
        "the module layering of apiserver-framework/src is broken ({} problem(s)); the layers are \
         the `// Layer N: name` comments of src/lib.rs:\n\n{}\n",
        report.violations.len(),
        report.violations.join("\n\n")
    );
}

#[test]
fn the_table_lists_every_layer_once_bottom_first() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let report = checker::check(&src).unwrap_or_else(|e| panic!("layer check: {e}"));
    let names: Vec<&str> = report.layers.iter().map(|l| l.name.as_str()).collect();
    assert!(
        names.len() >= 8,
        "expected the eight layers of the design, found {names:?}"
    );
    assert!(
        report.layers[0].modules.iter().any(|m| m == "error"),
        "errors belong to the ground floor: {:?}",
        report.layers[0]
    );
}

#[test]
fn storage_and_files_are_crates_beneath_the_framework() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let report = checker::check(&src).unwrap_or_else(|e| panic!("layer check: {e}"));
    let crates: Vec<(u32, &str, &str)> = report
        .layers
        .iter()
        .flat_map(|l| {
            l.crates
                .iter()
                .map(|(m, c)| (l.number, m.as_str(), c.as_str()))
        })
        .collect();
    assert_eq!(
        crates,
        [
            (1, "fs", "apiserver_files"),
            (2, "storage", "apiserver_storage")
        ]
    );
    // `apiserver_framework::storage` is the storage crate itself, not a copy of it.
    let _: apiserver_storage::memory::MemoryStorage =
        apiserver_framework::storage::memory::MemoryStorage::new();
}

/// Writes `files` (path, text) under a fresh directory and checks it.
fn check_tree(files: &[(&str, &str)]) -> checker::Report {
    let dir = tempfile::tempdir().unwrap();
    for (path, text) in files {
        let path = dir.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    checker::check(dir.path()).unwrap()
}

const LIB: &str = "
// Layer 1: ground
pub mod base;
// Layer 2: middle
pub mod left;
pub mod right;
// Layer 3: top
pub mod top;

pub use base::Thing;
pub mod prelude {
    pub use crate::top::Top;
}
";

#[test]
fn a_clean_tree_passes() {
    let report = check_tree(&[
        ("lib.rs", LIB),
        ("base.rs", "pub struct Thing;"),
        ("left.rs", "use crate::base::Thing; pub fn f(_: Thing) {}"),
        (
            "right.rs",
            "pub fn g() { crate::left::f(crate::Thing) }\n\
             #[cfg(test)] mod tests { use crate::top::Top; }",
        ),
        ("top/mod.rs", "mod inner; pub struct Top;"),
        ("top/inner.rs", "use super::super::right::g;"),
    ]);
    assert!(report.violations.is_empty(), "{:#?}", report.violations);
    let graph = report.graph();
    assert_eq!(graph["left"], ["base"].into());
    assert_eq!(graph["right"], ["base", "left"].into());
    assert_eq!(graph["top"], ["right"].into());
}

#[test]
fn an_import_from_a_higher_layer_fails_naming_file_edge_and_rule() {
    let report = check_tree(&[
        ("lib.rs", LIB),
        (
            "base.rs",
            "pub struct Thing;\n\n\
             impl Thing {\n    pub fn top(&self) -> crate::top::Top { crate::top::Top }\n}",
        ),
        ("left.rs", ""),
        ("right.rs", ""),
        ("top/mod.rs", "pub struct Top;"),
    ]);
    assert_eq!(report.violations.len(), 1, "{:#?}", report.violations);
    let v = &report.violations[0];
    assert!(v.starts_with("base.rs:4 (`crate::top::Top`)"), "{v}");
    assert!(
        v.contains("`base` (layer 1: ground) imports `top` (layer 3: top)"),
        "{v}"
    );
    assert!(
        v.contains("a lower layer never imports a higher one"),
        "{v}"
    );
}

#[test]
fn every_form_of_reference_counts() {
    for (what, base) in [
        ("a use tree", "use crate::{top::Top};"),
        ("a nested use group", "use crate::{left, top::{self}};"),
        ("a relative use", "use super::top::Top;"),
        ("a type", "pub struct S(Vec<crate::top::Top>);"),
        (
            "a macro",
            "pub fn f() { println!(\"{:?}\", crate::top::NAME); }",
        ),
        (
            "an attribute",
            "#[derive(serde::Serialize)] pub struct S { #[serde(with = \"crate::top::codec\")] x: u8 }",
        ),
        (
            "a root re-export",
            "pub fn f() -> crate::prelude::Top { todo!() }",
        ),
        (
            "a non-test cfg",
            "#[cfg(any(test, feature = \"x\"))] use crate::top::Top;",
        ),
    ] {
        let report = check_tree(&[
            ("lib.rs", LIB),
            ("base.rs", base),
            ("left.rs", ""),
            ("right.rs", ""),
            ("top/mod.rs", "pub struct Top;"),
        ]);
        assert!(
            report
                .violations
                .iter()
                .any(|v| v.starts_with("base.rs") && v.contains("`base` (layer 1: ground) imports")),
            "{what}: {:#?}",
            report.violations
        );
    }
}

#[test]
fn modules_of_one_layer_that_import_each_other_fail() {
    let report = check_tree(&[
        ("lib.rs", LIB),
        ("base.rs", ""),
        (
            "left.rs",
            "pub struct L; pub fn f() -> crate::right::R { todo!() }",
        ),
        ("right/mod.rs", "mod deep;"),
        ("right/deep.rs", "pub struct R; use crate::left::L;"),
        ("top/mod.rs", ""),
    ]);
    assert_eq!(report.violations.len(), 1, "{:#?}", report.violations);
    let v = &report.violations[0];
    assert!(
        v.starts_with("modules `left` and `right` import each other"),
        "{v}"
    );
    assert!(
        v.contains("left -> right at left.rs:1 (`crate::right::R`)"),
        "{v}"
    );
    assert!(
        v.contains("right -> left at right/deep.rs:1 (`crate::left::L`)"),
        "{v}"
    );
}

#[test]
fn a_crate_re_exported_as_a_module_belongs_to_its_layer() {
    let lib = "
// Layer 1: ground
pub(crate) use ground_crate as base;
// Layer 2: middle
pub use middle_crate as left;
pub mod right;
// Layer 3: top
pub mod top;

pub use left::Thing;
";
    let report = check_tree(&[
        ("lib.rs", lib),
        (
            "right.rs",
            "use crate::left::Thing; pub fn f(_: Thing, _: crate::base::B) {}",
        ),
        ("top/mod.rs", "pub fn g() -> crate::Thing { todo!() }"),
    ]);
    assert!(report.violations.is_empty(), "{:#?}", report.violations);
    assert_eq!(
        report.layers[1].crates,
        [("left".to_string(), "middle_crate".to_string())]
    );
    assert_eq!(report.layers[1].modules, ["left", "right"]);
    let graph = report.graph();
    assert_eq!(graph["right"], ["base", "left"].into());
    assert_eq!(graph["top"], ["left"].into());
    assert!(report.describe().contains("left = the crate middle_crate"));

    // A module of a lower layer may not import it.
    let lib = lib
        .replace("pub mod right;", "")
        .replace("// Layer 1: ground\n", "// Layer 1: ground\npub mod low;\n");
    let report = check_tree(&[
        ("lib.rs", &lib),
        ("low.rs", "use crate::left::Thing;"),
        ("top/mod.rs", ""),
    ]);
    assert_eq!(report.violations.len(), 1, "{:#?}", report.violations);
    assert!(
        report.violations[0].contains("`low` (layer 1: ground) imports `left` (layer 2: middle)"),
        "{}",
        report.violations[0]
    );
}

#[test]
fn a_module_outside_the_table_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("lib.rs"), "pub mod loose;\n// Layer 1: a\n").unwrap();
    std::fs::write(dir.path().join("loose.rs"), "").unwrap();
    let err = checker::check(dir.path()).unwrap_err();
    assert!(
        err.contains("before the first `// Layer N: name` comment"),
        "{err}"
    );
}
