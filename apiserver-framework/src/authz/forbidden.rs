//! The `403 Forbidden` a denied request gets, word for word as upstream's
//! (`responsewriters.ForbiddenStatusError` and apimachinery's `NewForbidden`):
//!
//! - `flunders.wardle.example.com "x" is forbidden: User "alice" cannot get resource "flunders"
//!   in API group "wardle.example.com" in the namespace "default"` (without `"x"` when no object
//!   is named; `at the cluster scope` instead of the namespace; `"flunders/status"` for a
//!   subresource);
//! - `forbidden: User "alice" cannot get path "/apis"` for non-resource requests, with empty
//!   details;
//! - the authorizer's reason, if any, appended as `: <reason>`.
//!
//! `&`, `<` and `>` of the message (not of the reason) are HTML-escaped, and the response
//! carries `X-Content-Type-Options: nosniff`.

use axum::body::Body;
use http::{HeaderValue, Response, header};

use super::{Attributes, Request};
use crate::endpoints::negotiation::{self, Output};
use crate::endpoints::response;
use crate::error::{ApiError, StatusDetails};
use crate::quote::go_quote;

/// Replaces `&`, `<` and `>` with HTML entities, so that errors do not read as HTML.
pub fn sanitize(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            c => out.push(c),
        }
    }
    out
}

/// `User "<user>" cannot <verb> …`: who may not do what (not yet sanitized).
pub fn forbidden_message(attrs: &Attributes) -> String {
    let user = go_quote(&attrs.user.username);
    let r = match &attrs.request {
        Request::NonResource(n) => {
            return format!("User {user} cannot {} path {}", n.verb, go_quote(&n.path));
        }
        Request::Resource(r) => r,
    };
    let resource = if r.subresource.is_empty() {
        r.resource.clone()
    } else {
        format!("{}/{}", r.resource, r.subresource)
    };
    let what = format!(
        "User {user} cannot {} resource {} in API group {}",
        r.verb,
        go_quote(&resource),
        go_quote(&r.group)
    );
    if r.namespace.is_empty() {
        format!("{what} at the cluster scope")
    } else {
        format!("{what} in the namespace {}", go_quote(&r.namespace))
    }
}

/// The Forbidden error for a denied request, with the authorizer's `reason` (may be empty).
pub fn forbidden(attrs: &Attributes, reason: &str) -> ApiError {
    let mut err = sanitize(&forbidden_message(attrs));
    if !reason.is_empty() {
        err.push_str(": ");
        err.push_str(reason);
    }
    let (group, resource, name) = match &attrs.request {
        Request::Resource(r) => (r.group.as_str(), r.resource.as_str(), r.name.as_str()),
        Request::NonResource(_) => ("", "", ""),
    };
    let qualified = match (group, resource) {
        ("", "") => String::new(),
        ("", r) => r.to_string(),
        (g, r) => format!("{r}.{g}"),
    };
    let message = if qualified.is_empty() {
        format!("forbidden: {err}")
    } else if name.is_empty() {
        format!("{qualified} is forbidden: {err}")
    } else {
        format!("{qualified} {} is forbidden: {err}", go_quote(name))
    };
    ApiError::new(403, "Forbidden", message).with_details(StatusDetails {
        name: name.to_string(),
        group: group.to_string(),
        kind: resource.to_string(),
        ..Default::default()
    })
}

/// The 403 response: the Status in the form the `Accept` header asks for (JSON unless it
/// prefers YAML), with `X-Content-Type-Options: nosniff`.
pub fn forbidden_response(
    attrs: &Attributes,
    reason: &str,
    accept: Option<&str>,
) -> Response<Body> {
    let output = match negotiation::negotiate(accept, None) {
        Ok(Output::Yaml) => Output::Yaml,
        _ => Output::Json,
    };
    let mut res = response::error(&output, &forbidden(attrs, reason));
    res.headers_mut().insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    res
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::authz::{NonResourceAttributes, ResourceAttributes};
    use crate::user::UserInfo;

    fn resource(verb: &str, group: &str, ns: &str, res: &str, name: &str, sub: &str) -> Request {
        Request::Resource(ResourceAttributes {
            verb: verb.into(),
            group: group.into(),
            version: "v1".into(),
            resource: res.into(),
            subresource: sub.into(),
            namespace: ns.into(),
            name: name.into(),
            ..Default::default()
        })
    }

    fn attrs(user: &str, request: Request) -> Attributes {
        Attributes {
            user: UserInfo::new(user, &["system:authenticated"]),
            request,
        }
    }

    const W: &str = "wardle.example.com";

    #[test]
    fn messages() {
        let cases = [
            (
                attrs(
                    "alice",
                    resource("create", W, "default", "flunders", "", ""),
                ),
                "",
                r#"flunders.wardle.example.com is forbidden: User "alice" cannot create resource "flunders" in API group "wardle.example.com" in the namespace "default""#,
            ),
            (
                attrs("alice", resource("get", W, "default", "flunders", "x", "")),
                "",
                r#"flunders.wardle.example.com "x" is forbidden: User "alice" cannot get resource "flunders" in API group "wardle.example.com" in the namespace "default""#,
            ),
            (
                attrs(
                    "alice",
                    resource("update", W, "ns", "flunders", "x", "status"),
                ),
                "",
                r#"flunders.wardle.example.com "x" is forbidden: User "alice" cannot update resource "flunders/status" in API group "wardle.example.com" in the namespace "ns""#,
            ),
            (
                attrs("bob", resource("list", W, "", "fischers", "", "")),
                "",
                r#"fischers.wardle.example.com is forbidden: User "bob" cannot list resource "fischers" in API group "wardle.example.com" at the cluster scope"#,
            ),
            (
                attrs(
                    "bob",
                    resource("get", "", "kube-system", "pods", "p", "log"),
                ),
                "",
                r#"pods "p" is forbidden: User "bob" cannot get resource "pods/log" in API group "" in the namespace "kube-system""#,
            ),
            (
                attrs(
                    "alice",
                    Request::NonResource(NonResourceAttributes {
                        path: "/apis".into(),
                        verb: "get".into(),
                    }),
                ),
                "",
                r#"forbidden: User "alice" cannot get path "/apis""#,
            ),
            (
                attrs(
                    "alice",
                    resource("delete", W, "default", "flunders", "x", ""),
                ),
                "no RBAC policy matched",
                r#"flunders.wardle.example.com "x" is forbidden: User "alice" cannot delete resource "flunders" in API group "wardle.example.com" in the namespace "default": no RBAC policy matched"#,
            ),
            // The message is escaped, the reason is not; names are Go-quoted.
            (
                attrs("<b>&", resource("get", W, "n<s>", "flunders", "a\"b", "")),
                "<i>",
                r#"flunders.wardle.example.com "a\"b" is forbidden: User "&lt;b&gt;&amp;" cannot get resource "flunders" in API group "wardle.example.com" in the namespace "n&lt;s&gt;": <i>"#,
            ),
            (
                attrs(
                    "system:anonymous",
                    Request::NonResource(NonResourceAttributes {
                        path: "/a&b".into(),
                        verb: "post".into(),
                    }),
                ),
                "",
                r#"forbidden: User "system:anonymous" cannot post path "/a&amp;b""#,
            ),
        ];
        for (a, reason, want) in cases {
            let e = forbidden(&a, reason);
            assert_eq!(e.message, want);
            assert_eq!((e.code, e.reason.as_str()), (403, "Forbidden"));
        }
    }

    #[test]
    fn details() {
        let e = forbidden(
            &attrs(
                "alice",
                resource("get", W, "default", "flunders", "x", "status"),
            ),
            "",
        );
        let json = serde_json::to_value(e.status()).unwrap();
        assert_eq!(
            json["details"],
            serde_json::json!({"name": "x", "group": W, "kind": "flunders"})
        );
        assert_eq!(json["code"], 403);
        let e = forbidden(
            &attrs(
                "alice",
                Request::NonResource(NonResourceAttributes {
                    path: "/apis".into(),
                    verb: "get".into(),
                }),
            ),
            "",
        );
        let json = serde_json::to_value(e.status()).unwrap();
        assert_eq!(json["details"], serde_json::json!({}));
        let e = forbidden(&attrs("bob", resource("list", "", "", "nodes", "", "")), "");
        let json = serde_json::to_value(e.status()).unwrap();
        assert_eq!(json["details"], serde_json::json!({"kind": "nodes"}));
    }

    #[test]
    fn response_headers() {
        let a = attrs("alice", resource("list", W, "", "fischers", "", ""));
        let res = forbidden_response(&a, "", None);
        assert_eq!(res.status(), 403);
        assert_eq!(res.headers()["x-content-type-options"], "nosniff");
        assert_eq!(res.headers()["content-type"], "application/json");
        let res = forbidden_response(&a, "", Some("application/yaml"));
        assert_eq!(res.headers()["content-type"], "application/yaml");
    }
}
