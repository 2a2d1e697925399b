//! A delegation chain of two servers with different groups, served over real HTTPS.

mod support_kinds;
mod support_local;

use apiserver_framework::prelude::*;
use apiserver_framework::server::GenericApiServer;
use serde_json::json;
use support_kinds::{kind, sized_kind};
use support_local::start_local;

sized_kind!(WidgetSpec, "one.example.com", "v1", "Widget");

// A gadget.
kind!(cluster GadgetSpec, "two.example.com", "v1beta1", "Gadget", color: String);

#[tokio::test]
async fn two_servers_with_different_groups() {
    let second = GenericApiServer::builder("second")
        .group(Group::new("two.example.com").resource::<Gadget>())
        .build();
    let first = GenericApiServer::builder("first")
        .group(Group::new("one.example.com").resource::<Widget>())
        .build()
        .delegate_to(second);
    let local = start_local("chain", first, &[]).await;
    let c = &local.client;
    let get = reqwest::Method::GET;

    // Discovery is merged along the chain, legacy and aggregated.
    let (code, _, groups) = c.send(get.clone(), "/apis", "application/json", None).await;
    assert_eq!(code, 200);
    let names: Vec<&str> = groups["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["one.example.com", "two.example.com"]);
    let (code, ct, agg) = c
        .send(
            get.clone(),
            "/apis",
            "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json",
            None,
        )
        .await;
    assert_eq!(code, 200);
    assert!(ct.contains("as=APIGroupDiscoveryList"), "{ct}");
    assert_eq!(agg["items"].as_array().unwrap().len(), 2);
    assert_eq!(
        agg["items"][1]["versions"][0]["resources"][0]["scope"],
        "Cluster"
    );

    // The delegate answers its own group-version and resources.
    let (code, _, rl) = c
        .send(
            get.clone(),
            "/apis/two.example.com/v1beta1",
            "application/json",
            None,
        )
        .await;
    assert_eq!(code, 200);
    assert_eq!(rl["resources"][0]["name"], "gadgets");
    let (code, _, created) = c
        .send(
            reqwest::Method::POST,
            "/apis/two.example.com/v1beta1/gadgets",
            "application/json",
            Some(json!({"apiVersion": "two.example.com/v1beta1", "kind": "Gadget", "metadata": {"name": "g"}, "spec": {"color": "red"}})),
        )
        .await;
    assert_eq!(code, 201, "{created}");
    assert_eq!(created["spec"]["color"], "red");
    let (code, _, created) = c
        .send(
            reqwest::Method::POST,
            "/apis/one.example.com/v1/namespaces/ns1/widgets",
            "application/json",
            Some(json!({"apiVersion": "one.example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"size": 3}})),
        )
        .await;
    assert_eq!(code, 201, "{created}");
    assert_eq!(created["metadata"]["namespace"], "ns1");

    // OpenAPI covers both servers.
    let (code, _, v3) = c
        .send(get.clone(), "/openapi/v3", "application/json", None)
        .await;
    assert_eq!(code, 200);
    assert!(v3["paths"]["apis/one.example.com/v1"].is_object());
    assert!(v3["paths"]["apis/two.example.com/v1beta1"].is_object());
    let url = v3["paths"]["apis/two.example.com/v1beta1"]["serverRelativeURL"]
        .as_str()
        .unwrap()
        .to_string();
    let (code, _, doc) = c.send(get.clone(), &url, "application/json", None).await;
    assert_eq!(code, 200);
    assert!(
        doc["paths"]["/apis/two.example.com/v1beta1/gadgets"].is_object(),
        "{}",
        doc["paths"]
    );

    // The end of the chain answers as upstream's not-found handler does for groups nobody
    // serves: 404 with the index of the paths the chain serves.
    for path in [
        "/apis/three.example.com/v1/things",
        "/apis/three.example.com",
    ] {
        let (code, _, index) = c.send(get.clone(), path, "application/json", None).await;
        assert_eq!(code, 404, "{path}");
        let paths = index["paths"]
            .as_array()
            .unwrap_or_else(|| panic!("{index}"));
        for served in ["/apis/one.example.com/v1", "/apis/two.example.com/v1beta1"] {
            assert!(paths.iter().any(|p| p == served), "{served} in {index}");
        }
        assert!(
            !paths
                .iter()
                .any(|p| p.as_str().unwrap_or("").contains("three"))
        );
    }
    // Unknown resources inside a served group-version too.
    let (code, _, status) = c
        .send(
            get,
            "/apis/one.example.com/v1/nothings",
            "application/json",
            None,
        )
        .await;
    assert_eq!(
        (code, status["message"].as_str()),
        (
            404,
            Some("the server could not find the requested resource")
        )
    );

    // Other unknown paths get the index of the whole chain, with 404.
    let (code, _, index) = c
        .send(
            reqwest::Method::GET,
            "/nothing-here",
            "application/json",
            None,
        )
        .await;
    assert_eq!(code, 404);
    let paths: Vec<&str> = index["paths"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap())
        .collect();
    assert!(paths.contains(&"/apis/one.example.com/v1"), "{paths:?}");
    assert!(
        paths.contains(&"/apis/two.example.com/v1beta1"),
        "{paths:?}"
    );

    // Watch streams are JSON only: YAML is not acceptable.
    let (code, _, status) = c
        .send(
            reqwest::Method::GET,
            "/apis/two.example.com/v1beta1/gadgets?watch=true",
            "application/yaml",
            None,
        )
        .await;
    assert_eq!(
        (code, status["reason"].as_str()),
        (406, Some("NotAcceptable"))
    );
    local.test.shutdown().await;
}
