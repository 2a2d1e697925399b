//! Who writes: the `fieldManager` of a write, and upstream's checks of patch options.

use crate::endpoints::patch::PatchKind;
use crate::error::{ApiError, FieldError};
use crate::registry::rest::options::WriteOptions;

/// The longest field manager name (upstream's `FieldManagerMaxLength`).
pub const MAX_FIELD_MANAGER_LENGTH: usize = 128;

/// The manager of a write that names none: the user agent up to its first `/` (as upstream,
/// so `kubectl/v1.33.0 (linux/amd64)` writes as `kubectl`), its non-printable characters
/// dropped, at most 128 bytes; `unknown` when that leaves nothing (upstream's
/// `prefixFromUserAgent`, then `buildManagerInfo`'s default).
pub fn default_manager(user_agent: Option<&str>) -> String {
    let prefix = user_agent.unwrap_or("").split('/').next().unwrap_or("");
    let mut manager = String::new();
    for c in prefix.chars().filter(|c| !c.is_control()) {
        if manager.len() + c.len_utf8() > MAX_FIELD_MANAGER_LENGTH {
            break;
        }
        manager.push(c);
    }
    if manager.is_empty() {
        manager.push_str("unknown");
    }
    manager
}

fn invalid_options(kind: &str, errors: &[FieldError]) -> ApiError {
    ApiError::invalid_with(
        &format!("{kind}.meta.k8s.io"),
        "meta.k8s.io",
        kind,
        "",
        errors,
    )
}

/// Upstream's `ValidateFieldManager` on `opts.field_manager` (`kind` is the options kind,
/// e.g. `PatchOptions`): at most 128 characters, all printable.
fn field_manager_errors(manager: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if manager.len() > MAX_FIELD_MANAGER_LENGTH {
        errs.push(FieldError::too_long(
            "fieldManager",
            MAX_FIELD_MANAGER_LENGTH,
        ));
    }
    if manager.chars().any(|c| c.is_control()) {
        errs.push(FieldError::invalid(
            "fieldManager",
            manager,
            "must only contain printable characters",
        ));
    }
    errs
}

/// Checks a create's or update's field manager (422 `CreateOptions`/`UpdateOptions` as
/// upstream), then defaults it from the user agent.
pub fn check_write(
    options_kind: &str,
    opts: &mut WriteOptions,
    user_agent: Option<&str>,
) -> Result<(), ApiError> {
    let errs = field_manager_errors(&opts.field_manager);
    if !errs.is_empty() {
        return Err(invalid_options(options_kind, &errs));
    }
    if opts.force.is_some() {
        // Not a create or update option: ignored, as upstream ignores unknown parameters.
        opts.force = None;
    }
    if opts.field_manager.is_empty() {
        opts.field_manager = default_manager(user_agent);
    }
    Ok(())
}

/// Upstream's `ValidatePatchOptions`: `force` only with an apply patch, `fieldManager` required
/// for one (422 `PatchOptions.meta.k8s.io "" is invalid: …`); then other patches default the
/// manager from the user agent.
pub fn check_patch(
    kind: PatchKind,
    opts: &mut WriteOptions,
    user_agent: Option<&str>,
) -> Result<(), ApiError> {
    let mut errs = Vec::new();
    if kind == PatchKind::Apply {
        if opts.field_manager.is_empty() {
            errs.push(FieldError::required(
                "fieldManager",
                "is required for apply patch",
            ));
        }
    } else if opts.force.is_some() {
        errs.push(FieldError::forbidden(
            "force",
            "may not be specified for non-apply patch",
        ));
    }
    errs.extend(field_manager_errors(&opts.field_manager));
    if !errs.is_empty() {
        return Err(invalid_options("PatchOptions", &errs));
    }
    if opts.field_manager.is_empty() {
        opts.field_manager = default_manager(user_agent);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manager_from_user_agent() {
        assert_eq!(
            default_manager(Some("kubectl/v1.33.0 (linux/amd64) kubernetes/abc")),
            "kubectl"
        );
        assert_eq!(default_manager(Some("my-controller")), "my-controller");
        assert_eq!(default_manager(None), "unknown");
        assert_eq!(default_manager(Some("/v1")), "unknown");
        assert_eq!(default_manager(Some("a\u{7}b/1")), "ab");
        assert_eq!(default_manager(Some(&"x".repeat(300))).len(), 128);
    }

    #[test]
    fn patch_options_as_upstream() {
        let mut opts = WriteOptions::default();
        let e = check_patch(PatchKind::Apply, &mut opts, Some("kubectl/1")).unwrap_err();
        assert_eq!(e.code, 422);
        assert_eq!(
            e.message,
            "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch"
        );
        let mut opts = WriteOptions {
            force: Some(true),
            ..Default::default()
        };
        let e = check_patch(PatchKind::Merge, &mut opts, None).unwrap_err();
        assert_eq!(
            e.message,
            "PatchOptions.meta.k8s.io \"\" is invalid: force: Forbidden: may not be specified for non-apply patch"
        );
        let mut opts = WriteOptions::default();
        check_patch(PatchKind::Merge, &mut opts, Some("kubectl/1")).unwrap();
        assert_eq!(opts.field_manager, "kubectl");
    }
}
