//! Authentication delegated to the real host: ServiceAccount tokens checked by the real
//! TokenReview (through kube-apiserver and straight to wardle), and callers straight to wardle
//! who are only who their certificates say, with the CAs and allowed names of the real
//! `extension-apiserver-authentication` ConfigMap. Twins of the dev host's
//! `token_users_through_the_host` and `direct_callers_are_who_their_certificates_say`.

use std::time::Duration;

use serde_json::json;

use crate::cluster::{RealCluster, TIMEOUT, block_on};
use crate::http::{certificate, host_client, issuer, send, wardle_client};
use crate::stack::{foreign_certificate, issue_certificate};
use crate::support::checks::message;

/// The namespaced Flunder collection of namespace `alice`, as a path.
const ALICE_FLUNDERS: &str = "/apis/wardle.example.com/v1alpha1/namespaces/alice/flunders";

/// A ServiceAccount's token (TokenRequest API), checked by the real TokenReview: through
/// kube-apiserver and straight to wardle, the same user, authorized by the real
/// SubjectAccessReview; a token the host does not know is 401 at wardle.
pub fn service_account_tokens(cluster: &RealCluster) {
    cluster.kubectl_ok(
        "admin",
        &["create", "serviceaccount", "robot", "-n", "alice"],
    );
    cluster.kubectl_ok(
        "admin",
        &[
            "create",
            "rolebinding",
            "robot-wardle-editor",
            "-n",
            "alice",
            "--role=wardle-editor",
            "--serviceaccount=alice:robot",
        ],
    );
    let token = cluster.kubectl_ok("admin", &["create", "token", "robot", "-n", "alice"]);
    let token = token.trim();
    block_on(async {
        let host = host_client(cluster, None, false);
        let through = format!("{}{ALICE_FLUNDERS}", cluster.api_url());
        let body = json!({"apiVersion": "wardle.example.com/v1alpha1", "kind": "Flunder",
                          "metadata": {"name": "robot-made"}, "spec": {"reference": "x"}});
        let (code, created) = send(host.post(&through).bearer_auth(token).json(&body)).await;
        assert_eq!(code, 201, "{created}");

        // Straight to wardle with the same token: wardle's TokenReview to the host.
        let wardle = wardle_client(cluster, None);
        let direct = format!("https://api.wardle.svc{ALICE_FLUNDERS}");
        let (code, listed) = send(wardle.get(&direct).bearer_auth(token)).await;
        assert_eq!(code, 200, "{listed}");
        assert_eq!(
            listed["items"][0]["metadata"]["name"], "robot-made",
            "{listed}"
        );
        let (code, refused) = send(
            wardle
                .get("https://api.wardle.svc/apis/wardle.example.com/v1alpha1/namespaces/default/flunders")
                .bearer_auth(token),
        )
        .await;
        assert_eq!(code, 403, "{refused}");
        assert_eq!(
            refused["message"],
            "flunders.wardle.example.com is forbidden: User \
             \"system:serviceaccount:alice:robot\" cannot list resource \"flunders\" in API \
             group \"wardle.example.com\" in the namespace \"default\""
        );
        let (code, refused) = send(wardle.get(&direct).bearer_auth("not-a-token")).await;
        assert_eq!(code, 401, "{refused}");
        assert_eq!(refused["reason"], "Unauthorized", "{refused}");
        // kube-apiserver answers an unknown token itself, as 401.
        let (code, _) = send(host.get(&through).bearer_auth("not-a-token")).await;
        assert_eq!(code, 401);
        let (code, deleted) = send(
            host.delete(format!("{through}/robot-made"))
                .bearer_auth(token),
        )
        .await;
        assert_eq!(code, 200, "{deleted}");
    });
}

/// Straight to wardle, around kube-apiserver: forged `X-Remote-*` headers count only with the
/// real front proxy's certificate; a certificate of the request-header CA with another name,
/// one of an unknown CA and an expired one are refused; a client certificate of the cluster's
/// CA is its CN, whatever headers it sends.
pub fn direct_callers(cluster: &RealCluster) {
    block_on(async {
        let url = format!("https://api.wardle.svc{ALICE_FLUNDERS}");
        let forged = |client: reqwest::Client| {
            client
                .get(&url)
                .header("X-Remote-User", "admin")
                .header("X-Remote-Group", "system:masters")
        };
        // Without a certificate: anonymous, which the real RBAC does not allow.
        let (code, refused) = send(forged(wardle_client(cluster, None))).await;
        assert_eq!(code, 403, "{refused}");
        assert_eq!(
            refused["message"],
            "flunders.wardle.example.com is forbidden: User \"system:anonymous\" cannot list \
             resource \"flunders\" in API group \"wardle.example.com\" in the namespace \"alice\""
        );
        // kube-apiserver's own front-proxy client certificate makes the headers count.
        let (cert, key) = certificate(cluster, "front-proxy-client");
        let (code, listed) = send(forged(wardle_client(cluster, Some((&cert, &key))))).await;
        assert_eq!(code, 200, "{listed}");

        // Signed by the front-proxy CA, but not an allowed name.
        let front_proxy = issuer(cluster, "front-proxy-ca");
        let (cert, key) = issue_certificate(&front_proxy, "intruder", None, false);
        let (code, refused) = send(forged(wardle_client(cluster, Some((&cert, &key))))).await;
        assert_eq!(code, 401, "{refused}");
        assert_eq!(refused["reason"], "Unauthorized", "{refused}");
        // The allowed name from an unknown CA, or expired.
        let (cert, key) = foreign_certificate("front-proxy-client");
        let (code, _) = send(forged(wardle_client(cluster, Some((&cert, &key))))).await;
        assert_eq!(code, 401);
        let (cert, key) = issue_certificate(&front_proxy, "front-proxy-client", None, true);
        let (code, _) = send(forged(wardle_client(cluster, Some((&cert, &key))))).await;
        assert_eq!(code, 401);

        // The cluster's client CA (the ConfigMap's client-ca-file): CN alice.
        let ca = issuer(cluster, "ca");
        let (cert, key) = issue_certificate(&ca, "alice", None, false);
        let alice = wardle_client(cluster, Some((&cert, &key)));
        let (code, listed) = send(alice.get(&url)).await;
        assert_eq!(code, 200, "{listed}");
        let (cert, key) = issue_certificate(&ca, "alice", None, true);
        let (code, _) = send(wardle_client(cluster, Some((&cert, &key))).get(&url)).await;
        assert_eq!(code, 401);
        // ... whose headers cannot make it someone else.
        let (cert, key) = issue_certificate(&ca, "carol", None, false);
        let (code, refused) = send(forged(wardle_client(cluster, Some((&cert, &key))))).await;
        assert_eq!(code, 403, "{refused}");
        assert!(
            message(&refused).contains("User \"carol\" cannot list"),
            "{refused}"
        );
    });
}

/// How many `create`s of `resource` (`subjectaccessreviews`, `tokenreviews`) kube-apiserver
/// has served, from its own request metrics.
async fn reviews_served(admin: &reqwest::Client, cluster: &RealCluster, resource: &str) -> u64 {
    let (code, metrics) = send(admin.get(format!("{}/metrics", cluster.api_url()))).await;
    assert_eq!(code, 200);
    let metrics = metrics.as_str().expect("the metrics text");
    metrics
        .lines()
        .filter(|l| {
            l.starts_with("apiserver_request_total{")
                && l.contains(&format!("resource=\"{resource}\""))
                && l.contains("verb=\"POST\"")
        })
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum::<f64>() as u64
}

/// wardle asks the real host once per token (TokenReview) and once per distinct attributes
/// (SubjectAccessReview) within its cache TTLs (10 s, upstream's defaults), counted by
/// kube-apiserver's own request metrics; after the TTLs, once again. Twin of the dev host's
/// `reviews_are_cached_for_their_ttl`.
pub fn reviews_are_cached(cluster: &RealCluster) {
    cluster.kubectl_ok(
        "admin",
        &["create", "serviceaccount", "cached", "-n", "alice"],
    );
    cluster.kubectl_ok(
        "admin",
        &[
            "create",
            "rolebinding",
            "cached-wardle-editor",
            "-n",
            "alice",
            "--role=wardle-editor",
            "--serviceaccount=alice:cached",
        ],
    );
    let token = cluster.kubectl_ok("admin", &["create", "token", "cached", "-n", "alice"]);
    let token = token.trim();
    block_on(async {
        let admin = host_client(cluster, Some("admin"), false);
        let wardle = wardle_client(cluster, None);
        let url =
            "https://api.wardle.svc/apis/wardle.example.com/v1alpha1/namespaces/alice/flunders";
        let burst = || async {
            let started = std::time::Instant::now();
            for _ in 0..5 {
                let (code, body) = send(wardle.get(url).bearer_auth(token)).await;
                assert_eq!(code, 200, "{body}");
            }
            for _ in 0..3 {
                let (code, body) = send(
                    wardle
                        .get(url.replace("/alice/", "/default/"))
                        .bearer_auth(token),
                )
                .await;
                assert_eq!(code, 403, "{body}");
            }
            // All within one TTL, or the counts below mean nothing.
            assert!(
                started.elapsed() < Duration::from_secs(8),
                "too slow to test caching"
            );
        };
        let (tokens, access) = (
            reviews_served(&admin, cluster, "tokenreviews").await,
            reviews_served(&admin, cluster, "subjectaccessreviews").await,
        );
        burst().await;
        assert_eq!(
            reviews_served(&admin, cluster, "tokenreviews").await,
            tokens + 1
        );
        assert_eq!(
            reviews_served(&admin, cluster, "subjectaccessreviews").await,
            access + 2
        );
        // This test measures the cache's time to live itself: past it, each is asked again.
        tokio::time::sleep(Duration::from_millis(10_500)).await;
        burst().await;
        assert_eq!(
            reviews_served(&admin, cluster, "tokenreviews").await,
            tokens + 2
        );
        assert_eq!(
            reviews_served(&admin, cluster, "subjectaccessreviews").await,
            access + 4
        );
    });
}

/// The front-proxy names wardle trusts follow kube-apiserver's `extension-apiserver-
/// authentication` ConfigMap without a restart of wardle: kube-apiserver restarted with one
/// more `--requestheader-allowed-names` adds it there, and wardle then trusts that name's
/// certificate; the name edited out of the ConfigMap, no longer. Twin of the dev host's
/// `configmap_changes_apply_without_restart`.
pub fn configmap_changes_apply_without_restart(cluster: &RealCluster) {
    let front_proxy = issuer(cluster, "front-proxy-ca");
    let (cert, key) = issue_certificate(&front_proxy, "intruder", None, false);
    let intruder = wardle_client(cluster, Some((&cert, &key)));
    let url = "https://api.wardle.svc/apis/wardle.example.com/v1alpha1/namespaces/alice/flunders";
    let code = || {
        block_on(send(
            intruder
                .get(url)
                .header("X-Remote-User", "alice")
                .header("X-Remote-Group", "system:authenticated"),
        ))
        .0
    };
    let allowed_names = || {
        let configmap = cluster.get_json(&[
            "configmap",
            "extension-apiserver-authentication",
            "-n",
            "kube-system",
        ]);
        configmap["data"]["requestheader-allowed-names"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    assert_eq!(code(), 401);
    assert_eq!(allowed_names(), r#"["front-proxy-client"]"#);

    cluster.script_with(
        "restart-kube-apiserver",
        &["--requestheader-allowed-names=intruder"],
    );
    cluster.wait_until("kube-apiserver rewrites the ConfigMap", TIMEOUT, || {
        allowed_names().contains("intruder")
    });
    cluster.wait_until("wardle trusts the new name", TIMEOUT, || code() == 200);

    // kube-apiserver adds its own configuration to what the ConfigMap holds (for clusters of
    // several kube-apiservers), never removes: restarted with its first flags, it leaves the
    // name there; an admin removes it by editing the ConfigMap.
    cluster.script("restart-kube-apiserver");
    assert!(allowed_names().contains("intruder"));
    cluster.kubectl_ok(
        "admin",
        &[
            "patch",
            "configmap",
            "extension-apiserver-authentication",
            "-n",
            "kube-system",
            "--type=merge",
            "-p",
            r#"{"data":{"requestheader-allowed-names":"[\"front-proxy-client\"]"}}"#,
        ],
    );
    cluster.wait_until("the ConfigMap as before", TIMEOUT, || {
        allowed_names() == r#"["front-proxy-client"]"#
    });
    cluster.wait_until("wardle no longer trusts it", TIMEOUT, || code() == 401);
    cluster.wait_until("wardle's APIServices available again", TIMEOUT, || {
        cluster
            .apiservice_available("v1alpha1.wardle.example.com")
            .0
            == "True"
    });
}

/// wardle's `/metrics` is no always-allowed path: straight to wardle, the real
/// SubjectAccessReview refuses it to anonymous and to bob (a non-resource `get` of the path)
/// and allows it to admin (`system:masters`). Twin of the dev host's
/// `metrics_are_authorized_by_the_host`.
pub fn metrics_are_authorized(cluster: &RealCluster) {
    let url = "https://api.wardle.svc/metrics";
    block_on(async {
        let (code, body) = send(wardle_client(cluster, None).get(url)).await;
        assert_eq!(code, 403, "{body}");
        assert!(
            message(&body)
                .contains("forbidden: User \"system:anonymous\" cannot get path \"/metrics\""),
            "{body}"
        );
        let (cert, key) = certificate(cluster, "bob");
        let (code, body) = send(wardle_client(cluster, Some((&cert, &key))).get(url)).await;
        assert_eq!(code, 403, "{body}");
        assert!(
            message(&body).contains("forbidden: User \"bob\" cannot get path \"/metrics\""),
            "{body}"
        );
        let (cert, key) = certificate(cluster, "admin");
        let (code, body) = send(wardle_client(cluster, Some((&cert, &key))).get(url)).await;
        assert_eq!(code, 200);
        let text = body.as_str().expect("the metrics text");
        // bob's refused scrape is counted.
        crate::support::checks::assert_refused_scrape_counted(text);
    });
}
