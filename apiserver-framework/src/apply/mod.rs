//! Server-side apply: field ownership (`metadata.managedFields`), merging applied
//! configurations, conflicts — the engine of Kubernetes' structured-merge-diff plus
//! apimachinery's field manager, on JSON objects typed by a structural schema.
//!
//! Writes go through one of two calls, with the same [`Context`]:
//! - [`update`] after a create, update or non-apply patch has produced the new object: fields the
//!   write changed move to the writer's `Update` entry.
//! - [`apply`] for an apply patch: merges the configuration into the live object, refuses to
//!   change fields other managers own (`ApplyError::Conflicts`) unless forced, and removes the
//!   fields the applier stopped applying that nobody else applies.
//!
//! The caller stores the result with [`ManagedFields::write_to`] and resets the fields its
//! strategy resets (such as `status` on the main resource) in the object itself.

pub(crate) mod conflict;
pub(crate) mod error;
pub(crate) mod fieldpath;
pub(crate) mod managed;
pub(crate) mod merge;
pub(crate) mod typed;
mod value;

#[cfg(test)]
mod created_tests;
#[cfg(test)]
mod tests;

use std::borrow::Cow;

use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry;
use serde_json::{Map, Value};

pub use crate::schema::StructuralSchema;
pub use conflict::{Conflict, ConflictCause, Conflicts};
pub(crate) use error::ApplyError;
use fieldpath::FieldsV1Builder;
pub use fieldpath::{Path, PathElement, Set};
pub use managed::{Entry, ManagedFields, ManagedFieldsError, ManagedFieldsOperation};
pub use typed::fields_of;

use merge::{merge, remove_items};
use typed::{compare, compare_created, created_fields, fields_of_node};
use value::{metadata_field, values_equal};

/// Upstream caps the `Update` entries at this many, merging the oldest into `ancient-changes`.
pub(crate) const MAX_UPDATE_MANAGERS: usize = 10;
/// The manager that receives the existing fields on the first apply to an untracked object.
pub(crate) const BEFORE_FIRST_APPLY: &str = "before-first-apply";
const CURRENT_OPERATION: &str = "current-operation";
const ANCIENT_CHANGES: &str = "ancient-changes";

/// Who writes what, and how.
#[derive(Debug, Clone)]
pub struct Context<'a> {
    /// The model of the resource's schema.
    pub schema: &'a StructuralSchema,
    /// The field manager (`fieldManager` query parameter or the user agent's default).
    pub manager: &'a str,
    /// The request's `<group>/<version>`.
    pub api_version: &'a str,
    /// The subresource written (`status`), if any.
    pub subresource: Option<&'a str>,
    /// Fields whose changes nobody gains or loses (see [`reset_fields`]).
    pub reset_fields: Set,
    /// The time recorded on the entry that changes.
    pub now: Timestamp,
}

impl Context<'_> {
    fn entry(&self, manager: &str, operation: ManagedFieldsOperation, fields: Set) -> Entry {
        Entry {
            manager: manager.to_string(),
            operation,
            api_version: self.api_version.to_string(),
            time: Some(self.now),
            subresource: self.subresource.unwrap_or("").to_string(),
            fields,
        }
    }
}

/// Converts objects to the other versions of their kind, so that the fields of a manager
/// recorded in another version are compared in that version (upstream converts the old and
/// new objects to each manager's version).
pub(crate) trait VersionConverter: Send + Sync {
    /// `obj` in `api_version`, with that version's schema; `None` when it cannot be converted
    /// (its manager's fields are then compared as recorded).
    fn to_version(&self, obj: &Value, api_version: &str) -> Option<(Value, StructuralSchema)>;
}

/// What a write changed, as seen from each manager's version: the write's own version's sets
/// are borrowed, another version's are worked out when a manager of that version asks.
struct Changes<'a> {
    versions: Option<&'a dyn VersionConverter>,
    /// `None` on create: the empty object of `new`'s kind.
    old: Option<&'a Value>,
    new: &'a Value,
    reset: &'a Set,
    /// The write's API version.
    own_version: &'a str,
    /// In the write's API version: (modified or added, removed).
    own: (&'a Set, &'a Set),
    /// By other API version: (modified or added, removed).
    seen: std::collections::BTreeMap<String, (Set, Set)>,
}

impl<'a> Changes<'a> {
    fn new(
        ctx: &'a Context<'_>,
        versions: Option<&'a dyn VersionConverter>,
        old: Option<&'a Value>,
        new: &'a Value,
        changed: &'a Set,
        removed: &'a Set,
    ) -> Self {
        Changes {
            versions,
            old,
            new,
            reset: &ctx.reset_fields,
            own_version: ctx.api_version,
            own: (changed, removed),
            seen: std::collections::BTreeMap::new(),
        }
    }

    /// (modified or added, removed) in `api_version`.
    fn of(&mut self, api_version: &str) -> Result<(&Set, &Set), ApplyError> {
        if api_version == self.own_version {
            return Ok(self.own);
        }
        if !self.seen.contains_key(api_version) {
            let found = match self.versions {
                Some(v) => match (
                    v.to_version(
                        &self
                            .old
                            .map_or_else(|| Cow::Owned(empty_like(self.new)), Cow::Borrowed),
                        api_version,
                    ),
                    v.to_version(self.new, api_version),
                ) {
                    (Some((old, schema)), Some((new, _))) => {
                        let c = compare(&old, &new, schema.root())?.exclude(self.reset);
                        Some((c.modified.union(&c.added), c.removed))
                    }
                    _ => None,
                },
                None => None,
            };
            let found = found.unwrap_or_else(|| (self.own.0.clone(), self.own.1.clone()));
            self.seen.insert(api_version.to_string(), found);
        }
        let (changed, removed) = &self.seen[api_version];
        Ok((changed, removed))
    }
}

/// The fields a write to `subresource` does not own, as custom resources do: `status` on the
/// main resource when the status subresource exists, `spec` on `status`.
pub fn reset_fields(subresource: Option<&str>, status_subresource: bool) -> Set {
    match subresource {
        Some("status") => Set::from_paths([Path::fields(&["spec"])]),
        None if status_subresource => Set::from_paths([Path::fields(&["status"])]),
        _ => Set::new(),
    }
}

/// Fields never owned by anybody (upstream's `stripMetaManager`), built once.
fn strip_set() -> &'static Set {
    static STRIP: std::sync::OnceLock<Set> = std::sync::OnceLock::new();
    STRIP.get_or_init(build_strip_set)
}

fn build_strip_set() -> Set {
    let mut set = Set::from_paths([Path::fields(&["apiVersion"]), Path::fields(&["kind"])]);
    set.insert(&Path::fields(&["metadata"]));
    for f in [
        "name",
        "namespace",
        "creationTimestamp",
        "selfLink",
        "uid",
        "clusterName",
        "generation",
        "managedFields",
        "resourceVersion",
    ] {
        set.insert(&Path::fields(&["metadata", f]));
    }
    set
}

/// The object without `metadata.managedFields`: borrowed when it has none (a create's
/// object, or one the caller has already stripped with [`remove_managed_fields`]).
fn without_managed_fields(obj: &Value) -> Cow<'_, Value> {
    if metadata_field(obj, "managedFields").is_none() {
        return Cow::Borrowed(obj);
    }
    let mut obj = obj.clone();
    remove_managed_fields(&mut obj);
    Cow::Owned(obj)
}

/// Removes `metadata.managedFields` from an object the caller owns, so that [`update`] reads
/// it without copying it.
pub(crate) fn remove_managed_fields(obj: &mut Value) {
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("managedFields");
    }
}

/// An empty object of the same kind (what upstream's object creater makes).
fn empty_like(obj: &Value) -> Value {
    let mut out = Map::new();
    for k in ["apiVersion", "kind"] {
        if let Some(v) = obj.get(k) {
            out.insert(k.to_string(), v.clone());
        }
    }
    Value::Object(out)
}

/// Records a non-apply write: `old` is the stored object (`None` on create), `new` the object
/// about to be stored, `managed` the managers before the write (see
/// [`ManagedFields::for_update`]). Fields the write changed leave other managers and join the
/// writer's `Update` entry; entries left empty are dropped. Objects stored without managers
/// stay untracked until their first apply.
pub fn update(
    ctx: &Context<'_>,
    old: Option<&Value>,
    new: &Value,
    managed: ManagedFields,
) -> Result<ManagedFields, ApplyError> {
    update_across(ctx, None, old, new, managed)
}

/// `update(ctx, old, new, managed)?.encode_typed()`: the typed `metadata.managedFields` of
/// a write. A create whose request brought no managers has its writer's `FieldsV1` written by
/// the create's walk itself (no set of paths is built).
pub(crate) fn update_typed(
    ctx: &Context<'_>,
    old: Option<&Value>,
    new: &Value,
    managed: ManagedFields,
) -> Result<Option<Vec<ManagedFieldsEntry>>, ApplyError> {
    if old.is_none() && managed.is_empty() {
        let new = without_managed_fields(new);
        let root = ctx.schema.root();
        let fields = created_fields::<FieldsV1Builder>(&new, root, &ctx.reset_fields, strip_set())?;
        if let Some(fields) = fields {
            return Ok((!fields.is_empty()).then(|| {
                vec![managed::typed_entry(
                    ctx.manager,
                    ManagedFieldsOperation::Update,
                    ctx.api_version,
                    ctx.subresource.unwrap_or(""),
                    Some(ctx.now),
                    fields.into_value(),
                )]
            }));
        }
    }
    Ok(update(ctx, old, new, managed)?.encode_typed())
}

/// [`update`], comparing the fields of managers recorded in other versions in their version.
pub(crate) fn update_across(
    ctx: &Context<'_>,
    versions: Option<&dyn VersionConverter>,
    old: Option<&Value>,
    new: &Value,
    managed: ManagedFields,
) -> Result<ManagedFields, ApplyError> {
    if managed.is_empty() && old.is_some() {
        return Ok(managed);
    }
    let new = without_managed_fields(new);
    let old = old.map(without_managed_fields);
    let mut managed = managed;
    tracked_update(
        ctx,
        versions,
        ctx.manager,
        old.as_deref(),
        &new,
        &mut managed,
    )?;
    cap_update_managers(&mut managed);
    Ok(managed)
}

/// `managedFieldsUpdater` + `stripMetaManager` + `Updater.Update`; `old` is `None` on create
/// (the empty object of `new`'s kind, compared by [`compare_created`]'s one walk).
fn tracked_update(
    ctx: &Context<'_>,
    versions: Option<&dyn VersionConverter>,
    manager: &str,
    old: Option<&Value>,
    new: &Value,
    managed: &mut ManagedFields,
) -> Result<(), ApplyError> {
    let root = ctx.schema.root();
    // A create without managers: nobody loses fields, so only the writer's are needed, and the
    // walk leaves out the reset and never-owned fields as it meets them.
    if old.is_none()
        && managed.is_empty()
        && let Some(current) = created_fields::<Set>(new, root, &ctx.reset_fields, strip_set())?
    {
        record_update(ctx, manager, current, managed);
        return Ok(());
    }
    let comparison = match old {
        Some(old) => compare(old, new, root)?,
        None => compare_created(new, root)?,
    }
    .exclude(&ctx.reset_fields);
    // A create (or a write that only adds) has nothing modified: the added set is the change.
    let mut changed = if comparison.modified.is_empty() {
        comparison.added
    } else {
        comparison.modified.union(&comparison.added)
    };
    let mut changes = Changes::new(ctx, versions, old, new, &changed, &comparison.removed);
    let map = managed.map_mut();
    for entry in map.values_mut() {
        let (changed, removed) = changes.of(&entry.api_version)?;
        entry.fields = entry
            .fields
            .difference(&entry.fields.intersection(changed))
            .difference(removed);
    }
    map.retain(|_, e| !e.fields.is_empty());
    // `changed` is already outside the reset fields (`exclude`).
    changed.remove_all(strip_set());
    changed.remove_all(&comparison.removed);
    record_update(ctx, manager, changed, managed);
    Ok(())
}

/// Adds the fields a write changed (`current`: without reset, never-owned and removed fields)
/// to the writer's `Update` entry; a write that changed none leaves the managers as they are.
fn record_update(ctx: &Context<'_>, manager: &str, current: Set, managed: &mut ManagedFields) {
    if current.is_empty() {
        return;
    }
    let mut entry = ctx.entry(manager, ManagedFieldsOperation::Update, current);
    let id = entry.identifier();
    if let Some(previous) = managed.get(&id) {
        entry.fields = entry.fields.union(&previous.fields);
    }
    debug_assert_ne!(manager, CURRENT_OPERATION);
    managed.insert_identified(id, entry);
}

/// Merges the oldest `Update` entries into `ancient-changes` buckets (one per API version)
/// until at most [`MAX_UPDATE_MANAGERS`] remain.
fn cap_update_managers(managed: &mut ManagedFields) {
    let mut updaters: Vec<(i64, String)> = managed
        .map()
        .iter()
        .filter(|(_, e)| e.operation == ManagedFieldsOperation::Update)
        .map(|(id, e)| (e.time.map(|t| t.as_second()).unwrap_or(0), id.clone()))
        .collect();
    if updaters.len() <= MAX_UPDATE_MANAGERS {
        return;
    }
    updaters.sort();
    let mut length = updaters.len();
    let mut first_of_version: std::collections::BTreeMap<String, String> = Default::default();
    for (_, id) in updaters {
        if length <= MAX_UPDATE_MANAGERS {
            break;
        }
        let Some(entry) = managed.map().get(&id).cloned() else {
            continue;
        };
        let bucket = Entry {
            manager: ANCIENT_CHANGES.to_string(),
            operation: ManagedFieldsOperation::Update,
            api_version: entry.api_version.clone(),
            time: entry.time,
            subresource: String::new(),
            fields: Set::new(),
        };
        let bucket_id = bucket.identifier();
        let Some(first) = first_of_version.get(&entry.api_version).cloned() else {
            first_of_version.insert(entry.api_version.clone(), id);
            continue;
        };
        let map = managed.map_mut();
        let bucket_fields = match map.get(&bucket_id) {
            Some(b) => b.fields.clone(),
            None => map.remove(&first).map(|f| f.fields).unwrap_or_default(),
        };
        map.remove(&id);
        map.insert(
            bucket_id,
            Entry {
                fields: entry.fields.union(&bucket_fields),
                ..bucket
            },
        );
        length -= 1;
    }
}

/// Applies `config` (an apply patch) to `live` (`None` when the apply creates the object) for
/// the context's manager, taking over conflicting fields when `force`. Returns the object to
/// store (without `metadata.managedFields`) and the new managers.
pub fn apply(
    ctx: &Context<'_>,
    live: Option<&Value>,
    config: &Value,
    managed: ManagedFields,
    force: bool,
) -> Result<(Value, ManagedFields), ApplyError> {
    apply_across(ctx, None, live, config, managed, force)
}

/// [`apply`], comparing the fields of managers recorded in other versions in their version:
/// a field another manager owns through another version conflicts when the apply changes it.
pub(crate) fn apply_across(
    ctx: &Context<'_>,
    versions: Option<&dyn VersionConverter>,
    live: Option<&Value>,
    config: &Value,
    managed: ManagedFields,
    force: bool,
) -> Result<(Value, ManagedFields), ApplyError> {
    if metadata_field(config, "managedFields").is_some_and(|v| !v.is_null()) {
        return Err(ApplyError::BadRequest(
            "metadata.managedFields must be nil".into(),
        ));
    }
    let patch_version = config
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    if patch_version != ctx.api_version {
        return Err(ApplyError::BadRequest(format!(
            "Incorrect version specified in apply patch. Specified patch version: {patch_version}, expected: {}",
            ctx.api_version
        )));
    }
    let live = match live {
        Some(live) => without_managed_fields(live),
        None => Cow::Owned(empty_like(config)),
    };
    let mut managed = managed;
    if managed.is_empty() {
        tracked_update(ctx, versions, BEFORE_FIRST_APPLY, None, &live, &mut managed)?;
        cap_update_managers(&mut managed);
    }
    let root = ctx.schema.root();
    let merged = merge(&live, config, root)?;
    let applier = ctx.entry(ctx.manager, ManagedFieldsOperation::Apply, Set::new());
    let applier_id = applier.identifier();
    // Upstream means to drop the reset fields from the last applied set too, but discards the
    // result; so does this.
    let previous = managed.get(&applier_id).cloned();
    let last = previous.as_ref().map(|e| e.fields.clone());
    let fields = fields_of_node(config, root)?.recursive_difference(&ctx.reset_fields);
    managed.insert(Entry {
        fields,
        ..applier.clone()
    });
    let new = match last {
        Some(last) if !last.is_empty() => prune(ctx, &merged, &managed, &last)?,
        _ => merged,
    };

    let comparison = compare(&live, &new, root)?.exclude(&ctx.reset_fields);
    let changed = comparison.modified.union(&comparison.added);
    let mut changes = Changes::new(
        ctx,
        versions,
        Some(&live),
        &new,
        &changed,
        &comparison.removed,
    );
    let mut conflicts = Vec::new();
    for (id, entry) in managed.map() {
        if *id == applier_id {
            continue;
        }
        let (changed, _) = changes.of(&entry.api_version)?;
        for path in entry.fields.intersection(changed).paths() {
            conflicts.push(Conflict {
                manager: id.clone(),
                path,
            });
        }
    }
    if !force && !conflicts.is_empty() {
        conflicts.sort_by(|a, b| a.manager.cmp(&b.manager).then_with(|| a.path.cmp(&b.path)));
        return Err(ApplyError::Conflicts(Conflicts(conflicts)));
    }
    let map = managed.map_mut();
    for (id, entry) in map.iter_mut() {
        if *id != applier_id {
            let (changed, removed) = changes.of(&entry.api_version)?;
            entry.fields = entry
                .fields
                .difference(&entry.fields.intersection(changed))
                .difference(removed);
        } else {
            entry.fields = entry.fields.difference(strip_set());
            // A no-op apply leaves the object, and so the entry's time, as it was.
            if values_equal(&live, &new) {
                entry.time = previous.as_ref().and_then(|p| p.time);
            }
        }
    }
    map.retain(|_, e| !e.fields.is_empty());
    Ok((new, managed))
}

/// Removes from `merged` what the applier applied last time (`last`), does not apply now, and
/// no other manager owns (upstream's `prune`, `addBackOwnedItems`, `addBackDanglingItems`).
fn prune(
    ctx: &Context<'_>,
    merged: &Value,
    managed: &ManagedFields,
    last: &Set,
) -> Result<Value, ApplyError> {
    let root = ctx.schema.root();
    let last = last.ensure_named_fields_are_members(root);
    let pruned = remove_items(merged, &last, root);
    let owned = managed
        .map()
        .values()
        .fold(Set::new(), |acc, e| acc.union(&e.fields))
        .ensure_named_fields_are_members(root);
    let merged_set = fields_of_node(merged, root)?.ensure_named_fields_are_members(root);
    let pruned_set = fields_of_node(&pruned, root)?.ensure_named_fields_are_members(root);
    let pruned = remove_items(
        merged,
        &merged_set.difference(&pruned_set.union(&owned)),
        root,
    );
    let pruned_set = fields_of_node(&pruned, root)?.ensure_named_fields_are_members(root);
    Ok(remove_items(
        merged,
        &merged_set.difference(&pruned_set).intersection(&last),
        root,
    ))
}
