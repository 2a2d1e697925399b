//! Apply conflicts and their messages (apimachinery `internal/conflict.go`).

use std::collections::BTreeMap;

use serde_json::Value;

use super::fieldpath::Path;

/// One field another manager owns with a different value.
#[derive(Debug, Clone, PartialEq)]
pub struct Conflict {
    /// The other manager's identifier (`{"manager":..,"operation":..}` JSON, as upstream).
    pub manager: String,
    /// The field.
    pub path: Path,
}

/// One entry of `details.causes` of the 409 answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConflictCause {
    /// Always `FieldManagerConflict`.
    pub reason: &'static str,
    /// `conflict with "<manager>"` (plus ` with subresource ..`, ` using <apiVersion>`).
    pub message: String,
    /// The field path, e.g. `.spec.size`.
    pub field: String,
}

/// The conflicts of a rejected apply, sorted by manager then path.
#[derive(Debug, Clone, PartialEq)]
pub struct Conflicts(pub Vec<Conflict>);

/// Upstream's `printManager`: `"name"`, then ` with subresource "s"`, then for Update managers
/// ` using <apiVersion>` (identifiers carry no time, so upstream never prints ` at <time>`).
pub(crate) fn print_manager(identifier: &str) -> String {
    let Ok(Value::Object(entry)) = serde_json::from_str::<Value>(identifier) else {
        return format!("{identifier:?}");
    };
    let s = |k: &str| entry.get(k).and_then(Value::as_str).unwrap_or("");
    let mut out = format!("{:?}", s("manager"));
    if !s("subresource").is_empty() {
        out.push_str(&format!(" with subresource {:?}", s("subresource")));
    }
    if s("operation") == "Update" {
        out.push_str(&format!(" using {}", s("apiVersion")));
        if !s("time").is_empty() {
            out.push_str(&format!(" at {}", s("time")));
        }
    }
    out
}

impl Conflicts {
    /// The `message` of the 409 Status, exactly as upstream's `NewConflictError`.
    pub fn message(&self) -> String {
        if self.0.len() == 1 {
            let c = &self.0[0];
            return format!(
                "Apply failed with 1 conflict: conflict with {}: {}",
                print_manager(&c.manager),
                c.path
            );
        }
        let mut by_manager: BTreeMap<&str, Vec<&Path>> = BTreeMap::new();
        for c in &self.0 {
            by_manager.entry(&c.manager).or_default().push(&c.path);
        }
        let mut lines = Vec::new();
        for (manager, paths) in by_manager {
            lines.push(format!("conflicts with {}:", print_manager(manager)));
            for p in paths {
                lines.push(format!("- {p}"));
            }
        }
        format!(
            "Apply failed with {} conflicts: {}",
            self.0.len(),
            lines.join("\n")
        )
    }

    /// The `details.causes` of the 409 Status.
    pub fn causes(&self) -> Vec<ConflictCause> {
        self.0
            .iter()
            .map(|c| ConflictCause {
                reason: "FieldManagerConflict",
                message: format!("conflict with {}", print_manager(&c.manager)),
                field: c.path.to_string(),
            })
            .collect()
    }
}
