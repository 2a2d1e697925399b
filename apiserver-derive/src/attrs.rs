//! Parsing and validation of `#[resource(...)]`.

use darling::FromDeriveInput;
use darling::FromMeta;
use darling::util::{Flag, SpannedValue};
use proc_macro2::Span;

use crate::names;

/// The raw `#[resource(...)]` arguments, as darling reads them.
///
/// Required keys are `Option`s here so that their absence gets a message saying what to write
/// instead of darling's bare "missing field".
#[derive(FromDeriveInput)]
#[darling(attributes(resource))]
struct RawArgs {
    group: Option<SpannedValue<String>>,
    version: Option<SpannedValue<String>>,
    kind: Option<SpannedValue<String>>,
    namespaced: Flag,
    plural: Option<SpannedValue<String>>,
    singular: Option<SpannedValue<String>>,
    status: Option<syn::Path>,
    #[darling(multiple, rename = "shortname")]
    shortnames: Vec<SpannedValue<String>>,
    #[darling(multiple, rename = "category")]
    categories: Vec<SpannedValue<String>>,
    #[darling(multiple, rename = "printcolumn")]
    printcolumns: Vec<ColumnMeta>,
    #[darling(multiple, rename = "selectable_field")]
    selectable_fields: Vec<SpannedValue<String>>,
    scale: Option<SpannedValue<RawScale>>,
    flat: Flag,
    root: Option<SpannedValue<String>>,
    #[darling(multiple, rename = "derive")]
    derives: Vec<syn::Path>,
    #[darling(multiple, rename = "validation")]
    validations: Vec<RuleExpr>,
    #[darling(rename = "crate")]
    krate: Option<syn::Path>,
}

/// A `validation = ...` value as written: a string (the CEL rule) or an expression of a type
/// that converts into `kube_core::Rule` (`Rule::new("...").message("...")`), as kube-derive's
/// `#[kube(validation = ...)]`. Unlike darling's `syn::Expr`, a string stays a string.
pub struct RuleExpr(pub syn::Expr);

impl FromMeta for RuleExpr {
    fn from_expr(expr: &syn::Expr) -> darling::Result<Self> {
        Ok(RuleExpr(expr.clone()))
    }
}

/// The raw `scale(...)`.
#[derive(FromMeta)]
struct RawScale {
    spec_replicas_path: Option<SpannedValue<String>>,
    status_replicas_path: Option<SpannedValue<String>>,
    label_selector_path: Option<SpannedValue<String>>,
}

/// A validated `scale(...)`: the paths of the scale subresource.
pub struct ScaleArgs {
    /// JSONPath of the desired replicas, e.g. `.spec.replicas`.
    pub spec_replicas_path: String,
    /// JSONPath of the observed replicas, e.g. `.status.replicas`.
    pub status_replicas_path: String,
    /// JSONPath of the label selector string, if any.
    pub label_selector_path: Option<String>,
}

/// One `printcolumn(...)` together with its source, to point errors at the whole item.
struct ColumnMeta {
    meta: syn::Meta,
    column: RawPrinterColumn,
}

impl FromMeta for ColumnMeta {
    fn from_meta(item: &syn::Meta) -> darling::Result<Self> {
        Ok(ColumnMeta {
            meta: item.clone(),
            column: RawPrinterColumn::from_meta(item)?,
        })
    }
}

/// One raw `printcolumn(...)`.
#[derive(FromMeta)]
struct RawPrinterColumn {
    name: Option<SpannedValue<String>>,
    #[darling(rename = "type")]
    type_: Option<SpannedValue<String>>,
    json_path: Option<SpannedValue<String>>,
    #[darling(default)]
    description: String,
    priority: Option<SpannedValue<i32>>,
    format: Option<SpannedValue<String>>,
}

/// A validated printer column.
pub struct PrinterColumn {
    /// Column header.
    pub name: String,
    /// OpenAPI type of the cell.
    pub type_: String,
    /// OpenAPI format of the cell, possibly empty.
    pub format: String,
    /// Human readable description, possibly empty.
    pub description: String,
    /// JSONPath starting with `.`.
    pub json_path: String,
    /// Priority, 0 for the default view.
    pub priority: i32,
}

/// Validated `#[resource(...)]` arguments with defaults filled in.
pub struct ResourceArgs {
    /// API group.
    pub group: String,
    /// API version.
    pub version: String,
    /// Kind.
    pub kind: String,
    /// Whether objects live in namespaces.
    pub namespaced: bool,
    /// Lower-case plural.
    pub plural: String,
    /// Lower-case singular.
    pub singular: String,
    /// Path of the status type, if any.
    pub status: Option<syn::Path>,
    /// kubectl short names.
    pub shortnames: Vec<String>,
    /// Categories.
    pub categories: Vec<String>,
    /// Additional printer columns.
    pub printcolumns: Vec<PrinterColumn>,
    /// JSONPaths usable in field selectors.
    pub selectable_fields: Vec<String>,
    /// The scale subresource, if declared.
    pub scale: Option<ScaleArgs>,
    /// Whether the spec's fields sit at the top level of the object.
    pub flat: bool,
    /// Name of the generated root type.
    pub root: syn::Ident,
    /// Extra derives for the root type.
    pub derives: Vec<syn::Path>,
    /// CEL rules of the whole object (`x-kubernetes-validations` at the schema's root).
    pub validations: Vec<syn::Expr>,
    /// Path of the framework crate.
    pub krate: syn::Path,
}

/// What to write when nothing (or not enough) was written.
const EXAMPLE: &str = "#[resource(group = \"example.com\", version = \"v1\", kind = \"MyKind\")]";

/// OpenAPI types a printer column may have (as in a CRD's `additionalPrinterColumns`).
const COLUMN_TYPES: &[&str] = &["string", "integer", "number", "boolean", "date"];

/// OpenAPI formats a printer column may have (as in a CRD's `additionalPrinterColumns`).
const COLUMN_FORMATS: &[&str] = &[
    "int32",
    "int64",
    "float",
    "double",
    "byte",
    "date",
    "date-time",
    "password",
];

impl ResourceArgs {
    /// Reads and validates the `#[resource(...)]` attributes of `input`, reporting every
    /// problem found at once.
    pub fn parse(input: &syn::DeriveInput) -> syn::Result<Self> {
        let raw = RawArgs::from_derive_input(input)?;
        // Where to point when a required key is missing: the first `#[resource]` attribute,
        // or the struct's name when there is none.
        let attr = input.attrs.iter().find(|a| a.path().is_ident("resource"));
        let mut errors = Errors::default();

        let missing: Vec<String> = [
            ("group", raw.group.is_none()),
            ("version", raw.version.is_none()),
            ("kind", raw.kind.is_none()),
        ]
        .iter()
        .filter(|(_, missing)| *missing)
        .map(|(key, _)| format!("`{key}`"))
        .collect();
        if !missing.is_empty() {
            errors.push(match attr {
                Some(attr) => syn::Error::new_spanned(
                    attr,
                    format!("missing {}: write {EXAMPLE}", and_list(&missing)),
                ),
                None => spanned(
                    format!(
                        "#[derive(ApiResource)] needs a #[resource(...)] attribute: write {EXAMPLE}"
                    ),
                    input.ident.span(),
                ),
            });
        }

        let group = match &raw.group {
            Some(group) => {
                if let Err(msg) = names::check_group(group) {
                    errors.push(spanned(msg, group.span()));
                }
                group.to_string()
            }
            None => String::new(),
        };

        let version = match &raw.version {
            Some(version) => {
                if !names::is_version(version) {
                    errors.push(spanned(
                        format!(
                            "invalid version `{}`: a Kubernetes API version looks like `v1`, \
                             `v2beta1` or `v1alpha1` (v<N>, v<N>beta<M> or v<N>alpha<M>)",
                            version.as_str()
                        ),
                        version.span(),
                    ));
                }
                version.to_string()
            }
            None => String::new(),
        };

        let kind = match &raw.kind {
            Some(kind) => {
                if !names::is_kind(kind) {
                    errors.push(spanned(
                        format!(
                            "invalid kind `{}`: a kind is CamelCase, starts with an upper-case \
                             ASCII letter and has only ASCII letters and digits, e.g. `Flunder`",
                            kind.as_str()
                        ),
                        kind.span(),
                    ));
                }
                kind.to_string()
            }
            None => String::new(),
        };

        let mut check_label = |what: &str, value: &SpannedValue<String>| {
            if !names::is_dns_label(value) {
                errors.push(spanned(
                    format!(
                        "invalid {what} `{}`: use lower-case letters, digits and `-` \
                         (a DNS label), e.g. `flunders`",
                        value.as_str()
                    ),
                    value.span(),
                ));
            }
        };
        let lower_kind = kind.to_ascii_lowercase();
        let plural = match &raw.plural {
            Some(plural) => {
                check_label("plural", plural);
                plural.to_string()
            }
            None => names::pluralize(&lower_kind),
        };
        let singular = match &raw.singular {
            Some(singular) => {
                check_label("singular", singular);
                singular.to_string()
            }
            None => lower_kind,
        };
        for shortname in &raw.shortnames {
            check_label("shortname", shortname);
        }
        for category in &raw.categories {
            check_label("category", category);
        }

        let printcolumns = raw
            .printcolumns
            .iter()
            .filter_map(|column| check_column(column, &mut errors))
            .collect();

        let mut selectable_fields = Vec::new();
        for field in &raw.selectable_fields {
            if !field.starts_with('.') || field.len() < 2 || field.ends_with('.') {
                errors.push(spanned(
                    format!(
                        "selectable_field `{}` must be a JSONPath such as \".spec.color\": write \"{}\"",
                        field.as_str(),
                        suggested_path(field)
                    ),
                    field.span(),
                ));
            } else if field.starts_with(".metadata.") {
                errors.push(spanned(
                    "metadata.name and metadata.namespace are always selectable; \
                     selectable_field names fields outside metadata"
                        .to_string(),
                    field.span(),
                ));
            } else {
                selectable_fields.push(field.to_string());
            }
        }
        let scale = raw.scale.as_ref().and_then(|s| check_scale(s, &mut errors));

        let root = match &raw.root {
            Some(root) => match syn::parse_str::<syn::Ident>(root) {
                Ok(ident) => Some(syn::Ident::new(&ident.to_string(), root.span())),
                Err(_) => {
                    errors.push(spanned(
                        format!(
                            "invalid root `{}`: the root type's name must be a Rust identifier, \
                             e.g. root = \"Flunder\"",
                            root.as_str()
                        ),
                        root.span(),
                    ));
                    None
                }
            },
            // An invalid kind has already been reported; don't build an identifier from it.
            None if names::is_kind(&kind) => Some(syn::Ident::new(&kind, Span::call_site())),
            None => None,
        };
        if let Some(root) = &root
            && *root == input.ident
        {
            let span = raw.root.as_ref().map_or(input.ident.span(), |r| r.span());
            errors.push(spanned(
                format!(
                    "the generated root type would be named `{root}` like this struct: \
                     #[derive(ApiResource)] goes on the spec, so name this struct \
                     `{root}Spec` (or choose another name with root = \"...\")"
                ),
                span,
            ));
        }

        errors.finish()?;
        Ok(ResourceArgs {
            group,
            version,
            kind,
            namespaced: raw.namespaced.is_present(),
            plural,
            singular,
            status: raw.status,
            shortnames: raw.shortnames.into_iter().map(|s| s.into_inner()).collect(),
            categories: raw.categories.into_iter().map(|c| c.into_inner()).collect(),
            printcolumns,
            selectable_fields,
            scale,
            flat: raw.flat.is_present(),
            root: root.expect("a missing root is reported as an error"),
            derives: raw.derives,
            validations: raw.validations.into_iter().map(|r| r.0).collect(),
            krate: raw
                .krate
                .unwrap_or_else(|| syn::parse_quote!(::apiserver_framework)),
        })
    }
}

/// Validates one `printcolumn(...)`; `None` (with errors pushed) when it is unusable.
fn check_column(column: &ColumnMeta, errors: &mut Errors) -> Option<PrinterColumn> {
    let ColumnMeta { meta, column } = column;
    let (Some(name), Some(json_path)) = (&column.name, &column.json_path) else {
        let missing: Vec<&str> = [
            ("`name`", column.name.is_none()),
            ("`json_path`", column.json_path.is_none()),
        ]
        .iter()
        .filter(|(_, missing)| *missing)
        .map(|(key, _)| *key)
        .collect();
        errors.push(syn::Error::new_spanned(
            meta,
            format!(
                "printcolumn is missing {}: write printcolumn(name = \"Reference\", \
                 json_path = \".spec.reference\") (optionally with type = \"string\")",
                and_list(&missing)
            ),
        ));
        return None;
    };
    let mut ok = true;
    if name.trim().is_empty() {
        errors.push(spanned(
            "printcolumn name must not be empty".to_string(),
            name.span(),
        ));
        ok = false;
    }
    // `type` defaults to `string`, so that several string columns need not repeat it (clippy's
    // `duplicated_attributes` lint flags a key = value pair repeated on one item).
    let type_ = match &column.type_ {
        Some(type_) if !COLUMN_TYPES.contains(&type_.as_str()) => {
            errors.push(spanned(
                format!(
                    "unknown printcolumn type `{}`: use one of {}",
                    type_.as_str(),
                    quoted_list(COLUMN_TYPES)
                ),
                type_.span(),
            ));
            ok = false;
            String::new()
        }
        Some(type_) => type_.to_string(),
        None => "string".to_string(),
    };
    if !json_path.starts_with('.') {
        errors.push(spanned(
            format!(
                "printcolumn json_path `{}` must start with `.`: write \"{}\"",
                json_path.as_str(),
                suggested_path(json_path)
            ),
            json_path.span(),
        ));
        ok = false;
    }
    let priority = match &column.priority {
        Some(priority) if **priority < 0 => {
            errors.push(spanned(
                "printcolumn priority must be 0 (default view) or more (wide view only)"
                    .to_string(),
                priority.span(),
            ));
            ok = false;
            0
        }
        Some(priority) => **priority,
        None => 0,
    };
    let format = match &column.format {
        Some(format) if !COLUMN_FORMATS.contains(&format.as_str()) => {
            errors.push(spanned(
                format!(
                    "unknown printcolumn format `{}`: use one of {}",
                    format.as_str(),
                    quoted_list(COLUMN_FORMATS)
                ),
                format.span(),
            ));
            ok = false;
            String::new()
        }
        Some(format) => format.to_string(),
        None => String::new(),
    };
    ok.then(|| PrinterColumn {
        name: name.to_string(),
        type_,
        format,
        description: column.description.clone(),
        json_path: json_path.to_string(),
        priority,
    })
}

/// Validates `scale(...)`; `None` (with errors pushed) when it is unusable.
fn check_scale(scale: &SpannedValue<RawScale>, errors: &mut Errors) -> Option<ScaleArgs> {
    let (Some(spec), Some(status)) = (&scale.spec_replicas_path, &scale.status_replicas_path)
    else {
        errors.push(spanned(
            "scale needs spec_replicas_path and status_replicas_path: write \
             scale(spec_replicas_path = \".spec.replicas\", status_replicas_path = \".status.replicas\")"
                .to_string(),
            scale.span(),
        ));
        return None;
    };
    let mut ok = true;
    for (path, prefix, key) in [
        (spec, ".spec.", "spec_replicas_path"),
        (status, ".status.", "status_replicas_path"),
    ] {
        if !path.starts_with(prefix) || path.len() <= prefix.len() {
            errors.push(spanned(
                format!(
                    "{key} `{}` must be a JSONPath under `{prefix}`, e.g. \"{prefix}replicas\"",
                    path.as_str()
                ),
                path.span(),
            ));
            ok = false;
        }
    }
    if let Some(selector) = &scale.label_selector_path
        && !(selector.starts_with(".spec.") || selector.starts_with(".status."))
    {
        errors.push(spanned(
            format!(
                "label_selector_path `{}` must be a JSONPath under `.spec.` or `.status.`, \
                 e.g. \".status.selector\"",
                selector.as_str()
            ),
            selector.span(),
        ));
        ok = false;
    }
    ok.then(|| ScaleArgs {
        spec_replicas_path: spec.to_string(),
        status_replicas_path: status.to_string(),
        label_selector_path: scale.label_selector_path.as_ref().map(|s| s.to_string()),
    })
}

/// An error with `msg` at `span`.
fn spanned(msg: String, span: Span) -> syn::Error {
    syn::Error::new(span, msg)
}

/// Collects errors so that all of them are reported at once.
#[derive(Default)]
struct Errors(Option<syn::Error>);

impl Errors {
    /// Adds an error.
    fn push(&mut self, error: syn::Error) {
        match &mut self.0 {
            Some(all) => all.combine(error),
            None => self.0 = Some(error),
        }
    }

    /// `Err` with every error pushed, if any.
    fn finish(self) -> syn::Result<()> {
        self.0.map_or(Ok(()), Err)
    }
}

/// `a and b`, `a, b and c`.
fn and_list<S: AsRef<str>>(items: &[S]) -> String {
    let items: Vec<&str> = items.iter().map(AsRef::as_ref).collect();
    match items.split_last() {
        Some((last, [])) => (*last).to_string(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
        None => String::new(),
    }
}

/// A JSONPath starting with `.` for what the user wrote: `spec.x` → `.spec.x`,
/// `{.spec.x}` → `.spec.x`, `$.spec.x` → `.spec.x`.
fn suggested_path(path: &str) -> String {
    let trimmed = path.trim_start_matches(['$', '{']).trim_end_matches('}');
    if trimmed.starts_with('.') {
        trimmed.to_string()
    } else {
        format!(".{trimmed}")
    }
}

/// `"a", "b" or "c"`.
fn quoted_list(items: &[&str]) -> String {
    let quoted: Vec<String> = items.iter().map(|i| format!("\"{i}\"")).collect();
    match quoted.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists() {
        assert_eq!(and_list(&["`a`"]), "`a`");
        assert_eq!(and_list(&["a", "b", "c"]), "a, b and c");
        assert_eq!(quoted_list(&["x", "y"]), "\"x\" or \"y\"");
    }

    #[test]
    fn suggested_paths() {
        assert_eq!(suggested_path("spec.size"), ".spec.size");
        assert_eq!(suggested_path("{.spec.size}"), ".spec.size");
        assert_eq!(suggested_path("$.spec.size"), ".spec.size");
    }
}
