//! Which proxied requests are long-running, and so never keep a copy of their body for a
//! retry ([`super::replay`]): such a request's state lives as long as its stream, which its
//! client decides, and these requests are outside the in-flight limits.
//!
//! The check is kube-apiserver's `LongRunningFunc` (`BasicLongRunningRequestCheck` with the
//! verbs `watch` and `proxy` and the subresources `attach`, `exec`, `proxy`, `log` and
//! `portforward`, `pkg/controlplane/apiserver/config.go`), read for any method, with two more
//! signs a request will stay: a `watch` query parameter that is not false (whatever the path
//! and method, as a reading of the body's fate must not depend on what the backend serves),
//! and a request that takes over its connection (an `Upgrade`, or HTTP/2's `CONNECT`).

use http::Method;
use http::request::Parts;

use crate::authz::{ParsedRequest, Request};
use crate::endpoints::query::Query;

/// Subresources kube-apiserver serves as long-running (connect subresources and logs).
const LONG_RUNNING_SUBRESOURCES: &[&str] = &["attach", "exec", "proxy", "log", "portforward"];

/// Whether a proxied request is long-running (see the module's documentation).
pub(crate) fn is_long_running(parts: &Parts) -> bool {
    if parts.method == Method::CONNECT || super::upgrade::is_upgrade(&parts.headers) {
        return true;
    }
    if watch_asked(parts.uri.query()) {
        return true;
    }
    match ParsedRequest::of_parts(parts).request() {
        Request::Resource(attrs) => {
            matches!(attrs.verb.as_str(), "watch" | "proxy")
                || LONG_RUNNING_SUBRESOURCES.contains(&attrs.subresource.as_str())
        }
        Request::NonResource(_) => false,
    }
}

/// Whether the query has a `watch` parameter whose first value is not false (`0`, `false`):
/// as upstream's request-info reading turns a list into a watch.
fn watch_asked(query: Option<&str>) -> bool {
    let Some(raw) = query else {
        return false;
    };
    if !raw.contains("watch") && !raw.contains('%') {
        return false;
    }
    Query::parse(Some(raw))
        .get("watch")
        .is_some_and(|v| !(v == "0" || v.eq_ignore_ascii_case("false")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(method: Method, uri: &str, headers: &[(&str, &str)]) -> Parts {
        let mut req = http::Request::builder().method(method).uri(uri);
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        req.body(()).unwrap().into_parts().0
    }

    #[test]
    fn watches_connects_logs_and_upgrades_are_long_running() {
        let flunders = "/apis/wardle.example.com/v1alpha1/namespaces/ns/flunders";
        let long = [
            parts(Method::GET, &format!("{flunders}?watch=true"), &[]),
            parts(
                Method::GET,
                &format!("{flunders}?watch=1&timeoutSeconds=5"),
                &[],
            ),
            parts(Method::GET, &format!("{flunders}?w%61tch=yes"), &[]),
            // A named object or a write with `?watch` is not served as a watch, but keeps no
            // copy either.
            parts(Method::GET, &format!("{flunders}/f1?watch=true"), &[]),
            parts(Method::POST, &format!("{flunders}?watch=true"), &[]),
            parts(
                Method::GET,
                "/apis/wardle.example.com/v1alpha1/watch/namespaces/ns/flunders",
                &[],
            ),
            parts(
                Method::POST,
                "/api/v1/namespaces/ns/pods/p/exec?command=sh",
                &[],
            ),
            parts(
                Method::GET,
                "/api/v1/namespaces/ns/pods/p/log?follow=true",
                &[],
            ),
            parts(
                Method::POST,
                "/api/v1/namespaces/ns/pods/p/portforward",
                &[],
            ),
            parts(Method::GET, "/api/v1/namespaces/ns/services/s/proxy/x", &[]),
            parts(Method::GET, "/api/v1/proxy/namespaces/ns/pods/p", &[]),
            parts(
                Method::GET,
                &format!("{flunders}/f1/attach"),
                &[("connection", "Upgrade"), ("upgrade", "websocket")],
            ),
            parts(Method::CONNECT, &format!("{flunders}/f1/attach"), &[]),
        ];
        for p in &long {
            assert!(is_long_running(p), "{} {}", p.method, p.uri);
        }
        let short = [
            parts(Method::GET, flunders, &[]),
            parts(Method::GET, &format!("{flunders}?watch=false"), &[]),
            parts(Method::GET, &format!("{flunders}?watch=0&limit=5"), &[]),
            parts(Method::GET, &format!("{flunders}?resourceVersion=5"), &[]),
            parts(Method::POST, flunders, &[]),
            parts(Method::PUT, &format!("{flunders}/f1/status"), &[]),
            parts(Method::GET, "/apis/wardle.example.com/v1alpha1", &[]),
            parts(Method::GET, "/healthz", &[("upgrade", "websocket")]),
        ];
        for p in &short {
            assert!(!is_long_running(p), "{} {}", p.method, p.uri);
        }
    }
}
