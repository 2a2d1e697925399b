//! Reads a crate's module tree with `syn` and checks its layering.
//!
//! The layer table is the crate root itself: `lib.rs` declares its top-level modules in layer
//! order, bottom first, each group under a comment `// Layer N: name`. The checker
//!
//! 1. reads that table (every top-level `mod x;` must sit under a layer comment; so must every
//!    crate the root re-exports as one of its modules, `pub use other_crate as x;`: a module of
//!    that layer whose sources are another crate's, which Cargo keeps from importing this one);
//! 2. follows `mod` declarations from `lib.rs` as the compiler does, skipping anything under
//!    `#[cfg(test)]` (test modules may import what they like);
//! 3. collects every reference to another top-level module: `use crate::…`/`super::…` trees,
//!    `crate::x::…` paths in types, expressions and patterns, `crate::x` in macro token
//!    streams and in attribute arguments (`#[serde(with = "crate::x::y")]`), and names the crate
//!    root re-exports (`crate::ApiError` counts as `error`; the root's own items, such as the
//!    prelude, count as the top of the crate);
//! 4. reports every reference from a module to one of a higher layer, and every cycle of
//!    top-level modules (two modules of the same layer may depend on each other one way only).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};

use proc_macro2::{TokenStream, TokenTree};
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::visit::Visit;

/// The name under which the crate root's own items (the prelude, `__private`) are reported.
pub const ROOT: &str = "crate root";

/// One layer of the table.
#[derive(Debug)]
pub struct Layer {
    /// Its number: 1 is the bottom.
    pub number: u32,
    /// What the comment calls it.
    pub name: String,
    /// Its top-level modules, in the order `lib.rs` declares them (re-exported crates
    /// included).
    pub modules: Vec<String>,
    /// The modules that are other crates, re-exported: (module, crate), as in
    /// `pub use apiserver_storage as storage;`.
    pub crates: Vec<(String, String)>,
}

/// A reference from one top-level module to another.
#[derive(Debug, Clone)]
pub struct Reference {
    /// The module that refers.
    pub from: String,
    /// The module referred to.
    pub to: String,
    /// The file (relative to the source directory) and line of the reference.
    pub file: String,
    /// Line of the reference in `file`.
    pub line: usize,
    /// The path as written (`crate::registry::store::Store`).
    pub path: String,
}

impl fmt::Display for Reference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{} (`{}`)", self.file, self.line, self.path)
    }
}

/// What the checker found.
#[derive(Debug)]
pub struct Report {
    /// The layer table read from `lib.rs`.
    pub layers: Vec<Layer>,
    /// Every reference between two different top-level modules, in file order.
    pub references: Vec<Reference>,
    /// Broken rules, one message each.
    pub violations: Vec<String>,
}

impl Report {
    /// The module graph: for each module, the modules it refers to.
    pub fn graph(&self) -> BTreeMap<&str, BTreeSet<&str>> {
        let mut graph: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
        for r in &self.references {
            graph.entry(&r.from).or_default().insert(&r.to);
        }
        graph
    }

    /// The layer table and the graph, for reading.
    pub fn describe(&self) -> String {
        let mut out = String::new();
        let graph = self.graph();
        for layer in &self.layers {
            out.push_str(&format!("layer {}: {}\n", layer.number, layer.name));
            for m in &layer.modules {
                if let Some((_, krate)) = layer.crates.iter().find(|(name, _)| name == m) {
                    out.push_str(&format!("    {m} = the crate {krate}\n"));
                    continue;
                }
                let deps: Vec<&str> = graph
                    .get(m.as_str())
                    .map(|d| d.iter().copied().collect())
                    .unwrap_or_default();
                out.push_str(&format!("    {m} -> {}\n", deps.join(" ")));
            }
        }
        out
    }
}

/// Checks the crate whose sources are in `src` (the directory holding `lib.rs`).
pub fn check(src: &Path) -> Result<Report, String> {
    let lib_path = src.join("lib.rs");
    let lib_text = std::fs::read_to_string(&lib_path)
        .map_err(|e| format!("cannot read {}: {e}", lib_path.display()))?;
    let layers = read_table(&lib_text)?;
    let mut layer_of: BTreeMap<String, (u32, String)> = BTreeMap::new();
    for layer in &layers {
        for m in &layer.modules {
            if layer_of
                .insert(m.clone(), (layer.number, layer.name.clone()))
                .is_some()
            {
                return Err(format!("lib.rs declares module `{m}` twice"));
            }
        }
    }

    let lib = parse(&lib_path)?;
    let declared: BTreeSet<String> = lib
        .items
        .iter()
        .filter_map(|item| match item {
            syn::Item::Mod(m) if m.content.is_none() && !is_test_only(&m.attrs) => {
                Some(m.ident.to_string())
            }
            syn::Item::Use(u) if !is_test_only(&u.attrs) => {
                reexported_crate(&u.tree).map(|(module, _)| module)
            }
            _ => None,
        })
        .collect();
    let tabled: BTreeSet<String> = layer_of.keys().cloned().collect();
    if declared != tabled {
        return Err(format!(
            "lib.rs declares the modules {declared:?} but its layer comments list {tabled:?}: \
             put every `mod` line (and every crate re-exported as a module) under a \
             `// Layer N: name` comment"
        ));
    }
    let reexports = root_reexports(&lib, &tabled);

    let mut references = Vec::new();
    let mut pending = vec![(lib_path.clone(), Vec::<String>::new(), src.to_path_buf())];
    while let Some((file, module, dir)) = pending.pop() {
        let ast = if file == lib_path {
            lib.clone()
        } else {
            parse(&file)?
        };
        let rel = file
            .strip_prefix(src)
            .unwrap_or(&file)
            .display()
            .to_string();
        let mut walker = Walker {
            file: rel,
            owner: module.first().cloned().unwrap_or_else(|| ROOT.to_string()),
            module,
            dir,
            tops: &tabled,
            reexports: &reexports,
            references: &mut references,
            pending: Vec::new(),
            errors: Vec::new(),
        };
        walker.visit_file(&ast);
        if let Some(e) = walker.errors.first() {
            return Err(e.clone());
        }
        pending.extend(walker.pending);
    }
    references
        .sort_by(|a, b| (&a.file, a.line, &a.to, &a.path).cmp(&(&b.file, b.line, &b.to, &b.path)));
    references
        .dedup_by(|a, b| (&a.file, a.line, &a.to, &a.path) == (&b.file, b.line, &b.to, &b.path));

    let mut violations = Vec::new();
    for r in &references {
        if r.from == ROOT {
            continue; // The root composes every layer: the facade and the prelude.
        }
        let (from_n, from_name) = &layer_of[&r.from];
        let upward = match layer_of.get(&r.to) {
            Some((to_n, to_name)) if to_n > from_n => {
                Some(format!("`{}` (layer {to_n}: {to_name})", r.to))
            }
            None => Some(format!("the {ROOT} (above every layer)")),
            _ => None,
        };
        if let Some(target) = upward {
            violations.push(format!(
                "{r}: `{}` (layer {from_n}: {from_name}) imports {target}; \
                 a lower layer never imports a higher one",
                r.from
            ));
        }
    }
    violations.extend(cycles(&references));
    Ok(Report {
        layers,
        references,
        violations,
    })
}

/// Reads the layer comments and module declarations of `lib.rs`.
pub fn read_table(lib: &str) -> Result<Vec<Layer>, String> {
    let mut layers: Vec<Layer> = Vec::new();
    for (i, line) in lib.lines().enumerate() {
        let line = line.trim();
        if let Some(rest) = line.strip_prefix("// Layer ") {
            let (number, name) = rest
                .split_once(':')
                .ok_or_else(|| format!("lib.rs:{}: expected `// Layer N: name`", i + 1))?;
            let number: u32 = number
                .trim()
                .parse()
                .map_err(|_| format!("lib.rs:{}: `{number}` is not a layer number", i + 1))?;
            if layers.last().is_some_and(|l| l.number >= number) {
                return Err(format!(
                    "lib.rs:{}: layers must be listed bottom first",
                    i + 1
                ));
            }
            layers.push(Layer {
                number,
                name: name.trim().to_string(),
                modules: Vec::new(),
                crates: Vec::new(),
            });
            continue;
        }
        if let Some((module, krate)) = syn::parse_str::<syn::ItemUse>(line)
            .ok()
            .and_then(|u| reexported_crate(&u.tree))
        {
            let layer = layers.last_mut().ok_or_else(|| {
                format!(
                    "lib.rs:{}: crate `{krate}` is re-exported as module `{module}` before the \
                     first `// Layer N: name` comment",
                    i + 1
                )
            })?;
            layer.modules.push(module.clone());
            layer.crates.push((module, krate));
            continue;
        }
        let decl = line
            .strip_prefix("pub mod ")
            .or_else(|| line.strip_prefix("pub(crate) mod "))
            .or_else(|| line.strip_prefix("mod "));
        // A `$name` is a macro's metavariable (`internal_modules!`), not a module.
        let decl = decl.filter(|d| !d.starts_with('$'));
        if let Some(name) = decl.and_then(|d| d.strip_suffix(';')) {
            let layer = layers.last_mut().ok_or_else(|| {
                format!(
                    "lib.rs:{}: module `{name}` is declared before the first `// Layer N: name` comment",
                    i + 1
                )
            })?;
            layer.modules.push(name.trim().to_string());
        }
    }
    if layers.is_empty() {
        return Err("lib.rs has no `// Layer N: name` comments".into());
    }
    Ok(layers)
}

/// For `use some_crate as name;`: (`name`, `some_crate`), a whole crate taken in as a module of
/// this one. Not for paths into a crate (`pub use apiserver_derive::ApiResource`) nor for the
/// crate's own modules (`crate`, `self`, `super`).
fn reexported_crate(tree: &syn::UseTree) -> Option<(String, String)> {
    match tree {
        syn::UseTree::Rename(r) if !["crate", "self", "super"].contains(&&*r.ident.to_string()) => {
            Some((r.rename.to_string(), r.ident.to_string()))
        }
        _ => None,
    }
}

fn parse(path: &Path) -> Result<syn::File, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    syn::parse_file(&text).map_err(|e| format!("cannot parse {}: {e}", path.display()))
}

/// The names the crate root re-exports from its modules (`pub use error::ApiError` makes
/// `crate::ApiError` a reference to `error`).
fn root_reexports(lib: &syn::File, tops: &BTreeSet<String>) -> BTreeMap<String, String> {
    fn walk(
        tree: &syn::UseTree,
        first: Option<&str>,
        tops: &BTreeSet<String>,
        out: &mut BTreeMap<String, String>,
    ) {
        match tree {
            syn::UseTree::Path(p) => {
                let ident = p.ident.to_string();
                let first = match first {
                    Some(f) => Some(f),
                    None if ident == "crate" => None,
                    None => Some(ident.as_str()),
                };
                walk(&p.tree, first, tops, out);
            }
            syn::UseTree::Name(n) => {
                if let Some(f) = first.filter(|f| tops.contains(*f)) {
                    out.insert(n.ident.to_string(), f.to_string());
                }
            }
            syn::UseTree::Rename(r) => {
                if let Some(f) = first.filter(|f| tops.contains(*f)) {
                    out.insert(r.rename.to_string(), f.to_string());
                }
            }
            syn::UseTree::Group(g) => {
                for t in &g.items {
                    walk(t, first, tops, out);
                }
            }
            syn::UseTree::Glob(_) => {}
        }
    }
    let mut out = BTreeMap::new();
    for item in &lib.items {
        if let syn::Item::Use(u) = item {
            walk(&u.tree, None, tops, &mut out);
        }
    }
    out
}

/// Whether `attrs` hold a `#[cfg(…)]` that is true only in test builds (`test`, or `all(…)`
/// with `test` among its conditions).
pub fn is_test_only(attrs: &[syn::Attribute]) -> bool {
    fn test_only(meta: &syn::Meta) -> bool {
        match meta {
            syn::Meta::Path(p) => p.is_ident("test"),
            syn::Meta::List(l) if l.path.is_ident("all") => l
                .parse_args_with(Punctuated::<syn::Meta, syn::Token![,]>::parse_terminated)
                .is_ok_and(|metas| metas.iter().any(test_only)),
            _ => false,
        }
    }
    attrs.iter().any(|a| {
        a.path().is_ident("cfg") && a.parse_args::<syn::Meta>().is_ok_and(|m| test_only(&m))
    })
}

struct Walker<'a> {
    /// The file, relative to the source directory.
    file: String,
    /// The top-level module the file belongs to ([`ROOT`] for `lib.rs`).
    owner: String,
    /// The module being walked, from the root (`["server", "filters"]`).
    module: Vec<String>,
    /// Where the files of the current module's children are.
    dir: PathBuf,
    tops: &'a BTreeSet<String>,
    reexports: &'a BTreeMap<String, String>,
    references: &'a mut Vec<Reference>,
    /// Out-of-line child modules: (file, module path, directory of its children).
    pending: Vec<(PathBuf, Vec<String>, PathBuf)>,
    errors: Vec<String>,
}

impl Walker<'_> {
    /// Records a reference to the absolute path `segments` (from the crate root).
    fn record(&mut self, segments: &[String], span: proc_macro2::Span, written: String) {
        let Some(first) = segments.first() else {
            return;
        };
        let to = if self.tops.contains(first) {
            first.clone()
        } else if let Some(module) = self.reexports.get(first) {
            module.clone()
        } else {
            ROOT.to_string()
        };
        if to == self.owner {
            return;
        }
        self.references.push(Reference {
            from: self.owner.clone(),
            to,
            file: self.file.clone(),
            line: span.start().line,
            path: written,
        });
    }

    /// Resolves a path that starts with `crate`, `self` or `super` to one from the crate root;
    /// `None` for other paths (external crates, local names).
    fn absolute(&self, segments: &[String]) -> Option<Vec<String>> {
        match segments.first().map(String::as_str) {
            Some("crate") => Some(segments[1..].to_vec()),
            Some("self") => Some(self.module.iter().chain(&segments[1..]).cloned().collect()),
            Some("super") => {
                let ups = segments.iter().take_while(|s| *s == "super").count();
                let keep = self.module.len().checked_sub(ups)?;
                Some(
                    self.module[..keep]
                        .iter()
                        .chain(&segments[ups..])
                        .cloned()
                        .collect(),
                )
            }
            _ => None,
        }
    }

    fn use_tree(&mut self, tree: &syn::UseTree, prefix: &mut Vec<String>, span: proc_macro2::Span) {
        let finish = |this: &mut Self, prefix: &[String]| {
            if let Some(abs) = this.absolute(prefix) {
                this.record(&abs, span, prefix.join("::"));
            }
        };
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.use_tree(&p.tree, prefix, span);
                prefix.pop();
            }
            syn::UseTree::Name(n) => {
                if n.ident == "self" {
                    finish(self, prefix);
                } else {
                    prefix.push(n.ident.to_string());
                    finish(self, prefix);
                    prefix.pop();
                }
            }
            syn::UseTree::Rename(r) => {
                prefix.push(r.ident.to_string());
                finish(self, prefix);
                prefix.pop();
            }
            syn::UseTree::Glob(_) => finish(self, prefix),
            syn::UseTree::Group(g) => {
                for t in &g.items {
                    self.use_tree(t, prefix, span);
                }
            }
        }
    }

    /// Finds `crate :: name` (and `$crate :: name`) in a token stream.
    fn tokens(&mut self, tokens: &TokenStream) {
        let trees: Vec<TokenTree> = tokens.clone().into_iter().collect();
        for (i, tree) in trees.iter().enumerate() {
            match tree {
                TokenTree::Group(g) => self.tokens(&g.stream()),
                TokenTree::Ident(id) if id == "crate" => {
                    if let (Some(TokenTree::Punct(a)), Some(TokenTree::Punct(b))) =
                        (trees.get(i + 1), trees.get(i + 2))
                        && a.as_char() == ':'
                        && b.as_char() == ':'
                        && let Some(TokenTree::Ident(name)) = trees.get(i + 3)
                    {
                        self.record(
                            &[name.to_string()],
                            id.span(),
                            format!("crate::{name} (in a macro)"),
                        );
                    }
                }
                TokenTree::Literal(lit) => self.literal(&lit.to_string(), lit.span()),
                _ => {}
            }
        }
    }

    /// Finds `crate::name` inside a string literal of an attribute (`#[serde(with = "…")]`).
    fn literal(&mut self, text: &str, span: proc_macro2::Span) {
        let mut rest = text;
        while let Some(at) = rest.find("crate::") {
            let after = &rest[at + "crate::".len()..];
            let name: String = after
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                let written = format!("\"crate::{name}\" (in a string)");
                self.record(&[name], span, written);
            }
            rest = after;
        }
    }
}

fn path_segments(path: &syn::Path) -> Vec<String> {
    path.segments.iter().map(|s| s.ident.to_string()).collect()
}

fn item_attrs(item: &syn::Item) -> &[syn::Attribute] {
    match item {
        syn::Item::Const(i) => &i.attrs,
        syn::Item::Enum(i) => &i.attrs,
        syn::Item::ExternCrate(i) => &i.attrs,
        syn::Item::Fn(i) => &i.attrs,
        syn::Item::ForeignMod(i) => &i.attrs,
        syn::Item::Impl(i) => &i.attrs,
        syn::Item::Macro(i) => &i.attrs,
        syn::Item::Mod(i) => &i.attrs,
        syn::Item::Static(i) => &i.attrs,
        syn::Item::Struct(i) => &i.attrs,
        syn::Item::Trait(i) => &i.attrs,
        syn::Item::TraitAlias(i) => &i.attrs,
        syn::Item::Type(i) => &i.attrs,
        syn::Item::Union(i) => &i.attrs,
        syn::Item::Use(i) => &i.attrs,
        _ => &[],
    }
}

impl<'ast> Visit<'ast> for Walker<'_> {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        if !is_test_only(item_attrs(item)) {
            syn::visit::visit_item(self, item);
        }
    }

    fn visit_impl_item(&mut self, item: &'ast syn::ImplItem) {
        let attrs = match item {
            syn::ImplItem::Const(i) => &i.attrs[..],
            syn::ImplItem::Fn(i) => &i.attrs,
            syn::ImplItem::Type(i) => &i.attrs,
            syn::ImplItem::Macro(i) => &i.attrs,
            _ => &[],
        };
        if !is_test_only(attrs) {
            syn::visit::visit_impl_item(self, item);
        }
    }

    fn visit_trait_item(&mut self, item: &'ast syn::TraitItem) {
        let attrs = match item {
            syn::TraitItem::Const(i) => &i.attrs[..],
            syn::TraitItem::Fn(i) => &i.attrs,
            syn::TraitItem::Type(i) => &i.attrs,
            syn::TraitItem::Macro(i) => &i.attrs,
            _ => &[],
        };
        if !is_test_only(attrs) {
            syn::visit::visit_trait_item(self, item);
        }
    }

    fn visit_field(&mut self, field: &'ast syn::Field) {
        if !is_test_only(&field.attrs) {
            syn::visit::visit_field(self, field);
        }
    }

    fn visit_variant(&mut self, variant: &'ast syn::Variant) {
        if !is_test_only(&variant.attrs) {
            syn::visit::visit_variant(self, variant);
        }
    }

    fn visit_arm(&mut self, arm: &'ast syn::Arm) {
        if !is_test_only(&arm.attrs) {
            syn::visit::visit_arm(self, arm);
        }
    }

    fn visit_stmt(&mut self, stmt: &'ast syn::Stmt) {
        let attrs = match stmt {
            syn::Stmt::Local(l) => &l.attrs[..],
            syn::Stmt::Macro(m) => &m.attrs,
            syn::Stmt::Item(i) => item_attrs(i),
            syn::Stmt::Expr(..) => &[],
        };
        if !is_test_only(attrs) {
            syn::visit::visit_stmt(self, stmt);
        }
    }

    fn visit_item_mod(&mut self, item: &'ast syn::ItemMod) {
        let name = item.ident.to_string();
        if item.attrs.iter().any(|a| a.path().is_ident("path")) {
            self.errors.push(format!(
                "{}: `#[path]` on module `{name}` is not supported by the layer check",
                self.file
            ));
            return;
        }
        let mut module = self.module.clone();
        module.push(name.clone());
        let child_dir = self.dir.join(&name);
        match &item.content {
            Some((_, items)) => {
                let outer = std::mem::replace(&mut self.module, module);
                let outer_dir = std::mem::replace(&mut self.dir, child_dir);
                for attr in &item.attrs {
                    self.visit_attribute(attr);
                }
                for i in items {
                    self.visit_item(i);
                }
                self.module = outer;
                self.dir = outer_dir;
            }
            None => {
                let flat = self.dir.join(format!("{name}.rs"));
                let nested = child_dir.join("mod.rs");
                let file = if flat.is_file() {
                    flat
                } else if nested.is_file() {
                    nested
                } else {
                    self.errors.push(format!(
                        "{}: no file for module `{name}` ({} or {})",
                        self.file,
                        flat.display(),
                        nested.display()
                    ));
                    return;
                };
                self.pending.push((file, module, child_dir));
            }
        }
    }

    fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
        let span = item.span();
        self.use_tree(&item.tree, &mut Vec::new(), span);
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        let segments = path_segments(path);
        if path.leading_colon.is_none()
            && let Some(abs) = self.absolute(&segments)
        {
            self.record(&abs, path.span(), segments.join("::"));
        }
        syn::visit::visit_path(self, path);
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        self.tokens(&mac.tokens);
        syn::visit::visit_macro(self, mac);
    }

    fn visit_attribute(&mut self, attr: &'ast syn::Attribute) {
        let path = attr.path();
        if path.is_ident("doc") || path.is_ident("cfg") {
            return; // Doc links and configuration predicates import nothing.
        }
        match &attr.meta {
            syn::Meta::List(l) => self.tokens(&l.tokens),
            syn::Meta::NameValue(nv) => {
                if let syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(s),
                    ..
                }) = &nv.value
                {
                    self.literal(&s.value(), s.span());
                }
            }
            syn::Meta::Path(_) => {}
        }
        syn::visit::visit_attribute(self, attr);
    }
}

/// The cycles among top-level modules: every pair that imports each other, and for a group of
/// modules tied in a longer cycle without such a pair, its shortest cycle.
fn cycles(references: &[Reference]) -> Vec<String> {
    // The first reference for each edge, to name a place in the message.
    let mut first: BTreeMap<(&str, &str), &Reference> = BTreeMap::new();
    for r in references {
        if r.from != ROOT && r.to != ROOT {
            first.entry((&r.from, &r.to)).or_insert(r);
        }
    }
    let mut graph: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (from, to) in first.keys() {
        graph.entry(from).or_default().push(to);
    }
    let mut messages = Vec::new();
    let mut done: BTreeSet<&str> = BTreeSet::new();
    for &start in graph.keys() {
        if done.contains(start) {
            continue;
        }
        // The strongly connected group of `start`: the modules it reaches that reach it back.
        let group: BTreeSet<&str> = reachable(&graph, start)
            .into_iter()
            .filter(|&m| reachable(&graph, m).contains(start))
            .collect();
        done.extend(group.iter().copied());
        if group.len() < 2 {
            continue;
        }
        let mut pairs = 0;
        for &a in &group {
            for &b in &group {
                if a < b
                    && let (Some(ab), Some(ba)) = (first.get(&(a, b)), first.get(&(b, a)))
                {
                    pairs += 1;
                    messages.push(format!(
                        "modules `{a}` and `{b}` import each other; two top-level modules never \
                         do (within a layer, imports go one way):\n  {a} -> {b} at {ab}\n  {b} -> {a} at {ba}"
                    ));
                }
            }
        }
        if pairs == 0 {
            let &next = graph[start]
                .iter()
                .find(|m| group.contains(*m))
                .expect("a group of two or more has an edge inside");
            let mut cycle = vec![start];
            cycle.extend(shortest_path(&graph, next, start).expect("next reaches start"));
            let lines: Vec<String> = cycle
                .windows(2)
                .map(|p| format!("  {} -> {} at {}", p[0], p[1], first[&(p[0], p[1])]))
                .collect();
            messages.push(format!(
                "modules {} import each other in a cycle; top-level modules never do (within a \
                 layer, imports go one way):\n{}",
                cycle.join(" -> "),
                lines.join("\n")
            ));
        }
    }
    messages
}

/// The modules `from` reaches, itself included.
fn reachable<'a>(graph: &BTreeMap<&'a str, Vec<&'a str>>, from: &'a str) -> BTreeSet<&'a str> {
    let mut seen = BTreeSet::from([from]);
    let mut stack = vec![from];
    while let Some(node) = stack.pop() {
        for &next in graph.get(node).into_iter().flatten() {
            if seen.insert(next) {
                stack.push(next);
            }
        }
    }
    seen
}

/// The shortest path from `from` to `to` (both included).
fn shortest_path<'a>(
    graph: &BTreeMap<&'a str, Vec<&'a str>>,
    from: &'a str,
    to: &'a str,
) -> Option<Vec<&'a str>> {
    let mut parent: BTreeMap<&str, &str> = BTreeMap::new();
    let mut queue = std::collections::VecDeque::from([from]);
    let mut seen = BTreeSet::from([from]);
    while let Some(node) = queue.pop_front() {
        if node == to {
            let mut path = vec![to];
            let mut at = to;
            while at != from {
                at = parent[at];
                path.push(at);
            }
            path.reverse();
            return Some(path);
        }
        for &next in graph.get(node).into_iter().flatten() {
            if seen.insert(next) {
                parent.insert(next, node);
                queue.push_back(next);
            }
        }
    }
    None
}
