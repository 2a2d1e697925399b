//! The host's aggregator in front of wardle: which requests it proxies, and who the caller is
//! on arrival. wardle's audit log shows what reached it, as whom.

use reqwest::Method;
use reqwest::header::HeaderValue;

use crate::stack::{FLUNDERS, Stack};
use crate::status;
use crate::support::checks::answer;
use crate::support::checks::assert_jurgen_groups_and_extra;
use crate::watch_prefix::{audit_events, audited_stack};

/// A path whose group and version, joined as `<version>.<group>`, spell the name of wardle's
/// APIService (`v1alpha1.wardle.example.com`) is not wardle's: the host answers it as for
/// any group-version nobody serves (kube-aggregator hands it to the host's own not-found
/// handler: kube-apiserver's plain-text `404 page not found`, as the real-cluster twin
/// shows), and it never reaches wardle.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_version_is_matched_by_group_and_version() {
    let (stack, audit) = audited_stack().await;
    let client = stack.client();
    let admin = stack.token("admin");
    let host = stack.host_url();
    for path in [
        "/apis/example.com/v1alpha1.wardle/namespaces/default/flunders",
        "/apis/example.com/v1alpha1.wardle",
        "/apis/example.com/v1alpha1.wardle/",
        "/apis/com/v1alpha1.wardle.example/namespaces/default/flunders",
    ] {
        let (code, body) = stack
            .as_bearer(&client, Method::GET, &format!("{host}{path}"), &admin)
            .await;
        assert_eq!(
            (code, body.as_str()),
            (404, "404 page not found\n"),
            "{path}"
        );
    }
    // The real group-version is proxied (and seen by wardle) ...
    let (code, body) = stack
        .as_bearer(&client, Method::GET, &format!("{host}{FLUNDERS}"), &admin)
        .await;
    assert_eq!(code, 200, "{body}");
    let seen = audit_events(audit.path(), 1, |e| {
        e["requestURI"] == FLUNDERS && e["user"]["username"] == "admin"
    })
    .await;
    assert_eq!(seen.len(), 1, "wardle records what reaches it");
    // ... the others never reached it.
    let misrouted = audit_events(audit.path(), 0, |e| {
        e["requestURI"].as_str().unwrap_or("").contains(".wardle")
    })
    .await;
    assert!(misrouted.is_empty(), "{misrouted:#?}");
}

/// A caller whose name, group and extra values are not ASCII reaches wardle as exactly that
/// user, not as anonymous: the host's admin impersonates `jürgen` (group `editors`, which may
/// read flunders, and `équipe`), and wardle authorizes and records `jürgen`. Identity headers
/// from the front proxy that are not UTF-8 text are refused, not skipped (which would make
/// the caller anonymous, or drop one of its groups).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proxied_identities_arrive_exactly() {
    let (stack, audit) = audited_stack().await;
    let utf8 = |s: &str| HeaderValue::from_bytes(s.as_bytes()).unwrap();
    let res = stack
        .client()
        .get(format!("{}{FLUNDERS}", stack.host_url()))
        .bearer_auth(stack.token("admin"))
        .header("impersonate-user", utf8("jürgen"))
        .header("impersonate-group", "editors")
        .header("impersonate-group", utf8("équipe"))
        .header("impersonate-extra-r%C3%B4le", utf8("chef ✓"))
        .send()
        .await
        .unwrap();
    let code = res.status();
    let body = res.text().await.unwrap();
    assert_eq!(code, 200, "{body}");
    assert_eq!(status(&body)["kind"], "FlunderList");

    // wardle asked the host whether jürgen may list flunders ...
    let asked = "sar:jürgen list wardle.example.com/flunders default/";
    assert_eq!(
        stack.host.access_reviews.count(asked),
        1,
        "{:?}",
        stack.host.access_reviews.entries()
    );
    // ... and recorded the request as jürgen's, groups and extra included.
    let seen = audit_events(audit.path(), 1, |e| e["requestURI"] == FLUNDERS).await;
    assert_eq!(seen.len(), 1, "{seen:#?}");
    let user = &seen[0]["user"];
    assert_eq!(user["username"], "jürgen", "{user}");
    assert_jurgen_groups_and_extra(user);

    // Straight to wardle with the front proxy's certificate, names in ISO 8859-1 bytes.
    let fp = &stack.host.files.front_proxy_client;
    let proxy = stack.client_with_identity(&fp.cert_pem, &fp.key_pem);
    let latin1 = |bytes: &[u8]| HeaderValue::from_bytes(bytes).unwrap();
    let url = format!("{}{FLUNDERS}", stack.wardle_url());
    // A GET of the flunders as `user` of "editors" and `group`, if any, in the proxy's headers.
    let as_remote = |user: HeaderValue, group: Option<HeaderValue>| {
        let mut req = proxy
            .get(&url)
            .header("x-remote-user", user)
            .header("x-remote-group", "editors");
        if let Some(group) = group {
            req = req.header("x-remote-group", group);
        }
        answer(req)
    };
    let res = as_remote(latin1(b"j\xfcrgen"), None).await;
    assert_eq!(res.status(), 401, "{}", res.text().await.unwrap());
    let res = as_remote(utf8("alice"), Some(latin1(b"\xe9quipe"))).await;
    assert_eq!(res.status(), 401, "{}", res.text().await.unwrap());
    // The same, in UTF-8: alice of editors and équipe.
    let res = as_remote(utf8("alice"), Some(utf8("équipe"))).await;
    assert_eq!(res.status(), 200, "{}", res.text().await.unwrap());
}

/// The headers a client names in `Connection` are for the host alone, as Go's reverse proxy
/// treats them: `Accept` named there does not reach wardle, which answers its default, JSON.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn headers_named_in_connection_are_not_forwarded() {
    let stack = Stack::start(&[]).await;
    // HTTP/1.1: HTTP/2 has no Connection header.
    let client = reqwest::Client::builder()
        .use_preconfigured_tls(apiserver_framework::testing::tls::http1_config(
            &stack.host.files.ca_pem,
        ))
        .http1_only()
        .build()
        .unwrap();
    let url = format!("{}{FLUNDERS}", stack.host_url());
    let alice = stack.token("alice");
    let content_type = |connection: Option<&str>| {
        let mut req = client
            .get(&url)
            .bearer_auth(&alice)
            .header("accept", "application/yaml");
        if let Some(c) = connection {
            req = req.header("connection", c);
        }
        async move {
            let res = req.send().await.unwrap();
            assert_eq!(res.status(), 200);
            res.headers()["content-type"].to_str().unwrap().to_string()
        }
    };
    // Without it, wardle honours Accept ...
    assert_eq!(content_type(None).await, "application/yaml");
    // ... named in Connection, it never sees it.
    assert_eq!(
        content_type(Some("keep-alive, Accept")).await,
        "application/json"
    );
}
