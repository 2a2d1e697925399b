//! Naming rules: definition keys, operation ids and tags.
//!
//! * **Definitions** of served kinds follow the rule upstream uses for CustomResourceDefinitions:
//!   the group's DNS labels reversed, then the version and the kind —
//!   `wardle.example.com/v1alpha1 Flunder` → `com.example.wardle.v1alpha1.Flunder`. Kinds of the
//!   core group (empty group name) are named `io.k8s.api.core.<version>.<Kind>`. Meta types
//!   keep their upstream names (`io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta`, ...).
//! * **Operation ids** follow `k8s.io/apiserver`: the verb (`read`, `list`, `create`,
//!   `replace`, `patch`, `delete`, `watch`), then the group without a `.k8s.io` suffix and the
//!   version, camel-cased (`WardleExampleComV1alpha1`; `Core` for the core group), then the rest
//!   of the upstream route name: `Namespaced` for namespaced paths, the kind, `Status` for the
//!   status subresource, `List` for collection watches and `ForAllNamespaces` for the
//!   all-namespaces paths. Collection deletes are `delete<GV>Collection<...>`, exactly as
//!   upstream's prefix rule makes them. Example: `listWardleExampleComV1alpha1NamespacedFlunder`.
//! * **Tags** are `<group>_<version>` camel-cased the same way: `wardleExampleCom_v1alpha1`.

use crate::resource::ResourceInfo;

/// The definition key of a served kind: reversed group labels, version and kind.
///
/// `("wardle.example.com", "v1alpha1", "Flunder")` → `com.example.wardle.v1alpha1.Flunder`.
pub(crate) fn definition_name(group: &str, version: &str, kind: &str) -> String {
    if group.is_empty() {
        return format!("io.k8s.api.core.{version}.{kind}");
    }
    let reversed: Vec<&str> = group.split('.').rev().collect();
    format!("{}.{version}.{kind}", reversed.join("."))
}

/// The definition key of a resource's kind.
pub(crate) fn resource_definition_name(info: &ResourceInfo) -> String {
    definition_name(&info.group, &info.version, &info.kind)
}

/// The definition key of a resource's list kind.
pub(crate) fn list_definition_name(info: &ResourceInfo) -> String {
    definition_name(&info.group, &info.version, &info.list_kind())
}

/// Key of a meta type: `io.k8s.apimachinery.pkg.apis.meta.v1.<name>`.
pub(crate) fn meta(name: &str) -> String {
    format!("io.k8s.apimachinery.pkg.apis.meta.v1.{name}")
}

/// Upstream's `ToValidOperationID`: keeps letters, `_` and (after the first character) digits;
/// every other character is dropped and capitalizes the next kept one.
pub(crate) fn to_valid_operation_id(s: &str, capitalize_first: bool) -> String {
    let mut out = String::with_capacity(s.len());
    let mut capitalize = capitalize_first;
    for (i, c) in s.chars().enumerate() {
        if c.is_alphabetic() || c == '_' || (i != 0 && c.is_numeric()) {
            if capitalize {
                out.extend(c.to_uppercase());
                capitalize = false;
            } else {
                out.push(c);
            }
        } else {
            capitalize = true;
        }
    }
    out
}

/// The group as it appears in operation ids and tags: `core` for the core group, otherwise
/// the name without a `.k8s.io` suffix.
fn group_token(group: &str) -> &str {
    if group.is_empty() {
        "core"
    } else {
        group.strip_suffix(".k8s.io").unwrap_or(group)
    }
}

/// The operation id of `verb` (`read`, `list`, ...) for the rest of an upstream route name
/// (`NamespacedFlunder`, `CollectionNamespacedFlunder`, ...) in a group-version.
pub(crate) fn operation_id(verb: &str, group: &str, version: Option<&str>, rest: &str) -> String {
    let mut out = String::from(verb);
    out.push_str(&to_valid_operation_id(group_token(group), true));
    if let Some(version) = version {
        out.push_str(&to_valid_operation_id(version, true));
    }
    out.push_str(&to_valid_operation_id(rest, true));
    out
}

/// The tag of a group-version's operations (`wardleExampleCom_v1alpha1`), or of a group's
/// (`wardleExampleCom`) when `version` is `None`.
pub(crate) fn tag(group: &str, version: Option<&str>) -> String {
    let mut out = to_valid_operation_id(group_token(group), false);
    if let Some(version) = version {
        out.push('_');
        out.push_str(&to_valid_operation_id(version, false));
    }
    out
}
