//! [`expect_status`]: a refusal's `Status`, checked; [`status_message`]: a `Status`'s message.

use std::fmt::Debug;

/// The `Status` of a request that must have been refused with `code` and `reason` (e.g. `403`,
/// `"Forbidden"`; `422`, `"Invalid"`). Panics, naming what came instead, when the request
/// succeeded or failed otherwise.
///
/// ```no_run
/// # async fn f(api: kube::Api<kube::core::DynamicObject>, obj: kube::core::DynamicObject) {
/// use apiserver_framework::testing::expect_status;
///
/// let status = expect_status(api.create(&Default::default(), &obj).await, 422, "Invalid");
/// assert!(status.message.contains("spec.size"));
/// # }
/// ```
#[track_caller]
pub fn expect_status<T: Debug>(
    result: Result<T, kube::Error>,
    code: u16,
    reason: &str,
) -> kube::core::Status {
    match result {
        Err(kube::Error::Api(status)) if status.code == code && status.reason == reason => *status,
        Err(kube::Error::Api(status)) => panic!(
            "expected a {code} {reason} Status, got {} {}: {}",
            status.code, status.reason, status.message
        ),
        Err(other) => panic!("expected a {code} {reason} Status, got the error {other}"),
        Ok(value) => panic!("expected a {code} {reason} Status, the request succeeded: {value:?}"),
    }
}

/// The `message` of a `Status` read as JSON (empty when it has none).
pub fn status_message(status: &serde_json::Value) -> &str {
    status["message"].as_str().unwrap_or_default()
}
