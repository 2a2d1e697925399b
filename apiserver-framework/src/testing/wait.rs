//! Waiting for an object to exist, to meet a condition, or to be gone, and for any other
//! condition a test can only look at.
//!
//! The object functions ([`until`], [`for_object`], [`for_condition`], [`for_deletion`]) watch
//! the object (kube-rs' `watch_object`) rather than polling. What has no event to await (a
//! process's readiness, a file, a metric, a log line) is polled: [`poll`] and [`eventually`]
//! in async tests, [`poll_blocking`] and [`eventually_blocking`] in blocking code, looking every
//! [`POLL_INTERVAL`]. Every wait fails with [`WaitError::Timeout`] (or, for `eventually`, a
//! panic) after the given time, naming what it waited for and the last state it saw; a test
//! waits for a condition this way, never for a fixed time.

use std::fmt::{Debug, Display};
use std::future::Future;
use std::time::Duration;

use futures::StreamExt;
use kube::Resource;
use kube::api::Api;
use serde::de::DeserializeOwned;

/// Why a wait ended without what it waited for.
#[derive(Debug, thiserror::Error)]
pub enum WaitError {
    /// The time ran out.
    #[error("waited {timeout:?} for {what}; last seen: {last}")]
    Timeout {
        /// What was waited for.
        what: String,
        /// How long.
        timeout: Duration,
        /// The last state seen (`absent`, or the object).
        last: String,
    },
    /// The watch failed.
    #[error("watching for {what}: {error}")]
    Watch {
        /// What was waited for.
        what: String,
        /// The error.
        error: String,
    },
}

/// Waits until the object `name` of `api` satisfies `condition` (`None`: absent) and returns
/// what was seen then.
pub async fn until<K>(
    api: &Api<K>,
    name: &str,
    timeout: Duration,
    what: &str,
    condition: impl Fn(Option<&K>) -> bool,
) -> Result<Option<K>, WaitError>
where
    K: Clone + Debug + Send + DeserializeOwned + Resource + 'static,
{
    let what = format!("{name} {what}");
    let mut last = String::from("nothing yet");
    let watch = async {
        let mut stream = kube::runtime::watcher::watch_object(api.clone(), name).boxed();
        while let Some(item) = stream.next().await {
            match item {
                Ok(object) => {
                    if condition(object.as_ref()) {
                        return Ok(object);
                    }
                    last = match &object {
                        Some(o) => format!("{o:?}"),
                        None => "absent".into(),
                    };
                }
                Err(e) => {
                    return Err(WaitError::Watch {
                        what: what.clone(),
                        error: e.to_string(),
                    });
                }
            }
        }
        Err(WaitError::Watch {
            what: what.clone(),
            error: "the watch ended".into(),
        })
    };
    let outcome = tokio::time::timeout(timeout, watch).await;
    match outcome {
        Ok(result) => result,
        Err(_) => Err(WaitError::Timeout {
            what,
            timeout,
            last,
        }),
    }
}

/// Waits until the object `name` exists, and returns it.
pub async fn for_object<K>(api: &Api<K>, name: &str, timeout: Duration) -> Result<K, WaitError>
where
    K: Clone + Debug + Send + DeserializeOwned + Resource + 'static,
{
    let seen = until(api, name, timeout, "to exist", |o| o.is_some()).await?;
    Ok(seen.expect("the condition holds only for an existing object"))
}

/// Waits until the object `name` exists and satisfies `condition`, and returns it.
///
/// ```no_run
/// # async fn f(api: kube::Api<kube::core::DynamicObject>) -> Result<(), Box<dyn std::error::Error>> {
/// use std::time::Duration;
/// use apiserver_framework::testing::wait;
///
/// let ready = wait::for_condition(&api, "w1", Duration::from_secs(10), |w| {
///     w.data["status"]["ready"] == true
/// })
/// .await?;
/// # Ok(()) }
/// ```
pub async fn for_condition<K>(
    api: &Api<K>,
    name: &str,
    timeout: Duration,
    condition: impl Fn(&K) -> bool,
) -> Result<K, WaitError>
where
    K: Clone + Debug + Send + DeserializeOwned + Resource + 'static,
{
    let seen = until(api, name, timeout, "to meet the condition", |o| {
        o.is_some_and(&condition)
    })
    .await?;
    Ok(seen.expect("the condition holds only for an existing object"))
}

/// Waits until the object `name` is gone.
pub async fn for_deletion<K>(api: &Api<K>, name: &str, timeout: Duration) -> Result<(), WaitError>
where
    K: Clone + Debug + Send + DeserializeOwned + Resource + 'static,
{
    until(api, name, timeout, "to be deleted", |o| o.is_none()).await?;
    Ok(())
}

/// The timeout of a polling wait for `what`, `last` what it saw last.
fn timed_out(what: &str, timeout: Duration, last: String) -> WaitError {
    WaitError::Timeout {
        what: what.to_string(),
        timeout,
        last,
    }
}

/// How long the polling waits ([`poll`], [`eventually`] and their blocking twins) pause between
/// two looks.
pub const POLL_INTERVAL: Duration = Duration::from_millis(20);

/// Calls `attempt` until it returns `Ok`, and returns that value; after `timeout`, fails with
/// [`WaitError::Timeout`] naming `what` and the last error. Between two attempts it pauses
/// [`POLL_INTERVAL`]. The deadline is tokio's clock, so a test with a paused clock advances
/// through it.
///
/// ```no_run
/// # async fn f(url: String) -> Result<(), Box<dyn std::error::Error>> {
/// use std::time::Duration;
/// use apiserver_framework::testing::wait;
///
/// let stream = wait::poll("the server to listen", Duration::from_secs(10), || async {
///     tokio::net::TcpStream::connect(url.as_str()).await
/// })
/// .await?;
/// # Ok(()) }
/// ```
pub async fn poll<T, E, F, Fut>(
    what: &str,
    timeout: Duration,
    mut attempt: F,
) -> Result<T, WaitError>
where
    E: Display,
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
{
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        let last = match attempt().await {
            Ok(value) => return Ok(value),
            Err(e) => e.to_string(),
        };
        if tokio::time::Instant::now() >= deadline {
            return Err(timed_out(what, timeout, last));
        }
        // The pause between two looks of a polling wait (what it waits for has no event).
        tokio::time::sleep(POLL_INTERVAL).await;
    }
}

/// Waits until `check` holds, looking every [`POLL_INTERVAL`]; panics, naming `what`, when it
/// does not within `timeout`.
pub async fn eventually<F, Fut>(what: &str, timeout: Duration, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let outcome = poll(what, timeout, || {
        let looked = check();
        async move { if looked.await { Ok(()) } else { Err("not yet") } }
    })
    .await;
    if let Err(e) = outcome {
        panic!("{e}");
    }
}

/// [`poll`] for blocking code (a thread of its own, a synchronous test): calls `attempt` until
/// it returns `Ok`, pausing [`POLL_INTERVAL`] in between, and fails with
/// [`WaitError::Timeout`] after `timeout`.
pub fn poll_blocking<T, E: Display>(
    what: &str,
    timeout: Duration,
    mut attempt: impl FnMut() -> Result<T, E>,
) -> Result<T, WaitError> {
    let deadline = std::time::Instant::now() + timeout;
    loop {
        let last = match attempt() {
            Ok(value) => return Ok(value),
            Err(e) => e.to_string(),
        };
        if std::time::Instant::now() >= deadline {
            return Err(timed_out(what, timeout, last));
        }
        // The pause between two looks of a polling wait (what it waits for has no event).
        std::thread::sleep(POLL_INTERVAL);
    }
}

/// [`eventually`] for blocking code: waits until `check` holds; panics, naming `what`, when it
/// does not within `timeout`.
pub fn eventually_blocking(what: &str, timeout: Duration, mut check: impl FnMut() -> bool) {
    let outcome = poll_blocking(
        what,
        timeout,
        || if check() { Ok(()) } else { Err("not yet") },
    );
    if let Err(e) = outcome {
        panic!("{e}");
    }
}

/// The sum of the samples of the metric `name` in `metrics` (the text of a `/metrics`) whose
/// labels include every `(label, value)` of `labels`.
pub fn metric_sum(metrics: &str, name: &str, labels: &[(&str, &str)]) -> f64 {
    metrics
        .lines()
        .filter_map(|line| {
            let rest = line.strip_prefix(name)?;
            let (series, value) = rest.rsplit_once(' ')?;
            if !(series.is_empty() || series.starts_with('{')) {
                return None;
            }
            let matches = labels
                .iter()
                .all(|(k, v)| series.contains(&format!("{k}=\"{v}\"")));
            matches.then(|| value.parse::<f64>().ok()).flatten()
        })
        .sum()
}

/// The watches a framework server has open: the sum of the `apiserver_registered_watchers`
/// gauges in `metrics`, the text of its `/metrics`.
pub fn registered_watchers(metrics: &str) -> f64 {
    metric_sum(metrics, "apiserver_registered_watchers", &[])
}

/// Waits until the server `client` talks to has at least `count` watches open (its
/// `apiserver_registered_watchers` gauges): a watch a test started in the background is
/// established once the server counts it.
pub async fn for_watchers(
    client: &kube::Client,
    count: usize,
    timeout: Duration,
) -> Result<(), WaitError> {
    let what = format!("{count} watches to be open");
    poll(&what, timeout, || async {
        let request = http::Request::get("/metrics")
            .body(Vec::new())
            .map_err(|e| e.to_string())?;
        let metrics = client
            .request_text(request)
            .await
            .map_err(|e| e.to_string())?;
        let open = registered_watchers(&metrics);
        if open >= count as f64 {
            Ok(())
        } else {
            Err(format!("{open} open"))
        }
    })
    .await
}
