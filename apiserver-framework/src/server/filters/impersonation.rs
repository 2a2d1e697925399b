//! Impersonation: an authenticated user acting as another through the `Impersonate-User`,
//! `Impersonate-Group`, `Impersonate-Uid` and `Impersonate-Extra-<key>` headers, as upstream's
//! `WithImpersonation` filter (`k8s.io/apiserver/pkg/endpoints/filters/impersonation.go`).
//!
//! Each thing impersonated is authorized for the caller with the verb `impersonate`: `users`,
//! `groups` and `serviceaccounts` in the core group, `uids` and `userextras/<key>` in
//! `authentication.k8s.io`. A refusal answers upstream's 403; otherwise the request goes on as
//! the impersonated user (recorded in the audit event) and is authorized as such.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::body::Body;
use http::Response;
use http::request::Parts;

use std::convert::Infallible;
use std::task::{Context, Poll};

use futures::future::{BoxFuture, Either};
use tower::{Layer, Service, ServiceExt};

use super::filter::ChainInner;
use crate::audit::AuditContext;
use crate::authz::{self, Attributes, Authorizer, Decision, Request, ResourceAttributes};
use crate::user::UserInfo;

const USER_HEADER: &str = "impersonate-user";
const GROUP_HEADER: &str = "impersonate-group";
const UID_HEADER: &str = "impersonate-uid";
const EXTRA_PREFIX: &str = "impersonate-extra-";

const SERVICE_ACCOUNT_PREFIX: &str = "system:serviceaccount:";
const AUTHENTICATION_GROUP: &str = "authentication.k8s.io";

/// One thing a request asks to impersonate.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Target {
    User(String),
    ServiceAccount { namespace: String, name: String },
    Group(String),
    Extra { key: String, value: String },
    Uid(String),
}

impl Target {
    /// The attributes authorized for it.
    fn resource(&self) -> ResourceAttributes {
        let (group, resource, subresource, namespace, name) = match self {
            Target::User(n) => ("", "users", "", "", n.as_str()),
            Target::ServiceAccount { namespace, name } => {
                ("", "serviceaccounts", "", namespace.as_str(), name.as_str())
            }
            Target::Group(n) => ("", "groups", "", "", n.as_str()),
            Target::Extra { key, value } => (
                AUTHENTICATION_GROUP,
                "userextras",
                key.as_str(),
                "",
                value.as_str(),
            ),
            Target::Uid(u) => (AUTHENTICATION_GROUP, "uids", "", "", u.as_str()),
        };
        ResourceAttributes {
            verb: "impersonate".into(),
            group: group.into(),
            resource: resource.into(),
            subresource: subresource.into(),
            namespace: namespace.into(),
            name: name.into(),
            ..Default::default()
        }
    }

    /// As Go prints the `ObjectReference` upstream builds for it (`%v`).
    fn go_string(&self) -> String {
        let v1 = "authentication.k8s.io/v1";
        let (kind, ns, name, api_version, field_path) = match self {
            Target::User(n) => ("User", "", n.as_str(), "", ""),
            Target::ServiceAccount { namespace, name } => {
                ("ServiceAccount", namespace.as_str(), name.as_str(), "", "")
            }
            Target::Group(n) => ("Group", "", n.as_str(), "", ""),
            Target::Extra { key, value } => ("UserExtra", "", value.as_str(), v1, key.as_str()),
            Target::Uid(u) => ("UID", "", u.as_str(), v1, ""),
        };
        format!("{{{kind} {ns} {name}  {api_version}  {field_path}}}")
    }
}

/// Whether a request carries impersonation headers.
pub(crate) fn is_impersonating(parts: &Parts) -> bool {
    asks_to_impersonate(&parts.headers)
}

/// Whether these request headers ask to impersonate.
fn asks_to_impersonate(headers: &http::HeaderMap) -> bool {
    headers.keys().any(|k| is_impersonation_header(k.as_str()))
}

fn is_impersonation_header(name: &str) -> bool {
    name == USER_HEADER
        || name == GROUP_HEADER
        || name == UID_HEADER
        || name.starts_with(EXTRA_PREFIX)
}

/// What a request asks to impersonate, in upstream's order (user, groups, extras, uid), or
/// upstream's error when it asks for groups, extras or a uid without a user.
fn targets(parts: &Parts) -> Result<Vec<Target>, String> {
    let headers = &parts.headers;
    let text = |v: &http::HeaderValue| String::from_utf8_lossy(v.as_bytes()).into_owned();
    let mut targets = Vec::new();
    let user = headers.get(USER_HEADER).map(text).unwrap_or_default();
    let has_user = !user.is_empty();
    if has_user {
        targets.push(match split_service_account(&user) {
            Some((namespace, name)) => Target::ServiceAccount { namespace, name },
            None => Target::User(user),
        });
    }
    let groups: Vec<String> = headers.get_all(GROUP_HEADER).iter().map(text).collect();
    let has_groups = !groups.is_empty();
    targets.extend(groups.into_iter().map(Target::Group));
    let mut has_extra = false;
    for name in headers.keys() {
        let Some(key) = name.as_str().strip_prefix(EXTRA_PREFIX) else {
            continue;
        };
        has_extra = true;
        let key = unescape_extra_key(&key.to_ascii_lowercase());
        for value in headers.get_all(name) {
            targets.push(Target::Extra {
                key: key.clone(),
                value: text(value),
            });
        }
    }
    let uid = headers.get(UID_HEADER).map(text).unwrap_or_default();
    let has_uid = !uid.is_empty();
    if has_uid {
        targets.push(Target::Uid(uid));
    }
    if (has_groups || has_extra || has_uid) && !has_user {
        let list: Vec<String> = targets.iter().map(Target::go_string).collect();
        return Err(format!(
            "requested [{}] without impersonating a user",
            list.join(" ")
        ));
    }
    Ok(targets)
}

/// `system:serviceaccount:<namespace>:<name>` split in its parts.
fn split_service_account(user: &str) -> Option<(String, String)> {
    let rest = user.strip_prefix(SERVICE_ACCOUNT_PREFIX)?;
    let (ns, name) = rest.split_once(':')?;
    let valid = |s: &str| {
        !s.is_empty()
            && s.len() <= 253
            && s.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
    };
    (valid(ns) && !ns.contains('.') && valid(name)).then(|| (ns.to_string(), name.to_string()))
}

/// Percent-decodes an extra key (`acme.com%2Fproject`); keys that do not decode are kept.
fn unescape_extra_key(key: &str) -> String {
    let bytes = key.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes
                .get(i + 1..i + 3)
                .and_then(|h| std::str::from_utf8(h).ok());
            match hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                Some(b) => {
                    out.push(b);
                    i += 3;
                    continue;
                }
                None => return key.to_string(),
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8(out).unwrap_or_else(|_| key.to_string())
}

/// Applies the impersonation headers of a request by `requestor`: each target is authorized
/// with `authorizer`; on success the headers are removed, the impersonated user recorded in
/// the audit event and returned. Requests without the headers keep their user. A refusal is
/// upstream's 403; groups, extras or a uid without a user, a plain-text 500.
pub async fn impersonate(
    authorizer: &dyn Authorizer,
    parts: &mut Parts,
    requestor: UserInfo,
) -> Result<UserInfo, Response<Body>> {
    if !is_impersonating(parts) {
        return Ok(requestor);
    }
    let uri = parts
        .uri
        .path_and_query()
        .map_or_else(|| parts.uri.path().to_string(), |p| p.as_str().to_string());
    let targets = match targets(parts) {
        Ok(t) => t,
        Err(message) => return Err(authz::internal_error_response(&uri, &message)),
    };
    if targets.is_empty() {
        strip_headers(parts);
        return Ok(requestor);
    }
    let groups_specified = parts.headers.contains_key(GROUP_HEADER);
    let mut username = String::new();
    let mut uid = String::new();
    let mut groups: Vec<String> = Vec::new();
    let mut extra: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for target in &targets {
        let attrs = Attributes {
            user: requestor.clone(),
            request: Request::Resource(target.resource()),
        };
        let reason = match authorizer.authorize(&attrs).await {
            Ok(Decision::Allow) => None,
            Ok(Decision::Deny(r) | Decision::NoOpinion(r)) => Some(r),
            Err(e) => {
                tracing::debug!(error = %e, "impersonation authorization failed");
                Some(String::new())
            }
        };
        if let Some(reason) = reason {
            let accept = parts
                .headers
                .get(http::header::ACCEPT)
                .and_then(|v| v.to_str().ok());
            return Err(authz::forbidden_response(&attrs, &reason, accept));
        }
        match target {
            Target::User(name) => username = name.clone(),
            Target::ServiceAccount { namespace, name } => {
                username = format!("{SERVICE_ACCOUNT_PREFIX}{namespace}:{name}");
                if !groups_specified {
                    groups = vec![
                        "system:serviceaccounts".into(),
                        format!("system:serviceaccounts:{namespace}"),
                    ];
                }
            }
            Target::Group(g) => groups.push(g.clone()),
            Target::Extra { key, value } => {
                extra.entry(key.clone()).or_default().push(value.clone())
            }
            Target::Uid(u) => uid = u.clone(),
        }
    }
    if username != "system:anonymous" {
        // As upstream: an impersonated user is authenticated unless it says otherwise.
        if !groups
            .iter()
            .any(|g| g == "system:authenticated" || g == "system:unauthenticated")
        {
            groups.push("system:authenticated".into());
        }
    } else if !groups.iter().any(|g| g == "system:unauthenticated") {
        groups.push("system:unauthenticated".into());
    }
    let user = UserInfo {
        username,
        uid,
        groups,
        extra,
    };
    tracing::debug!(requestor = %requestor.username, user = %user.username, "impersonating");
    if let Some(ctx) = AuditContext::of(&parts.extensions) {
        ctx.log_impersonated_user(&user);
    }
    strip_headers(parts);
    Ok(user)
}

/// Impersonation as a filter, behind authentication and the audit: the request's user (in
/// its extensions) becomes the impersonated one, or the request is refused. A request that
/// impersonates no one (most) goes straight on.
#[derive(Clone)]
pub struct ImpersonationFilter(pub Arc<dyn Authorizer>);

/// The impersonation filter as a layer.
pub fn layer(authorizer: Arc<dyn Authorizer>) -> ImpersonationFilter {
    ImpersonationFilter(authorizer)
}

impl<S> Layer<S> for ImpersonationFilter {
    type Service = ImpersonationService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        ImpersonationService {
            authorizer: self.0.clone(),
            inner,
        }
    }
}

/// The service of the [`ImpersonationFilter`].
#[derive(Clone)]
pub struct ImpersonationService<S> {
    authorizer: Arc<dyn Authorizer>,
    inner: S,
}

impl<S: ChainInner> Service<http::Request<Body>> for ImpersonationService<S> {
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = Either<S::Future, BoxFuture<'static, Result<Response<Body>, Infallible>>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: http::Request<Body>) -> Self::Future {
        // Most requests impersonate no one: the caller stays as authenticated.
        if !asks_to_impersonate(req.headers()) {
            return Either::Left(self.inner.call(req));
        }
        // The rest of the chain, made ready above, goes with the request; a copy stays.
        let fresh = self.inner.clone();
        let inner = std::mem::replace(&mut self.inner, fresh);
        let authorizer = self.authorizer.clone();
        Either::Right(Box::pin(async move {
            let (mut parts, body) = req.into_parts();
            let requestor = parts
                .extensions
                .get::<UserInfo>()
                .cloned()
                .unwrap_or_default();
            match impersonate(authorizer.as_ref(), &mut parts, requestor).await {
                Ok(user) => {
                    parts.extensions.insert(user);
                    inner.oneshot(http::Request::from_parts(parts, body)).await
                }
                Err(res) => Ok(res),
            }
        }))
    }
}

fn strip_headers(parts: &mut Parts) {
    let names: Vec<http::HeaderName> = parts
        .headers
        .keys()
        .filter(|k| is_impersonation_header(k.as_str()))
        .cloned()
        .collect();
    for name in names {
        parts.headers.remove(name);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(headers: &[(&str, &str)]) -> Parts {
        let mut req = http::Request::builder().uri("/apis/x/v1/things");
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        req.body(()).unwrap().into_parts().0
    }

    #[test]
    fn targets_in_upstream_order() {
        let p = parts(&[
            ("Impersonate-User", "system:serviceaccount:ns:sa"),
            ("Impersonate-Group", "devs"),
            ("Impersonate-Extra-Acme.com%2Fproject", "p1"),
            ("Impersonate-Uid", "1234"),
        ]);
        assert_eq!(
            targets(&p).unwrap(),
            [
                Target::ServiceAccount {
                    namespace: "ns".into(),
                    name: "sa".into()
                },
                Target::Group("devs".into()),
                Target::Extra {
                    key: "acme.com/project".into(),
                    value: "p1".into()
                },
                Target::Uid("1234".into()),
            ]
        );
        let r = Target::Extra {
            key: "scopes".into(),
            value: "v".into(),
        }
        .resource();
        assert_eq!(
            (
                r.group.as_str(),
                r.resource.as_str(),
                r.subresource.as_str(),
                r.name.as_str()
            ),
            ("authentication.k8s.io", "userextras", "scopes", "v")
        );
    }

    #[test]
    fn groups_without_user_is_upstream_error() {
        let p = parts(&[("Impersonate-Group", "devs"), ("Impersonate-Uid", "7")]);
        assert_eq!(
            targets(&p).unwrap_err(),
            "requested [{Group  devs    } {UID  7  authentication.k8s.io/v1  }] without impersonating a user"
        );
    }

    #[test]
    fn extra_keys_unescape() {
        assert_eq!(unescape_extra_key("a%2fb"), "a/b");
        assert_eq!(unescape_extra_key("a%zz"), "a%zz");
        assert_eq!(unescape_extra_key("plain"), "plain");
    }
}
