//! The second check of WebSocket upgrades: a connection opened with `GET` and `Upgrade:
//! websocket` on a subresource is authorized as a `get` (its method) and also as a `create`, as
//! upstream's `AuthorizePodWebsocketUpgradeCreatePermission` requires for `pods/exec`: a
//! connection carries writes (standard input), which a read-only user may not send, and the
//! same connection opened with `POST` would be a `create` anyway.

use http::HeaderMap;
use http::header;

use super::{Attributes, Request};

/// The attributes of the extra `create` check a request needs, if any: a resource request for a
/// subresource whose verb is `get` and whose headers ask for a WebSocket upgrade.
pub fn create_check(attrs: &Attributes, headers: &HeaderMap) -> Option<Attributes> {
    let Request::Resource(r) = &attrs.request else {
        return None;
    };
    if r.verb != "get" || r.subresource.is_empty() || !asks_websocket(headers) {
        return None;
    }
    let mut create = r.clone();
    create.verb = "create".into();
    Some(Attributes {
        user: attrs.user.clone(),
        request: Request::Resource(create),
    })
}

/// Whether the headers ask to upgrade the connection to WebSocket.
fn asks_websocket(headers: &HeaderMap) -> bool {
    let has = |name: header::HeaderName, token: &str| {
        headers
            .get_all(name)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .any(|t| t.trim().eq_ignore_ascii_case(token))
    };
    has(header::CONNECTION, "upgrade") && has(header::UPGRADE, "websocket")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::authz::request_of;
    use crate::user::UserInfo;
    use http::{HeaderValue, Method};

    fn attrs(method: Method, path: &str) -> Attributes {
        Attributes {
            user: UserInfo::new("bob", &[]),
            request: request_of(&method, path, None),
        }
    }

    #[test]
    fn websocket_gets_of_subresources_also_need_create() {
        let mut ws = HeaderMap::new();
        ws.insert(header::CONNECTION, HeaderValue::from_static("Upgrade"));
        ws.insert(header::UPGRADE, HeaderValue::from_static("websocket"));
        let sub = "/apis/g/v1/namespaces/ns/flunders/x/console";
        let check = create_check(&attrs(Method::GET, sub), &ws).expect("a create check");
        let Request::Resource(r) = &check.request else {
            panic!()
        };
        assert_eq!(
            (
                r.verb.as_str(),
                r.resource.as_str(),
                r.subresource.as_str(),
                r.name.as_str()
            ),
            ("create", "flunders", "console", "x")
        );
        // Not without the upgrade, not for the object itself, not for POST (already create).
        assert!(create_check(&attrs(Method::GET, sub), &HeaderMap::new()).is_none());
        let obj = "/apis/g/v1/namespaces/ns/flunders/x";
        assert!(create_check(&attrs(Method::GET, obj), &ws).is_none());
        assert!(create_check(&attrs(Method::POST, sub), &ws).is_none());
    }
}
