//! Request semantics as `kubectl` exercises them: selectors, paging, the patch types,
//! client-side apply, server-side dry run, diff, finalizers and the scale subresource.

mod support;

use std::time::Duration;

use serde_json::{Value, json};
use support::{Wardle, stderr, stdout};

/// The resource kubectl names in these tests: Flunders of wardle's v1alpha1.
const FLUNDERS: &str = "flunders.v1alpha1.wardle.example.com";

fn json(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

/// The names in the first column of a kubectl table (header skipped).
fn names(table: &str) -> Vec<String> {
    table
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect()
}

/// Creates Flunder `name` with the given labels and reference through `kubectl create`.
fn create_flunder(w: &Wardle, name: &str, labels: &[(&str, &str)], reference: &str) {
    let labels: serde_json::Map<String, Value> = labels
        .iter()
        .map(|(k, v)| (k.to_string(), Value::from(*v)))
        .collect();
    let obj = json!({
        "apiVersion": "wardle.example.com/v1alpha1",
        "kind": "Flunder",
        "metadata": {"name": name, "labels": labels},
        "spec": {"reference": reference, "referenceType": "Flunder"}
    });
    let file = w.write_file(&format!("{name}.json"), &obj.to_string());
    w.kubectl_ok(&["create", "-f", file.to_str().unwrap()]);
}

fn get_json(w: &Wardle, args: &[&str]) -> Value {
    let mut all = vec!["get"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["-o", "json"]);
    json(&w.kubectl_ok(&all))
}

#[test]
fn label_and_field_selectors() {
    let w = Wardle::start();
    create_flunder(&w, "a", &[("app", "web"), ("tier", "front")], "r1");
    create_flunder(&w, "b", &[("app", "web"), ("tier", "back")], "r2");
    create_flunder(&w, "c", &[("app", "db")], "r1");

    let get = |args: &[&str]| {
        let mut all = vec!["get", FLUNDERS];
        all.extend_from_slice(args);
        names(&w.kubectl_ok(&all))
    };
    assert_eq!(get(&["-l", "app=web"]), ["a", "b"]);
    assert_eq!(get(&["-l", "app=web,tier!=front"]), ["b"]);
    assert_eq!(get(&["-l", "tier"]), ["a", "b"]);
    assert_eq!(get(&["-l", "!tier"]), ["c"]);
    assert_eq!(get(&["-l", "app in (db,cache)"]), ["c"]);
    assert_eq!(get(&["-l", "app notin (db)"]), ["a", "b"]);
    assert_eq!(get(&["--field-selector", "metadata.name=b"]), ["b"]);
    assert_eq!(get(&["--field-selector", "metadata.name!=b"]), ["a", "c"]);
    // A field the resource declares selectable.
    assert_eq!(get(&["--field-selector", "spec.reference=r1"]), ["a", "c"]);
    assert_eq!(
        get(&["--field-selector", "spec.reference=r1", "-l", "app=db"]),
        ["c"]
    );

    let err = w.kubectl_err(&["get", FLUNDERS, "--field-selector", "spec.referenceType=x"]);
    assert!(
        err.contains("field label not supported: spec.referenceType"),
        "{}",
        err
    );
    let err = w.kubectl_err(&["get", FLUNDERS, "-l", "app in (x"]);
    assert!(err.contains("unable to parse requirement"), "{}", err);
    // Selectors apply to deletecollection too.
    let out = w.kubectl_ok(&["delete", FLUNDERS, "-l", "app=web"]);
    assert!(
        out.contains("\"a\" deleted") && out.contains("\"b\" deleted"),
        "{out}"
    );
    assert_eq!(get(&[]), ["c"]);
}

#[test]
fn chunked_get_returns_every_object() {
    let w = Wardle::start();
    for i in 0..7 {
        create_flunder(&w, &format!("f{i}"), &[], "r");
    }
    let out = w.kubectl(&["get", FLUNDERS, "--chunk-size=2", "-v=6"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        names(&stdout(&out)),
        (0..7).map(|i| format!("f{i}")).collect::<Vec<_>>()
    );
    // kubectl really paged: four requests with limit=2, three of them with a continue token.
    let log = stderr(&out);
    let requests: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("verb=\"GET\"") && l.contains("limit=2") && l.contains("200 OK"))
        .collect();
    let pages = requests.len();
    let continued = requests.iter().filter(|l| l.contains("continue=")).count();
    assert_eq!(pages, 4, "{log}");
    assert_eq!(continued, 3, "{log}");
}

#[test]
fn patch_types() {
    let w = Wardle::start();
    create_flunder(&w, "p", &[("a", "1")], "r");
    w.kubectl_ok(&[
        "patch",
        FLUNDERS,
        "p",
        "--type=json",
        "-p",
        r#"[{"op":"replace","path":"/spec/reference","value":"json"},{"op":"add","path":"/metadata/labels/b","value":"2"}]"#,
    ]);
    let obj = get_json(&w, &[FLUNDERS, "p"]);
    assert_eq!(obj["spec"]["reference"], "json");
    assert_eq!(obj["metadata"]["labels"], json!({"a": "1", "b": "2"}));

    w.kubectl_ok(&[
        "patch",
        FLUNDERS,
        "p",
        "--type=merge",
        "-p",
        r#"{"metadata":{"labels":{"a":null}},"spec":{"toppings":[{"name":"x","amount":1},{"name":"y"}]}}"#,
    ]);
    let obj = get_json(&w, &[FLUNDERS, "p"]);
    assert_eq!(obj["metadata"]["labels"], json!({"b": "2"}));
    assert_eq!(obj["spec"]["toppings"].as_array().unwrap().len(), 2);

    // A strategic merge patch merges the toppings by name instead of replacing the list; as on
    // Kubernetes API servers, the patch's items come in its order, before the untouched ones.
    w.kubectl_ok(&[
        "patch",
        FLUNDERS,
        "p",
        "--type=strategic",
        "-p",
        r#"{"spec":{"toppings":[{"name":"x","amount":5},{"name":"z"}]}}"#,
    ]);
    let obj = get_json(&w, &[FLUNDERS, "p"]);
    assert_eq!(
        obj["spec"]["toppings"],
        json!([{"name": "x", "amount": 5}, {"name": "z"}, {"name": "y"}])
    );
    w.kubectl_ok(&[
        "patch",
        FLUNDERS,
        "p",
        "--type=strategic",
        "-p",
        r#"{"spec":{"toppings":[{"name":"y","$patch":"delete"}]}}"#,
    ]);
    let obj = get_json(&w, &[FLUNDERS, "p"]);
    assert_eq!(
        obj["spec"]["toppings"],
        json!([{"name": "x", "amount": 5}, {"name": "z"}])
    );

    // A JSON patch whose test fails is refused with 422 and changes nothing.
    let out = w.kubectl(&[
        "patch",
        FLUNDERS,
        "p",
        "--type=json",
        "-p",
        r#"[{"op":"test","path":"/spec/reference","value":"nope"}]"#,
    ]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("The request is invalid"),
        "{}",
        stderr(&out)
    );
    // A patch producing an invalid object is refused by validation.
    let err = w.kubectl_err(&[
        "patch",
        FLUNDERS,
        "p",
        "--type=merge",
        "-p",
        r#"{"metadata":{"labels":{"not a key":"x"}}}"#,
    ]);
    assert!(
        err.contains("metadata.labels: Invalid value: \"not a key\""),
        "{}",
        err
    );
    assert_eq!(get_json(&w, &[FLUNDERS, "p"])["spec"]["reference"], "json");
}

const APPLY_1: &str = "\
apiVersion: wardle.example.com/v1alpha1
kind: Flunder
metadata:
  name: ap
  labels:
    keep: 'yes'
    drop: 'soon'
spec:
  reference: one
  referenceType: Flunder
  toppings:
  - name: cheese
    amount: 1
  - name: ham
    amount: 2
";

const APPLY_2: &str = "\
apiVersion: wardle.example.com/v1alpha1
kind: Flunder
metadata:
  name: ap
  labels:
    keep: 'yes'
    drop: 'soon'
spec:
  reference: two
  referenceType: Flunder
  toppings:
  - name: cheese
    amount: 3
  - name: ham
    amount: 2
";

const APPLY_3: &str = "\
apiVersion: wardle.example.com/v1alpha1
kind: Flunder
metadata:
  name: ap
  labels:
    keep: 'yes'
spec:
  reference: two
  referenceType: Flunder
  toppings:
  - name: cheese
    amount: 3
";

#[test]
fn client_side_apply_adds_changes_and_removes() {
    let w = Wardle::start();
    let file = w.dir().join("ap.yaml");
    let apply = |text: &str| {
        std::fs::write(&file, text).unwrap();
        w.kubectl_ok(&["apply", "-f", file.to_str().unwrap()])
    };
    assert_eq!(apply(APPLY_1), "flunder.wardle.example.com/ap created\n");
    // Someone else adds a label; apply must keep it (three-way merge).
    w.kubectl_ok(&["label", FLUNDERS, "ap", "other=kept"]);
    assert_eq!(apply(APPLY_2), "flunder.wardle.example.com/ap configured\n");
    let obj = get_json(&w, &[FLUNDERS, "ap"]);
    assert_eq!(obj["spec"]["reference"], "two");
    assert_eq!(
        obj["spec"]["toppings"][0],
        json!({"name": "cheese", "amount": 3})
    );
    assert_eq!(obj["metadata"]["labels"]["other"], "kept");
    assert!(
        obj["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
            .as_str()
            .is_some_and(|t| t.contains("\"two\""))
    );

    assert_eq!(apply(APPLY_3), "flunder.wardle.example.com/ap configured\n");
    let obj = get_json(&w, &[FLUNDERS, "ap"]);
    assert_eq!(
        obj["metadata"]["labels"],
        json!({"keep": "yes", "other": "kept"}),
        "the removed label is gone, the foreign one stays"
    );
    assert_eq!(
        obj["spec"]["toppings"],
        json!([{"name": "cheese", "amount": 3}])
    );
    assert_eq!(apply(APPLY_3), "flunder.wardle.example.com/ap unchanged\n");
}

#[test]
fn client_side_apply_on_a_cluster_scoped_flat_resource() {
    let w = Wardle::start();
    let file = w.dir().join("fi.yaml");
    let apply = |names: &[&str]| {
        let list: Vec<String> = names.iter().map(|n| format!("- {n}\n")).collect();
        let text = format!(
            "apiVersion: wardle.example.com/v1alpha1\nkind: Fischer\nmetadata:\n  name: fi\n\
             disallowedFlunders:\n{}",
            list.concat()
        );
        std::fs::write(&file, text).unwrap();
        w.kubectl_ok(&["apply", "-f", file.to_str().unwrap()])
    };
    let disallowed = || get_json(&w, &["fischer", "fi"])["disallowedFlunders"].clone();
    apply(&["a", "b"]);
    assert_eq!(disallowed(), json!(["a", "b"]));
    apply(&["a", "b", "c"]);
    assert_eq!(disallowed(), json!(["a", "b", "c"]));
    apply(&["a", "c"]);
    assert_eq!(disallowed(), json!(["a", "c"]));
}

#[test]
fn server_side_dry_run_and_diff() {
    let w = Wardle::start();
    let file = w.write_file(
        "d.yaml",
        "apiVersion: wardle.example.com/v1alpha1\nkind: Flunder\nmetadata:\n  name: d\n\
         spec:\n  reference: first\n  referenceType: Flunder\n",
    );
    let path = file.to_str().unwrap();
    let out = w.kubectl_ok(&["create", "--dry-run=server", "-f", path, "-o", "json"]);
    let obj = json(&out);
    assert_eq!(obj["metadata"]["name"], "d");
    assert!(
        obj["metadata"]["uid"].is_string(),
        "defaulted like a real create"
    );
    let err = w.kubectl_err(&["get", FLUNDERS, "d"]);
    assert!(err.contains("NotFound"), "{}", err);

    // diff against nothing: the whole object is new (exit code 1 = differences found).
    let out = w.kubectl(&["diff", "-f", path]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stdout(&out).contains("+  name: d"), "{}", stdout(&out));
    w.kubectl_ok(&["apply", "-f", path]);
    let out = w.kubectl(&["diff", "-f", path]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        stdout(&out),
        stderr(&out)
    );
    std::fs::write(
        &file,
        std::fs::read_to_string(&file)
            .unwrap()
            .replace("first\n", "second\n"),
    )
    .unwrap();
    let out = w.kubectl(&["diff", "-f", path]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let diff = stdout(&out);
    assert!(
        diff.contains("-  reference: first") && diff.contains("+  reference: second"),
        "{diff}"
    );
    // diff is a dry run: nothing changed.
    assert_eq!(get_json(&w, &[FLUNDERS, "d"])["spec"]["reference"], "first");
}

#[test]
fn finalizers_hold_deletion_until_removed() {
    let w = Wardle::start();
    let file = w.write_file(
        "fin.yaml",
        "apiVersion: wardle.example.com/v1alpha1\nkind: Flunder\nmetadata:\n  name: fin\n\
         \x20 finalizers:\n  - example.com/hold\nspec: {}\n",
    );
    w.kubectl_ok(&["create", "-f", file.to_str().unwrap()]);
    let out = w.kubectl_ok(&["delete", FLUNDERS, "fin", "--wait=false"]);
    assert_eq!(out, "flunder.wardle.example.com \"fin\" deleted\n");
    let obj = get_json(&w, &[FLUNDERS, "fin"]);
    assert!(obj["metadata"]["deletionTimestamp"].is_string(), "{obj}");
    assert_eq!(obj["metadata"]["deletionGracePeriodSeconds"], 0);

    // A watcher sees the DELETED event once the finalizer goes.
    let mut watch = w.kubectl_background(
        "watch",
        &["get", FLUNDERS, "--watch-only", "--output-watch-events"],
    );
    w.wait_for_watchers(1);
    let mut wait = w.kubectl_background(
        "wait",
        &[
            "wait",
            "--for=delete",
            "flunders.v1alpha1.wardle.example.com/fin",
            "--timeout=30s",
        ],
    );
    // kubectl wait watches once it has seen the object still there.
    w.wait_for_watchers(2);
    assert!(
        wait.running(),
        "wait must block while the finalizer is there"
    );
    w.kubectl_ok(&[
        "patch",
        FLUNDERS,
        "fin",
        "--type=json",
        "-p",
        r#"[{"op":"remove","path":"/metadata/finalizers"}]"#,
    ]);
    assert!(
        wait.wait_for(Duration::from_secs(20), |out| out.contains("condition met")),
        "kubectl wait: {:?}",
        wait.stderr()
    );
    assert!(
        watch.wait_for(Duration::from_secs(10), |out| out.contains("DELETED")),
        "watch: {}",
        watch.stdout()
    );
    let out = w.kubectl(&["get", FLUNDERS, "fin"]);
    assert!(stderr(&out).contains("NotFound"), "{}", stderr(&out));
}

#[test]
fn scale_subresource() {
    let w = Wardle::start();
    create_flunder(&w, "s", &[], "r");
    let out = w.kubectl_ok(&["scale", FLUNDERS, "s", "--replicas=3"]);
    assert_eq!(out, "flunder.wardle.example.com/s scaled\n");
    assert_eq!(get_json(&w, &[FLUNDERS, "s"])["spec"]["replicas"], 3);
    // With a precondition kubectl sends an update that must match the current replicas.
    let out = w.kubectl(&[
        "scale",
        FLUNDERS,
        "s",
        "--current-replicas=2",
        "--replicas=4",
    ]);
    assert!(!out.status.success(), "{}", stdout(&out));
    w.kubectl_ok(&[
        "scale",
        FLUNDERS,
        "s",
        "--current-replicas=3",
        "--replicas=4",
    ]);
    let scale = json(&w.kubectl_ok(&[
        "get",
        "--raw",
        "/apis/wardle.example.com/v1alpha1/namespaces/default/flunders/s/scale",
    ]));
    assert_eq!(scale["kind"], "Scale");
    assert_eq!(scale["apiVersion"], "autoscaling/v1");
    assert_eq!(scale["spec"]["replicas"], 4);
    assert_eq!(scale["status"]["replicas"], 0);
    let out = w.kubectl(&["scale", FLUNDERS, "s", "--replicas=-1"]);
    assert!(!out.status.success());
    // Fischers have no scale subresource.
    let err = w.kubectl_err(&[
        "get",
        "--raw",
        "/apis/wardle.example.com/v1alpha1/fischers/x/scale",
    ]);
    assert!(err.contains("NotFound"), "{}", err);
}

const UNKNOWN_FIELDS: &str = "\
apiVersion: wardle.example.com/v1alpha1
kind: Flunder
metadata:
  name: u
  bogus: 1
spec:
  reference: x
  referenceType: Flunder
  extra: 2
  toppings:
  - name: a
    what: 1
";

#[test]
fn field_validation_strict_warn_and_ignore() {
    let w = Wardle::start();
    let file = w.write_file("u.yaml", UNKNOWN_FIELDS);
    let path = file.to_str().unwrap();
    let err = w.kubectl_err(&["create", "-f", path, "--validate=strict"]);
    assert!(
        err.contains(
            "Flunder in version \"v1alpha1\" cannot be handled as a Flunder: strict decoding error: \
             unknown field \"metadata.bogus\", unknown field \"spec.extra\", unknown field \
             \"spec.toppings[0].what\""
        ),
        "{}",
        err
    );
    assert!(!w.kubectl(&["get", FLUNDERS, "u"]).status.success());

    let out = w.kubectl(&["create", "-f", path, "--validate=warn"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    let warnings: Vec<&str> = err.lines().filter(|l| l.starts_with("Warning: ")).collect();
    assert_eq!(
        warnings,
        [
            // v1alpha1's deprecation (sample-apiserver's lifecycle) comes first.
            "Warning: wardle.example.com/v1alpha1 Flunder is deprecated in v1.3+, unavailable in v1.10+",
            "Warning: unknown field \"metadata.bogus\"",
            "Warning: unknown field \"spec.extra\"",
            "Warning: unknown field \"spec.toppings[0].what\""
        ]
    );
    // Unknown fields are never stored.
    let obj = get_json(&w, &[FLUNDERS, "u"]);
    assert!(obj["spec"].get("extra").is_none(), "{obj}");
    assert_eq!(obj["spec"]["toppings"], json!([{"name": "a"}]));

    w.kubectl_ok(&["delete", FLUNDERS, "u"]);
    let out = w.kubectl(&["create", "-f", path, "--validate=ignore"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!stderr(&out).contains("unknown field"), "{}", stderr(&out));

    // Patches are checked too (kubectl patch sends no fieldValidation: Warn).
    let out = w.kubectl(&[
        "patch",
        FLUNDERS,
        "u",
        "--type=merge",
        "-p",
        r#"{"spec":{"zzz":1,"reference":"y"}}"#,
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("Warning: unknown field \"spec.zzz\""),
        "{}",
        stderr(&out)
    );
    assert_eq!(get_json(&w, &[FLUNDERS, "u"])["spec"]["reference"], "y");
}

#[test]
fn dry_run_writes_store_nothing() {
    let w = Wardle::start();
    create_flunder(&w, "a", &[("app", "x")], "r");
    create_flunder(&w, "b", &[("app", "x")], "r");
    let snapshot = || get_json(&w, &[FLUNDERS])["items"].clone();
    let before = snapshot();

    // update
    let mut changed = get_json(&w, &[FLUNDERS, "a"]);
    changed["spec"]["reference"] = json!("changed");
    let file = w.write_file("a.json", &changed.to_string());
    let out = w.kubectl_ok(&[
        "replace",
        "--dry-run=server",
        "-f",
        file.to_str().unwrap(),
        "-o",
        "json",
    ]);
    assert_eq!(json(&out)["spec"]["reference"], "changed");
    // patch
    let out = w.kubectl_ok(&[
        "patch",
        FLUNDERS,
        "a",
        "--dry-run=server",
        "--type=merge",
        "-p",
        r#"{"metadata":{"labels":{"new":"1"}}}"#,
        "-o",
        "json",
    ]);
    assert_eq!(json(&out)["metadata"]["labels"]["new"], "1");
    // delete, and deletecollection through the raw API
    w.kubectl_ok(&["delete", FLUNDERS, "a", "--dry-run=server"]);
    let out = w.kubectl_ok(&[
        "delete",
        "--raw",
        "/apis/wardle.example.com/v1alpha1/namespaces/default/flunders?dryRun=All&labelSelector=app%3Dx",
    ]);
    let deleted = json(&out);
    assert_eq!(deleted["kind"], "FlunderList");
    assert_eq!(deleted["items"].as_array().unwrap().len(), 2);
    assert_eq!(snapshot(), before, "nothing changed");

    // Admission runs in a dry run too: BanFlunder refuses a banned name.
    let fischer = w.write_file(
        "fi.yaml",
        "apiVersion: wardle.example.com/v1alpha1\nkind: Fischer\nmetadata:\n  name: fi\n\
         disallowedFlunders:\n- banned\n",
    );
    w.kubectl_ok(&["create", "-f", fischer.to_str().unwrap()]);
    let banned = w.write_file(
        "banned.yaml",
        "apiVersion: wardle.example.com/v1alpha1\nkind: Flunder\nmetadata:\n  name: banned\nspec: {}\n",
    );
    let err = w.kubectl_err(&["create", "--dry-run=server", "-f", banned.to_str().unwrap()]);
    assert!(err.contains("this name may not be used"), "{}", err);
}

#[test]
fn openapi_publishes_list_semantics_patch_types_and_scale() {
    let w = Wardle::start();
    let doc = json(&w.kubectl_ok(&[
        "get",
        "--raw",
        "/openapi/v3/apis/wardle.example.com/v1alpha1",
    ]));
    let schemas = &doc["components"]["schemas"];
    let toppings = &schemas["com.example.wardle.v1alpha1.Flunder"]["properties"]["spec"]["properties"]
        ["toppings"];
    assert_eq!(toppings["x-kubernetes-list-type"], "map");
    assert_eq!(toppings["x-kubernetes-list-map-keys"], json!(["name"]));
    assert_eq!(toppings["x-kubernetes-patch-strategy"], "merge");
    assert_eq!(toppings["x-kubernetes-patch-merge-key"], "name");
    let disallowed =
        &schemas["com.example.wardle.v1alpha1.Fischer"]["properties"]["disallowedFlunders"];
    // Atomic, as sample-apiserver's `+listType=atomic`.
    assert_eq!(disallowed["x-kubernetes-list-type"], "atomic");

    let item =
        &doc["paths"]["/apis/wardle.example.com/v1alpha1/namespaces/{namespace}/flunders/{name}"];
    let content = item["patch"]["requestBody"]["content"].as_object().unwrap();
    assert!(content.contains_key("application/strategic-merge-patch+json"));

    let scale = &doc["paths"]["/apis/wardle.example.com/v1alpha1/namespaces/{namespace}/flunders/{name}/scale"];
    assert_eq!(
        scale["get"]["x-kubernetes-group-version-kind"],
        json!({"group": "autoscaling", "version": "v1", "kind": "Scale"})
    );
    assert!(schemas["io.k8s.api.autoscaling.v1.Scale"].is_object());
    // Discovery lists the scale subresource with its kind.
    let resources = json(&w.kubectl_ok(&["get", "--raw", "/apis/wardle.example.com/v1alpha1"]));
    let scale = resources["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "flunders/scale")
        .expect("flunders/scale in discovery")
        .clone();
    assert_eq!(scale["group"], "autoscaling");
    assert_eq!(scale["version"], "v1");
    assert_eq!(scale["kind"], "Scale");
    assert_eq!(scale["verbs"], json!(["get", "patch", "update"]));
}
