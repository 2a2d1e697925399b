//! CPU-heavy work on large request bodies (decoding, field validation, server-side apply's
//! configuration) runs off the async worker threads: on tokio's blocking pool, at most as many
//! at a time as the machine has CPUs. A few requests with multi-megabyte bodies then queue for
//! those threads instead of occupying every worker, so health checks, watches and small
//! requests keep being served.

use std::sync::{Arc, LazyLock};

use tokio::sync::Semaphore;

use crate::error::ApiError;

/// Bodies up to this size are worked on where the request runs: handing them to another
/// thread would cost more than the work.
pub const INLINE_BODY_BYTES: usize = 64 * 1024;

/// One permit per CPU: the blocking pool itself grows to hundreds of threads.
static PERMITS: LazyLock<Arc<Semaphore>> = LazyLock::new(|| {
    let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
    Arc::new(Semaphore::new(cpus))
});

/// Runs `work` on a body of `body_len` bytes: inline for small bodies, otherwise on the
/// blocking pool once one of the per-CPU permits is free. The permit is held by the work
/// itself, so work whose request has gone away still counts until it ends.
pub async fn run<T, F>(body_len: usize, work: F) -> Result<T, ApiError>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T, ApiError> + Send + 'static,
{
    if body_len <= INLINE_BODY_BYTES {
        return work();
    }
    let permit = PERMITS
        .clone()
        .acquire_owned()
        .await
        .map_err(ApiError::internal)?;
    let task = tokio::task::spawn_blocking(move || {
        let _permit = permit;
        work()
    });
    match task.await {
        Ok(result) => result,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(e) => Err(ApiError::internal(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "current_thread")]
    async fn large_bodies_leave_the_worker_thread() {
        let worker = std::thread::current().id();
        let small = run(10, move || Ok(std::thread::current().id())).await;
        assert_eq!(small.unwrap(), worker);
        let large = run(INLINE_BODY_BYTES + 1, move || {
            Ok(std::thread::current().id())
        })
        .await;
        assert_ne!(large.unwrap(), worker);
        let err = run(INLINE_BODY_BYTES + 1, || -> Result<(), _> {
            Err(ApiError::bad_request("no"))
        })
        .await;
        assert_eq!(err.unwrap_err().code, 400);
    }

    /// While the blocking work of a large body runs, the (single) worker thread serves other
    /// futures.
    #[tokio::test(flavor = "current_thread")]
    async fn the_worker_stays_free() {
        let slow = tokio::spawn(run(INLINE_BODY_BYTES + 1, || {
            std::thread::sleep(std::time::Duration::from_millis(500));
            Ok(())
        }));
        let started = std::time::Instant::now();
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        assert!(started.elapsed() < std::time::Duration::from_millis(400));
        slow.await.unwrap().unwrap();
    }
}
