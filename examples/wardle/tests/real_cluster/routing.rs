//! What the real aggregator proxies to wardle, and as whom it arrives (wardle's audit log shows
//! it), and the legacy `/watch/` prefix and `?watch` authorized alike by kube-apiserver and
//! wardle. Twins of the dev host's `aggregator_routing` and `watch_prefix` tests.

use reqwest::header::HeaderValue;
use serde_json::json;

use crate::cluster::{RealCluster, block_on};
use crate::http::{certificate, host_client, issuer, send, wardle_client};
use crate::stack::issue_certificate;
use crate::support::V1ALPHA1_WARNING;
use crate::support::checks::message;
use crate::support::checks::{assert_jurgen_groups_and_extra, first_event};
use crate::support::fixtures::{flunder_with_spec, flunder_yaml};

/// alice's namespaced Flunder collection.
const FLUNDERS: &str = "/apis/wardle.example.com/v1alpha1/namespaces/alice/flunders";
/// The same under the legacy `/watch/` prefix.
const WATCH_FLUNDERS: &str = "/apis/wardle.example.com/v1alpha1/watch/namespaces/alice/flunders";

/// Binds wardle's editor Role in namespace alice to `subject` (`--group=...`, `--user=...`).
fn bind(cluster: &RealCluster, name: &str, role: &str, subject: &str) {
    cluster.kubectl_ok(
        "admin",
        &[
            "create",
            "rolebinding",
            name,
            "-n",
            "alice",
            &format!("--role={role}"),
            subject,
        ],
    );
}

/// Grants group `group` the flunder `verbs` (a YAML list's items) in namespace alice: a Role
/// `wardle-<group>` and its binding.
fn grant(cluster: &RealCluster, group: &str, verbs: &str) {
    let role = format!("wardle-{group}");
    cluster.kubectl_input_ok(
        "admin",
        &["apply", "-f", "-"],
        &format!(
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata:\n  name: {role}\n  \
             namespace: alice\nrules:\n- apiGroups: [wardle.example.com]\n  resources: [flunders]\n  \
             verbs: [{verbs}]\n"
        ),
    );
    bind(
        cluster,
        &format!("{group}-wardle"),
        &role,
        &format!("--group={group}"),
    );
}

/// A path whose group and version, joined as `<version>.<group>`, spell wardle's APIService
/// name is not wardle's: kube-apiserver answers its own plain-text 404, and it never reaches
/// wardle.
pub fn group_version_matching(cluster: &RealCluster) {
    block_on(async {
        let admin = host_client(cluster, Some("admin"), false);
        let host = cluster.api_url();
        for path in [
            "/apis/example.com/v1alpha1.wardle/namespaces/alice/flunders",
            "/apis/example.com/v1alpha1.wardle",
            "/apis/com/v1alpha1.wardle.example/namespaces/alice/flunders",
        ] {
            // kube-apiserver's not-found handler: Go's plain text, not a Status.
            let (code, body) = send(admin.get(format!("{host}{path}"))).await;
            assert_eq!(
                (code, body.as_str()),
                (404, Some("404 page not found\n")),
                "{path}"
            );
        }
        let (code, body) = send(admin.get(format!("{host}{FLUNDERS}"))).await;
        assert_eq!(code, 200, "{body}");
    });
    let seen = cluster.audit_events(1, |e| {
        e["requestURI"] == FLUNDERS && e["user"]["username"] == "admin"
    });
    assert!(!seen.is_empty(), "wardle records what reaches it");
    let misrouted = cluster.audit_events(usize::MAX, |e| {
        e["requestURI"].as_str().unwrap_or("").contains(".wardle")
    });
    assert!(misrouted.is_empty(), "{misrouted:#?}");
}

/// A caller whose name, groups and extra are not ASCII reaches wardle as exactly that user:
/// admin impersonates `jürgen` (groups `editors` and `équipe`, extra `rôle`) through
/// kube-apiserver, and wardle authorizes and records `jürgen`. Straight to wardle with
/// kube-apiserver's front-proxy certificate, identity headers that are not UTF-8 are refused.
pub fn proxied_identities(cluster: &RealCluster) {
    bind(
        cluster,
        "editors-wardle",
        "wardle-editor",
        "--group=editors",
    );
    let utf8 = |s: &str| HeaderValue::from_bytes(s.as_bytes()).unwrap();
    block_on(async {
        let admin = host_client(cluster, Some("admin"), false);
        let (code, body) = send(
            admin
                .get(format!("{}{FLUNDERS}", cluster.api_url()))
                .header("impersonate-user", utf8("jürgen"))
                .header("impersonate-group", "editors")
                .header("impersonate-group", utf8("équipe"))
                .header("impersonate-extra-r%C3%B4le", utf8("chef ✓")),
        )
        .await;
        assert_eq!(code, 200, "{body}");
        assert_eq!(body["kind"], "FlunderList", "{body}");
    });
    let seen = cluster.audit_events(1, |e| {
        e["requestURI"] == FLUNDERS && e["user"]["username"] == "jürgen"
    });
    assert_eq!(seen.len(), 1, "{seen:#?}");
    let user = &seen[0]["user"];
    assert_jurgen_groups_and_extra(user);

    let (cert, key) = certificate(cluster, "front-proxy-client");
    block_on(async {
        let proxy = wardle_client(cluster, Some((&cert, &key)));
        let url = format!("https://api.wardle.svc{FLUNDERS}");
        let latin1 = |bytes: &[u8]| HeaderValue::from_bytes(bytes).unwrap();
        let (code, body) = send(
            proxy
                .get(&url)
                .header("x-remote-user", latin1(b"j\xfcrgen"))
                .header("x-remote-group", "editors"),
        )
        .await;
        assert_eq!(code, 401, "{body}");
        let (code, body) = send(
            proxy
                .get(&url)
                .header("x-remote-user", "alice")
                .header("x-remote-group", latin1(b"\xe9quipe")),
        )
        .await;
        assert_eq!(code, 401, "{body}");
        let (code, body) = send(
            proxy
                .get(&url)
                .header("x-remote-user", "alice")
                .header("x-remote-group", utf8("équipe")),
        )
        .await;
        assert_eq!(code, 200, "{body}");
    });
}

/// The headers a client names in `Connection` are for kube-apiserver alone: `Accept` named
/// there does not reach wardle, which answers its default, JSON.
pub fn connection_headers(cluster: &RealCluster) {
    block_on(async {
        let alice = host_client(cluster, Some("alice"), true);
        let url = format!("{}{FLUNDERS}", cluster.api_url());
        for (connection, expected) in [
            (None, "application/yaml"),
            (Some("keep-alive, Accept"), "application/json"),
        ] {
            let mut request = alice.get(&url).header("accept", "application/yaml");
            if let Some(c) = connection {
                request = request.header("connection", c);
            }
            let res = request.send().await.expect("an answer");
            assert_eq!(res.status(), 200);
            assert_eq!(
                res.headers()["content-type"],
                expected,
                "Connection: {connection:?}"
            );
        }
    });
}

/// A user who may watch flunders but not write them (the Role `wardle-viewers`) sends every
/// write verb under `/watch/`, through kube-apiserver (which authorizes each as a watch, as
/// wardle does) and straight to wardle: each is wardle's 405 `MethodNotAllowed`, nothing
/// changes, and wardle's audit log has no write as a `watch`.
pub fn writes_under_the_watch_prefix(cluster: &RealCluster) {
    grant(cluster, "viewers", "get, list, watch");
    let ca = issuer(cluster, "ca");
    let (cert, key) = issue_certificate(&ca, "viewer", Some("viewers"), false);
    block_on(async {
        let admin = host_client(cluster, Some("admin"), false);
        let host = cluster.api_url();
        let (code, body) = send(
            admin
                .post(format!("{host}{FLUNDERS}"))
                .json(&flunder_with_spec("prefix-one", json!({"reference": "x"}))),
        )
        .await;
        assert_eq!(code, 201, "{body}");
        let list = || async {
            let (code, body) = send(admin.get(format!("{host}{FLUNDERS}"))).await;
            assert_eq!(code, 200, "{body}");
            body["items"].clone()
        };
        let before = list().await;

        let through = |req: reqwest::RequestBuilder| {
            req.header("impersonate-user", "viewer")
                .header("impersonate-group", "viewers")
        };
        let direct = wardle_client(cluster, Some((&cert, &key)));
        let mut replaced = flunder_with_spec("prefix-one", json!({"reference": "x"}));
        replaced["spec"]["reference"] = json!("changed");
        for (base, via_host) in [
            (host.clone(), true),
            ("https://api.wardle.svc".into(), false),
        ] {
            let client = if via_host { &admin } else { &direct };
            let url = format!("{base}{WATCH_FLUNDERS}");
            let writes = [
                (
                    "create",
                    client
                        .post(&url)
                        .json(&flunder_with_spec("prefix-two", json!({"reference": "x"}))),
                ),
                (
                    "update",
                    client.put(format!("{url}/prefix-one")).json(&replaced),
                ),
                (
                    "patch",
                    client
                        .patch(format!("{url}/prefix-one"))
                        .header("content-type", "application/merge-patch+json")
                        .body(r#"{"spec":{"reference":"patched"}}"#),
                ),
                ("delete", client.delete(format!("{url}/prefix-one"))),
                ("deletecollection", client.delete(&url)),
            ];
            for (what, request) in writes {
                let request = if via_host { through(request) } else { request };
                let (code, body) = send(request).await;
                assert_eq!(code, 405, "{what} at {base}: {body}");
                assert_eq!(body["reason"], "MethodNotAllowed", "{body}");
                assert_eq!(
                    body["message"],
                    "the server does not allow this method on the requested resource"
                );
            }
        }
        assert_eq!(list().await, before, "nothing changed");

        // The prefix still serves a GET watch, through kube-apiserver.
        let mut res = through(admin.get(format!("{host}{WATCH_FLUNDERS}/prefix-one")))
            .send()
            .await
            .expect("a watch");
        assert_eq!(res.status(), 200);
        let event = first_event(&mut res).await;
        assert_eq!(event["type"], "ADDED");
        assert_eq!(event["object"]["metadata"]["name"], "prefix-one");
        let (code, body) = send(admin.delete(format!("{host}{FLUNDERS}/prefix-one"))).await;
        assert_eq!(code, 200, "{body}");
    });
    // wardle authorized each as a watch and refused it: ten, none served, all the viewer's.
    let watches = cluster.audit_events(10, |e| {
        e["verb"] == "watch" && e["responseStatus"]["code"] == 405
    });
    assert_eq!(watches.len(), 10, "{watches:#?}");
    for e in &watches {
        assert_eq!(e["user"]["username"], "viewer", "{e}");
    }
    let writes = cluster.audit_events(usize::MAX, |e| {
        e["user"]["username"] == "viewer"
            && ["create", "update", "patch", "delete", "deletecollection"]
                .contains(&e["verb"].as_str().unwrap_or(""))
    });
    assert!(writes.is_empty(), "{writes:#?}");
}

/// A user who may get flunders but neither list nor watch them: a named GET with
/// `?watch=true` is authorized as a get by kube-apiserver and by wardle, so it answers the
/// object; a watch is forbidden.
pub fn named_get_with_watch(cluster: &RealCluster) {
    grant(cluster, "getters", "get");
    block_on(async {
        let admin = host_client(cluster, Some("admin"), false);
        let host = cluster.api_url();
        let (code, body) = send(
            admin
                .post(format!("{host}{FLUNDERS}"))
                .json(&flunder_with_spec("got", json!({"reference": "x"}))),
        )
        .await;
        assert_eq!(code, 201, "{body}");
        let getter = |req: reqwest::RequestBuilder| {
            req.header("impersonate-user", "getter")
                .header("impersonate-group", "getters")
        };
        let (code, body) = send(getter(
            admin.get(format!("{host}{FLUNDERS}/got?watch=true")),
        ))
        .await;
        assert_eq!(code, 200, "{body}");
        assert_eq!(body["kind"], "Flunder", "{body}");
        assert_eq!(body["metadata"]["name"], "got");
        for url in [
            format!("{host}{FLUNDERS}?watch=true"),
            format!("{host}{WATCH_FLUNDERS}/got"),
        ] {
            let (code, body) = send(getter(admin.get(&url))).await;
            assert_eq!(code, 403, "{url}: {body}");
            assert!(
                message(&body).contains("User \"getter\" cannot watch resource \"flunders\""),
                "{body}"
            );
        }
        let (code, body) = send(admin.delete(format!("{host}{FLUNDERS}/got"))).await;
        assert_eq!(code, 200, "{body}");
    });
}

/// kube-apiserver's aggregated discovery (`apidiscovery.k8s.io/v2`) lists wardle's group with
/// v1beta1 first (preferred), then v1alpha1, each with its resources. Twin of the dev host's
/// `the_host_prefers_v1beta1`.
pub fn aggregated_discovery(cluster: &RealCluster) {
    let document = block_on(async {
        let admin = host_client(cluster, Some("admin"), false);
        let (code, document) = send(admin.get(format!("{}/apis", cluster.api_url())).header(
            "accept",
            "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
        ))
        .await;
        assert_eq!(code, 200, "{document}");
        document
    });
    assert_eq!(document["kind"], "APIGroupDiscoveryList", "{document}");
    let group = document["items"]
        .as_array()
        .expect("items")
        .iter()
        .find(|g| g["metadata"]["name"] == "wardle.example.com")
        .unwrap_or_else(|| panic!("no wardle.example.com: {document}"));
    let versions: Vec<&str> = group["versions"]
        .as_array()
        .expect("versions")
        .iter()
        .filter_map(|v| v["version"].as_str())
        .collect();
    assert_eq!(versions, ["v1beta1", "v1alpha1"], "{group}");
    let alpha = &group["versions"][1];
    let resources: Vec<&str> = alpha["resources"]
        .as_array()
        .expect("resources")
        .iter()
        .filter_map(|r| r["resource"].as_str())
        .collect();
    assert!(
        resources.contains(&"flunders") && resources.contains(&"fischers"),
        "{alpha}"
    );
    assert_eq!(alpha["freshness"], "Current", "{alpha}");
}

/// wardle's NamespaceLifecycle reads the real host's namespaces: a Flunder in a namespace the
/// host lacks is upstream's 404; once the host has it, the create succeeds; a namespace held
/// terminating by a finalizer refuses new content with upstream's 403. Twin of the dev host's
/// `namespace_lifecycle_follows_the_host`.
pub fn namespace_lifecycle(cluster: &RealCluster) {
    let flunder = |namespace: &str, name: &str| flunder_yaml(name, Some(namespace), "x", None);
    let refused =
        cluster.kubectl_with_input("admin", &["create", "-f", "-"], &flunder("nowhere", "lost"));
    assert!(!refused.status.success());
    assert_eq!(
        String::from_utf8_lossy(&refused.stderr).trim(),
        format!(
            "{V1ALPHA1_WARNING}Error from server (NotFound): error when creating \"STDIN\": namespaces \"nowhere\" not found"
        )
    );
    cluster.kubectl_ok("admin", &["create", "namespace", "nowhere"]);
    // wardle hears of the namespace through its watch of the host's namespaces.
    cluster.wait_until(
        "wardle sees namespace nowhere",
        crate::cluster::TIMEOUT,
        || {
            cluster
                .kubectl_with_input(
                    "admin",
                    &["create", "-f", "-"],
                    &flunder("nowhere", "found"),
                )
                .status
                .success()
        },
    );

    // A namespace held in Terminating by a finalizer of its own.
    cluster.kubectl_input_ok(
        "admin",
        &["create", "-f", "-"],
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: holder\n  namespace: nowhere\n  \
         finalizers: [example.com/hold]\n",
    );
    cluster.kubectl_ok("admin", &["delete", "namespace", "nowhere", "--wait=false"]);
    cluster.wait_until("wardle refuses content in terminating nowhere", crate::cluster::TIMEOUT, || {
        let out = cluster.kubectl_with_input("admin", &["create", "-f", "-"], &flunder("nowhere", "late"));
        String::from_utf8_lossy(&out.stderr).contains(
            "Error from server (Forbidden): error when creating \"STDIN\": flunders.wardle.example.com \
             \"late\" is forbidden: unable to create new content in namespace nowhere because it \
             is being terminated",
        )
    });
    // Released, the namespace finishes terminating (and its Flunder goes with it).
    cluster.kubectl_ok(
        "admin",
        &[
            "patch",
            "configmap",
            "holder",
            "-n",
            "nowhere",
            "--type=merge",
            "-p",
            r#"{"metadata":{"finalizers":null}}"#,
        ],
    );
    cluster.wait_until("namespace nowhere gone", crate::cluster::TIMEOUT, || {
        let out = cluster.kubectl("admin", &["get", "namespace", "nowhere"]);
        String::from_utf8_lossy(&out.stderr).contains("(NotFound)")
    });
}
