//! Server-side request options (list, write, delete), parsed from the query string.

use crate::selector::{FieldSelector, LabelSelector};

/// How a list or watch reads objects.
#[derive(Clone, Debug, Default)]
pub struct ListOptions {
    /// `labelSelector`.
    pub label_selector: LabelSelector,
    /// `fieldSelector`.
    pub field_selector: FieldSelector,
    /// `resourceVersion` (empty = most recent).
    pub resource_version: String,
    /// `resourceVersionMatch` (`Exact`, `NotOlderThan` or empty).
    pub resource_version_match: String,
    /// `limit` (0 = no limit).
    pub limit: usize,
    /// `continue`.
    pub continue_token: String,
    /// `timeoutSeconds` (watch).
    pub timeout_seconds: Option<u64>,
    /// `allowWatchBookmarks`.
    pub allow_watch_bookmarks: bool,
    /// `sendInitialEvents`.
    pub send_initial_events: Option<bool>,
}

/// `fieldValidation` of a write.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FieldValidation {
    /// Unknown fields are dropped silently.
    Ignore,
    /// Unknown fields are dropped and reported in `Warning` headers.
    #[default]
    Warn,
    /// Unknown fields fail the request.
    Strict,
}

/// Options of create, update and patch.
#[derive(Clone, Debug, Default)]
pub struct WriteOptions {
    /// `dryRun=All`: run everything, store nothing.
    pub dry_run: bool,
    /// `fieldManager`.
    pub field_manager: String,
    /// `fieldValidation`.
    pub field_validation: FieldValidation,
    /// `force` (apply patches only): take over fields other managers own.
    pub force: Option<bool>,
    /// The write is a server-side apply whose `metadata.managedFields` the apply computed:
    /// the store records no `Update` entry for it.
    pub apply: bool,
}

/// Options of delete and deletecollection.
#[derive(Clone, Debug, Default)]
pub struct DeleteOptions {
    /// `dryRun=All`.
    pub dry_run: bool,
    /// `gracePeriodSeconds`.
    pub grace_period_seconds: Option<i64>,
    /// `preconditions.uid`.
    pub precondition_uid: Option<String>,
    /// `preconditions.resourceVersion`.
    pub precondition_resource_version: Option<String>,
    /// `propagationPolicy` (`Orphan`, `Background`, `Foreground`). Accepted and validated as
    /// upstream; the framework has no garbage collector of its own, so dependents (objects
    /// whose `ownerReferences` name the deleted one) are left to the host cluster's.
    pub propagation_policy: Option<String>,
    /// `orphanDependents` (deprecated form of `propagationPolicy=Orphan`).
    pub orphan_dependents: Option<bool>,
    /// `ignoreStoreReadErrorWithClusterBreakingPotential`: delete an object that cannot be
    /// read (decoded) from the storage, without admission or finalizers, as upstream's unsafe
    /// deletion of corrupt objects.
    pub ignore_store_read_error_with_cluster_breaking_potential: Option<bool>,
}

impl DeleteOptions {
    /// Upstream's DeleteOptions validation: a known propagation policy, and not both
    /// `orphanDependents` and `propagationPolicy`. Errors answer 422 `DeleteOptions.meta.k8s.io`.
    pub fn validate(&self) -> Result<(), crate::error::ApiError> {
        use crate::error::FieldError;
        let mut errs = Vec::new();
        if let Some(p) = &self.propagation_policy {
            if self.orphan_dependents.is_some() {
                errs.push(FieldError::invalid(
                    "propagationPolicy",
                    p.as_str(),
                    "orphanDependents and deletionPropagation cannot be both set",
                ));
            }
            if !matches!(p.as_str(), "Foreground" | "Background" | "Orphan") {
                errs.push(FieldError::not_supported(
                    "propagationPolicy",
                    p.as_str(),
                    &["Foreground", "Background", "Orphan", "nil"],
                ));
            }
        }
        if errs.is_empty() {
            Ok(())
        } else {
            Err(crate::error::ApiError::invalid_with(
                "DeleteOptions.meta.k8s.io",
                "meta.k8s.io",
                "DeleteOptions",
                "",
                &errs,
            ))
        }
    }
}
