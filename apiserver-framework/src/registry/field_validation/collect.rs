//! Collecting findings and building the paths they name.

use std::collections::HashSet;
use std::fmt::Write as _;

use super::{FieldIssue, MAX_ISSUES};

/// Findings of one check: de-duplicated, at most [`MAX_ISSUES`].
#[derive(Default)]
pub(super) struct Found {
    pub(super) issues: Vec<FieldIssue>,
    seen: HashSet<FieldIssue>,
}

impl Found {
    pub(super) fn push(&mut self, issue: FieldIssue) {
        if self.issues.len() < MAX_ISSUES && self.seen.insert(issue.clone()) {
            self.issues.push(issue);
        }
    }

    pub(super) fn into_paths(self) -> Vec<String> {
        self.issues
            .into_iter()
            .filter_map(|issue| match issue {
                FieldIssue::Unknown(path) | FieldIssue::Duplicate(path) => Some(path),
                _ => None,
            })
            .collect()
    }
}

/// Appends `.key` (or `key` at the start) to `path`; returns the length to truncate back to.
pub(super) fn push_key(path: &mut String, key: &str) -> usize {
    let len = path.len();
    if !path.is_empty() {
        path.push('.');
    }
    path.push_str(key);
    len
}

/// Appends `[index]` to `path`; returns the length to truncate back to.
pub(super) fn push_index(path: &mut String, index: usize) -> usize {
    let len = path.len();
    let _ = write!(path, "[{index}]");
    len
}
