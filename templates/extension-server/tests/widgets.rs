//! The server's integration tests: it runs in this process with the framework's test kit
//! (`apiserver_framework::testing`) and is driven over HTTPS by real clients (kube-rs, kubectl).

use apiserver_framework::testing::conformance::Conformance;
use apiserver_framework::testing::{TestServer, expect_status, users};
use kube::api::{Api, ListParams, PostParams};
use {{crate_name}}::{Widget, WidgetSpec, app};

fn widget(name: &str, size: u32) -> Widget {
    Widget::new(
        name,
        WidgetSpec {
            size,
            purpose: None,
        },
    )
}

#[tokio::test]
async fn create_and_list() {
    let server = TestServer::start(app()).await.expect("the server starts");
    let widgets: Api<Widget> = Api::namespaced(server.client(), "default");

    let created = widgets
        .create(&PostParams::default(), &widget("first", 3))
        .await
        .expect("create a Widget");
    // The strategy filled in the default purpose.
    assert_eq!(created.spec.purpose.as_deref(), Some("general"));

    let listed = widgets.list(&ListParams::default()).await.expect("list");
    let names: Vec<_> = listed
        .items
        .iter()
        .filter_map(|w| w.metadata.name.clone())
        .collect();
    assert_eq!(names, ["first"]);

    // kubectl sees it too.
    let out = server
        .kubectl()
        .args(["get", "widgets", "-o", "name"])
        .output()
        .await
        .expect("run kubectl");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "widget.{{group}}/first"
    );
}

#[tokio::test]
async fn an_invalid_widget_is_refused() {
    let server = TestServer::start(app()).await.expect("the server starts");
    let widgets: Api<Widget> = Api::namespaced(server.client(), "default");
    let status = expect_status(
        widgets
            .create(&PostParams::default(), &widget("empty", 0))
            .await,
        422,
        "Invalid",
    );
    assert!(status.message.contains("spec.size"), "{}", status.message);
}

#[tokio::test]
async fn the_purpose_cannot_change() {
    let server = TestServer::start(app()).await.expect("the server starts");
    let widgets: Api<Widget> = Api::namespaced(server.client(), "default");
    let mut created = widgets
        .create(&PostParams::default(), &widget("fixed", 2))
        .await
        .expect("create a Widget");
    // The rule on `purpose` (a CEL transition rule) compares it with the stored value.
    created.spec.purpose = Some("toys".into());
    let status = expect_status(
        widgets
            .replace("fixed", &PostParams::default(), &created)
            .await,
        422,
        "Invalid",
    );
    assert_eq!(
        status.message,
        "Widget.{{group}} \"fixed\" is invalid: spec.purpose: Invalid value: \"string\": purpose cannot change once set"
    );
    // Other fields may change.
    created.spec.purpose = Some("general".into());
    created.spec.size = 5;
    widgets
        .replace("fixed", &PostParams::default(), &created)
        .await
        .expect("change the size");
}

#[tokio::test]
async fn admission_refuses_reserved_names() {
    let server = TestServer::start(app()).await.expect("the server starts");
    let widgets: Api<Widget> = Api::namespaced(server.client(), "default");
    let status = expect_status(
        widgets
            .create(&PostParams::default(), &widget("system-widget", 1))
            .await,
        403,
        "Forbidden",
    );
    assert!(status.message.contains("reserved"), "{}", status.message);
}

#[tokio::test]
async fn viewers_may_read_but_not_write() {
    // Behind a development host, as in a cluster: bob is a viewer, alice an editor.
    let server = TestServer::production(app())
        .await
        .expect("the server starts");
    let as_bob: Api<Widget> = Api::namespaced(server.user(users::BOB).unwrap(), "default");
    let as_alice: Api<Widget> = Api::namespaced(server.user(users::ALICE).unwrap(), "default");
    expect_status(
        as_bob
            .create(&PostParams::default(), &widget("bobs", 1))
            .await,
        403,
        "Forbidden",
    );
    as_alice
        .create(&PostParams::default(), &widget("alices", 1))
        .await
        .expect("alice may create Widgets");
    let listed = as_bob
        .list(&ListParams::default())
        .await
        .expect("bob may list");
    assert_eq!(listed.items.len(), 1);
}

#[tokio::test]
async fn the_server_conforms() {
    let server = TestServer::start(app()).await.expect("the server starts");
    Conformance::new(&server).run().await.assert_passed();
}
