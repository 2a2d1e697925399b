//! Waiting for an object to exist, to meet a condition, or to be gone.
//!
//! Each function watches the object (kube-rs' `watch_object`) rather than polling, and fails
//! with [`WaitError::Timeout`] after the given time, naming what it waited for and the last
//! state it saw.

use std::fmt::Debug;
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
