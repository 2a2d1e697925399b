//! The legacy `/watch/` prefix and `?watch` in production mode, through the host's aggregator
//! and straight to wardle: what the host and wardle authorize is what wardle serves.

use std::path::Path;
use std::time::Duration;

use apiserver_framework::testing::wait;
use reqwest::Method;
use serde_json::{Value, json};

use crate::stack::{FLUNDERS, Stack};
use crate::support::checks::answer;
use crate::support::checks::first_event;
use crate::support::checks::message;
use crate::{flunder, status};

const WATCH_FLUNDERS: &str = "/apis/wardle.example.com/v1alpha1/watch/namespaces/default/flunders";

/// Metadata for every request.
const POLICY: &str = "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n";

/// wardle's audit flags, writing to `dir`.
pub fn audit_flags(dir: &Path) -> Vec<String> {
    let policy = dir.join("policy.yaml");
    std::fs::write(&policy, POLICY).unwrap();
    vec![
        format!("--audit-policy-file={}", policy.display()),
        format!("--audit-log-path={}", dir.join("audit.log").display()),
    ]
}

/// A stack whose wardle writes its audit log (every request at `Metadata`) in a new temporary
/// directory, returned beside it for [`audit_events`].
pub async fn audited_stack() -> (Stack, tempfile::TempDir) {
    let audit = tempfile::tempdir().unwrap();
    let flags = audit_flags(audit.path());
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    (Stack::start(&flags).await, audit)
}

/// The events of wardle's audit log (in `dir`) that `keep` selects, once there are `want` of
/// them (the log is written as requests complete).
pub async fn audit_events(dir: &Path, want: usize, keep: impl Fn(&Value) -> bool) -> Vec<Value> {
    let read = || -> Vec<Value> {
        std::fs::read_to_string(dir.join("audit.log"))
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .filter(|e: &Value| e["stage"] == "ResponseComplete" && keep(e))
            .collect()
    };
    let enough = wait::poll("the audit events", Duration::from_secs(10), || async {
        let events = read();
        if events.len() >= want {
            Ok(events)
        } else {
            Err(format!("{} of {want}", events.len()))
        }
    })
    .await;
    // Fewer than wanted: the caller's assertions say what is missing.
    enough.unwrap_or_else(|_| read())
}

/// Sends `method url` as `user` with an optional body (`content_type`); answers the status
/// and a body that must end within 10 s.
async fn send(
    client: &reqwest::Client,
    method: Method,
    url: &str,
    auth: &[(&str, &str)],
    body: Option<(&str, Value)>,
) -> (u16, String) {
    let mut req = client.request(method, url);
    for (k, v) in auth {
        req = req.header(*k, *v);
    }
    if let Some((content_type, body)) = body {
        req = req
            .header("content-type", content_type)
            .body(body.to_string());
    }
    let res = req.send().await.expect("an answer");
    let code = res.status().as_u16();
    let text = tokio::time::timeout(Duration::from_secs(10), res.text())
        .await
        .unwrap_or_else(|_| panic!("{url}: the body did not end: a stream, not an answer"))
        .unwrap();
    (code, text)
}

/// bob, who may read (and so watch) flunders but not write them, sends every write verb
/// under `/watch/`, through the host and straight to wardle: each is answered 405 (upstream's
/// `MethodNotAllowed`), nothing changes, and wardle's audit log has no write as a `watch`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_under_the_watch_prefix_are_refused() {
    let (stack, audit) = audited_stack().await;
    let client = stack.client();
    let alice = format!("Bearer {}", stack.token("alice"));
    let bob = format!("Bearer {}", stack.token("bob"));
    let alice = [("authorization", alice.as_str())];
    let bob = [("authorization", bob.as_str())];
    let (code, body) = send(
        &client,
        Method::POST,
        &format!("{}{FLUNDERS}", stack.host_url()),
        &alice,
        Some(("application/json", flunder("one"))),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    let list = |base: String| {
        let client = client.clone();
        async move {
            let (code, body) = send(
                &client,
                Method::GET,
                &format!("{base}{FLUNDERS}"),
                &alice,
                None,
            )
            .await;
            assert_eq!(code, 200, "{body}");
            status(&body)["items"].clone()
        }
    };
    let before = list(stack.host_url().to_string()).await;

    let mut replaced = flunder("one");
    replaced["spec"]["reference"] = json!("changed");
    let writes = [
        (
            "create",
            Method::POST,
            "",
            Some(("application/json", flunder("two"))),
        ),
        (
            "update",
            Method::PUT,
            "/one",
            Some(("application/json", replaced)),
        ),
        (
            "patch",
            Method::PATCH,
            "/one",
            Some((
                "application/merge-patch+json",
                json!({"spec": {"reference": "patched"}}),
            )),
        ),
        ("delete", Method::DELETE, "/one", None),
        ("deletecollection", Method::DELETE, "", None),
    ];
    for base in [stack.host_url().to_string(), stack.wardle_url()] {
        for (what, method, tail, body) in &writes {
            let url = format!("{base}{WATCH_FLUNDERS}{tail}");
            let (code, text) = send(&client, method.clone(), &url, &bob, body.clone()).await;
            assert_eq!(code, 405, "{what} by bob at {url}: {text}");
            let s = status(&text);
            assert_eq!(s["reason"], "MethodNotAllowed", "{text}");
            assert_eq!(
                s["message"],
                "the server does not allow this method on the requested resource"
            );
        }
    }

    // Nothing changed: same objects, same resourceVersions.
    assert_eq!(list(stack.wardle_url()).await, before);
    assert_eq!(before.as_array().unwrap().len(), 1);

    // wardle authorized each as a watch (as upstream reads the prefix) and refused it: ten
    // watches, through the host and direct, none of them served.
    let watches = audit_events(audit.path(), 10, |e| e["verb"] == "watch").await;
    assert_eq!(watches.len(), 10, "{watches:#?}");
    for e in &watches {
        assert_eq!(e["user"]["username"], "bob", "{e}");
        assert_eq!(e["responseStatus"]["code"], 405, "{e}");
    }
    let writes = audit_events(audit.path(), 1, |e| {
        ["create", "update", "patch", "delete", "deletecollection"]
            .contains(&e["verb"].as_str().unwrap_or(""))
    })
    .await;
    assert_eq!(writes.len(), 1, "only alice's create: {writes:#?}");
    assert_eq!(writes[0]["user"]["username"], "alice");

    // The prefix still serves a GET watch to bob, through the host.
    let mut res = answer(
        client
            .get(format!("{}{WATCH_FLUNDERS}/one", stack.host_url()))
            .header(bob[0].0, bob[0].1),
    )
    .await;
    assert_eq!(res.status(), 200);
    let event = first_event(&mut res).await;
    assert_eq!(event["type"], "ADDED");
    assert_eq!(event["object"]["metadata"]["name"], "one");
}

/// A user of the host's `getters` group may get flunders but neither list nor watch them. A
/// named GET with `?watch=true` is authorized as a get, so it answers the object, through the
/// host and straight to wardle; a watch is forbidden.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_named_get_with_watch_is_a_plain_get() {
    let stack = Stack::start(&[]).await;
    let client = stack.client();
    let alice = format!("Bearer {}", stack.token("alice"));
    let (code, body) = send(
        &client,
        Method::POST,
        &format!("{}{FLUNDERS}", stack.host_url()),
        &[("authorization", &alice)],
        Some(("application/json", flunder("one"))),
    )
    .await;
    assert_eq!(code, 201, "{body}");

    // Through the host: the admin impersonates a getter. Straight to wardle: a client
    // certificate of the host's CA.
    let admin = format!("Bearer {}", stack.token("admin"));
    let through_host = [
        ("authorization", admin.as_str()),
        ("impersonate-user", "getter"),
        ("impersonate-group", "getters"),
    ];
    let (cert, key) = stack.issue_client_cert("ca", "getter", Some("getters"), false);
    let direct = stack.client_with_identity(&cert, &key);
    for (base, client, auth) in [
        (stack.host_url().to_string(), &client, &through_host[..]),
        (stack.wardle_url(), &direct, &[][..]),
    ] {
        let url = format!("{base}{FLUNDERS}/one?watch=true");
        let (code, text) = send(client, Method::GET, &url, auth, None).await;
        assert_eq!(code, 200, "{url}: {text}");
        let object = status(&text);
        assert_eq!(object["kind"], "Flunder", "{url}: {text}");
        assert_eq!(object["metadata"]["name"], "one");

        for url in [
            format!("{base}{FLUNDERS}?watch=true"),
            format!("{base}{WATCH_FLUNDERS}/one"),
        ] {
            let (code, text) = send(client, Method::GET, &url, auth, None).await;
            assert_eq!(code, 403, "{url}: {text}");
            assert!(
                message(&status(&text))
                    .contains("User \"getter\" cannot watch resource \"flunders\""),
                "{text}"
            );
        }
    }
}
