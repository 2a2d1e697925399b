//! Request semantics as the kube-rs client sees them: paging a list with `limit` and
//! `continue`, JSON and merge patches, and deletes with preconditions.

mod support;

use std::collections::BTreeMap;

use kube::Api;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams, Preconditions};
use serde_json::json;
use support::fixtures::create;
use support::fixtures::{labelled, typed_flunder};
use support::in_process::start_parts as start;
use wardle::{Flunder, ReferenceType};

fn api_error(err: kube::Error) -> Box<kube::core::Status> {
    match err {
        kube::Error::Api(status) => status,
        other => panic!("expected an API error, got {other:?}"),
    }
}

#[tokio::test]
async fn list_pages_through_seven_flunders() {
    let (_server, client) = start().await;
    let api: Api<Flunder> = Api::namespaced(client.clone(), "default");
    let all: Vec<String> = (0..7).map(|i| format!("f{i}")).collect();
    for (i, name) in all.iter().enumerate() {
        let parity = if i % 2 == 0 { "even" } else { "odd" };
        create(
            &api,
            &labelled(
                typed_flunder(name, "r", ReferenceType::Fischer),
                &[("parity", parity)],
            ),
        )
        .await;
    }
    // Another namespace's Flunder stays out of the pages.
    Api::<Flunder>::namespaced(client.clone(), "other")
        .create(
            &PostParams::default(),
            &labelled(typed_flunder("f9", "r", ReferenceType::Fischer), &[]),
        )
        .await
        .unwrap();

    let mut seen = Vec::new();
    let mut params = ListParams::default().limit(2);
    let mut remaining = Vec::new();
    let mut versions = Vec::new();
    loop {
        let page = api.list(&params).await.unwrap();
        assert!(page.items.len() <= 2);
        seen.extend(page.items.iter().map(|f| f.metadata.name.clone().unwrap()));
        remaining.push(page.metadata.remaining_item_count);
        versions.push(page.metadata.resource_version.clone().unwrap());
        match page.metadata.continue_.as_deref() {
            Some(token) if !token.is_empty() => {
                params = ListParams::default().limit(2).continue_token(token);
            }
            _ => break,
        }
        assert!(versions.len() < 10, "paging does not end");
    }
    assert_eq!(seen, all);
    assert_eq!(remaining, [Some(5), Some(3), Some(1), None]);
    assert!(versions.iter().all(|v| *v == versions[0]), "{versions:?}");

    // With a label selector: every match once, no remaining count.
    let mut odd = Vec::new();
    let mut params = ListParams::default().labels("parity=odd").limit(1);
    loop {
        let page = api.list(&params).await.unwrap();
        assert_eq!(page.metadata.remaining_item_count, None);
        odd.extend(page.items.iter().map(|f| f.metadata.name.clone().unwrap()));
        match page.metadata.continue_.as_deref() {
            Some(token) if !token.is_empty() => {
                params = ListParams::default()
                    .labels("parity=odd")
                    .limit(1)
                    .continue_token(token);
            }
            _ => break,
        }
    }
    assert_eq!(odd, ["f1", "f3", "f5"]);

    // A selector the server cannot parse is a 400 with the parser's text.
    let err = api_error(
        api.list(&ListParams::default().labels("parity in (odd"))
            .await
            .unwrap_err(),
    );
    assert_eq!(err.code, 400);
    assert_eq!(err.reason, "BadRequest");
    assert_eq!(
        err.message,
        "unable to parse requirement: found '', expected: ',' or ')'"
    );
}

#[tokio::test]
async fn json_and_merge_patches() {
    let (_server, client) = start().await;
    let api: Api<Flunder> = Api::namespaced(client, "default");
    let created = create(
        &api,
        &labelled(
            typed_flunder("p", "a", ReferenceType::Fischer),
            &[("keep", "1")],
        ),
    )
    .await;
    let rv0: u64 = created.metadata.resource_version.unwrap().parse().unwrap();

    // JSON patch: test, add, replace, remove, in order.
    let ops: json_patch::Patch = serde_json::from_value(json!([
        {"op": "test", "path": "/spec/reference", "value": "a"},
        {"op": "add", "path": "/metadata/labels/tier", "value": "web"},
        {"op": "replace", "path": "/spec/reference", "value": "b"},
        {"op": "remove", "path": "/metadata/labels/keep"},
    ]))
    .unwrap();
    let patched = api
        .patch("p", &PatchParams::default(), &Patch::Json::<()>(ops))
        .await
        .unwrap();
    assert_eq!(patched.spec.reference.as_deref(), Some("b"));
    assert_eq!(
        patched.metadata.labels,
        Some(BTreeMap::from([("tier".to_string(), "web".to_string())]))
    );
    let rv1: u64 = patched
        .metadata
        .resource_version
        .clone()
        .unwrap()
        .parse()
        .unwrap();
    assert!(rv1 > rv0);
    assert_eq!(patched.metadata.generation, Some(2), "the spec changed");
    assert_eq!(patched.metadata.uid, created.metadata.uid);

    // A failing test operation changes nothing and answers 422.
    let failing: json_patch::Patch = serde_json::from_value(json!([
        {"op": "test", "path": "/spec/reference", "value": "not-b"},
        {"op": "replace", "path": "/spec/reference", "value": "c"},
    ]))
    .unwrap();
    let err = api_error(
        api.patch("p", &PatchParams::default(), &Patch::Json::<()>(failing))
            .await
            .unwrap_err(),
    );
    assert_eq!(err.code, 422);
    assert_eq!(err.reason, "Invalid");
    let same = api.get("p").await.unwrap();
    assert_eq!(same.spec.reference.as_deref(), Some("b"));
    assert_eq!(
        same.metadata.resource_version,
        patched.metadata.resource_version
    );

    // Merge patch: null deletes, maps merge, scalars replace.
    let merged = api
        .patch(
            "p",
            &PatchParams::default(),
            &Patch::Merge(json!({
                "metadata": {"labels": {"tier": null, "app": "wardle"}, "annotations": {"note": "x"}},
                "spec": {"referenceType": "Flunder"},
            })),
        )
        .await
        .unwrap();
    assert_eq!(
        merged.metadata.labels,
        Some(BTreeMap::from([("app".to_string(), "wardle".to_string())]))
    );
    assert_eq!(
        merged.metadata.annotations,
        Some(BTreeMap::from([("note".to_string(), "x".to_string())]))
    );
    assert_eq!(merged.spec.reference.as_deref(), Some("b"));
    assert_eq!(merged.spec.reference_type, Some(ReferenceType::Flunder));
    assert_eq!(merged.metadata.generation, Some(3));

    // A merge patch that removes the type of a reference gets it back from defaulting, as
    // sample-apiserver's v1alpha1 defaults it (and its strategy validates no update).
    let retyped = api
        .patch(
            "p",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"referenceType": "Fischer"}})),
        )
        .await
        .unwrap();
    assert_eq!(retyped.spec.reference_type, Some(ReferenceType::Fischer));
    let defaulted = api
        .patch(
            "p",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"referenceType": null}})),
        )
        .await
        .unwrap();
    assert_eq!(defaulted.spec.reference.as_deref(), Some("b"));
    assert_eq!(defaulted.spec.reference_type, Some(ReferenceType::Flunder));

    // A merge patch carrying a stale resourceVersion conflicts.
    let err = api_error(
        api.patch(
            "p",
            &PatchParams::default(),
            &Patch::Merge(
                json!({"metadata": {"resourceVersion": rv0.to_string(), "labels": {"x": "y"}}}),
            ),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!(err.code, 409);
    assert_eq!(err.reason, "Conflict");
    assert_eq!(
        err.message,
        "Operation cannot be fulfilled on flunders.wardle.example.com \"p\": the object has been modified; please apply your changes to the latest version and try again"
    );

    // Patching what does not exist is a 404.
    let err = api_error(
        api.patch(
            "missing",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {}})),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!(err.code, 404);
    assert_eq!(err.reason, "NotFound");
    assert_eq!(
        err.message,
        "flunders.wardle.example.com \"missing\" not found"
    );
}

#[tokio::test]
async fn delete_with_preconditions() {
    let (_server, client) = start().await;
    let api: Api<Flunder> = Api::namespaced(client, "default");
    let created = create(
        &api,
        &labelled(typed_flunder("d", "a", ReferenceType::Fischer), &[]),
    )
    .await;
    let uid = created.metadata.uid.clone().unwrap();
    let rv = created.metadata.resource_version.clone().unwrap();
    // Upstream's `rest.BeforeDelete` checks the preconditions on the object read first, and
    // names it by its kind.
    let conflict_prefix = "Operation cannot be fulfilled on Flunder.wardle.example.com \"d\": ";

    let wrong_uid = "00000000-0000-0000-0000-000000000000";
    let err = api_error(
        api.delete(
            "d",
            &DeleteParams {
                preconditions: Some(Preconditions {
                    uid: Some(wrong_uid.into()),
                    resource_version: None,
                }),
                ..Default::default()
            },
        )
        .await
        .unwrap_err(),
    );
    assert_eq!(err.code, 409);
    assert_eq!(err.reason, "Conflict");
    assert_eq!(
        err.message,
        format!(
            "{conflict_prefix}the UID in the precondition ({wrong_uid}) does not match the UID in record ({uid}). The object might have been deleted and then recreated"
        )
    );
    let details = err.details.unwrap();
    assert_eq!(details.name, "d");
    assert_eq!(details.group, "wardle.example.com");
    assert_eq!(details.kind, "Flunder");

    let wrong_rv = (rv.parse::<u64>().unwrap() + 100).to_string();
    let err = api_error(
        api.delete(
            "d",
            &DeleteParams {
                preconditions: Some(Preconditions {
                    uid: Some(uid.clone()),
                    resource_version: Some(wrong_rv.clone()),
                }),
                ..Default::default()
            },
        )
        .await
        .unwrap_err(),
    );
    assert_eq!(err.code, 409);
    assert_eq!(err.reason, "Conflict");
    assert_eq!(
        err.message,
        format!(
            "{conflict_prefix}the ResourceVersion in the precondition ({wrong_rv}) does not match the ResourceVersion in record ({rv}). The object might have been modified"
        )
    );
    // Refused deletes left the object alone.
    let still = api.get("d").await.unwrap();
    assert_eq!(
        still.metadata.resource_version.as_deref(),
        Some(rv.as_str())
    );

    // Both preconditions right: deleted, with a Success status naming the object.
    let outcome = api
        .delete(
            "d",
            &DeleteParams {
                preconditions: Some(Preconditions {
                    uid: Some(uid.clone()),
                    resource_version: Some(rv.clone()),
                }),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let status = outcome
        .right()
        .expect("deleted at once, answered with a Status");
    assert!(status.is_success(), "{status:?}");
    let details = status.details.unwrap();
    assert_eq!(details.name, "d");
    assert_eq!(details.kind, "flunders");
    assert_eq!(details.uid, uid);
    let err = api_error(api.get("d").await.unwrap_err());
    assert_eq!(err.code, 404);
    assert_eq!(err.reason, "NotFound");

    // A precondition on something deleted: 404, not 409.
    let err = api_error(
        api.delete(
            "d",
            &DeleteParams {
                preconditions: Some(Preconditions {
                    uid: Some(uid),
                    resource_version: None,
                }),
                ..Default::default()
            },
        )
        .await
        .unwrap_err(),
    );
    assert_eq!(err.code, 404);
}
