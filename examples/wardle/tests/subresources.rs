//! Flunder's custom subresources with real clients: `describe` (GET with options) and
//! `topping` (an action) with kubectl in `local` mode, their discovery and OpenAPI entries, and
//! through the dev host's aggregator the `console` connect subresource with kube-rs' WebSocket
//! client, and bob (a viewer) refused the action and the connection.

mod support;

#[allow(dead_code)]
#[path = "production/stack.rs"]
mod stack;

use futures::{SinkExt, StreamExt};
use kube::config::{KubeConfigOptions, Kubeconfig};
use serde_json::{Value, json};
use stack::Stack;
use support::checks::answer;
use support::checks::{close_console, upper_console};
use support::fixtures::topped_flunder;
use support::{FLUNDERS, Wardle, stderr, stdout};
use tokio_tungstenite::tungstenite::Message;

const GV: &str = "/apis/wardle.example.com/v1alpha1";

fn json_of(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

/// `describe` and `topping` with kubectl, and their discovery and OpenAPI entries.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn getter_and_action_with_kubectl() {
    let server = Wardle::start();
    let file = server.write_file("x.json", &topped_flunder("x").to_string());
    server.kubectl_ok(&["create", "-f", file.to_str().unwrap()]);

    // GET with typed options.
    let out = server.kubectl_ok(&[
        "get",
        "--raw",
        &format!("{FLUNDERS}/x/describe?verbose=true&maxToppings=1"),
    ]);
    let d = json_of(&out);
    assert_eq!(d["kind"], "FlunderDescription", "{d}");
    assert_eq!(d["apiVersion"], "wardle.example.com/v1alpha1");
    assert_eq!(d["name"], "x");
    assert_eq!(d["namespace"], "default");
    assert_eq!(d["refersTo"], "Flunder/other");
    assert_eq!(d["toppings"], json!(["cheese"]));
    assert_eq!(d["details"], json!(["cheese: 2"]));
    let d = json_of(&server.kubectl_ok(&["get", "--raw", &format!("{FLUNDERS}/x/describe")]));
    assert_eq!(d["toppings"], json!(["cheese", "olives"]));
    assert!(d.get("details").is_none(), "{d}");

    // Bad options: 400 BadRequest with upstream's conversion message.
    let err = server.kubectl_err(&[
        "get",
        "--raw",
        &format!("{FLUNDERS}/x/describe?maxToppings=abc"),
    ]);
    assert!(
        err.contains(
            r#"Error from server (BadRequest): strconv.ParseInt: parsing "abc": invalid syntax"#
        ),
        "{}",
        err
    );
    let client = server.client();
    let res =
        answer(client.get(server.at(&format!("{FLUNDERS}/x/describe?maxToppings=abc")))).await;
    assert_eq!(res.status(), 400);
    let status = json_of(&res.text().await.unwrap());
    assert_eq!(
        (&status["kind"], &status["reason"], &status["code"]),
        (&json!("Status"), &json!("BadRequest"), &json!(400))
    );
    // A missing object is a 404 of the resource.
    let res = answer(client.get(server.at(&format!("{FLUNDERS}/nope/describe")))).await;
    assert_eq!(res.status(), 404);
    // Only GET reads it.
    let res = answer(
        client
            .put(server.at(&format!("{FLUNDERS}/x/describe")))
            .json(&json!({})),
    )
    .await;
    assert_eq!(res.status(), 405);

    // The action: kubectl create --raw posts a ToppingRequest, the answer is the Flunder.
    let body = server.write_file(
        "topping.json",
        &json!({
            "apiVersion": "wardle.example.com/v1alpha1",
            "kind": "ToppingRequest",
            "name": "basil",
            "amount": 3,
        })
        .to_string(),
    );
    let out = server.kubectl_ok(&[
        "create",
        "--raw",
        &format!("{FLUNDERS}/x/topping"),
        "-f",
        body.to_str().unwrap(),
    ]);
    let f = json_of(&out);
    assert_eq!(f["kind"], "Flunder", "{f}");
    assert_eq!(
        f["spec"]["toppings"][2],
        json!({"name": "basil", "amount": 3}),
        "{f}"
    );
    let stored = json_of(&server.kubectl_ok(&["get", "flunder", "x", "-o", "json"]));
    assert_eq!(stored["spec"]["toppings"].as_array().unwrap().len(), 3);
    // A dry run changes nothing; a body that does not decode is a 400.
    let res = answer(
        client
            .post(server.at(&format!("{FLUNDERS}/x/topping?dryRun=All")))
            .json(&json!({"name": "ham"})),
    )
    .await;
    assert_eq!(res.status(), 201);
    let stored = json_of(&server.kubectl_ok(&["get", "flunder", "x", "-o", "json"]));
    assert_eq!(stored["spec"]["toppings"].as_array().unwrap().len(), 3);
    let res = answer(
        client
            .post(server.at(&format!("{FLUNDERS}/x/topping")))
            .json(&json!({"name": 7})),
    )
    .await;
    assert_eq!(res.status(), 400);
    // The connect subresource without an upgrade is a 400.
    let res = answer(client.get(server.at(&format!("{FLUNDERS}/x/console")))).await;
    assert_eq!(res.status(), 400);

    // Legacy discovery lists each with its verbs and kind.
    let list = json_of(&server.kubectl_ok(&["get", "--raw", GV]));
    let entry = |name: &str| -> Value {
        list["resources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("{name} not in {list}"))
    };
    assert_eq!(entry("flunders/describe")["verbs"], json!(["get"]));
    assert_eq!(entry("flunders/describe")["kind"], "FlunderDescription");
    assert_eq!(entry("flunders/topping")["verbs"], json!(["create"]));
    assert_eq!(entry("flunders/topping")["kind"], "Flunder");
    assert_eq!(entry("flunders/console")["verbs"], json!(["create", "get"]));
    assert_eq!(entry("flunders/console")["kind"], "ConsoleOptions");

    // Aggregated discovery too.
    let res = client
        .get(server.at("/apis"))
        .header(
            "accept",
            "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
        )
        .send()
        .await
        .unwrap();
    let doc = json_of(&res.text().await.unwrap());
    let flunders = doc["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["metadata"]["name"] == "wardle.example.com")
        .and_then(|g| g["versions"].as_array())
        .and_then(|vs| vs.iter().find(|v| v["version"] == "v1alpha1"))
        .and_then(|v| v["resources"].as_array())
        .and_then(|r| r.iter().find(|r| r["resource"] == "flunders"))
        .cloned()
        .expect("flunders in aggregated discovery");
    let subs: Vec<(String, Value)> = flunders["subresources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["subresource"].as_str().unwrap().to_string(),
                s["verbs"].clone(),
            )
        })
        .collect();
    assert_eq!(
        subs,
        [
            ("console".to_string(), json!(["create", "get"])),
            ("describe".to_string(), json!(["get"])),
            ("scale".to_string(), json!(["get", "patch", "update"])),
            ("status".to_string(), json!(["get", "patch", "update"])),
            ("topping".to_string(), json!(["create"])),
        ]
    );

    // OpenAPI v3 has their paths, options and definitions.
    let doc = json_of(&server.kubectl_ok(&[
        "get",
        "--raw",
        "/openapi/v3/apis/wardle.example.com/v1alpha1",
    ]));
    let item = "/apis/wardle.example.com/v1alpha1/namespaces/{namespace}/flunders/{name}";
    let describe = &doc["paths"][format!("{item}/describe")]["get"];
    assert_eq!(describe["x-kubernetes-action"], "get", "{describe}");
    let params: Vec<&str> = describe["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert!(
        params.contains(&"maxToppings") && params.contains(&"verbose"),
        "{params:?}"
    );
    assert_eq!(
        describe["responses"]["200"]["content"]["application/json"]["schema"]["$ref"],
        "#/components/schemas/com.example.wardle.v1alpha1.FlunderDescription"
    );
    let topping = &doc["paths"][format!("{item}/topping")]["post"];
    assert_eq!(topping["x-kubernetes-action"], "post");
    assert_eq!(
        topping["requestBody"]["content"]["*/*"]["schema"]["$ref"],
        "#/components/schemas/com.example.wardle.v1alpha1.ToppingRequest"
    );
    let console = &doc["paths"][format!("{item}/console")];
    assert_eq!(console["get"]["x-kubernetes-action"], "connect");
    assert_eq!(console["post"]["x-kubernetes-action"], "connect");
    let schemas = &doc["components"]["schemas"];
    assert!(
        schemas["com.example.wardle.v1alpha1.FlunderDescription"]["properties"]["toppings"]
            .is_object()
    );
    assert!(
        schemas["com.example.wardle.v1alpha1.ToppingRequest"]["properties"]["amount"].is_object()
    );
    // The served kind's own definition is not replaced by the action's answer.
    assert!(
        schemas["com.example.wardle.v1alpha1.Flunder"]["properties"]["metadata"]["allOf"]
            .is_array()
    );
}

/// A kube-rs client of the host as `user`.
async fn kube_client(stack: &Stack, user: &str) -> kube::Client {
    let path = stack.host.files.kubeconfig_path(user);
    let kubeconfig = Kubeconfig::read_from(&path).expect("read the kubeconfig");
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .expect("a client config");
    kube::Client::try_from(config).expect("a client")
}

fn connect_request(path: &str) -> http::Request<Vec<u8>> {
    http::Request::get(path).body(Vec::new()).unwrap()
}

/// Through the dev host's aggregator: kube-rs exchanges bytes with `console` over WebSocket
/// (channel protocol v5); bob, a viewer, may neither run the action nor connect.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connect_through_the_aggregator() {
    let stack = Stack::start(&[]).await;
    let client = stack.client();
    let alice = stack.token("alice");
    let url = format!("{}{FLUNDERS}", stack.host_url());
    let (code, body) = stack
        .call(
            &client,
            reqwest::Method::POST,
            &url,
            Some(&alice),
            Some(topped_flunder("x")),
        )
        .await;
    assert_eq!(code, 201, "{body}");

    let kube_alice = kube_client(&stack, "alice").await;
    let console = format!("{FLUNDERS}/x/console");
    let mut ws = upper_console(&kube_alice, &console, "hello, flunder", stack::TIMEOUT).await;
    // Bytes of every value go through unchanged (here without upper-casing: digits and
    // non-ASCII bytes).
    let payload: Vec<u8> = std::iter::once(0u8)
        .chain((0u8..=255).filter(|b| !b.is_ascii_alphabetic()))
        .collect();
    ws.send(Message::Binary(payload.clone().into()))
        .await
        .unwrap();
    let echoed = ws.next().await.unwrap().unwrap();
    let mut expected = payload.clone();
    expected[0] = 1;
    assert_eq!(echoed, Message::Binary(expected.into()));
    // v5: closing stdin ends the session with a Success Status on the error channel.
    close_console(&mut ws).await;
    assert!(matches!(
        ws.next().await,
        Some(Ok(Message::Close(_))) | None
    ));

    // The same connection opened with POST (authorized as a create).
    let post = http::Request::post(format!("{FLUNDERS}/x/console"))
        .body(Vec::new())
        .unwrap();
    let mut ws = kube_alice
        .connect(post)
        .await
        .expect("alice connects with POST")
        .into_stream();
    ws.send(Message::Binary(b"\x00posted".to_vec().into()))
        .await
        .unwrap();
    let echoed = ws.next().await.unwrap().unwrap();
    assert_eq!(echoed, Message::Binary(b"\x01posted".to_vec().into()));
    drop(ws);

    // Without a channel protocol, the stream is plain bytes both ways (no channel byte).
    let raw = http::Request::get(format!("{FLUNDERS}/x/console"))
        .header("connection", "Upgrade")
        .header("upgrade", "websocket")
        .header("sec-websocket-version", "13")
        .header(
            "sec-websocket-key",
            tokio_tungstenite::tungstenite::handshake::client::generate_key(),
        )
        .body(kube::client::Body::from(Vec::new()))
        .unwrap();
    let res = kube_alice.send(raw).await.expect("the upgrade is answered");
    assert_eq!(res.status(), 101);
    assert!(res.headers().get("sec-websocket-protocol").is_none());
    let upgraded = hyper::upgrade::on(res).await.expect("upgraded");
    let mut ws = tokio_tungstenite::WebSocketStream::from_raw_socket(
        hyper_util::rt::TokioIo::new(upgraded),
        tokio_tungstenite::tungstenite::protocol::Role::Client,
        None,
    )
    .await;
    ws.send(Message::Binary(b"plain bytes".to_vec().into()))
        .await
        .unwrap();
    let echoed = ws.next().await.unwrap().unwrap();
    assert_eq!(echoed, Message::Binary(b"plain bytes".to_vec().into()));
    drop(ws);

    // A missing Flunder: the Status before any upgrade.
    let Err(err) = kube_alice
        .connect(connect_request(&format!("{FLUNDERS}/nope/console")))
        .await
    else {
        panic!("a console for a missing Flunder")
    };
    match &err {
        kube::Error::Api(status) => assert_eq!(status.code, 404, "{status:?}"),
        other => panic!("expected a 404 Status, got {other:?}"),
    }

    // bob (viewers: get, list, watch) may not connect or run the action.
    let kube_bob = kube_client(&stack, "bob").await;
    let Err(err) = kube_bob
        .connect(connect_request(&format!("{FLUNDERS}/x/console")))
        .await
    else {
        panic!("bob may not connect")
    };
    match &err {
        kube::Error::Api(status) => assert_eq!(status.code, 403, "{status:?}"),
        other => panic!("expected a 403 Status, got {other:?}"),
    }
    let body = stack.path("topping.json");
    std::fs::write(&body, json!({"name": "ham"}).to_string()).unwrap();
    let out = stack.kubectl(
        "bob",
        &[
            "create",
            "--raw",
            &format!("{FLUNDERS}/x/topping"),
            "-f",
            body.to_str().unwrap(),
        ],
    );
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("Error from server (Forbidden)"),
        "{}",
        stderr(&out)
    );
    // alice, an editor, may.
    let out = stack.kubectl(
        "alice",
        &[
            "create",
            "--raw",
            &format!("{FLUNDERS}/x/topping"),
            "-f",
            body.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(json_of(&stdout(&out))["spec"]["toppings"][2]["name"], "ham");
}
