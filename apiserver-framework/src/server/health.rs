//! `/healthz`, `/livez` and `/readyz`: named health checks, answered like
//! `k8s.io/apiserver`'s `healthz` package.
//!
//! * `GET /<endpoint>`: every check runs in order. All passing gives `200 ok` (or, with
//!   `?verbose`, one `[+]<check> ok` line per check then `<endpoint> check passed`). Any
//!   failure gives a `500` that is always verbose, `[-]<check> failed: reason withheld` for
//!   failed checks, ending with `<endpoint> check failed`.
//! * `?exclude=<check>` (repeatable) skips checks (`[+]<check> excluded: ok`); names that
//!   match nothing add `warn: some health checks cannot be excluded: no matches for "a","b"`.
//! * `GET /<endpoint>/<check>`: `ok`, or `500 internal server error: <error>`.

use crate::quote::go_quote;
use std::collections::BTreeSet;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use async_trait::async_trait;
use axum::body::Body;
use http::{HeaderValue, Response, StatusCode, header};
use parking_lot::RwLock;

/// A named health check.
#[async_trait]
pub trait HealthCheck: Send + Sync {
    /// The check's name, shown in verbose output and used in `/<endpoint>/<name>` and
    /// `?exclude=<name>`. May contain `/` (e.g. `poststarthook/start-informers`).
    fn name(&self) -> &str;

    /// An optional group; `?exclude=<group>` skips every check of the group
    /// (`[+]<check> excluded with <group>: ok`).
    fn group(&self) -> Option<&str> {
        None
    }

    /// Run the check. The error text is only shown on `/<endpoint>/<name>`; the aggregate
    /// endpoint withholds it.
    async fn check(&self) -> Result<(), String>;
}

/// The built-in check that always passes, named `ping`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Ping;

#[async_trait]
impl HealthCheck for Ping {
    fn name(&self) -> &str {
        "ping"
    }

    async fn check(&self) -> Result<(), String> {
        Ok(())
    }
}

/// A health check from a name and a synchronous closure.
pub struct FnCheck<F> {
    name: String,
    f: F,
}

impl<F> FnCheck<F>
where
    F: Fn() -> Result<(), String> + Send + Sync,
{
    /// A check named `name` that calls `f`.
    pub fn new(name: impl Into<String>, f: F) -> Self {
        FnCheck {
            name: name.into(),
            f,
        }
    }
}

impl<F> fmt::Debug for FnCheck<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FnCheck").field("name", &self.name).finish()
    }
}

#[async_trait]
impl<F> HealthCheck for FnCheck<F>
where
    F: Fn() -> Result<(), String> + Send + Sync,
{
    fn name(&self) -> &str {
        &self.name
    }

    async fn check(&self) -> Result<(), String> {
        (self.f)()
    }
}

/// A check driven by a shared flag (an `Arc<AtomicBool>`); clones share the flag.
///
/// [`ReadinessFlag::new`] and [`ReadinessFlag::poststarthook`] fail until [`set`] is called
/// (a start-up step that has not finished); [`ReadinessFlag::shutdown`] passes until
/// [`set`] is called (the server has begun shutting down).
///
/// [`set`]: ReadinessFlag::set
#[derive(Clone, Debug)]
pub struct ReadinessFlag {
    name: String,
    message: String,
    fail_when_set: bool,
    flag: Arc<AtomicBool>,
}

impl ReadinessFlag {
    /// A check named `name` that fails with `message` until [`set`](Self::set).
    pub fn new(name: impl Into<String>, message: impl Into<String>) -> Self {
        ReadinessFlag {
            name: name.into(),
            message: message.into(),
            fail_when_set: false,
            flag: Arc::new(AtomicBool::new(false)),
        }
    }

    /// A check named `name` that passes until [`set`](Self::set), then fails with `message`.
    pub fn fails_once_set(name: impl Into<String>, message: impl Into<String>) -> Self {
        ReadinessFlag {
            fail_when_set: true,
            ..ReadinessFlag::new(name, message)
        }
    }

    /// The check of a post-start hook: `poststarthook/<hook>`, failing with `not finished`
    /// until the hook completes.
    pub fn poststarthook(hook: &str) -> Self {
        ReadinessFlag::new(format!("poststarthook/{hook}"), "not finished")
    }

    /// The `shutdown` check of `/readyz`: passes until shutdown starts, then fails with
    /// `process is shutting down`.
    pub fn shutdown() -> Self {
        ReadinessFlag::fails_once_set("shutdown", "process is shutting down")
    }

    /// Raise the flag.
    pub fn set(&self) {
        self.flag.store(true, Ordering::SeqCst);
    }

    /// Whether the flag has been raised.
    pub fn is_set(&self) -> bool {
        self.flag.load(Ordering::SeqCst)
    }

    /// The shared flag itself.
    pub fn flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.flag)
    }
}

#[async_trait]
impl HealthCheck for ReadinessFlag {
    fn name(&self) -> &str {
        &self.name
    }

    async fn check(&self) -> Result<(), String> {
        if self.is_set() == self.fail_when_set {
            Err(self.message.clone())
        } else {
            Ok(())
        }
    }
}

/// The checks of one endpoint (`healthz`, `livez` or `readyz`), starting with `ping`.
///
/// Checks can be added at any time through a shared reference.
pub struct HealthChecks {
    name: String,
    checks: RwLock<Vec<Arc<dyn HealthCheck>>>,
}

impl fmt::Debug for HealthChecks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HealthChecks")
            .field("name", &self.name)
            .field("checks", &self.names())
            .finish()
    }
}

impl HealthChecks {
    /// The checks of the endpoint `endpoint_name` (`healthz`; a leading `/` is dropped),
    /// holding only `ping`.
    pub fn new(endpoint_name: &str) -> Self {
        let name = endpoint_name.trim_start_matches('/').to_string();
        HealthChecks {
            name,
            checks: RwLock::new(vec![Arc::new(Ping)]),
        }
    }

    /// The endpoint name used in texts (`healthz check passed`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Add a check after the existing ones; a check with the same name is replaced in place.
    pub fn add(&self, check: Arc<dyn HealthCheck>) {
        let mut checks = self.checks.write();
        match checks.iter_mut().find(|c| c.name() == check.name()) {
            Some(slot) => *slot = check,
            None => checks.push(check),
        }
    }

    /// Builder form of [`add`](Self::add).
    pub fn with(self, check: Arc<dyn HealthCheck>) -> Self {
        self.add(check);
        self
    }

    /// The names of the checks, in order.
    pub fn names(&self) -> Vec<String> {
        self.checks
            .read()
            .iter()
            .map(|c| c.name().to_string())
            .collect()
    }

    /// Whether a check of this name exists (i.e. `/<endpoint>/<name>` is served).
    pub fn contains(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    /// The check of this name.
    pub fn get(&self, name: &str) -> Option<Arc<dyn HealthCheck>> {
        self.checks
            .read()
            .iter()
            .find(|c| c.name() == name)
            .cloned()
    }

    fn snapshot(&self) -> Vec<Arc<dyn HealthCheck>> {
        self.checks.read().clone()
    }
}

fn text_response(status: StatusCode, body: String) -> Response<Body> {
    let mut res = Response::new(Body::from(body));
    *res.status_mut() = status;
    res.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    res.headers_mut().insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    res
}

/// Answer a health request.
///
/// `sub_path` is what follows `/<endpoint>/` (`None` for the endpoint itself), `query` the raw
/// query string. An unknown check gives a plain `404 page not found`; a router that wants its
/// own 404 can test [`HealthChecks::contains`] first.
pub async fn respond(
    checks: &HealthChecks,
    sub_path: Option<&str>,
    query: Option<&str>,
) -> Response<Body> {
    match sub_path {
        None => respond_all(checks, query.unwrap_or("")).await,
        Some(name) => match checks.get(name) {
            Some(check) => match check.check().await {
                // Upstream writes a passing check's `ok` with fmt.Fprint: a sniffed text type,
                // no nosniff (its failure goes through http.Error, which sets it).
                Ok(()) => {
                    let mut res = text_response(StatusCode::OK, "ok".into());
                    res.headers_mut().remove(header::X_CONTENT_TYPE_OPTIONS);
                    res
                }
                Err(err) => text_response(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    format!("internal server error: {err}\n"),
                ),
            },
            None => text_response(StatusCode::NOT_FOUND, "404 page not found\n".into()),
        },
    }
}

async fn respond_all(checks: &HealthChecks, query: &str) -> Response<Body> {
    let params = parse_query(query);
    let verbose = params.iter().any(|(k, _)| k == "verbose");
    let excluded: BTreeSet<String> = params
        .iter()
        .filter(|(k, _)| k == "exclude")
        .map(|(_, v)| v.clone())
        .collect();
    let mut unknown = excluded.clone();
    let mut output = String::new();
    let mut failed: Vec<String> = Vec::new();

    for check in checks.snapshot() {
        let name = check.name();
        if excluded.contains(name) {
            unknown.remove(name);
            output.push_str(&format!("[+]{name} excluded: ok\n"));
            continue;
        }
        if let Some(group) = check.group()
            && excluded.contains(group)
        {
            unknown.remove(group);
            output.push_str(&format!("[+]{name} excluded with {group}: ok\n"));
            continue;
        }
        match check.check().await {
            Ok(()) => output.push_str(&format!("[+]{name} ok\n")),
            Err(err) => {
                tracing::debug!(endpoint = %checks.name, check = name, error = %err, "health check failed");
                output.push_str(&format!("[-]{name} failed: reason withheld\n"));
                failed.push(name.to_string());
            }
        }
    }
    if !unknown.is_empty() {
        let quoted: Vec<String> = unknown.iter().map(|n| go_quote(n)).collect();
        output.push_str(&format!(
            "warn: some health checks cannot be excluded: no matches for {}\n",
            quoted.join(",")
        ));
    }

    if !failed.is_empty() {
        tracing::info!(endpoint = %checks.name, failed = %failed.join(","), "health check failed");
        output.push_str(&format!("{} check failed\n", checks.name));
        return text_response(StatusCode::INTERNAL_SERVER_ERROR, output);
    }
    if !verbose {
        return text_response(StatusCode::OK, "ok".into());
    }
    output.push_str(&format!("{} check passed\n", checks.name));
    text_response(StatusCode::OK, output)
}

/// `k=v&k2=v2` into decoded pairs (`+` is a space, `%XX` a byte); keys without `=` get "".
fn parse_query(query: &str) -> Vec<(String, String)> {
    query
        .trim_start_matches('?')
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            (percent_decode(k), percent_decode(v))
        })
        .collect()
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3])
                    .ok()
                    .and_then(|h| u8::from_str_radix(h, 16).ok());
                match hex {
                    Some(b) => {
                        out.push(b);
                        i += 2;
                    }
                    None => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    async fn call(
        checks: &HealthChecks,
        sub: Option<&str>,
        query: Option<&str>,
    ) -> (StatusCode, String, http::HeaderMap) {
        let res = respond(checks, sub, query).await;
        let status = res.status();
        let headers = res.headers().clone();
        let body = res.into_body().collect().await.unwrap().to_bytes();
        (status, String::from_utf8(body.to_vec()).unwrap(), headers)
    }

    struct Grouped;

    #[async_trait]
    impl HealthCheck for Grouped {
        fn name(&self) -> &str {
            "etcd-0"
        }
        fn group(&self) -> Option<&str> {
            Some("etcd")
        }
        async fn check(&self) -> Result<(), String> {
            Err("down".into())
        }
    }

    fn sample() -> (HealthChecks, ReadinessFlag) {
        let hook = ReadinessFlag::poststarthook("start-informers");
        let checks = HealthChecks::new("/readyz")
            .with(Arc::new(FnCheck::new("log", || Ok(()))))
            .with(Arc::new(hook.clone()));
        (checks, hook)
    }

    #[tokio::test]
    async fn ok_plain_and_verbose() {
        let (checks, hook) = sample();
        hook.set();
        let (status, body, headers) = call(&checks, None, None).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(body, "ok");
        assert_eq!(headers[header::CONTENT_TYPE], "text/plain; charset=utf-8");
        assert_eq!(headers[header::X_CONTENT_TYPE_OPTIONS], "nosniff");

        let (status, body, _) = call(&checks, None, Some("verbose")).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(
            body,
            "[+]ping ok\n[+]log ok\n[+]poststarthook/start-informers ok\nreadyz check passed\n"
        );
        let (_, body2, _) = call(&checks, None, Some("verbose=false&x=1")).await;
        assert_eq!(body2, body);
    }

    #[tokio::test]
    async fn failures_are_verbose() {
        let (checks, _hook) = sample();
        let (status, body, headers) = call(&checks, None, None).await;
        assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(
            body,
            "[+]ping ok\n[+]log ok\n[-]poststarthook/start-informers failed: reason withheld\nreadyz check failed\n"
        );
        assert_eq!(headers[header::CONTENT_TYPE], "text/plain; charset=utf-8");
        assert_eq!(headers[header::X_CONTENT_TYPE_OPTIONS], "nosniff");
    }

    #[tokio::test]
    async fn excludes() {
        let (checks, _hook) = sample();
        let (status, body, _) = call(
            &checks,
            None,
            Some("exclude=poststarthook%2Fstart-informers&exclude=zeta&exclude=alpha&exclude=zeta&verbose"),
        )
        .await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(
            body,
            "[+]ping ok\n[+]log ok\n[+]poststarthook/start-informers excluded: ok\n\
             warn: some health checks cannot be excluded: no matches for \"alpha\",\"zeta\"\n\
             readyz check passed\n"
        );
        // Without verbose, success is still a bare "ok".
        let (_, body, _) = call(&checks, None, Some("exclude=poststarthook/start-informers")).await;
        assert_eq!(body, "ok");
    }

    #[tokio::test]
    async fn grouped_excludes() {
        let checks = HealthChecks::new("livez").with(Arc::new(Grouped));
        let (status, _, _) = call(&checks, None, None).await;
        assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
        let (status, body, _) = call(&checks, None, Some("exclude=etcd&verbose")).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(
            body,
            "[+]ping ok\n[+]etcd-0 excluded with etcd: ok\nlivez check passed\n"
        );
    }

    #[tokio::test]
    async fn single_checks() {
        let (checks, hook) = sample();
        let (status, body, headers) = call(&checks, Some("ping"), None).await;
        assert_eq!((status, body.as_str()), (StatusCode::OK, "ok"));
        // A passing check's `ok` carries no nosniff (upstream's fmt.Fprint), a failing one
        // does (http.Error).
        assert!(headers.get(header::X_CONTENT_TYPE_OPTIONS).is_none());
        let (status, body, headers) =
            call(&checks, Some("poststarthook/start-informers"), None).await;
        assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(body, "internal server error: not finished\n");
        assert_eq!(headers[header::CONTENT_TYPE], "text/plain; charset=utf-8");
        assert_eq!(headers[header::X_CONTENT_TYPE_OPTIONS], "nosniff");
        hook.set();
        let (status, body, _) = call(&checks, Some("poststarthook/start-informers"), None).await;
        assert_eq!((status, body.as_str()), (StatusCode::OK, "ok"));
        let (status, _, _) = call(&checks, Some("nope"), None).await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        assert!(!checks.contains("nope"));
        assert!(checks.contains("log"));
    }

    #[tokio::test]
    async fn shutdown_flag() {
        let shutdown = ReadinessFlag::shutdown();
        let checks = HealthChecks::new("readyz").with(Arc::new(shutdown.clone()));
        assert_eq!(call(&checks, None, None).await.0, StatusCode::OK);
        shutdown.set();
        assert!(shutdown.is_set());
        assert!(shutdown.flag().load(Ordering::SeqCst));
        let (status, body, _) = call(&checks, None, None).await;
        assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(
            body,
            "[+]ping ok\n[-]shutdown failed: reason withheld\nreadyz check failed\n"
        );
        let (_, body, _) = call(&checks, Some("shutdown"), None).await;
        assert_eq!(body, "internal server error: process is shutting down\n");
    }

    #[test]
    fn set_management() {
        let checks = HealthChecks::new("healthz");
        assert_eq!(checks.name(), "healthz");
        assert_eq!(checks.names(), ["ping"]);
        checks.add(Arc::new(FnCheck::new("a", || Ok(()))));
        checks.add(Arc::new(FnCheck::new("b", || Ok(()))));
        checks.add(Arc::new(FnCheck::new("a", || Err("x".into()))));
        assert_eq!(checks.names(), ["ping", "a", "b"]);
        assert!(format!("{checks:?}").contains("\"a\""));
    }

    #[tokio::test]
    async fn replaced_check_is_used() {
        let checks = HealthChecks::new("healthz");
        checks.add(Arc::new(FnCheck::new("a", || Ok(()))));
        checks.add(Arc::new(FnCheck::new("a", || Err("boom".into()))));
        let (status, body, _) = call(&checks, Some("a"), None).await;
        assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(body, "internal server error: boom\n");
    }

    #[test]
    fn query_decoding() {
        assert_eq!(
            parse_query("a=b%2Fc&verbose&x=1+2&bad=%zz&end=%4"),
            vec![
                ("a".into(), "b/c".into()),
                ("verbose".into(), String::new()),
                ("x".into(), "1 2".into()),
                ("bad".into(), "%zz".into()),
                ("end".into(), "%4".into()),
            ]
        );
        assert_eq!(go_quote("a\"b"), "\"a\\\"b\"");
    }
}
