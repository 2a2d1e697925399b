//! List semantics over real HTTPS against an in-process server whose storage the test holds:
//! paging with `limit`/`continue` (every object exactly once, from one snapshot),
//! `remainingItemCount`, continue-token errors, expiry after compaction, the
//! `resourceVersionMatch` rules (422 with upstream's messages) and how a list reads at a
//! `resourceVersion` (exact, not older than, compacted, in the future, malformed).

mod support_kinds;
mod support_local;

use std::collections::BTreeMap;
use std::sync::Arc;

use apiserver_framework::prelude::*;
use apiserver_framework::server::GenericApiServer;
use apiserver_framework::storage::Storage;
use apiserver_framework::storage::memory::MemoryStorage;
use serde_json::{Value, json};
use support_kinds::{labelled, sized, sized_kind};
use support_local::{Local, start_local};

sized_kind!(WidgetSpec, "list.example.com", "v1", "Widget");

const NS: &str = "paging";

fn collection(ns: &str) -> String {
    format!("/apis/list.example.com/v1/namespaces/{ns}/widgets")
}

/// The text upstream answers for a continue token whose revision was compacted, up to where
/// its two variants (with and without a fresh token) part.
const CONTINUE_EXPIRED: &str = "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter";

/// The local server of widgets on `storage` (its client's fields through `Deref`).
struct Server {
    local: Local,
    storage: Arc<MemoryStorage>,
}

impl std::ops::Deref for Server {
    type Target = Local;

    fn deref(&self) -> &Local {
        &self.local
    }
}

/// One answer: status code, `Retry-After` header, body.
struct Answer {
    code: u16,
    retry_after: Option<String>,
    body: Value,
}

impl Server {
    async fn start() -> Server {
        let storage = Arc::new(MemoryStorage::new());
        let app = GenericApiServer::builder("lists")
            .group(Group::new("list.example.com").resource::<Widget>())
            .storage(storage.clone())
            .build();
        let local = start_local("lists", app, &[]).await;
        Server { local, storage }
    }

    /// Creates `name` in `ns`; returns its resourceVersion.
    async fn create(&self, ns: &str, name: &str, labels: &[(&str, &str)]) -> u64 {
        let labels: BTreeMap<&str, &str> = labels.iter().copied().collect();
        let res = self
            .http
            .post(format!("{}{}", self.url, collection(ns)))
            .bearer_auth(&self.token)
            .json(&labelled(
                sized("list.example.com/v1", "Widget", name, 1),
                &labels,
            ))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status().as_u16(), 201);
        let body: Value = res.json().await.unwrap();
        rv_of(&body)
    }

    /// Sets `spec.size` of `name` with a merge patch; returns the new resourceVersion.
    async fn resize(&self, name: &str, size: i64) -> u64 {
        let res = self
            .http
            .patch(format!("{}{}/{name}", self.url, collection(NS)))
            .bearer_auth(&self.token)
            .header("Content-Type", "application/merge-patch+json")
            .body(json!({"spec": {"size": size}}).to_string())
            .send()
            .await
            .unwrap();
        assert_eq!(res.status().as_u16(), 200);
        let body: Value = res.json().await.unwrap();
        rv_of(&body)
    }

    async fn list_in(&self, ns: &str, query: &[(&str, &str)]) -> Answer {
        let res = self
            .http
            .get(format!("{}{}", self.url, collection(ns)))
            .bearer_auth(&self.token)
            .query(query)
            .send()
            .await
            .unwrap();
        let code = res.status().as_u16();
        let retry_after = res
            .headers()
            .get("retry-after")
            .map(|v| v.to_str().unwrap().to_string());
        let body = res.json().await.unwrap();
        Answer {
            code,
            retry_after,
            body,
        }
    }

    async fn list(&self, query: &[(&str, &str)]) -> Answer {
        self.list_in(NS, query).await
    }

    /// A list that must succeed.
    async fn ok(&self, query: &[(&str, &str)]) -> Value {
        let a = self.list(query).await;
        assert_eq!(a.code, 200, "{query:?}: {}", a.body);
        a.body
    }

    /// A list that must fail with `code`/`reason` and exactly `message`.
    async fn fails(&self, query: &[(&str, &str)], code: u16, reason: &str, message: &str) -> Value {
        let a = self.list(query).await;
        assert_eq!(a.code, code, "{query:?}: {}", a.body);
        assert_eq!(a.body["kind"], "Status", "{}", a.body);
        assert_eq!(a.body["apiVersion"], "v1", "{}", a.body);
        assert_eq!(a.body["status"], "Failure", "{}", a.body);
        assert_eq!(a.body["code"], code, "{}", a.body);
        assert_eq!(a.body["reason"], reason, "{query:?}: {}", a.body);
        assert_eq!(a.body["message"], message, "{query:?}");
        a.body
    }

    /// The storage's latest revision, as a list reports it.
    async fn current(&self) -> u64 {
        rv_of(&self.ok(&[]).await)
    }
}

fn rv_of(v: &Value) -> u64 {
    v["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or_else(|| panic!("no resourceVersion in {v}"))
        .parse()
        .unwrap()
}

fn names(list: &Value) -> Vec<String> {
    list["items"]
        .as_array()
        .unwrap_or_else(|| panic!("no items in {list}"))
        .iter()
        .map(|i| i["metadata"]["name"].as_str().unwrap().to_string())
        .collect()
}

/// Follows `continue` from a first list with `query` (which must hold `limit`); returns the
/// pages.
async fn pages(server: &Server, query: &[(&str, &str)]) -> Vec<Value> {
    let mut out = vec![server.ok(query).await];
    while let Some(token) = out.last().unwrap()["metadata"]["continue"].as_str() {
        let token = token.to_string();
        assert!(!token.is_empty(), "an empty continue is omitted, not sent");
        let mut q: Vec<(&str, &str)> = query.to_vec();
        q.push(("continue", &token));
        out.push(server.ok(&q).await);
        assert!(out.len() < 100, "paging does not end");
    }
    out
}

#[tokio::test]
async fn paging_returns_every_object_exactly_once_from_one_snapshot() {
    let server = Server::start().await;
    let n = 23;
    let all: Vec<String> = (0..n).map(|i| format!("w{i:02}")).collect();
    for name in &all {
        server.create(NS, name, &[]).await;
    }
    // Objects of another namespace never show up.
    server.create("elsewhere", "w05", &[]).await;
    server.create("elsewhere", "zz", &[]).await;

    let first = server.ok(&[("limit", "5")]).await;
    let snapshot = rv_of(&first);
    assert_eq!(names(&first), all[..5]);
    assert_eq!(first["metadata"]["remainingItemCount"], n - 5, "{first}");
    // Changes after the first page: a new object, an update, a deletion.
    server.create(NS, "w07a", &[]).await;
    server.resize("w10", 99).await;
    let res = server
        .http
        .delete(format!("{}{}/w20", server.url, collection(NS)))
        .bearer_auth(&server.token)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 200);

    let mut seen = names(&first);
    let mut token = first["metadata"]["continue"].as_str().unwrap().to_string();
    let mut page_count = 1;
    loop {
        let page = server.ok(&[("limit", "5"), ("continue", &token)]).await;
        page_count += 1;
        // Every page reads at the first page's revision.
        assert_eq!(rv_of(&page), snapshot, "{page}");
        for item in page["items"].as_array().unwrap() {
            if item["metadata"]["name"] == "w10" {
                assert_eq!(item["spec"]["size"], 1, "w10 as it was at the snapshot");
            }
        }
        seen.extend(names(&page));
        match page["metadata"]["continue"].as_str() {
            Some(t) => {
                assert_eq!(names(&page).len(), 5);
                assert_eq!(
                    page["metadata"]["remainingItemCount"],
                    n - seen.len() as i64,
                    "{page}"
                );
                token = t.to_string();
            }
            None => {
                assert!(
                    page["metadata"].get("remainingItemCount").is_none(),
                    "the last page has no remainingItemCount: {page}"
                );
                break;
            }
        }
    }
    assert_eq!(page_count, 5);
    assert_eq!(seen, all, "every object once, in key order");

    // A limit beyond the end: one page, no continue, no count.
    let whole = server.ok(&[("limit", "500")]).await;
    assert_eq!(whole["items"].as_array().unwrap().len(), n as usize); // +w07a −w20
    assert!(whole["metadata"].get("continue").is_none(), "{whole}");
    assert!(
        whole["metadata"].get("remainingItemCount").is_none(),
        "{whole}"
    );
    // limit=1 pages through the latest state one by one.
    let singles = pages(&server, &[("limit", "1")]).await;
    let latest: Vec<String> = singles.iter().flat_map(names).collect();
    let mut want: Vec<String> = all.iter().filter(|n| *n != "w20").cloned().collect();
    want.push("w07a".into());
    want.sort();
    assert_eq!(latest, want);
    for (i, page) in singles.iter().enumerate() {
        let left = want.len() - i - 1;
        if left > 0 {
            assert_eq!(
                page["metadata"]["remainingItemCount"], left as i64,
                "{page}"
            );
        }
    }
}

#[tokio::test]
async fn selectors_page_without_remaining_item_count() {
    let server = Server::start().await;
    for i in 0..12 {
        let color = if i % 3 == 0 { "red" } else { "blue" };
        server
            .create(NS, &format!("s{i:02}"), &[("color", color)])
            .await;
    }
    let red: Vec<String> = (0..12)
        .filter(|i| i % 3 == 0)
        .map(|i| format!("s{i:02}"))
        .collect();
    let blue: Vec<String> = (0..12)
        .filter(|i| i % 3 != 0)
        .map(|i| format!("s{i:02}"))
        .collect();

    for (query, want) in [
        (vec![("limit", "2"), ("labelSelector", "color=red")], &red),
        (vec![("limit", "3"), ("labelSelector", "color!=red")], &blue),
        (
            vec![("limit", "1"), ("fieldSelector", "metadata.name!=s00")],
            &(1..12).map(|i| format!("s{i:02}")).collect(),
        ),
    ] {
        let got = pages(&server, &query).await;
        assert!(got.len() > 1, "{query:?} pages");
        for page in &got {
            assert!(
                page["metadata"].get("remainingItemCount").is_none(),
                "{query:?}: no count with a selector: {page}"
            );
        }
        let all: Vec<String> = got.iter().flat_map(names).collect();
        assert_eq!(&all, want, "{query:?}");
    }
    // Without a selector the count is there.
    let page = server.ok(&[("limit", "2")]).await;
    assert_eq!(page["metadata"]["remainingItemCount"], 10, "{page}");
}

#[tokio::test]
async fn continue_token_errors() {
    let server = Server::start().await;
    for i in 0..4 {
        server.create(NS, &format!("c{i}"), &[]).await;
    }
    let first = server.ok(&[("limit", "2")]).await;
    let token = first["metadata"]["continue"].as_str().unwrap().to_string();

    let invalid = "invalid continue token: continue key is not valid";
    server
        .fails(
            &[("limit", "2"), ("continue", "a")],
            400,
            "BadRequest",
            &format!("{invalid}: illegal base64 data at input byte 0"),
        )
        .await;
    server
        .fails(
            &[("limit", "2"), ("continue", "abc$")],
            400,
            "BadRequest",
            &format!("{invalid}: illegal base64 data at input byte 3"),
        )
        .await;
    // Well-formed JSON that is not a usable token.
    for (json, why) in [
        (
            r#"{"v":"meta.k8s.io/v1","rv":0,"start":"c1"}"#,
            ": incorrect encoded start resourceVersion (version meta.k8s.io/v1)",
        ),
        (
            r#"{"v":"meta.k8s.io/v1","rv":3,"start":""}"#,
            ": encoded start key empty (version meta.k8s.io/v1)",
        ),
        (
            r#"{"v":"meta.k8s.io/v2","rv":3,"start":"c1"}"#,
            ": server does not recognize this encoded version meta.k8s.io/v2",
        ),
        (
            r#"{"v":"meta.k8s.io/v1","rv":3,"start":"/a/../../b"}"#,
            ": /a/../../b",
        ),
    ] {
        server
            .fails(
                &[("limit", "2"), ("continue", &b64url(json))],
                400,
                "BadRequest",
                &format!("{invalid}{why}"),
            )
            .await;
    }
    // Undecodable JSON: the same prefix (the rest is the decoder's own text).
    let a = server
        .list(&[("limit", "2"), ("continue", "bm90IGpzb24")])
        .await;
    assert_eq!(a.code, 400, "{}", a.body);
    assert_eq!(a.body["reason"], "BadRequest");
    assert!(
        apiserver_framework::testing::status_message(&a.body).starts_with(&format!("{invalid}: ")),
        "{}",
        a.body
    );

    // A resourceVersion other than "" or "0" with continue.
    server
        .fails(
            &[("continue", &token), ("resourceVersion", "1")],
            400,
            "BadRequest",
            "specifying resource version is not allowed when using continue",
        )
        .await;
    let rest = server
        .ok(&[
            ("limit", "2"),
            ("continue", &token),
            ("resourceVersion", "0"),
        ])
        .await;
    assert_eq!(names(&rest), ["c2", "c3"]);
    // A malformed token is reported before the resourceVersion.
    server
        .fails(
            &[("continue", "a"), ("resourceVersion", "1")],
            400,
            "BadRequest",
            &format!("{invalid}: illegal base64 data at input byte 0"),
        )
        .await;
}

fn b64url(s: &str) -> String {
    const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let b = s.as_bytes();
    let mut out = String::new();
    for chunk in b.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |acc, (i, c)| acc | (u32::from(*c) << (16 - 8 * i)));
        for i in 0..=chunk.len() {
            out.push(A[((n >> (18 - 6 * i)) & 63) as usize] as char);
        }
    }
    out
}

#[tokio::test]
async fn continue_after_compaction_is_expired() {
    let server = Server::start().await;
    for i in 0..6 {
        server.create(NS, &format!("e{i}"), &[]).await;
    }
    let first = server.ok(&[("limit", "2")]).await;
    let token = first["metadata"]["continue"].as_str().unwrap().to_string();
    // The token still works while its revision is kept, even after later writes.
    let latest = server.resize("e0", 5).await;
    let second = server.ok(&[("limit", "2"), ("continue", &token)]).await;
    assert_eq!(names(&second), ["e2", "e3"]);
    assert_eq!(rv_of(&second), rv_of(&first));

    server.storage.compact(latest).await.unwrap();
    let status = server
        .list(&[("limit", "2"), ("continue", &token)])
        .await
        .body;
    assert_eq!(status["kind"], "Status", "{status}");
    assert_eq!(status["code"], 410, "{status}");
    assert_eq!(status["reason"], "Expired", "{status}");
    let message = status["message"].as_str().unwrap();
    assert_eq!(
        message,
        format!(
            "{CONTINUE_EXPIRED}, or use the continue token in this response to retrieve the \
             remainder of the results. Continuing with the provided token results in an \
             inconsistent list - objects that were created, modified, or deleted between the time \
             the first chunk was returned and now may show up in the list."
        )
    );
    // The Status hands out a token that continues after the same key at the latest revision.
    let fresh = status["metadata"]["continue"].as_str().unwrap().to_string();
    let rest = server.ok(&[("limit", "10"), ("continue", &fresh)]).await;
    assert_eq!(names(&rest), ["e2", "e3", "e4", "e5"]);
    assert_eq!(rv_of(&rest), latest);
}

#[tokio::test]
async fn resource_version_match_rules() {
    let server = Server::start().await;
    server.create(NS, "m0", &[]).await;
    server.create(NS, "m1", &[]).await;
    let token = server.ok(&[("limit", "1")]).await["metadata"]["continue"]
        .as_str()
        .unwrap()
        .to_string();
    let prefix = "ListOptions.meta.k8s.io \"\" is invalid: ";
    let no_rv = "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided";
    let with_continue = "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden when continue is provided";
    let cases: Vec<(Vec<(&str, &str)>, String)> = vec![
        (vec![("resourceVersionMatch", "NotOlderThan")], no_rv.into()),
        (vec![("resourceVersionMatch", "Exact")], no_rv.into()),
        (
            vec![("resourceVersionMatch", "Exact"), ("resourceVersion", "0")],
            "resourceVersionMatch: Forbidden: resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"".into(),
        ),
        (
            vec![("resourceVersionMatch", "Newest"), ("resourceVersion", "5")],
            "resourceVersionMatch: Unsupported value: \"Newest\": supported values: \"Exact\", \"NotOlderThan\", \"\"".into(),
        ),
        (
            vec![("resourceVersionMatch", "exact"), ("resourceVersion", "0")],
            "resourceVersionMatch: Unsupported value: \"exact\": supported values: \"Exact\", \"NotOlderThan\", \"\"".into(),
        ),
        (
            vec![("resourceVersionMatch", "NotOlderThan"), ("continue", &token)],
            format!("[{no_rv}, {with_continue}]"),
        ),
        (
            vec![
                ("resourceVersionMatch", "NotOlderThan"),
                ("continue", &token),
                ("resourceVersion", "0"),
            ],
            with_continue.into(),
        ),
        (
            vec![("resourceVersionMatch", "Bogus")],
            format!(
                "[{no_rv}, resourceVersionMatch: Unsupported value: \"Bogus\": supported values: \"Exact\", \"NotOlderThan\", \"\"]"
            ),
        ),
        (
            vec![("sendInitialEvents", "true")],
            "sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list".into(),
        ),
        (
            vec![("sendInitialEvents", "false"), ("resourceVersionMatch", "Exact")],
            format!(
                "[{no_rv}, sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list]"
            ),
        ),
        // Watches: the match needs sendInitialEvents, which needs NotOlderThan.
        (
            vec![
                ("watch", "true"),
                ("resourceVersionMatch", "NotOlderThan"),
            ],
            "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided".into(),
        ),
        (
            vec![("watch", "true"), ("sendInitialEvents", "true")],
            "resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan".into(),
        ),
        (
            vec![
                ("watch", "true"),
                ("sendInitialEvents", "true"),
                ("resourceVersionMatch", "Exact"),
            ],
            "[resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan, resourceVersionMatch: Unsupported value: \"Exact\": supported values: \"NotOlderThan\"]".into(),
        ),
    ];
    for (query, errors) in &cases {
        let status = server
            .fails(query, 422, "Invalid", &format!("{prefix}{errors}"))
            .await;
        let details = &status["details"];
        assert_eq!(details["group"], "meta.k8s.io", "{status}");
        assert_eq!(details["kind"], "ListOptions", "{status}");
        assert!(details.get("name").is_none(), "{status}");
        let causes = details["causes"].as_array().unwrap();
        assert!(!causes.is_empty(), "{status}");
        for c in causes {
            let field = c["field"].as_str().unwrap();
            assert!(
                field == "resourceVersionMatch" || field == "sendInitialEvents",
                "{status}"
            );
            let reason = c["reason"].as_str().unwrap();
            assert!(
                reason == "FieldValueForbidden" || reason == "FieldValueNotSupported",
                "{status}"
            );
            assert!(errors.contains(c["message"].as_str().unwrap()), "{status}");
        }
    }
    // Accepted combinations.
    let rv = server.current().await.to_string();
    for query in [
        vec![
            ("resourceVersionMatch", "NotOlderThan"),
            ("resourceVersion", "0"),
        ],
        vec![
            ("resourceVersionMatch", "NotOlderThan"),
            ("resourceVersion", rv.as_str()),
        ],
        vec![
            ("resourceVersionMatch", "Exact"),
            ("resourceVersion", rv.as_str()),
        ],
        vec![("resourceVersionMatch", ""), ("resourceVersion", "")],
    ] {
        let list = server.ok(&query).await;
        assert_eq!(names(&list), ["m0", "m1"], "{query:?}");
    }
}

#[tokio::test]
async fn reading_at_a_resource_version() {
    let server = Server::start().await;
    let rv_a = server.create(NS, "a", &[]).await;
    let rv_b = server.create(NS, "b", &[]).await;
    server.resize("a", 7).await;
    server.create(NS, "c", &[]).await;
    let current = server.current().await;

    // Exact: the collection as it was at that revision, with that revision.
    let at_b = server
        .ok(&[
            ("resourceVersionMatch", "Exact"),
            ("resourceVersion", &rv_b.to_string()),
        ])
        .await;
    assert_eq!(names(&at_b), ["a", "b"]);
    assert_eq!(rv_of(&at_b), rv_b);
    assert_eq!(at_b["items"][0]["spec"]["size"], 1);
    assert_eq!(
        at_b["items"][0]["metadata"]["resourceVersion"],
        rv_a.to_string()
    );
    // A limit with a resourceVersion and no match reads exactly there too.
    let legacy = server
        .ok(&[("limit", "10"), ("resourceVersion", &rv_a.to_string())])
        .await;
    assert_eq!(names(&legacy), ["a"]);
    assert_eq!(rv_of(&legacy), rv_a);
    // Not older than: the latest state.
    for query in [
        vec![("resourceVersion", rv_a.to_string())],
        vec![
            ("resourceVersion", rv_a.to_string()),
            ("resourceVersionMatch", "NotOlderThan".to_string()),
        ],
        vec![("resourceVersion", "0".to_string())],
    ] {
        let q: Vec<(&str, &str)> = query.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let list = server.ok(&q).await;
        assert_eq!(names(&list), ["a", "b", "c"], "{q:?}");
        assert_eq!(rv_of(&list), current, "{q:?}");
        assert_eq!(list["items"][0]["spec"]["size"], 7, "{q:?}");
    }

    // In the future: upstream's "too large resource version" timeout.
    let future = current + 1000;
    for query in [
        vec![("resourceVersion", future.to_string())],
        vec![
            ("resourceVersion", future.to_string()),
            ("resourceVersionMatch", "Exact".to_string()),
        ],
        vec![
            ("resourceVersion", future.to_string()),
            ("resourceVersionMatch", "NotOlderThan".to_string()),
        ],
        vec![
            ("resourceVersion", future.to_string()),
            ("limit", "1".to_string()),
        ],
    ] {
        let q: Vec<(&str, &str)> = query.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let a = server.list(&q).await;
        let status = &a.body;
        assert_eq!(a.code, 504, "{q:?}: {status}");
        assert_eq!(status["reason"], "Timeout", "{status}");
        assert_eq!(
            status["message"],
            format!("Timeout: Too large resource version: {future}, current: {current}"),
        );
        assert_eq!(status["details"]["retryAfterSeconds"], 1, "{status}");
        assert_eq!(
            status["details"]["causes"],
            json!([{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}]),
        );
        assert_eq!(a.retry_after.as_deref(), Some("1"), "{status}");
    }

    // Not a number: 400 with the storage's parse error.
    for (rv, why) in [
        ("abc", "invalid syntax"),
        ("-1", "invalid syntax"),
        ("+1", "invalid syntax"),
        ("1.5", "invalid syntax"),
        ("18446744073709551616", "value out of range"),
    ] {
        let message = format!(
            "invalid resource version: resourceVersion: Invalid value: \"{rv}\": strconv.ParseUint: parsing \"{rv}\": {why}"
        );
        server
            .fails(&[("resourceVersion", rv)], 400, "BadRequest", &message)
            .await;
        server
            .fails(
                &[("resourceVersion", rv), ("resourceVersionMatch", "Exact")],
                400,
                "BadRequest",
                &message,
            )
            .await;
    }
    // A malformed limit is the integer parser's text alone.
    server
        .fails(
            &[("limit", "ten")],
            400,
            "BadRequest",
            "strconv.ParseInt: parsing \"ten\": invalid syntax",
        )
        .await;

    // Compaction: exact reads of forgotten revisions expire; newer ones still work.
    server.storage.compact(current).await.unwrap();
    let too_old = "The resourceVersion for the provided list is too old.";
    for query in [
        vec![
            ("resourceVersion", rv_b.to_string()),
            ("resourceVersionMatch", "Exact".to_string()),
        ],
        vec![
            ("resourceVersion", rv_a.to_string()),
            ("limit", "5".to_string()),
        ],
    ] {
        let q: Vec<(&str, &str)> = query.iter().map(|(k, v)| (*k, v.as_str())).collect();
        server.fails(&q, 410, "Expired", too_old).await;
    }
    let exact_now = server
        .ok(&[
            ("resourceVersion", &current.to_string()),
            ("resourceVersionMatch", "Exact"),
        ])
        .await;
    assert_eq!(names(&exact_now), ["a", "b", "c"]);
    // Not-older-than reads never expire.
    let list = server.ok(&[("resourceVersion", &rv_a.to_string())]).await;
    assert_eq!(names(&list), ["a", "b", "c"]);
}

/// A list larger than the pieces its body is written in (16 KiB) arrives whole: its
/// announced `Content-Length` is its length, every item carries the resourceVersion a GET
/// answers, and the same list gzip-encoded (over 128 KiB) decodes to the same bytes.
#[tokio::test]
async fn a_large_list_arrives_whole_with_its_length_plain_and_gzipped() {
    let server = Server::start().await;
    let long = "x".repeat(60);
    let labels: Vec<(String, &str)> = (0..5)
        .map(|i| (format!("label-{i}"), long.as_str()))
        .collect();
    let labels: Vec<(&str, &str)> = labels.iter().map(|(k, v)| (k.as_str(), *v)).collect();
    let n = 320;
    let mut versions = BTreeMap::new();
    for chunk in (0..n).collect::<Vec<_>>().chunks(32) {
        let created = futures::future::join_all(chunk.iter().map(|i| {
            let name = format!("big-{i:03}");
            let labels = &labels;
            let server = &server;
            async move { (name.clone(), server.create(NS, &name, labels).await) }
        }))
        .await;
        versions.extend(created);
    }
    let get = |accept_encoding: &'static str| {
        server
            .http
            .get(format!("{}{}", server.url, collection(NS)))
            .bearer_auth(&server.token)
            .header("Accept-Encoding", accept_encoding)
            .send()
    };
    let plain = get("identity").await.unwrap();
    assert_eq!(plain.status().as_u16(), 200);
    assert!(plain.headers().get("content-encoding").is_none());
    let length: usize = plain.headers()["content-length"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    let body = plain.bytes().await.unwrap();
    assert_eq!(body.len(), length);
    assert!(
        length > 128 * 1024,
        "{length} bytes: not larger than the gzip threshold"
    );
    let list: Value = serde_json::from_slice(&body).unwrap();
    let items = list["items"].as_array().unwrap();
    assert_eq!(items.len(), n);
    for item in items {
        let name = item["metadata"]["name"].as_str().unwrap();
        assert_eq!(rv_of(item), versions[name], "{name}");
        assert_eq!(item["metadata"]["labels"]["label-4"], long.as_str());
    }
    let gzipped = get("gzip").await.unwrap();
    assert_eq!(gzipped.headers()["content-encoding"], "gzip");
    let compressed = gzipped.bytes().await.unwrap();
    let mut decoded = Vec::new();
    std::io::Read::read_to_end(
        &mut flate2::read::GzDecoder::new(&compressed[..]),
        &mut decoded,
    )
    .unwrap();
    assert_eq!(decoded, body);
}
