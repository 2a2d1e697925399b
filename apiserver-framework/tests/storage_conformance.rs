//! The storage conformance suite on every backend of the crate.

use std::sync::Arc;

use apiserver_framework::storage::Storage;
use apiserver_framework::storage::conformance::{self, NewStore};
use apiserver_framework::storage::memory::MemoryStorage;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_conforms() {
    conformance::run_all(&|| -> NewStore {
        Box::pin(async { Arc::new(MemoryStorage::new()) as Arc<dyn Storage> })
    })
    .await;
}
