//! Field-level `#[resource(...)]`: list and map semantics and CEL rules of the spec's fields.
//!
//! They become the schema extensions Kubernetes clients and the server read:
//! `x-kubernetes-list-type`, `x-kubernetes-list-map-keys`, `x-kubernetes-map-type`,
//! `x-kubernetes-patch-strategy`, `x-kubernetes-patch-merge-key` and
//! `x-kubernetes-validations`.

use darling::FromField;
use darling::util::SpannedValue;

/// The raw field attribute, as darling reads it.
#[derive(FromField)]
#[darling(attributes(resource))]
struct RawField {
    ident: Option<syn::Ident>,
    list_type: Option<SpannedValue<String>>,
    #[darling(multiple, rename = "list_map_key")]
    list_map_keys: Vec<SpannedValue<String>>,
    map_type: Option<SpannedValue<String>>,
    patch_strategy: Option<SpannedValue<String>>,
    patch_merge_key: Option<SpannedValue<String>>,
    #[darling(multiple, rename = "validation")]
    validations: Vec<crate::attrs::RuleExpr>,
}

/// The schema extensions of one field, keyed by its JSON name.
pub struct FieldExtensions {
    /// The field's name on the wire (after serde's renaming).
    pub json_name: String,
    /// Extension key and JSON value text pairs, e.g. `("x-kubernetes-list-type", "\"map\"")`.
    pub extensions: Vec<(&'static str, String)>,
    /// CEL rules of the field (`x-kubernetes-validations`): strings or `kube_core::Rule`s.
    pub validations: Vec<syn::Expr>,
}

const LIST_TYPES: &[&str] = &["atomic", "set", "map"];
const MAP_TYPES: &[&str] = &["atomic", "granular"];
const PATCH_STRATEGIES: &[&str] = &["merge", "retainKeys", "merge,retainKeys", "replace"];

/// Reads the field attributes of a struct with named fields; fields without any give nothing.
pub fn parse(input: &syn::DeriveInput) -> syn::Result<Vec<FieldExtensions>> {
    let syn::Data::Struct(data) = &input.data else {
        return Ok(Vec::new());
    };
    let rename_all = serde_rename_all(&input.attrs)?;
    let mut out = Vec::new();
    let mut errors: Option<syn::Error> = None;
    let mut push = |e: syn::Error| match &mut errors {
        Some(all) => all.combine(e),
        None => errors = Some(e),
    };
    for field in &data.fields {
        let raw = match RawField::from_field(field) {
            Ok(raw) => raw,
            Err(e) => {
                push(e.into());
                continue;
            }
        };
        let Some(ident) = &raw.ident else { continue };
        let json_name = match serde_rename(&field.attrs)? {
            Some(name) => name,
            None => rename(&ident.to_string(), rename_all.as_deref()),
        };
        let mut extensions = Vec::new();
        let mut check = |value: &SpannedValue<String>, allowed: &[&str], what: &str| {
            if allowed.contains(&value.as_str()) {
                true
            } else {
                push(syn::Error::new(
                    value.span(),
                    format!(
                        "unknown {what} `{}`: use one of {}",
                        value.as_str(),
                        allowed
                            .iter()
                            .map(|a| format!("\"{a}\""))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                ));
                false
            }
        };
        let list_type = raw
            .list_type
            .as_ref()
            .filter(|t| check(t, LIST_TYPES, "list_type"))
            .map(|t| t.as_str().to_string());
        let map_type = raw
            .map_type
            .as_ref()
            .filter(|t| check(t, MAP_TYPES, "map_type"))
            .map(|t| t.as_str().to_string());
        let explicit_strategy = raw
            .patch_strategy
            .as_ref()
            .filter(|s| check(s, PATCH_STRATEGIES, "patch_strategy"))
            .map(|s| s.as_str().to_string());
        let keys: Vec<String> = raw.list_map_keys.iter().map(|k| k.to_string()).collect();
        match list_type.as_deref() {
            Some("map") if keys.is_empty() => push(syn::Error::new(
                raw.list_type.as_ref().map_or(ident.span(), |t| t.span()),
                "list_type = \"map\" needs the keys that identify an item: add \
                 list_map_key = \"name\" (repeatable)",
            )),
            Some("map") => {}
            _ if !keys.is_empty() => push(syn::Error::new(
                raw.list_map_keys[0].span(),
                "list_map_key only applies to list_type = \"map\"",
            )),
            _ => {}
        }
        // A map list merges by its first key and a set merges as a set, unless told otherwise,
        // so that strategic merge patches (kubectl apply, kubectl patch) keep other items.
        let (strategy, merge_key) = match (explicit_strategy, list_type.as_deref()) {
            (Some(s), _) if s == "replace" => (None, None),
            (Some(s), _) => (Some(s), raw.patch_merge_key.as_ref().map(|k| k.to_string())),
            (None, Some("map")) => (
                Some("merge".to_string()),
                raw.patch_merge_key
                    .as_ref()
                    .map(|k| k.to_string())
                    .or_else(|| keys.first().cloned()),
            ),
            (None, Some("set")) => (Some("merge".to_string()), None),
            (None, _) => (None, raw.patch_merge_key.as_ref().map(|k| k.to_string())),
        };
        if let Some(key) = &raw.patch_merge_key
            && strategy.as_deref().is_none_or(|s| !s.contains("merge"))
        {
            push(syn::Error::new(
                key.span(),
                "patch_merge_key needs patch_strategy = \"merge\" (or list_type = \"map\")",
            ));
        }
        if let Some(t) = list_type {
            extensions.push(("x-kubernetes-list-type", json_string(&t)));
        }
        if !keys.is_empty() {
            let items: Vec<String> = keys.iter().map(|k| json_string(k)).collect();
            extensions.push((
                "x-kubernetes-list-map-keys",
                format!("[{}]", items.join(",")),
            ));
        }
        if let Some(t) = map_type {
            extensions.push(("x-kubernetes-map-type", json_string(&t)));
        }
        if let Some(s) = strategy {
            extensions.push(("x-kubernetes-patch-strategy", json_string(&s)));
        }
        if let Some(k) = merge_key {
            extensions.push(("x-kubernetes-patch-merge-key", json_string(&k)));
        }
        if !extensions.is_empty() || !raw.validations.is_empty() {
            out.push(FieldExtensions {
                json_name,
                extensions,
                validations: raw.validations.into_iter().map(|r| r.0).collect(),
            });
        }
    }
    match errors {
        Some(e) => Err(e),
        None => Ok(out),
    }
}

/// `"text"` as a JSON string literal (attribute values are plain identifiers and keys).
fn json_string(text: &str) -> String {
    let escaped: String = text
        .chars()
        .flat_map(|c| match c {
            '"' => vec!['\\', '"'],
            '\\' => vec!['\\', '\\'],
            c => vec![c],
        })
        .collect();
    format!("\"{escaped}\"")
}

/// The `rename_all` of the struct's `#[serde(...)]`, if any.
fn serde_rename_all(attrs: &[syn::Attribute]) -> syn::Result<Option<String>> {
    serde_key(attrs, "rename_all")
}

/// The `rename` of a field's `#[serde(...)]`, if any.
fn serde_rename(attrs: &[syn::Attribute]) -> syn::Result<Option<String>> {
    serde_key(attrs, "rename")
}

/// The string value of `key = "..."` in `#[serde(...)]` attributes (other keys are skipped).
fn serde_key(attrs: &[syn::Attribute], key: &str) -> syn::Result<Option<String>> {
    let mut found = None;
    for attr in attrs.iter().filter(|a| a.path().is_ident("serde")) {
        attr.parse_nested_meta(|meta| {
            if meta.path.is_ident(key) && meta.input.peek(syn::Token![=]) {
                let value: syn::LitStr = meta.value()?.parse()?;
                found = Some(value.value());
            } else if meta.input.peek(syn::Token![=]) {
                // Skip the value of another key.
                let _: syn::Expr = meta.value()?.parse()?;
            } else if meta.input.peek(syn::token::Paren) {
                let _content;
                syn::parenthesized!(_content in meta.input);
            }
            Ok(())
        })?;
    }
    Ok(found)
}

/// A Rust field name under serde's `rename_all` rule.
fn rename(field: &str, rule: Option<&str>) -> String {
    let field = field.strip_prefix("r#").unwrap_or(field);
    let words: Vec<&str> = field.split('_').filter(|w| !w.is_empty()).collect();
    let capitalized = |w: &str| {
        let mut c = w.chars();
        c.next()
            .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
            .unwrap_or_default()
    };
    match rule {
        Some("camelCase") => words
            .iter()
            .enumerate()
            .map(|(i, w)| {
                if i == 0 {
                    w.to_string()
                } else {
                    capitalized(w)
                }
            })
            .collect(),
        Some("PascalCase") => words.iter().map(|w| capitalized(w)).collect(),
        Some("lowercase") => field.to_ascii_lowercase(),
        Some("UPPERCASE") => field.to_ascii_uppercase(),
        Some("SCREAMING_SNAKE_CASE") => field.to_ascii_uppercase(),
        Some("kebab-case") => field.replace('_', "-"),
        Some("SCREAMING-KEBAB-CASE") => field.replace('_', "-").to_ascii_uppercase(),
        _ => field.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serde_renaming() {
        assert_eq!(
            rename("disallowed_flunders", Some("camelCase")),
            "disallowedFlunders"
        );
        assert_eq!(rename("r#type", Some("camelCase")), "type");
        assert_eq!(rename("a_b", Some("PascalCase")), "AB");
        assert_eq!(rename("a_b", Some("kebab-case")), "a-b");
        assert_eq!(rename("a_b", None), "a_b");
    }

    #[test]
    fn map_lists_merge_by_their_first_key() {
        let input: syn::DeriveInput = syn::parse_quote! {
            #[serde(rename_all = "camelCase")]
            struct S {
                #[resource(list_type = "map", list_map_key = "name")]
                ports_list: Vec<P>,
                #[serde(rename = "x")]
                #[resource(list_type = "set")]
                y: Vec<String>,
                plain: i32,
            }
        };
        let fields = parse(&input).unwrap();
        assert_eq!(fields.len(), 2);
        assert_eq!(fields[0].json_name, "portsList");
        assert_eq!(
            fields[0].extensions,
            vec![
                ("x-kubernetes-list-type", "\"map\"".to_string()),
                ("x-kubernetes-list-map-keys", "[\"name\"]".to_string()),
                ("x-kubernetes-patch-strategy", "\"merge\"".to_string()),
                ("x-kubernetes-patch-merge-key", "\"name\"".to_string()),
            ]
        );
        assert_eq!(fields[1].json_name, "x");
        assert_eq!(
            fields[1].extensions[1],
            ("x-kubernetes-patch-strategy", "\"merge\"".to_string())
        );
    }

    #[test]
    fn rules_are_kept_as_written() {
        let input: syn::DeriveInput = syn::parse_quote! {
            struct S {
                #[resource(validation = "self > 0", validation = Rule::new("self < 9"))]
                size: i64,
            }
        };
        let fields = parse(&input).unwrap();
        let rules: Vec<String> = fields[0]
            .validations
            .iter()
            .map(|e| quote::quote!(#e).to_string())
            .collect();
        // A string stays a string (darling's own `syn::Expr` would parse its contents).
        assert_eq!(rules, ["\"self > 0\"", "Rule :: new (\"self < 9\")"]);
    }

    #[test]
    fn bad_values_are_reported() {
        let input: syn::DeriveInput = syn::parse_quote! {
            struct S {
                #[resource(list_type = "mapp")]
                a: Vec<String>,
                #[resource(list_type = "map")]
                b: Vec<String>,
            }
        };
        let err = parse(&input).err().unwrap().to_string();
        assert!(err.contains("unknown list_type `mapp`"), "{err}");
    }
}
