//! Checks shared by the storage backend tests (`storage_memory.rs`, `storage_etcd.rs`).

#![allow(dead_code)]

use std::sync::Arc;

use apiserver_framework::storage::{ListPage, ListRequest, Storage};
use bytes::Bytes;

/// A list of the first `limit` keys under `prefix`, at the latest revision.
pub fn first_page(prefix: &str, limit: usize) -> ListRequest {
    ListRequest {
        prefix: prefix.into(),
        limit,
        ..Default::default()
    }
}

/// A list under `prefix` of the keys after the last of `page`, at `page`'s revision.
pub fn after(page: &ListPage, prefix: &str) -> ListRequest {
    ListRequest {
        prefix: prefix.into(),
        start_after: page.items.last().map(|kv| kv.key.to_string()),
        revision: Some(page.revision),
        ..Default::default()
    }
}

/// `s` as a value.
pub fn b(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

/// Eight writers create 50 keys each under `/cc/` at once: each writer sees its revisions
/// increase, and all 400 revisions are distinct.
pub async fn concurrent_writers_get_distinct_increasing_revisions<S: Storage>(s: Arc<S>) {
    let mut tasks = Vec::new();
    for t in 0..8 {
        let s = s.clone();
        tasks.push(tokio::spawn(async move {
            let mut revs = Vec::new();
            for i in 0..50 {
                revs.push(s.create(&format!("/cc/{t}/{i}"), b("v")).await.unwrap());
            }
            revs
        }));
    }
    let mut all = Vec::new();
    for t in tasks {
        let revs = t.await.unwrap();
        assert!(revs.windows(2).all(|w| w[0] < w[1]));
        all.extend(revs);
    }
    all.sort();
    all.dedup();
    assert_eq!(all.len(), 400);
}
