//! A resource's published schema enforced as kube-apiserver enforces a CRD's: each value
//! constraint refused with upstream's cause, the CEL rules declared with the derive
//! (`#[resource(validation = ...)]`: message, `messageExpression`, `fieldPath`, `reason`, a
//! transition rule with `oldSelf`), and ratcheting, which lets an update through that leaves an
//! invalid stored value as it is. The server is served in-process and driven with kube-rs.

mod support;

use std::sync::Arc;

use apiserver_framework::App;
use apiserver_framework::storage::Storage;
use apiserver_framework::storage::memory::MemoryStorage;
use apiserver_framework::testing::{TestServer, expect_status};
use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use support::schema_types::{Broken, Gadget, GadgetSpec};

fn app() -> App {
    App::new("gadgets").resource::<Gadget>()
}

async fn start(storage: Arc<MemoryStorage>) -> TestServer {
    let server = app().server_builder().storage(storage).build();
    support::in_process::serve(Arc::new(server)).await
}

fn gadget(name: &str, spec: GadgetSpec) -> Gadget {
    Gadget::new(name, spec)
}

fn spec(size: i64) -> GadgetSpec {
    GadgetSpec {
        size,
        max_size: 10,
        ..Default::default()
    }
}

/// The `message` and the causes (`field`, `reason`, `message`) of a 422 `Invalid`.
fn invalid<T: std::fmt::Debug>(result: Result<T, kube::Error>) -> (String, Vec<[String; 3]>) {
    let status = expect_status(result, 422, "Invalid");
    let causes = status
        .details
        .map(|d| d.causes)
        .unwrap_or_default()
        .into_iter()
        .map(|c| [c.field, c.reason, c.message])
        .collect();
    (status.message, causes)
}

fn cause(field: &str, reason: &str, message: &str) -> [String; 3] {
    [field.into(), reason.into(), message.into()]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_constraint_is_refused_with_upstreams_cause() {
    let server = start(Arc::new(MemoryStorage::new())).await;
    let gadgets: Api<Gadget> = Api::namespaced(server.client(), "default");
    let pp = PostParams::default();

    // minimum
    let (message, causes) = invalid(gadgets.create(&pp, &gadget("g", spec(0))).await);
    assert_eq!(
        message,
        "Gadget.schema.example.com \"g\" is invalid: spec.size: Invalid value: 0: spec.size in body should be greater than or equal to 1"
    );
    assert_eq!(
        causes,
        [cause(
            "spec.size",
            "FieldValueInvalid",
            "Invalid value: 0: spec.size in body should be greater than or equal to 1"
        )]
    );
    // maximum
    let over = GadgetSpec {
        max_size: 20,
        ..spec(11)
    };
    let (_, causes) = invalid(gadgets.create(&pp, &gadget("g", over)).await);
    assert_eq!(
        causes,
        [cause(
            "spec.size",
            "FieldValueInvalid",
            "Invalid value: 11: spec.size in body should be less than or equal to 10"
        )]
    );
    // maxLength (upstream reports only the first of maxLength, minLength and pattern that
    // fails); the rules are then left unchecked, as upstream does after a blocking error.
    let long = GadgetSpec {
        name: Some("abcdef1".into()),
        ..spec(1)
    };
    let (message, causes) = invalid(gadgets.create(&pp, &gadget("g", long)).await);
    assert_eq!(
        causes,
        [
            cause(
                "spec.name",
                "FieldValueTooLong",
                "Too long: may not be more than 5 bytes"
            ),
            cause(
                "<nil>",
                "FieldValueInvalid",
                "Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation"
            ),
        ]
    );
    assert!(
        message.starts_with(
            "Gadget.schema.example.com \"g\" is invalid: [spec.name: Too long: may not be more than 5 bytes, <nil>: Invalid value: null: some validation rules"
        ),
        "{message}"
    );
    // pattern
    let upper = GadgetSpec {
        name: Some("Abc".into()),
        ..spec(1)
    };
    let (_, causes) = invalid(gadgets.create(&pp, &gadget("g", upper)).await);
    assert_eq!(
        causes,
        [cause(
            "spec.name",
            "FieldValueInvalid",
            "Invalid value: \"Abc\": spec.name in body should match '^[a-z]+$'"
        )]
    );
    // minLength
    let short = GadgetSpec {
        name: Some("a".into()),
        ..spec(1)
    };
    let (_, causes) = invalid(gadgets.create(&pp, &gadget("g", short)).await);
    assert_eq!(
        causes,
        [cause(
            "spec.name",
            "FieldValueInvalid",
            "Invalid value: \"a\": spec.name in body should be at least 2 chars long"
        )]
    );
    // enum
    let mode = GadgetSpec {
        mode: Some("Ajar".into()),
        ..spec(1)
    };
    let (_, causes) = invalid(gadgets.create(&pp, &gadget("g", mode)).await);
    assert_eq!(
        causes[0],
        cause(
            "spec.mode",
            "FieldValueNotSupported",
            "Unsupported value: \"Ajar\": supported values: \"Open\", \"Locked\""
        )
    );
    // maxItems, and a set's duplicate
    let tags = GadgetSpec {
        tags: vec!["a".into(), "b".into(), "a".into()],
        ..spec(1)
    };
    let (_, causes) = invalid(gadgets.create(&pp, &gadget("g", tags)).await);
    assert_eq!(
        causes[..2],
        [
            cause(
                "spec.tags",
                "FieldValueTooMany",
                "Too many: 3: must have at most 2 items"
            ),
            cause(
                "spec.tags[2]",
                "FieldValueDuplicate",
                "Duplicate value: \"a\""
            ),
        ]
    );
    // A dry run is refused alike, and nothing was created.
    let dry = PostParams {
        dry_run: true,
        ..Default::default()
    };
    invalid(gadgets.create(&dry, &gadget("g", spec(0))).await);
    assert!(gadgets.get_opt("g").await.unwrap().is_none());
    // A valid Gadget is created.
    gadgets.create(&pp, &gadget("g", spec(3))).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn derive_rules_are_refused_with_their_message_and_field_path() {
    let server = start(Arc::new(MemoryStorage::new())).await;
    let gadgets: Api<Gadget> = Api::namespaced(server.client(), "default");
    let pp = PostParams::default();

    // A rule of the whole object, reported at its fieldPath.
    let over = GadgetSpec {
        max_size: 2,
        ..spec(5)
    };
    let (message, causes) = invalid(gadgets.create(&pp, &gadget("g", over)).await);
    assert_eq!(
        message,
        "Gadget.schema.example.com \"g\" is invalid: spec.size: Invalid value: \"object\": size must not exceed maxSize"
    );
    assert_eq!(
        causes,
        [cause(
            "spec.size",
            "FieldValueInvalid",
            "Invalid value: \"object\": size must not exceed maxSize"
        )]
    );
    // messageExpression
    let note = GadgetSpec {
        note: Some("hello".into()),
        ..spec(1)
    };
    let (_, causes) = invalid(gadgets.create(&pp, &gadget("g", note)).await);
    assert_eq!(
        causes,
        [cause(
            "spec.note",
            "FieldValueInvalid",
            "Invalid value: \"string\": note hello must start with n"
        )]
    );
    // A transition rule: not checked on create, checked against the stored value on update,
    // through PUT and through a merge patch.
    let locked = GadgetSpec {
        lock: Some("a".into()),
        ..spec(1)
    };
    let mut created = gadgets.create(&pp, &gadget("g", locked)).await.unwrap();
    created.spec.lock = Some("b".into());
    let (_, causes) = invalid(gadgets.replace("g", &pp, &created).await);
    assert_eq!(
        causes,
        [cause(
            "spec.lock",
            "FieldValueForbidden",
            "Forbidden: lock is immutable"
        )]
    );
    let patch = Patch::Merge(json!({"spec": {"lock": "c"}}));
    let (_, causes) = invalid(gadgets.patch("g", &PatchParams::default(), &patch).await);
    assert_eq!(causes[0][2], "Forbidden: lock is immutable");
    // Leaving the lock as it is passes.
    let patch = Patch::Merge(json!({"spec": {"size": 2}}));
    gadgets
        .patch("g", &PatchParams::default(), &patch)
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ratcheting_lets_an_unchanged_invalid_value_through() {
    let storage = Arc::new(MemoryStorage::new());
    // A Gadget stored before its constraints were what they are: its size is over the maximum,
    // its name too long. (A rule of the object's root is checked on every update, as upstream:
    // the root always changes, in its metadata.)
    let stored = json!({
        "apiVersion": "schema.example.com/v1", "kind": "Gadget",
        "metadata": {"name": "old", "namespace": "default", "uid": "1c6f0d1e-4bd6-4d3a-9d4c-1e0d0f2c4a11",
                     "creationTimestamp": "2024-01-01T00:00:00Z", "generation": 1},
        "spec": {"size": 20, "maxSize": 30, "name": "toolongname", "tags": []},
    });
    storage
        .create(
            "/schema.example.com/gadgets/default/old",
            serde_json::to_vec(&stored).unwrap().into(),
        )
        .await
        .unwrap();
    let server = start(storage).await;
    let gadgets: Api<Gadget> = Api::namespaced(server.client(), "default");
    let pp = PostParams::default();

    // An update that leaves the invalid values untouched passes: PUT, merge patch, apply.
    let mut old = gadgets.get("old").await.unwrap();
    old.spec.tags = vec!["new".into()];
    let updated = gadgets.replace("old", &pp, &old).await.unwrap();
    assert_eq!(updated.spec.size, 20);
    let patch = Patch::Merge(json!({"metadata": {"labels": {"touched": "yes"}}}));
    gadgets
        .patch("old", &PatchParams::default(), &patch)
        .await
        .unwrap();
    let apply = Patch::Apply(json!({
        "apiVersion": "schema.example.com/v1", "kind": "Gadget",
        "metadata": {"name": "old"},
        "spec": {"size": 20, "mode": "Open"},
    }));
    gadgets
        .patch("old", &PatchParams::apply("tester").force(), &apply)
        .await
        .unwrap();

    // One that changes an invalid value to another invalid one is refused, for that value
    // only: the untouched name still ratchets.
    let patch = Patch::Merge(json!({"spec": {"size": 21}}));
    let (_, causes) = invalid(gadgets.patch("old", &PatchParams::default(), &patch).await);
    assert_eq!(
        causes,
        [cause(
            "spec.size",
            "FieldValueInvalid",
            "Invalid value: 21: spec.size in body should be less than or equal to 10"
        )]
    );
    // A rule whose value (the spec) changes is checked again: size 4 is within bounds, but
    // over maxSize 3.
    let patch = Patch::Merge(json!({"spec": {"size": 4, "maxSize": 3}}));
    let (_, causes) = invalid(gadgets.patch("old", &PatchParams::default(), &patch).await);
    assert_eq!(
        causes,
        [cause(
            "spec.size",
            "FieldValueInvalid",
            "Invalid value: \"object\": size must not exceed maxSize"
        )]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rule_that_does_not_compile_stops_the_server() {
    let err = TestServer::start(App::new("broken").resource::<Broken>())
        .await
        .err()
        .expect("the server does not start");
    let err = err.to_string();
    assert!(
        err.contains("brokens.schema.example.com v1: x-kubernetes-validations rule \"self.spec.size >\" at the object's root: compilation failed"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_rules_are_published_in_openapi_v2_and_v3() {
    let server = start(Arc::new(MemoryStorage::new())).await;
    let client = server.client();
    let v3: Value = client
        .request(
            http::Request::get("/openapi/v3/apis/schema.example.com/v1")
                .body(Vec::new())
                .unwrap(),
        )
        .await
        .unwrap();
    let schemas = &v3["components"]["schemas"];
    let gadget = schemas
        .as_object()
        .unwrap()
        .iter()
        .find(|(k, _)| k.ends_with(".Gadget"))
        .map(|(_, v)| v)
        .expect("the Gadget schema");
    assert_eq!(
        gadget["x-kubernetes-validations"],
        json!([{"rule": "self.spec.size <= self.spec.maxSize",
                "message": "size must not exceed maxSize", "fieldPath": ".spec.size"}])
    );
    let spec = &gadget["properties"]["spec"]["properties"];
    assert_eq!(
        spec["note"]["x-kubernetes-validations"],
        json!([{"rule": "self.startsWith('n')",
                "messageExpression": "'note ' + self + ' must start with n'"}])
    );
    assert_eq!(spec["size"]["minimum"], json!(1));
    assert_eq!(spec["name"]["pattern"], json!("^[a-z]+$"));

    let v2: Value = client
        .request(http::Request::get("/openapi/v2").body(Vec::new()).unwrap())
        .await
        .unwrap();
    let gadget = v2["definitions"]
        .as_object()
        .unwrap()
        .iter()
        .find(|(k, _)| k.ends_with(".Gadget"))
        .map(|(_, v)| v)
        .expect("the Gadget definition");
    assert_eq!(
        gadget["x-kubernetes-validations"][0]["rule"],
        json!("self.spec.size <= self.spec.maxSize")
    );
    assert_eq!(
        gadget["properties"]["spec"]["properties"]["lock"]["x-kubernetes-validations"][0]["reason"],
        json!("FieldValueForbidden")
    );
}

/// wardle's Fischer publishes sample-apiserver's schema, which constrains nothing: its writes
/// skip schema validation. Its Flunder's schema names the reference types and keys its toppings
/// by name: a topping named twice is refused as a CRD's map list refuses it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wardles_schemas_are_enforced_too() {
    use apiserver_framework::resource::ApiResource as _;
    use apiserver_framework::schema::SchemaValidator;
    let fischer = SchemaValidator::new(&wardle::Fischer::resource_info().schema).unwrap();
    assert!(fischer.is_empty());

    let server = support::in_process::start().await;
    let flunders: Api<DynamicObject> = Api::namespaced_with(
        server.client(),
        "default",
        &ApiResource::erase::<wardle::Flunder>(&()),
    );
    let twice: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "wardle.example.com/v1alpha1", "kind": "Flunder",
        "metadata": {"name": "twice"},
        "spec": {"toppings": [{"name": "a"}, {"name": "b"}, {"name": "a", "amount": 2}]},
    }))
    .unwrap();
    let (message, causes) = invalid(flunders.create(&PostParams::default(), &twice).await);
    assert_eq!(
        message,
        "Flunder.wardle.example.com \"twice\" is invalid: spec.toppings[2]: Duplicate value: {\"name\":\"a\"}"
    );
    assert_eq!(
        causes,
        [cause(
            "spec.toppings[2]",
            "FieldValueDuplicate",
            "Duplicate value: {\"name\":\"a\"}"
        )]
    );
}
