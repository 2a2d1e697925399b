//! A server's lifecycle, as `k8s.io/apiserver`'s `pkg/server/hooks.go` and the graceful
//! termination of `genericapiserver.go`:
//!
//! * named **post-start hooks** run once the server listens; each is a `/readyz` check
//!   `poststarthook/<name>` that fails until its hook has finished;
//! * on shutdown, the `shutdown` check of `/readyz` fails at once and the **pre-shutdown
//!   hooks** run; once they are done and `--shutdown-delay-duration` has passed, the listener
//!   stops accepting, watches end, and requests in flight finish (bounded).

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use parking_lot::Mutex;

use crate::server::health::{HealthChecks, ReadinessFlag};

/// What a hook returns: `Err` with a reason when it failed.
pub(crate) type HookFuture = Pin<Box<dyn Future<Output = Result<(), String>> + Send>>;

type Hook = Box<dyn FnOnce() -> HookFuture + Send>;

/// How a server stops (see [`crate::server::serve::RunningServer::shutdown`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShutdownOptions {
    /// How long `/readyz` reports the shutdown before the listener stops accepting
    /// (`--shutdown-delay-duration`), so that load balancers stop sending requests.
    pub delay: Duration,
    /// How long requests in flight may take to finish once the listener has stopped.
    pub drain_timeout: Duration,
}

impl Default for ShutdownOptions {
    /// No delay (upstream's default); requests in flight get 60 s, the default request
    /// timeout that bounds them upstream.
    fn default() -> Self {
        ShutdownOptions {
            delay: Duration::ZERO,
            drain_timeout: Duration::from_secs(60),
        }
    }
}

/// The hooks of one server and its `shutdown` readiness check.
pub struct Lifecycle {
    post_start: Mutex<Vec<(String, Hook, ReadinessFlag)>>,
    pre_shutdown: Mutex<Vec<(String, Hook)>>,
    shutdown: ReadinessFlag,
}

impl std::fmt::Debug for Lifecycle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lifecycle")
            .field("shutting_down", &self.shutdown.is_set())
            .finish_non_exhaustive()
    }
}

impl Default for Lifecycle {
    fn default() -> Self {
        Lifecycle {
            post_start: Mutex::new(Vec::new()),
            pre_shutdown: Mutex::new(Vec::new()),
            shutdown: ReadinessFlag::shutdown(),
        }
    }
}

/// Boxes an async closure as a hook.
fn hook<F, Fut>(f: F) -> Hook
where
    F: FnOnce() -> Fut + Send + 'static,
    Fut: Future<Output = Result<(), String>> + Send + 'static,
{
    Box::new(move || Box::pin(f()) as HookFuture)
}

impl Lifecycle {
    /// Adds a post-start hook named `name` and returns its readiness check
    /// (`poststarthook/<name>`). A second hook of the same name is ignored, with a warning.
    pub fn add_post_start_hook<F, Fut>(&self, name: &str, f: F) -> Option<ReadinessFlag>
    where
        F: FnOnce() -> Fut + Send + 'static,
        Fut: Future<Output = Result<(), String>> + Send + 'static,
    {
        let mut hooks = self.post_start.lock();
        if hooks.iter().any(|(n, _, _)| n == name) {
            tracing::warn!(hook = name, "post-start hook already registered; ignored");
            return None;
        }
        let flag = ReadinessFlag::poststarthook(name);
        hooks.push((name.to_string(), hook(f), flag.clone()));
        Some(flag)
    }

    /// Adds a pre-shutdown hook named `name`. A second hook of the same name is ignored.
    pub fn add_pre_shutdown_hook<F, Fut>(&self, name: &str, f: F)
    where
        F: FnOnce() -> Fut + Send + 'static,
        Fut: Future<Output = Result<(), String>> + Send + 'static,
    {
        let mut hooks = self.pre_shutdown.lock();
        if hooks.iter().any(|(n, _)| n == name) {
            tracing::warn!(hook = name, "pre-shutdown hook already registered; ignored");
            return;
        }
        hooks.push((name.to_string(), hook(f)));
    }

    /// The `shutdown` check of `/readyz`: passes until shutdown begins.
    pub fn shutdown_check(&self) -> ReadinessFlag {
        self.shutdown.clone()
    }

    /// Whether shutdown has begun.
    pub fn is_shutting_down(&self) -> bool {
        self.shutdown.is_set()
    }

    /// Starts every post-start hook not yet started, each in its own task; its check (added
    /// to `readyz` too, for hooks of delegates) passes once it returns `Ok`. A failed hook
    /// is logged and its check keeps failing.
    pub fn start_post_start_hooks(&self, readyz: &HealthChecks) {
        let hooks = std::mem::take(&mut *self.post_start.lock());
        for (name, hook, flag) in hooks {
            readyz.add(std::sync::Arc::new(flag.clone()));
            tokio::spawn(async move {
                match hook().await {
                    Ok(()) => {
                        tracing::debug!(hook = %name, "post-start hook finished");
                        flag.set();
                    }
                    Err(e) => tracing::error!(hook = %name, error = %e, "post-start hook failed"),
                }
            });
        }
    }

    /// Marks the server as shutting down (`/readyz` fails from now on).
    pub fn begin_shutdown(&self) {
        self.shutdown.set();
    }

    /// Runs the pre-shutdown hooks not yet run, one after the other; failures are logged.
    pub async fn run_pre_shutdown_hooks(&self) {
        let hooks = std::mem::take(&mut *self.pre_shutdown.lock());
        for (name, hook) in hooks {
            if let Err(e) = hook().await {
                tracing::error!(hook = %name, error = %e, "pre-shutdown hook failed");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::health::respond;

    #[tokio::test]
    async fn post_start_hooks_gate_readiness() {
        let lifecycle = Lifecycle::default();
        let (go, wait) = tokio::sync::oneshot::channel::<()>();
        let flag = lifecycle
            .add_post_start_hook("slow", move || async move {
                wait.await.map_err(|e| e.to_string())
            })
            .unwrap();
        assert!(
            lifecycle
                .add_post_start_hook("slow", || async { Ok(()) })
                .is_none()
        );
        lifecycle.add_post_start_hook("broken", || async { Err("no".to_string()) });
        let readyz = HealthChecks::new("readyz");
        lifecycle.start_post_start_hooks(&readyz);
        assert_eq!(
            readyz.names(),
            ["ping", "poststarthook/slow", "poststarthook/broken"]
        );
        assert!(!flag.is_set());
        go.send(()).unwrap();
        for _ in 0..100 {
            if flag.is_set() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(flag.is_set());
        let res = respond(&readyz, Some("poststarthook/broken"), None).await;
        assert_eq!(res.status(), 500);
    }

    #[tokio::test]
    async fn shutdown_hooks_and_check() {
        let lifecycle = Lifecycle::default();
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        for name in ["a", "b", "a"] {
            let tx = tx.clone();
            lifecycle.add_pre_shutdown_hook(name, move || async move {
                tx.send(name).map_err(|e| e.to_string())
            });
        }
        assert!(!lifecycle.is_shutting_down());
        lifecycle.begin_shutdown();
        assert!(lifecycle.is_shutting_down());
        lifecycle.run_pre_shutdown_hooks().await;
        lifecycle.run_pre_shutdown_hooks().await;
        drop(tx);
        let mut ran = Vec::new();
        while let Some(n) = rx.recv().await {
            ran.push(n);
        }
        assert_eq!(ran, ["a", "b"]);
    }
}
