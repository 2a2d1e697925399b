//! Bad requests against the real `wardle local` binary over HTTPS: each is refused with the
//! `metav1.Status` upstream sends, and no bad write leaves anything behind.

mod support;

use reqwest::{Client, Method, StatusCode};
use serde_json::{Value, json};
use support::checks::answer;
use support::checks::message;
use support::fixtures::flunder_to;
use support::{FISCHERS, FLUNDERS, Wardle};

/// Sends `method url` with an optional JSON body (given as text, so it may be malformed).
async fn send(
    client: &Client,
    method: Method,
    url: &str,
    body: Option<String>,
) -> (StatusCode, String) {
    let mut req = client.request(method.clone(), url);
    if let Some(body) = body {
        req = req.header("Content-Type", "application/json").body(body);
    }
    let res = req
        .send()
        .await
        .unwrap_or_else(|e| panic!("{method} {url}: {e}"));
    let status = res.status();
    let text = res.text().await.expect("read the response body");
    (status, text)
}

fn parse(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

/// Asserts `text` is a failure `Status` with `code` and `reason`; returns it.
fn status(code: StatusCode, text: &str, want_code: u16, reason: &str) -> Value {
    assert_eq!(code.as_u16(), want_code, "body: {text}");
    let v = parse(text);
    assert_eq!(v["kind"], "Status", "{v}");
    assert_eq!(v["apiVersion"], "v1", "{v}");
    assert_eq!(v["status"], "Failure", "{v}");
    assert_eq!(v["code"], want_code, "{v}");
    assert_eq!(v["reason"], reason, "{v}");
    assert!(v["metadata"].is_object(), "{v}");
    v
}

/// The stored Flunders of `default`: (name, resourceVersion, spec), sorted by name.
async fn stored(w: &Wardle, client: &Client) -> Vec<(String, String, Value)> {
    let (code, text) = send(client, Method::GET, &w.at(FLUNDERS), None).await;
    assert_eq!(code, StatusCode::OK, "list: {text}");
    let list = parse(&text);
    assert_eq!(list["kind"], "FlunderList", "{list}");
    let mut items: Vec<_> = list["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|i| {
            (
                i["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                i["metadata"]["resourceVersion"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                i["spec"].clone(),
            )
        })
        .collect();
    items.sort_by(|a, b| a.0.cmp(&b.0));
    items
}

/// Starts a server with one stored Flunder `f1`; returns the server, a client and the stored
/// state to compare against after each bad write.
async fn with_f1() -> (Wardle, Client, Vec<(String, String, Value)>) {
    let w = Wardle::start();
    let client = w.client();
    let (code, text) = send(
        &client,
        Method::POST,
        &w.at(FLUNDERS),
        Some(flunder_to("f1", "a", "Flunder").to_string()),
    )
    .await;
    assert_eq!(code, StatusCode::CREATED, "create f1: {text}");
    let before = stored(&w, &client).await;
    assert_eq!(before.len(), 1, "{before:?}");
    (w, client, before)
}

async fn post(w: &Wardle, client: &Client, body: impl Into<String>) -> (StatusCode, String) {
    send(client, Method::POST, &w.at(FLUNDERS), Some(body.into())).await
}

async fn put_f1(w: &Wardle, client: &Client, body: impl Into<String>) -> (StatusCode, String) {
    send(
        client,
        Method::PUT,
        &w.at(&format!("{FLUNDERS}/f1")),
        Some(body.into()),
    )
    .await
}

/// The stored `f1`, as JSON.
async fn get_f1(w: &Wardle, client: &Client) -> Value {
    let (code, text) = send(client, Method::GET, &w.at(&format!("{FLUNDERS}/f1")), None).await;
    assert_eq!(code, StatusCode::OK, "get f1: {text}");
    parse(&text)
}

// ---------------------------------------------------------------------------------------------
// undecodable bodies: 400

#[tokio::test]
async fn malformed_json_is_a_bad_request() {
    let (w, client, before) = with_f1().await;
    for body in [
        r#"{"apiVersion": "wardle.example.com/v1alpha1", "kind": "Flunder", "metadata": {"name": "f2"#,
        "not json at all",
        "",
        "[1, 2, 3]",
    ] {
        let (code, text) = post(&w, &client, body).await;
        let v = status(code, &text, 400, "BadRequest");
        assert!(v["message"].as_str().is_some_and(|m| !m.is_empty()), "{v}");
        assert_eq!(stored(&w, &client).await, before, "after posting {body:?}");
    }
    // The same on update.
    let (code, text) = put_f1(&w, &client, r#"{"kind": "Flunder", "#).await;
    status(code, &text, 400, "BadRequest");
    assert_eq!(stored(&w, &client).await, before);
}

#[tokio::test]
async fn wrong_field_types_are_a_bad_request() {
    let (w, client, before) = with_f1().await;
    let bodies = [
        json!({"apiVersion": "wardle.example.com/v1alpha1", "kind": "Flunder",
               "metadata": {"name": "f2"}, "spec": {"reference": 5}}),
        json!({"apiVersion": "wardle.example.com/v1alpha1", "kind": "Flunder",
               "metadata": {"name": "f2"}, "spec": "a string"}),
        json!({"apiVersion": "wardle.example.com/v1alpha1", "kind": "Flunder",
               "metadata": {"name": "f2", "labels": ["not", "a", "map"]}}),
        json!({"apiVersion": "wardle.example.com/v1alpha1", "kind": "Flunder",
               "metadata": {"name": 7}}),
    ];
    for body in bodies {
        let (code, text) = post(&w, &client, body.to_string()).await;
        status(code, &text, 400, "BadRequest");
        assert_eq!(stored(&w, &client).await, before, "after posting {body}");
    }
}

#[tokio::test]
async fn unknown_kind_is_a_bad_request() {
    let (w, client, before) = with_f1().await;
    for kind in ["Flounder", "Fischer"] {
        let mut body = flunder_to("f2", "a", "Flunder");
        body["kind"] = kind.into();
        let (code, text) = post(&w, &client, body.to_string()).await;
        status(code, &text, 400, "BadRequest");
        assert_eq!(
            stored(&w, &client).await,
            before,
            "after posting kind {kind:?}"
        );
    }
    // And a Flunder posted to the Fischer collection.
    let (code, text) = send(
        &client,
        Method::POST,
        &w.at(FISCHERS),
        Some(flunder_to("fi", "a", "Flunder").to_string()),
    )
    .await;
    status(code, &text, 400, "BadRequest");
    let (code, text) = send(&client, Method::GET, &w.at(FISCHERS), None).await;
    assert_eq!(code, StatusCode::OK);
    assert_eq!(
        parse(&text)["items"],
        json!([]),
        "a Fischer was stored: {text}"
    );
}

#[tokio::test]
async fn wrong_api_version_is_a_bad_request() {
    let (w, client, before) = with_f1().await;
    for api_version in ["wardle.example.com/v1beta1", "other.example.com/v1alpha1"] {
        let mut body = flunder_to("f2", "a", "Flunder");
        body["apiVersion"] = api_version.into();
        let (code, text) = post(&w, &client, body.to_string()).await;
        let v = status(code, &text, 400, "BadRequest");
        assert_eq!(
            v["message"],
            format!(
                "the API version in the data ({api_version}) does not match the expected API version \
                 (wardle.example.com/v1alpha1)"
            ),
            "{v}"
        );
        assert_eq!(
            stored(&w, &client).await,
            before,
            "after posting {api_version}"
        );
    }
}

#[tokio::test]
async fn put_with_another_name_in_the_body_is_a_bad_request() {
    let (w, client, before) = with_f1().await;
    let mut body = get_f1(&w, &client).await;
    body["metadata"]["name"] = "f2".into();
    body["spec"]["reference"] = "changed".into();
    let (code, text) = put_f1(&w, &client, body.to_string()).await;
    let v = status(code, &text, 400, "BadRequest");
    assert_eq!(
        v["message"], "the name of the object (f2) does not match the name on the URL (f1)",
        "{v}"
    );
    assert_eq!(stored(&w, &client).await, before);

    // Likewise a namespace in the body that is not the one of the URL.
    let mut body = get_f1(&w, &client).await;
    body["metadata"]["namespace"] = "other".into();
    body["spec"]["reference"] = "changed".into();
    let (code, text) = put_f1(&w, &client, body.to_string()).await;
    let v = status(code, &text, 400, "BadRequest");
    assert_eq!(
        v["message"],
        "the namespace of the provided object does not match the namespace sent on the request",
        "{v}"
    );
    assert_eq!(stored(&w, &client).await, before);
}

// ---------------------------------------------------------------------------------------------
// validation: 422

#[tokio::test]
async fn invalid_names_are_unprocessable() {
    let (w, client, before) = with_f1().await;
    let long = "a".repeat(254);
    for name in ["Bad_Name", "-x", long.as_str()] {
        let (code, text) = post(&w, &client, flunder_to(name, "a", "Flunder").to_string()).await;
        let v = status(code, &text, 422, "Invalid");
        assert_eq!(v["details"]["name"], name, "{v}");
        assert_eq!(v["details"]["group"], "wardle.example.com", "{v}");
        assert_eq!(v["details"]["kind"], "Flunder", "{v}");
        let causes = v["details"]["causes"]
            .as_array()
            .unwrap_or_else(|| panic!("no causes: {v}"));
        assert!(
            causes
                .iter()
                .any(|c| c["field"] == "metadata.name" && c["reason"] == "FieldValueInvalid"),
            "no FieldValueInvalid cause on metadata.name: {v}"
        );
        let message = v["message"].as_str().unwrap_or_default();
        let prefix = format!(
            "Flunder.wardle.example.com \"{name}\" is invalid: metadata.name: Invalid value: \"{name}\""
        );
        assert!(
            message.starts_with(&prefix),
            "message {message:?} does not start with {prefix:?}"
        );
        assert_eq!(stored(&w, &client).await, before, "after posting {name:?}");
    }
    // 253 characters is the limit, not an error.
    let name = "a".repeat(253);
    let (code, text) = post(&w, &client, flunder_to(&name, "a", "Flunder").to_string()).await;
    assert_eq!(code, StatusCode::CREATED, "{text}");
    assert_eq!(stored(&w, &client).await.len(), 2);
}

#[tokio::test]
async fn put_with_a_stale_resource_version_is_a_conflict() {
    let (w, client, _) = with_f1().await;
    let original = get_f1(&w, &client).await;
    let mut first = original.clone();
    first["spec"]["reference"] = "first".into();
    let (code, text) = put_f1(&w, &client, first.to_string()).await;
    assert_eq!(code, StatusCode::OK, "{text}");
    let after_first = stored(&w, &client).await;

    let mut stale = original.clone();
    stale["spec"]["reference"] = "stale".into();
    let (code, text) = put_f1(&w, &client, stale.to_string()).await;
    let v = status(code, &text, 409, "Conflict");
    assert_eq!(
        v["message"],
        "Operation cannot be fulfilled on flunders.wardle.example.com \"f1\": the object has been \
         modified; please apply your changes to the latest version and try again",
        "{v}"
    );
    assert_eq!(v["details"]["name"], "f1", "{v}");
    assert_eq!(v["details"]["group"], "wardle.example.com", "{v}");
    assert_eq!(v["details"]["kind"], "flunders", "{v}");
    assert_eq!(stored(&w, &client).await, after_first);
    assert_eq!(get_f1(&w, &client).await["spec"]["reference"], "first");
}

#[tokio::test]
async fn put_without_a_resource_version_is_unprocessable() {
    let (w, client, before) = with_f1().await;
    let mut body = get_f1(&w, &client).await;
    body["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("resourceVersion");
    body["spec"]["reference"] = "changed".into();
    let (code, text) = put_f1(&w, &client, body.to_string()).await;
    let v = status(code, &text, 422, "Invalid");
    assert_eq!(
        v["message"],
        "flunders.wardle.example.com \"f1\" is invalid: metadata.resourceVersion: Invalid value: 0: \
         must be specified for an update",
        "{v}"
    );
    let causes = v["details"]["causes"]
        .as_array()
        .unwrap_or_else(|| panic!("no causes: {v}"));
    assert!(
        causes
            .iter()
            .any(|c| c["field"] == "metadata.resourceVersion"),
        "{v}"
    );
    assert_eq!(stored(&w, &client).await, before);
}

#[tokio::test]
async fn create_of_an_existing_name_already_exists() {
    let (w, client, before) = with_f1().await;
    let (code, text) = post(
        &w,
        &client,
        flunder_to("f1", "other", "Flunder").to_string(),
    )
    .await;
    let v = status(code, &text, 409, "AlreadyExists");
    assert_eq!(
        v["message"], "flunders.wardle.example.com \"f1\" already exists",
        "{v}"
    );
    assert_eq!(
        v["details"],
        json!({"name": "f1", "group": "wardle.example.com", "kind": "flunders"}),
        "{v}"
    );
    assert_eq!(stored(&w, &client).await, before);
    assert_eq!(get_f1(&w, &client).await["spec"]["reference"], "a");
}

#[tokio::test]
async fn a_body_over_3_mib_is_too_large() {
    let (w, client, before) = with_f1().await;
    let mut body = flunder_to("big", "", "Flunder");
    body["spec"]["reference"] = "x".repeat(3 * 1024 * 1024 + 1).into();
    let (code, text) = post(&w, &client, body.to_string()).await;
    let v = status(code, &text, 413, "RequestEntityTooLarge");
    assert_eq!(
        v["message"], "Request entity too large: limit is 3145728",
        "{v}"
    );
    assert_eq!(stored(&w, &client).await, before);
    // The server is still fine afterwards.
    let (code, text) = post(&w, &client, flunder_to("small", "a", "Flunder").to_string()).await;
    assert_eq!(code, StatusCode::CREATED, "{text}");
}

// ---------------------------------------------------------------------------------------------
// reads of things that are not there: 404

#[tokio::test]
async fn get_of_a_missing_flunder_is_the_exact_not_found_status() {
    let w = Wardle::start();
    let client = w.client();
    let res = client
        .get(w.at(&format!("{FLUNDERS}/missing")))
        .send()
        .await
        .expect("GET");
    assert_eq!(res.status(), StatusCode::NOT_FOUND);
    let content_type = support::checks::content_type(&res);
    assert_eq!(content_type, "application/json");
    let text = res.text().await.unwrap();
    assert_eq!(
        parse(&text),
        json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": "flunders.wardle.example.com \"missing\" not found",
            "reason": "NotFound",
            "details": {"name": "missing", "group": "wardle.example.com", "kind": "flunders"},
            "code": 404
        })
    );
    // Upstream's key order.
    let keys = [
        "\"kind\"",
        "\"apiVersion\"",
        "\"metadata\"",
        "\"status\"",
        "\"message\"",
        "\"reason\"",
        "\"details\"",
        "\"code\"",
    ];
    let positions: Vec<_> = keys
        .iter()
        .map(|k| text.find(k).unwrap_or(usize::MAX))
        .collect();
    assert!(
        positions.windows(2).all(|p| p[0] < p[1]),
        "key order differs from upstream: {text}"
    );
}

#[tokio::test]
async fn unknown_resource_paths_are_not_found() {
    let w = Wardle::start();
    let client = w.client();
    let (code, text) = send(
        &client,
        Method::GET,
        &w.at("/apis/wardle.example.com/v1alpha1/namespaces/default/widgets"),
        None,
    )
    .await;
    let v = status(code, &text, 404, "NotFound");
    assert_eq!(
        v["message"], "the server could not find the requested resource",
        "{v}"
    );
    // Writes to an unknown resource are not found either, and store nothing.
    let (code, _) = send(
        &client,
        Method::POST,
        &w.at("/apis/wardle.example.com/v1alpha1/namespaces/default/widgets"),
        Some(flunder_to("w", "a", "Flunder").to_string()),
    )
    .await;
    assert_eq!(code, StatusCode::NOT_FOUND);
    // Unknown versions and groups, and paths outside the API.
    for path in [
        "/apis/wardle.example.com/v1/namespaces/default/flunders",
        "/apis/nope.example.com/v1/things",
        "/nothing/here",
    ] {
        let (code, text) = send(&client, Method::GET, &w.at(path), None).await;
        assert_eq!(code, StatusCode::NOT_FOUND, "GET {path}: {text}");
    }
    assert!(stored(&w, &client).await.is_empty());
}

// ---------------------------------------------------------------------------------------------
// authentication, health, version

#[tokio::test]
async fn requests_without_a_valid_token_are_unauthorized() {
    let (w, client, before) = with_f1().await;
    let anonymous = w.anonymous_client();
    let (code, text) = send(&anonymous, Method::GET, &w.at(FLUNDERS), None).await;
    let v = status(code, &text, 401, "Unauthorized");
    assert_eq!(v["message"], "Unauthorized", "{v}");

    let (code, text) = send(
        &anonymous,
        Method::POST,
        &w.at(FLUNDERS),
        Some(flunder_to("f2", "a", "Flunder").to_string()),
    )
    .await;
    status(code, &text, 401, "Unauthorized");
    assert_eq!(stored(&w, &client).await, before);

    let wrong = w
        .client_builder()
        .default_headers({
            let mut h = reqwest::header::HeaderMap::new();
            h.insert("Authorization", "Bearer not-the-token".parse().unwrap());
            h
        })
        .build()
        .unwrap();
    let (code, text) = send(&wrong, Method::GET, &w.at(FLUNDERS), None).await;
    status(code, &text, 401, "Unauthorized");
    let (code, text) = send(
        &wrong,
        Method::DELETE,
        &w.at(&format!("{FLUNDERS}/f1")),
        None,
    )
    .await;
    status(code, &text, 401, "Unauthorized");
    assert_eq!(stored(&w, &client).await, before);
}

#[tokio::test]
async fn healthz_answers_ok_without_a_token() {
    let w = Wardle::start();
    let anonymous = w.anonymous_client();
    for path in ["/healthz", "/livez", "/readyz"] {
        let (code, text) = send(&anonymous, Method::GET, &w.at(path), None).await;
        assert_eq!(code, StatusCode::OK, "{path}: {text}");
        assert_eq!(text, "ok", "{path}");
    }
}

#[tokio::test]
async fn version_is_json_with_major_and_minor() {
    let w = Wardle::start();
    let (code, text) = send(&w.client(), Method::GET, &w.at("/version"), None).await;
    assert_eq!(code, StatusCode::OK, "{text}");
    let v = parse(&text);
    let major = v["major"]
        .as_str()
        .unwrap_or_else(|| panic!("no major: {v}"));
    let minor = v["minor"]
        .as_str()
        .unwrap_or_else(|| panic!("no minor: {v}"));
    assert_eq!(major, "1", "{v}");
    assert!(
        !minor.is_empty()
            && minor
                .trim_end_matches('+')
                .chars()
                .all(|c| c.is_ascii_digit()),
        "{v}"
    );
    assert_eq!(v["gitVersion"], format!("v{major}.{minor}.0"), "{v}");
}

// ---------------------------------------------------------------------------------------------
// the edge of bad input: what upstream accepts

/// Upstream decodes into Go structs, where an absent `spec` is its zero value: a Flunder with
/// only metadata is valid (sample-apiserver's validation only relates reference and
/// referenceType).
#[tokio::test]
async fn a_flunder_without_spec_is_accepted() {
    let (w, client, before) = with_f1().await;
    let body = json!({
        "apiVersion": "wardle.example.com/v1alpha1",
        "kind": "Flunder",
        "metadata": {"name": "bare"},
    });
    let (code, text) = post(&w, &client, body.to_string()).await;
    assert_eq!(code, StatusCode::CREATED, "{text}");
    let after = stored(&w, &client).await;
    assert_eq!(after.len(), before.len() + 1, "{after:?}");
    assert!(after.iter().any(|(name, _, _)| name == "bare"), "{after:?}");
}

// ---------------------------------------------------------------------------------------------
// patches, delete options and the scale subresource

async fn patch_f1(
    w: &Wardle,
    client: &Client,
    content_type: &str,
    body: impl Into<String>,
) -> (StatusCode, String) {
    let res = client
        .patch(w.at(&format!("{FLUNDERS}/f1")))
        .header("Content-Type", content_type)
        .body(body.into())
        .send()
        .await
        .expect("send the patch");
    let code = res.status();
    (code, res.text().await.expect("read the response"))
}

#[tokio::test]
async fn bad_patches_are_refused_and_change_nothing() {
    let (w, client, before) = with_f1().await;
    // Unsupported patch type: upstream's router's 415.
    let (code, text) = patch_f1(&w, &client, "application/xml", "<x/>").await;
    let v = status(code, &text, 415, "UnsupportedMediaType");
    assert_eq!(message(&v), "415: Unsupported Media Type", "{v}");
    // Malformed patch documents: 400.
    for (ct, body) in [
        ("application/json-patch+json", "[{\"op\":"),
        ("application/json-patch+json", "{\"op\":\"add\"}"),
        ("application/merge-patch+json", "[1,2]"),
        ("application/strategic-merge-patch+json", "{\"spec\":"),
        (
            "application/strategic-merge-patch+json",
            "{\"$patch\":\"explode\"}",
        ),
    ] {
        let (code, text) = patch_f1(&w, &client, ct, body).await;
        assert_eq!(code.as_u16(), 400, "{ct} {body}: {text}");
        status(code, &text, 400, "BadRequest");
    }
    // A JSON patch that does not apply: 422.
    let (code, text) = patch_f1(
        &w,
        &client,
        "application/json-patch+json",
        r#"[{"op":"remove","path":"/spec/nothing"}]"#,
    )
    .await;
    status(code, &text, 422, "Invalid");
    // A patch that yields an invalid object: 422 from validation.
    let (code, text) = patch_f1(
        &w,
        &client,
        "application/merge-patch+json",
        r#"{"spec":{"referenceType":"Nonsense"}}"#,
    )
    .await;
    assert!(code.is_client_error(), "{text}");
    // A patch that yields a wrong type: 400 as a decoding error.
    let (code, text) = patch_f1(
        &w,
        &client,
        "application/merge-patch+json",
        r#"{"spec":{"reference":7}}"#,
    )
    .await;
    status(code, &text, 400, "BadRequest");
    // A small patch whose result would exceed 3 MiB: 413.
    let big = "x".repeat(1_700_000);
    let body = json!([
        {"op": "add", "path": "/metadata/annotations", "value": {"a": big}},
        {"op": "copy", "from": "/metadata/annotations/a", "path": "/metadata/annotations/b"},
    ]);
    let (code, text) = patch_f1(&w, &client, "application/json-patch+json", body.to_string()).await;
    status(code, &text, 413, "RequestEntityTooLarge");
    assert_eq!(stored(&w, &client).await, before);
}

#[tokio::test]
async fn bad_delete_options_are_refused() {
    let (w, client, before) = with_f1().await;
    let url = w.at(&format!("{FLUNDERS}/f1"));
    let (code, text) = send(
        &client,
        Method::DELETE,
        &format!("{url}?propagationPolicy=Sideways"),
        None,
    )
    .await;
    let v = status(code, &text, 422, "Invalid");
    assert_eq!(
        v["message"],
        "DeleteOptions.meta.k8s.io \"\" is invalid: propagationPolicy: Unsupported value: \"Sideways\": supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\""
    );
    let (code, text) = send(
        &client,
        Method::DELETE,
        &format!("{url}?propagationPolicy=Orphan&orphanDependents=true"),
        None,
    )
    .await;
    status(code, &text, 422, "Invalid");
    let (code, text) = send(
        &client,
        Method::DELETE,
        &url,
        Some(r#"{"kind":"DeleteOptions","gracePeriodSeconds":"soon"}"#.into()),
    )
    .await;
    status(code, &text, 400, "BadRequest");
    let (code, text) = send(
        &client,
        Method::DELETE,
        &url,
        Some(r#"{"preconditions":{"uid":"not-the-uid"}}"#.into()),
    )
    .await;
    status(code, &text, 409, "Conflict");
    assert_eq!(stored(&w, &client).await, before);
    // Propagation policies are accepted.
    let (code, text) = send(
        &client,
        Method::DELETE,
        &url,
        Some(
            r#"{"kind":"DeleteOptions","apiVersion":"v1","propagationPolicy":"Foreground"}"#.into(),
        ),
    )
    .await;
    assert_eq!(code, StatusCode::OK, "{text}");
}

#[tokio::test]
async fn bad_scale_writes_are_refused() {
    let (w, client, before) = with_f1().await;
    let url = w.at(&format!("{FLUNDERS}/f1/scale"));
    let scale = |replicas: i64, rv: &str| {
        json!({
            "kind": "Scale",
            "apiVersion": "autoscaling/v1",
            "metadata": {"name": "f1", "resourceVersion": rv},
            "spec": {"replicas": replicas},
        })
        .to_string()
    };
    let (code, text) = send(&client, Method::PUT, &url, Some(scale(-1, ""))).await;
    let v = status(code, &text, 422, "Invalid");
    assert_eq!(
        v["message"],
        "Scale.autoscaling \"f1\" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0"
    );
    let (code, text) = send(&client, Method::PUT, &url, Some(scale(2, "999"))).await;
    status(code, &text, 409, "Conflict");
    let (code, text) = send(
        &client,
        Method::PUT,
        &url,
        Some(r#"{"kind":"Flunder","apiVersion":"wardle.example.com/v1alpha1"}"#.into()),
    )
    .await;
    status(code, &text, 400, "BadRequest");
    assert_eq!(stored(&w, &client).await, before);
    let rv = &before[0].1;
    let (code, text) = send(&client, Method::PUT, &url, Some(scale(2, rv))).await;
    assert_eq!(code, StatusCode::OK, "{text}");
    assert_eq!(parse(&text)["spec"]["replicas"], 2);
}

#[tokio::test]
async fn field_validation_on_raw_bodies() {
    let (w, client, before) = with_f1().await;
    let strict = w.at(&format!("{FLUNDERS}?fieldValidation=Strict"));
    // Duplicate and unknown fields, in document order.
    let body = r#"{"apiVersion":"wardle.example.com/v1alpha1","kind":"Flunder","metadata":{"name":"d","name":"d"},"spec":{"reference":"a","referenceType":"Flunder","nope":1}}"#;
    let (code, text) = send(&client, Method::POST, &strict, Some(body.into())).await;
    let v = status(code, &text, 400, "BadRequest");
    assert_eq!(
        v["message"],
        "Flunder in version \"v1alpha1\" cannot be handled as a Flunder: strict decoding error: duplicate field \"metadata.name\", unknown field \"spec.nope\""
    );
    // An unsupported value of the parameter: upstream's 422 on the CreateOptions, the value
    // named in a cause.
    let (code, text) = send(
        &client,
        Method::POST,
        &w.at(&format!("{FLUNDERS}?fieldValidation=Loose")),
        Some(flunder_to("e", "a", "Flunder").to_string()),
    )
    .await;
    let v = status(code, &text, 422, "Invalid");
    assert_eq!(v["details"]["kind"], "CreateOptions", "{v}");
    assert_eq!(v["details"]["causes"][0]["field"], "fieldValidation", "{v}");
    assert_eq!(stored(&w, &client).await, before);

    // Warn (the default) answers with Warning headers.
    let res = answer(
        client
            .post(w.at(FLUNDERS))
            .header("Content-Type", "application/json")
            .body(body),
    )
    .await;
    assert_eq!(res.status(), StatusCode::CREATED);
    let warnings: Vec<&str> = res
        .headers()
        .get_all("warning")
        .iter()
        .map(|v| v.to_str().unwrap())
        .collect();
    assert_eq!(
        warnings,
        [
            // v1alpha1's deprecation (sample-apiserver's lifecycle) comes first.
            r#"299 - "wardle.example.com/v1alpha1 Flunder is deprecated in v1.3+, unavailable in v1.10+""#,
            r#"299 - "duplicate field \"metadata.name\"""#,
            r#"299 - "unknown field \"spec.nope\"""#
        ]
    );

    // A strict patch that adds an unknown field: 422 on field `patch`, nothing changed.
    let f1_before = get_f1(&w, &client).await;
    let res = answer(
        client
            .patch(w.at(&format!("{FLUNDERS}/f1?fieldValidation=Strict")))
            .header("Content-Type", "application/merge-patch+json")
            .body(r#"{"spec":{"nope":1}}"#),
    )
    .await;
    let code = res.status();
    let text = res.text().await.unwrap();
    let v = status(code, &text, 422, "Invalid");
    assert_eq!(v["details"]["causes"][0]["field"], "patch");
    assert!(
        message(&v).ends_with(": strict decoding error: unknown field \"spec.nope\""),
        "{v}"
    );
    assert_eq!(get_f1(&w, &client).await, f1_before);
}
