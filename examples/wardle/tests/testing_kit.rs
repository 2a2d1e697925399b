//! The test kit (`apiserver_framework::testing`) on wardle: an in-process server answering
//! kube-rs and kubectl, the production stack with the dev host's users, the helpers, and the
//! user-facing conformance check — passing on wardle, failing clearly on a broken resource.

#[path = "support/fixtures.rs"]
mod fixtures;

use std::time::Duration;

use apiserver_framework::prelude::*;
use apiserver_framework::testing::conformance::Conformance;
use apiserver_framework::testing::{TestServer, WatchEvents, expect_status, users, wait};
use fixtures::{create, empty_flunder};
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use wardle::{Fischer, FischerSpec, Flunder};

/// wardle served by the kit in local mode.
async fn start() -> TestServer {
    TestServer::start(wardle::app())
        .await
        .expect("wardle starts")
}

#[tokio::test]
async fn start_answers_kube_rs_kubectl_and_shows_the_registry() {
    let server = start().await;
    assert!(
        server.url().starts_with("https://127.0.0.1:"),
        "{}",
        server.url()
    );
    let api: Api<Flunder> = Api::namespaced(server.client(), "default");
    api.create(&PostParams::default(), &empty_flunder("from-kube-rs"))
        .await
        .expect("kube-rs creates a Flunder");

    let out = get_flunder_names(&server).await;
    assert!(
        out.status.success(),
        "kubectl get flunders: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "flunder.wardle.example.com/from-kube-rs"
    );

    // The registry holds what the clients wrote.
    let stored = server
        .store::<Flunder>()
        .expect("wardle registers Flunders")
        .cached_objects(None)
        .await
        .expect("read the store");
    let names: Vec<_> = stored
        .iter()
        .filter_map(|f| f.metadata.name.clone())
        .collect();
    assert_eq!(names, ["from-kube-rs"]);
    // Flunder in v1alpha1 and v1beta1, Fischer in v1alpha1.
    assert_eq!(server.registry().resources().len(), 3);
    assert!(server.user(users::BOB).is_none(), "local mode has one user");
    server.shutdown().await;
}

#[tokio::test]
async fn helpers_wait_collect_events_and_expect_statuses() {
    let server = start().await;
    let api: Api<Flunder> = Api::namespaced(server.client(), "default");
    let fischers: Api<Fischer> = Api::all(server.client());

    let since = api
        .list(&ListParams::default())
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    let mut events = WatchEvents::start(&api, &Default::default(), &since)
        .await
        .unwrap();

    // wait::for_object sees an object created after it starts waiting.
    let waiting = {
        let api = api.clone();
        tokio::spawn(async move { wait::for_object(&api, "later", Duration::from_secs(10)).await })
    };
    // It waits once its watch is open (the WatchEvents above hold the other one).
    wait::for_watchers(&server.client(), 2, Duration::from_secs(10))
        .await
        .expect("the wait's watch opens");
    create(&api, &empty_flunder("later")).await;
    let seen = waiting.await.unwrap().expect("the Flunder appears");
    assert_eq!(seen.metadata.name.as_deref(), Some("later"));

    api.patch(
        "later",
        &PatchParams::default(),
        &Patch::Merge(serde_json::json!({"metadata": {"labels": {"ready": "yes"}}})),
    )
    .await
    .unwrap();
    let ready = wait::for_condition(&api, "later", Duration::from_secs(10), |f| {
        f.metadata
            .labels
            .as_ref()
            .and_then(|l| l.get("ready"))
            .map(String::as_str)
            == Some("yes")
    })
    .await
    .expect("the label arrives");
    assert!(ready.metadata.labels.unwrap().contains_key("ready"));

    // A condition that never holds times out, naming what it waited for.
    let err = wait::for_condition(&api, "later", Duration::from_millis(300), |_| false)
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("later to meet the condition"),
        "{err}"
    );

    api.delete("later", &Default::default()).await.unwrap();
    wait::for_deletion(&api, "later", Duration::from_secs(10))
        .await
        .expect("the Flunder goes");
    let seen = events.take(3, Duration::from_secs(10)).await;
    assert_eq!(WatchEvents::types(&seen), ["ADDED", "MODIFIED", "DELETED"]);
    assert!(
        events
            .expect_quiet(Duration::from_millis(200))
            .await
            .is_ok()
    );

    // BanFlunder refuses a name a Fischer disallows: 403 Forbidden.
    create(
        &fischers,
        &Fischer::new(
            "strict",
            FischerSpec {
                disallowed_flunders: vec!["banned".into()],
            },
        ),
    )
    .await;
    let status = expect_status(
        api.create(&PostParams::default(), &empty_flunder("banned"))
            .await,
        403,
        "Forbidden",
    );
    assert!(
        status.message.contains("please change the resource name"),
        "{}",
        status.message
    );

    // expect_status itself fails on the wrong reason.
    let wrong = std::panic::catch_unwind(|| {
        expect_status::<()>(
            Err(kube::Error::Api(Box::new(status.clone()))),
            422,
            "Invalid",
        )
    });
    let message = *wrong.unwrap_err().downcast::<String>().unwrap();
    assert!(
        message.contains("expected a 422 Invalid Status, got 403 Forbidden"),
        "{message}"
    );
}

#[tokio::test]
async fn production_refuses_bob_a_create_and_lets_alice() {
    let server = TestServer::production(wardle::app())
        .await
        .expect("wardle starts behind the dev host");
    let bob: Api<Flunder> = Api::namespaced(server.user(users::BOB).unwrap(), "default");
    let alice: Api<Flunder> = Api::namespaced(server.user(users::ALICE).unwrap(), "default");

    let status = expect_status(
        bob.create(&PostParams::default(), &empty_flunder("by-bob"))
            .await,
        403,
        "Forbidden",
    );
    assert!(status.message.contains("\"bob\""), "{}", status.message);
    let created = alice
        .create(&PostParams::default(), &empty_flunder("by-alice"))
        .await
        .expect("alice may create Flunders");
    assert_eq!(created.metadata.name.as_deref(), Some("by-alice"));
    // bob may read what alice wrote.
    let listed = bob
        .list(&ListParams::default())
        .await
        .expect("bob may list");
    assert_eq!(listed.items.len(), 1);

    // NamespaceLifecycle (a host plugin) runs: no objects in a namespace the host lacks.
    let elsewhere: Api<Flunder> = Api::namespaced(server.client(), "no-such-namespace");
    expect_status(
        elsewhere
            .create(&PostParams::default(), &empty_flunder("f"))
            .await,
        404,
        "NotFound",
    );
    // The requests came through the host's aggregator (front-proxy authentication) and wardle
    // asked the host to authorize the ones the host let through: alice's create and bob's
    // list; bob's create was refused by the host itself, as a cluster refuses it.
    let host = server.dev_host().unwrap();
    let reviews = host.access_reviews.entries();
    for asked in [
        "sar:alice create wardle.example.com/flunders default/",
        "sar:bob list wardle.example.com/flunders default/",
    ] {
        assert!(reviews.iter().any(|r| r == asked), "{asked}: {reviews:?}");
    }

    let out = get_flunder_names(&server).await;
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "flunder.wardle.example.com/by-alice",
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    server.shutdown().await;
}

#[tokio::test]
async fn wardle_passes_the_conformance_check() {
    let server = start().await;
    let report = Conformance::new(&server).run().await;
    report.assert_passed();
    // Flunder in both versions and Fischer, all seven checks each.
    assert_eq!(report.outcomes.len(), 21, "{report:?}");
}

/// A resource whose printer column reads a field its spec does not have.
#[derive(ApiResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[resource(
    group = "broken.example.com",
    version = "v1",
    kind = "Gadget",
    namespaced,
    printcolumn(name = "Colour", type = "string", json_path = ".spec.colour")
)]
pub struct GadgetSpec {
    /// The gadget's color.
    pub color: String,
}

#[tokio::test]
async fn the_conformance_check_names_a_printer_column_of_a_missing_field() {
    let app = App::new("broken").group(Group::new("broken.example.com").resource::<Gadget>());
    let server = TestServer::start(app).await.expect("the server starts");
    let report = Conformance::new(&server).run().await;
    let failures = report.failures();
    assert_eq!(failures.len(), 1, "{report}");
    assert_eq!(failures[0].check, "openapi");
    assert_eq!(
        failures[0].failure.as_deref(),
        Some(
            "printer column \"Colour\" reads .spec.colour, but the schema of Gadget has no \
             field .spec.colour"
        )
    );
    let panic = std::panic::catch_unwind(|| report.assert_passed()).unwrap_err();
    let message = *panic.downcast::<String>().unwrap();
    assert!(
        message.starts_with("conformance: 1 of 7 checks failed:\n- Gadget.broken.example.com/v1 openapi: printer column \"Colour\""),
        "{message}"
    );
}

/// `kubectl get flunders -o name` against `server`.
async fn get_flunder_names(server: &TestServer) -> std::process::Output {
    server
        .kubectl()
        .args(["get", "flunders", "-o", "name"])
        .output()
        .await
        .expect("run kubectl")
}
