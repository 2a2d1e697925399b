//! A conformance suite for [`Storage`] backends.
//!
//! Every backend of this crate runs it, and so can yours: each check is a public async function
//! that takes a [`Factory`] (a closure returning a fresh, empty store), exercises one behaviour
//! and panics with a message naming the violation. [`run_all`] runs every check and reports all
//! failures together.
//!
//! ```no_run
//! use std::sync::Arc;
//! use apiserver_storage::{Storage, conformance, memory::MemoryStorage};
//!
//! // In a `#[tokio::test]`, with your backend in place of `MemoryStorage`:
//! async fn my_backend_conforms() {
//!     conformance::run_all(&|| {
//!         Box::pin(async { Arc::new(MemoryStorage::new()) as Arc<dyn Storage> })
//!     })
//!     .await;
//! }
//! ```
//!
//! The behaviour pinned here is the reference backend's ([`memory`](super::memory)), which
//! follows etcd's semantics:
//! - revisions are global: every successful write gets a revision greater than every earlier
//!   one; failed writes do not move it;
//! - prefixes are plain string prefixes and lists are in byte order of keys;
//! - a list at a revision (for instance to continue a paged list) sees the store exactly as it
//!   was then; below the compacted revision it answers `Compacted`, beyond the current one
//!   `FutureRevision`;
//! - a watch after revision `r` delivers every change with a revision greater than `r` under its
//!   prefix, in revision order, each once; `r = 0` means "from now", `r` in the future waits;
//!   after an `Err` the stream ends; below the compacted revision the watch fails with
//!   `Compacted` (from `watch` itself or as the stream's first item);
//! - a watcher that falls behind may be cut off with `Compacted`, but never skips events;
//! - compaction at `r` keeps revision `r` readable; again at or below it changes nothing (and
//!   may answer `Compacted`); beyond the current revision it answers `FutureRevision`.
//!
//! Checks use keys under their own prefixes, but each asks the factory for its own store, since
//! some count revisions from an empty store's start.

mod compaction;
mod list;
mod load;
mod support;
mod watch;
mod writes;

use std::any::Any;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;

use super::Storage;

pub(crate) use compaction::compaction_keeps_the_present;
pub(crate) use list::{
    list_at_old_revisions, list_by_prefix, list_pages_at_a_fixed_revision, list_revision_errors,
};
pub(crate) use load::{concurrent_compare_and_swap, concurrent_creates, large_values};
pub use watch::{
    slow_watcher_misses_nothing, watch_across_compaction, watch_from_a_future_revision,
    watch_from_now, watch_replays_history_then_follows_live, watch_sees_only_its_prefix,
    watchers_started_during_writes,
};
pub(crate) use writes::{
    compare_and_swap, create_if_absent, delete_with_and_without_precondition, get_reads_one_key,
    revisions_increase,
};

/// A store being opened by a [`Factory`].
pub type NewStore = Pin<Box<dyn Future<Output = Arc<dyn Storage>> + Send>>;

/// Opens a fresh, empty store each time it is called.
pub type Factory = dyn Fn() -> NewStore + Send + Sync;

type Check = for<'a> fn(&'a Factory) -> BoxFuture<'a, ()>;

/// Every check, by name, in the order [`run_all`] runs them.
const CHECKS: &[(&str, Check)] = &[
    ("revisions_increase", |f| revisions_increase(f).boxed()),
    ("create_if_absent", |f| create_if_absent(f).boxed()),
    ("compare_and_swap", |f| compare_and_swap(f).boxed()),
    ("delete_with_and_without_precondition", |f| {
        delete_with_and_without_precondition(f).boxed()
    }),
    ("get_reads_one_key", |f| get_reads_one_key(f).boxed()),
    ("list_by_prefix", |f| list_by_prefix(f).boxed()),
    ("list_pages_at_a_fixed_revision", |f| {
        list_pages_at_a_fixed_revision(f).boxed()
    }),
    ("list_at_old_revisions", |f| {
        list_at_old_revisions(f).boxed()
    }),
    ("list_revision_errors", |f| list_revision_errors(f).boxed()),
    ("compaction_keeps_the_present", |f| {
        compaction_keeps_the_present(f).boxed()
    }),
    ("watch_replays_history_then_follows_live", |f| {
        watch_replays_history_then_follows_live(f).boxed()
    }),
    ("watch_from_now", |f| watch_from_now(f).boxed()),
    ("watch_sees_only_its_prefix", |f| {
        watch_sees_only_its_prefix(f).boxed()
    }),
    ("watch_across_compaction", |f| {
        watch_across_compaction(f).boxed()
    }),
    ("watch_from_a_future_revision", |f| {
        watch_from_a_future_revision(f).boxed()
    }),
    ("watchers_started_during_writes", |f| {
        watchers_started_during_writes(f).boxed()
    }),
    ("slow_watcher_misses_nothing", |f| {
        slow_watcher_misses_nothing(f).boxed()
    }),
    ("concurrent_compare_and_swap", |f| {
        concurrent_compare_and_swap(f).boxed()
    }),
    ("concurrent_creates", |f| concurrent_creates(f).boxed()),
    ("large_values", |f| large_values(f).boxed()),
];

/// The names of the checks [`run_all`] runs, in order.
pub fn check_names() -> impl Iterator<Item = &'static str> {
    CHECKS.iter().map(|(name, _)| *name)
}

/// Runs every check, each on a fresh store from `factory`, and panics at the end listing the
/// checks that failed and why.
pub async fn run_all(factory: &Factory) {
    let mut failures = Vec::new();
    for (name, check) in CHECKS {
        if let Err(panic) = AssertUnwindSafe(check(factory)).catch_unwind().await {
            failures.push(format!("{name}: {}", panic_message(&*panic)));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} storage conformance checks failed:\n{}",
        failures.len(),
        CHECKS.len(),
        failures.join("\n")
    );
}

fn panic_message(panic: &(dyn Any + Send)) -> &str {
    panic
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| panic.downcast_ref::<&str>().copied())
        .unwrap_or("(a panic without a message)")
}
