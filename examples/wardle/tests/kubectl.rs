//! Acceptance with the installed `kubectl` against the real `wardle local` binary over HTTPS.
//!
//! Each test starts its own server in a temporary directory and gives kubectl a cache
//! directory of its own; kubectl runs with stdin closed and a timeout.

mod support;

use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};
use support::fixtures::{flunder_in, flunder_yaml};
use support::{V1ALPHA1_WARNING, Wardle, kubectl_binary, stderr, stdout};

/// The resource kubectl names in these tests: Flunders of wardle's v1alpha1.
const FLUNDERS: &str = "flunders.v1alpha1.wardle.example.com";

const F1_YAML: &str = "\
apiVersion: wardle.example.com/v1alpha1
kind: Flunder
metadata:
  name: f1
spec:
  reference: fisch
  referenceType: Fischer
";

/// Starts a server and creates Flunder `f1` (reference `fisch`, type Fischer) with
/// `kubectl create -f`.
fn with_f1() -> Wardle {
    let w = Wardle::start();
    let file = w.write_file("f1.yaml", F1_YAML);
    let out = w.kubectl_ok(&["create", "-f", file.to_str().unwrap()]);
    assert_eq!(out, "flunder.wardle.example.com/f1 created\n");
    w
}

/// The whitespace-separated cells of each line of a kubectl table.
fn table(text: &str) -> Vec<Vec<String>> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.split_whitespace().map(str::to_string).collect())
        .collect()
}

fn json(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

// ---------------------------------------------------------------------------------------------
// Discovery

#[test]
fn api_versions_lists_the_wardle_group_version() {
    let w = Wardle::start();
    let out = w.kubectl_ok(&["api-versions"]);
    assert!(
        out.lines().any(|l| l == "wardle.example.com/v1alpha1"),
        "api-versions output: {out}"
    );
}

fn assert_api_resources(out: &str) {
    let rows = table(out);
    assert_eq!(
        rows.first().map(Vec::as_slice),
        Some(&["NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"].map(String::from)[..]),
        "api-resources output: {out}"
    );
    let row = |name: &str| {
        rows.iter()
            .find(|r| r[0] == name)
            .unwrap_or_else(|| panic!("no row for {name} in:\n{out}"))
            .clone()
    };
    assert_eq!(
        row("flunders"),
        [
            "flunders",
            "fl",
            "wardle.example.com/v1beta1",
            "true",
            "Flunder"
        ]
    );
    assert_eq!(
        row("fischers"),
        [
            "fischers",
            "fi",
            "wardle.example.com/v1alpha1",
            "false",
            "Fischer"
        ]
    );
}

#[test]
fn api_resources_shows_short_names_and_scope() {
    let w = Wardle::start();
    assert_api_resources(&w.kubectl_ok(&["api-resources"]));
    // Selecting by group narrows it to wardle's two resources.
    // (With a cache directory of its own: see api_resources_again_with_a_warm_discovery_cache.)
    let out = w.kubectl_with_cache(
        "cache-2",
        &[
            "api-resources",
            "--api-group",
            "wardle.example.com",
            "-o",
            "name",
        ],
    );
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "fischers.wardle.example.com\nflunders.wardle.example.com\n"
    );
}

/// kubectl keeps an HTTP cache of discovery documents and revalidates it with `If-None-Match`;
/// the second run must see the same resources as the first.
#[test]
fn api_resources_again_with_a_warm_discovery_cache() {
    let w = Wardle::start();
    assert_api_resources(&w.kubectl_ok(&["api-resources"]));
    assert_api_resources(&w.kubectl_ok(&["api-resources"]));
    w.kubectl_ok(&["api-versions"]);
    assert_api_resources(&w.kubectl_ok(&["api-resources"]));
}

// ---------------------------------------------------------------------------------------------
// create and get in every output format

#[test]
fn create_from_a_yaml_file_then_get_as_a_table() {
    let w = with_f1();
    let out = w.kubectl_ok(&["get", FLUNDERS]);
    let rows = table(&out);
    assert_eq!(rows.len(), 2, "get output: {out}");
    assert_eq!(rows[0], ["NAME", "REFERENCE", "AGE"], "get output: {out}");
    assert_eq!(rows[1][..2], ["f1", "fisch"], "get output: {out}");
    assert_eq!(rows[1].len(), 3, "get output: {out}");
    // The short name works too, and the single-object form prints the same table.
    let out = w.kubectl_ok(&["get", FLUNDERS, "f1"]);
    let rows = table(&out);
    assert_eq!(rows[0], ["NAME", "REFERENCE", "AGE"]);
    assert_eq!(rows[1][..2], ["f1", "fisch"]);
}

#[test]
fn get_wide_adds_the_type_column() {
    let w = with_f1();
    let out = w.kubectl_ok(&["get", FLUNDERS, "-o", "wide"]);
    let rows = table(&out);
    assert_eq!(rows.len(), 2, "get -o wide output: {out}");
    assert_eq!(
        rows[0],
        ["NAME", "REFERENCE", "TYPE", "AGE"],
        "get -o wide output: {out}"
    );
    assert_eq!(
        rows[1][..3],
        ["f1", "fisch", "Fischer"],
        "get -o wide output: {out}"
    );
}

#[test]
fn get_as_json() {
    let w = with_f1();
    let obj = json(&w.kubectl_ok(&["get", FLUNDERS, "f1", "-o", "json"]));
    assert_eq!(obj["apiVersion"], "wardle.example.com/v1alpha1");
    assert_eq!(obj["kind"], "Flunder");
    assert_eq!(obj["metadata"]["name"], "f1");
    assert_eq!(obj["metadata"]["namespace"], "default");
    assert!(
        obj["metadata"]["uid"]
            .as_str()
            .is_some_and(|s| !s.is_empty()),
        "{obj}"
    );
    assert!(
        obj["metadata"]["resourceVersion"]
            .as_str()
            .is_some_and(|s| !s.is_empty()),
        "{obj}"
    );
    assert!(obj["metadata"]["creationTimestamp"].is_string(), "{obj}");
    assert_eq!(obj["spec"]["reference"], "fisch");
    assert_eq!(obj["spec"]["referenceType"], "Fischer");

    let list = json(&w.kubectl_ok(&["get", FLUNDERS, "-o", "json"]));
    assert_eq!(list["kind"], "List");
    let items = list["items"].as_array().expect("items");
    assert_eq!(items.len(), 1, "{list}");
    assert_eq!(items[0]["metadata"]["name"], "f1");
    assert_eq!(items[0]["kind"], "Flunder");
}

#[test]
fn get_as_yaml() {
    let w = with_f1();
    let text = w.kubectl_ok(&["get", FLUNDERS, "f1", "-o", "yaml"]);
    let obj: serde_yaml_ng::Value = serde_yaml_ng::from_str(&text).expect("YAML");
    assert_eq!(
        obj["apiVersion"].as_str(),
        Some("wardle.example.com/v1alpha1"),
        "{text}"
    );
    assert_eq!(obj["kind"].as_str(), Some("Flunder"), "{text}");
    assert_eq!(obj["metadata"]["name"].as_str(), Some("f1"), "{text}");
    assert_eq!(obj["spec"]["reference"].as_str(), Some("fisch"), "{text}");
    assert_eq!(
        obj["spec"]["referenceType"].as_str(),
        Some("Fischer"),
        "{text}"
    );
}

#[test]
fn get_as_names() {
    let w = with_f1();
    let file = w.write_file("f2.yaml", &flunder_yaml("f2", None, "f1", Some("Flunder")));
    w.kubectl_ok(&["create", "-f", file.to_str().unwrap()]);
    assert_eq!(
        w.kubectl_ok(&["get", FLUNDERS, "-o", "name"]),
        "flunder.wardle.example.com/f1\nflunder.wardle.example.com/f2\n"
    );
    assert_eq!(
        w.kubectl_ok(&["get", FLUNDERS, "f2", "-o", "name"]),
        "flunder.wardle.example.com/f2\n"
    );
}

#[test]
fn get_of_a_missing_flunder_prints_the_not_found_error() {
    let w = Wardle::start();
    let out = w.kubectl(&["get", FLUNDERS, "missing"]);
    assert_eq!(out.status.code(), Some(1), "stderr: {}", stderr(&out));
    assert_eq!(stdout(&out), "");
    assert_eq!(
        stderr(&out),
        format!(
            "{V1ALPHA1_WARNING}Error from server (NotFound): flunders.wardle.example.com \"missing\" not found\n"
        )
    );
}

// ---------------------------------------------------------------------------------------------
// watch

/// The `{"type": ..., "object": ...}` documents kubectl printed with `--output-watch-events -o json`.
fn watch_events(text: &str) -> Vec<Value> {
    serde_json::Deserializer::from_str(text)
        .into_iter::<Value>()
        .map(|r| r.unwrap_or_else(|e| panic!("watch output is not a JSON stream ({e}): {text}")))
        .collect()
}

/// The types of the complete events printed so far (a document still being written is not
/// counted yet).
fn event_types(text: &str) -> Vec<String> {
    serde_json::Deserializer::from_str(text)
        .into_iter::<Value>()
        .map_while(Result::ok)
        .map(|e| e["type"].as_str().unwrap_or("?").to_string())
        .collect()
}

#[test]
fn get_watch_reports_added_modified_deleted_as_json() {
    let w = with_f1();
    let mut watch = w.kubectl_background(
        "watch",
        &["get", FLUNDERS, "-w", "--output-watch-events", "-o", "json"],
    );
    let wait = Duration::from_secs(20);
    // The initial list arrives as ADDED; once it is there the watch is established.
    assert!(
        watch.wait_for(wait, |s| event_types(s) == ["ADDED"]),
        "no initial ADDED event; stdout:\n{}\nstderr:\n{}",
        watch.stdout(),
        watch.stderr()
    );
    assert_eq!(
        w.kubectl_ok(&["label", FLUNDERS, "f1", "color=blue"]),
        "flunder.wardle.example.com/f1 labeled\n"
    );
    assert!(
        watch.wait_for(wait, |s| event_types(s).len() >= 2),
        "no event after the label; stdout:\n{}\nstderr:\n{}",
        watch.stdout(),
        watch.stderr()
    );
    w.kubectl_ok(&["delete", FLUNDERS, "f1"]);
    assert!(
        watch.wait_for(wait, |s| event_types(s).len() >= 3),
        "no event after the delete; stdout:\n{}\nstderr:\n{}",
        watch.stdout(),
        watch.stderr()
    );
    assert!(
        watch.running(),
        "kubectl get -w exited early: {}",
        watch.stderr()
    );
    let (out, err) = watch.stop();
    let events = watch_events(&out);
    let types: Vec<_> = events
        .iter()
        .map(|e| e["type"].as_str().unwrap_or("?"))
        .collect();
    assert_eq!(
        types,
        ["ADDED", "MODIFIED", "DELETED"],
        "stdout:\n{out}\nstderr:\n{err}"
    );
    for e in &events {
        assert_eq!(e["object"]["kind"], "Flunder", "{e}");
        assert_eq!(e["object"]["metadata"]["name"], "f1", "{e}");
    }
    assert!(
        events[0]["object"]["metadata"]["labels"]["color"].is_null(),
        "{}",
        events[0]
    );
    assert_eq!(events[1]["object"]["metadata"]["labels"]["color"], "blue");
    let rv = |i: usize| -> u64 {
        events[i]["object"]["metadata"]["resourceVersion"]
            .as_str()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("no numeric resourceVersion in {}", events[i]))
    };
    assert!(
        rv(0) < rv(1),
        "resourceVersions do not grow: {} then {}",
        rv(0),
        rv(1)
    );
}

/// Without `-o`, `get -w` asks for Table objects in the watch events.
#[test]
fn get_watch_prints_table_rows_with_event_types() {
    let w = with_f1();
    let mut watch = w.kubectl_background(
        "watch-table",
        &["get", FLUNDERS, "-w", "--output-watch-events"],
    );
    let wait = Duration::from_secs(20);
    let rows = |s: &str| {
        table(s)
            .into_iter()
            .skip(1)
            .map(|r| r.first().cloned().unwrap_or_default())
            .collect::<Vec<_>>()
    };
    assert!(
        watch.wait_for(wait, |s| rows(s) == ["ADDED"]),
        "no initial ADDED row; stdout:\n{}\nstderr:\n{}",
        watch.stdout(),
        watch.stderr()
    );
    w.kubectl_ok(&["label", FLUNDERS, "f1", "color=blue"]);
    assert!(
        watch.wait_for(wait, |s| rows(s).len() >= 2),
        "no MODIFIED row: {}",
        watch.stdout()
    );
    w.kubectl_ok(&["delete", FLUNDERS, "f1"]);
    assert!(
        watch.wait_for(wait, |s| rows(s).len() >= 3),
        "no DELETED row: {}",
        watch.stdout()
    );
    let (out, err) = watch.stop();
    let t = table(&out);
    assert_eq!(
        t[0],
        ["EVENT", "NAME", "REFERENCE", "AGE"],
        "stdout:\n{out}\nstderr:\n{err}"
    );
    let events: Vec<_> = t[1..].iter().map(|r| r[..3].to_vec()).collect();
    assert_eq!(
        events,
        [
            ["ADDED", "f1", "fisch"],
            ["MODIFIED", "f1", "fisch"],
            ["DELETED", "f1", "fisch"]
        ],
        "stdout:\n{out}\nstderr:\n{err}"
    );
}

#[test]
fn get_watch_with_names() {
    let w = with_f1();
    let mut watch = w.kubectl_background(
        "watch-names",
        &["get", FLUNDERS, "-w", "--output-watch-events", "-o", "name"],
    );
    let wait = Duration::from_secs(20);
    let lines = |s: &str| s.lines().count();
    assert!(
        watch.wait_for(wait, |s| lines(s) == 1),
        "no initial event: {}",
        watch.stderr()
    );
    w.kubectl_ok(&["label", FLUNDERS, "f1", "color=blue"]);
    assert!(
        watch.wait_for(wait, |s| lines(s) >= 2),
        "no MODIFIED event: {}",
        watch.stdout()
    );
    w.kubectl_ok(&["delete", FLUNDERS, "f1"]);
    assert!(
        watch.wait_for(wait, |s| lines(s) >= 3),
        "no DELETED event: {}",
        watch.stdout()
    );
    let (out, err) = watch.stop();
    // kubectl's name printer drops the event type: one line per event.
    assert_eq!(
        out,
        "flunder.wardle.example.com/f1\n".repeat(3),
        "stderr:\n{err}"
    );
}

// ---------------------------------------------------------------------------------------------
// writes

#[test]
fn label_adds_and_removes_a_label() {
    let w = with_f1();
    assert_eq!(
        w.kubectl_ok(&["label", FLUNDERS, "f1", "env=prod"]),
        "flunder.wardle.example.com/f1 labeled\n"
    );
    assert_eq!(
        w.kubectl_ok(&[
            "get",
            FLUNDERS,
            "f1",
            "-o",
            "jsonpath={.metadata.labels.env}"
        ]),
        "prod"
    );
    // Selecting by the label finds it; another value does not.
    assert_eq!(
        w.kubectl_ok(&["get", FLUNDERS, "-l", "env=prod", "-o", "name"]),
        "flunder.wardle.example.com/f1\n"
    );
    assert_eq!(
        w.kubectl_ok(&["get", FLUNDERS, "-l", "env=dev", "-o", "name"]),
        ""
    );
    // Changing a label needs --overwrite.
    let out = w.kubectl(&["label", FLUNDERS, "f1", "env=dev"]);
    assert!(
        !out.status.success(),
        "relabel without --overwrite succeeded"
    );
    assert!(
        stderr(&out).contains("already has a value (prod)"),
        "stderr: {}",
        stderr(&out)
    );
    w.kubectl_ok(&["label", FLUNDERS, "f1", "env-"]);
    assert_eq!(
        w.kubectl_ok(&[
            "get",
            FLUNDERS,
            "f1",
            "-o",
            "jsonpath={.metadata.labels.env}"
        ]),
        ""
    );
    assert_eq!(
        w.kubectl_ok(&["get", FLUNDERS, "-l", "env", "-o", "name"]),
        ""
    );
}

/// Removing the last label leaves no `labels` at all: upstream's ObjectMeta drops an empty map
/// (`omitempty`), so `get -o yaml` shows no `labels: {}`.
#[test]
fn removing_the_last_label_leaves_no_labels_map() {
    let w = with_f1();
    w.kubectl_ok(&["label", FLUNDERS, "f1", "env=prod"]);
    w.kubectl_ok(&["label", FLUNDERS, "f1", "env-"]);
    assert_eq!(
        w.kubectl_ok(&["get", FLUNDERS, "f1", "-o", "jsonpath={.metadata.labels}"]),
        ""
    );
}

#[test]
fn replace_with_the_object_read_back() {
    let w = with_f1();
    let text = w.kubectl_ok(&["get", FLUNDERS, "f1", "-o", "yaml"]);
    let mut obj: serde_yaml_ng::Value = serde_yaml_ng::from_str(&text).expect("YAML");
    let old_rv = obj["metadata"]["resourceVersion"]
        .as_str()
        .expect("resourceVersion")
        .to_string();
    obj["spec"]["reference"] = "other".into();
    let file = w.write_file("f1-replaced.yaml", &serde_yaml_ng::to_string(&obj).unwrap());
    assert_eq!(
        w.kubectl_ok(&["replace", "-f", file.to_str().unwrap()]),
        "flunder.wardle.example.com/f1 replaced\n"
    );
    let after = json(&w.kubectl_ok(&["get", FLUNDERS, "f1", "-o", "json"]));
    assert_eq!(after["spec"]["reference"], "other");
    assert_eq!(after["spec"]["referenceType"], "Fischer");
    assert_ne!(after["metadata"]["resourceVersion"], old_rv.as_str());
    assert_eq!(
        after["metadata"]["uid"],
        obj["metadata"]["uid"].as_str().unwrap()
    );

    // Replacing again with the now stale resourceVersion is a conflict.
    let out = w.kubectl(&["replace", "-f", file.to_str().unwrap()]);
    assert!(!out.status.success(), "a stale replace succeeded");
    assert!(
        stderr(&out).contains(
            "Operation cannot be fulfilled on flunders.wardle.example.com \"f1\": the object has been modified; \
             please apply your changes to the latest version and try again"
        ),
        "stderr: {}",
        stderr(&out)
    );
}

#[test]
fn delete_one_flunder() {
    let w = with_f1();
    let file = w.write_file("f2.yaml", &flunder_yaml("f2", None, "f1", Some("Flunder")));
    w.kubectl_ok(&["create", "-f", file.to_str().unwrap()]);
    assert_eq!(
        w.kubectl_ok(&["delete", FLUNDERS, "f1"]),
        "flunder.wardle.example.com \"f1\" deleted\n"
    );
    let err = w.kubectl_err(&["get", FLUNDERS, "f1"]);
    assert!(err.contains("(NotFound)"), "stderr: {}", err);
    assert_eq!(
        w.kubectl_ok(&["get", FLUNDERS, "-o", "name"]),
        "flunder.wardle.example.com/f2\n"
    );
    // Deleting it again is NotFound.
    let err = w.kubectl_err(&["delete", FLUNDERS, "f1"]);
    assert_eq!(
        err,
        format!(
            "{V1ALPHA1_WARNING}Error from server (NotFound): flunders.wardle.example.com \"f1\" not found\n"
        )
    );
}

#[test]
fn delete_all_empties_the_namespace() {
    let w = with_f1();
    let file = w.write_file("f2.yaml", &flunder_yaml("f2", None, "f1", Some("Flunder")));
    w.kubectl_ok(&["create", "-f", file.to_str().unwrap()]);
    let out = w.kubectl_ok(&["delete", FLUNDERS, "--all"]);
    let mut lines: Vec<_> = out.lines().collect();
    lines.sort();
    assert_eq!(
        lines,
        [
            "flunder.wardle.example.com \"f1\" deleted",
            "flunder.wardle.example.com \"f2\" deleted"
        ]
    );
    let out = w.kubectl(&["get", FLUNDERS]);
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    assert_eq!(stdout(&out), "");
    assert_eq!(
        stderr(&out),
        format!("{V1ALPHA1_WARNING}No resources found in default namespace.\n")
    );
}

#[test]
fn ban_flunder_refuses_a_name_a_fischer_lists() {
    let w = Wardle::start();
    let fischer = w.write_file(
        "fischer.yaml",
        "apiVersion: wardle.example.com/v1alpha1\nkind: Fischer\nmetadata:\n  name: fi1\n\
         disallowedFlunders:\n- banned\n",
    );
    assert_eq!(
        w.kubectl_ok(&["create", "-f", fischer.to_str().unwrap()]),
        "fischer.wardle.example.com/fi1 created\n"
    );
    let banned = w.write_file(
        "banned.yaml",
        &flunder_yaml("banned", None, "x", Some("Flunder")),
    );
    let out = w.kubectl(&["create", "-f", banned.to_str().unwrap()]);
    assert!(!out.status.success(), "the banned flunder was created");
    let err = stderr(&out);
    assert!(
        err.contains("Error from server (Forbidden)"),
        "stderr: {err}"
    );
    assert!(
        err.contains(
            "flunders.wardle.example.com \"banned\" is forbidden: this name may not be used, please change the resource name"
        ),
        "stderr: {err}"
    );
    let out = w.kubectl(&["get", FLUNDERS, "banned"]);
    assert!(
        stderr(&out).contains("(NotFound)"),
        "the banned flunder was stored: {}",
        stdout(&out)
    );
    // Another name is fine.
    let allowed = w.write_file(
        "allowed.yaml",
        &flunder_yaml("allowed", None, "x", Some("Flunder")),
    );
    w.kubectl_ok(&["create", "-f", allowed.to_str().unwrap()]);
    // Fischers are cluster-scoped: listed without a namespace.
    let rows = table(&w.kubectl_ok(&["get", "fischers"]));
    assert_eq!(rows[0], ["NAME", "DISALLOWED", "AGE"]);
    assert_eq!(rows[1][0], "fi1");
}

// ---------------------------------------------------------------------------------------------
// schema

#[test]
fn explain_flunders_spec() {
    let w = Wardle::start();
    let out = w.kubectl_ok(&support::kubectl_matrix::EXPLAIN_FLUNDERS_SPEC);
    assert!(
        out.contains("KIND:") && out.contains("Flunder"),
        "explain output: {out}"
    );
    assert!(out.contains("wardle.example.com"), "explain output: {out}");
    let fields = out
        .split("FIELDS:")
        .nth(1)
        .unwrap_or_else(|| panic!("no FIELDS in: {out}"));
    let names: Vec<_> = fields
        .lines()
        .filter_map(|l| {
            // Field lines are `  <name>\t<<type>>`.
            let mut cells = l.split_whitespace();
            let name = cells.next()?;
            cells.next().filter(|t| t.starts_with('<')).map(|_| name)
        })
        .collect();
    assert_eq!(
        names,
        ["reference", "referenceType", "replicas", "toppings"],
        "explain output: {out}"
    );
    assert!(
        out.contains("The name of a Flunder or a Fischer."),
        "explain output: {out}"
    );
}

/// A field's own doc comment describes it, not the doc of its type.
#[test]
fn explain_shows_the_field_doc_of_reference_type() {
    let w = Wardle::start();
    let out = w.kubectl_ok(&[
        "explain",
        "flunders.spec.referenceType",
        "--api-version=wardle.example.com/v1alpha1",
    ]);
    assert!(
        out.contains("The kind of the referenced object."),
        "explain output: {out}"
    );
}

#[test]
fn get_raw_openapi_v2() {
    let w = Wardle::start();
    let doc = json(&w.kubectl_ok(&["get", "--raw", "/openapi/v2"]));
    assert_eq!(doc["swagger"], "2.0");
    let defs = doc["definitions"].as_object().expect("definitions");
    let flunder = defs
        .iter()
        .find(|(k, _)| k.ends_with(".Flunder"))
        .map(|(_, v)| v)
        .unwrap_or_else(|| {
            panic!(
                "no Flunder definition among {:?}",
                defs.keys().collect::<Vec<_>>()
            )
        });
    assert_eq!(
        flunder["x-kubernetes-group-version-kind"][0],
        serde_json::json!({"group": "wardle.example.com", "kind": "Flunder", "version": "v1alpha1"})
    );
    assert!(flunder["properties"]["spec"].is_object(), "{flunder}");
    let paths = doc["paths"].as_object().expect("paths");
    assert!(
        paths.contains_key("/apis/wardle.example.com/v1alpha1/namespaces/{namespace}/flunders"),
        "paths: {:?}",
        paths.keys().collect::<Vec<_>>()
    );
}

/// Sends `method path` with a JSON body to the server; returns the status code and the
/// answer as JSON.
async fn send(w: &Wardle, method: Method, path: &str, body: &Value) -> (u16, Value) {
    let res = w
        .client()
        .request(method, w.at(path))
        .json(body)
        .send()
        .await
        .expect("an answer");
    let code = res.status().as_u16();
    let text = res.text().await.expect("a body");
    (
        code,
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}")),
    )
}

fn flunders_in(namespace: &str) -> String {
    format!("/apis/wardle.example.com/v1alpha1/namespaces/{namespace}/flunders")
}

/// As in a cluster (its NamespaceLifecycle admission plugin), `wardle local` creates objects
/// only in namespaces that exist: a create in a missing namespace is upstream's 404
/// `namespaces "<ns>" not found`, for kubectl and a raw client alike; once kubectl creates the
/// namespace (1.33 and the machine's kubectl, which send it in protobuf) the create succeeds.
/// The namespaces local mode creates take objects, and `default` may not be deleted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn objects_are_created_only_in_namespaces_that_exist() {
    let w = Wardle::start();
    let file = w.write_file("lost.json", &flunder_in("nowhere", "lost").to_string());
    let err = w.kubectl_err(&["create", "-f", file.to_str().unwrap()]);
    assert_eq!(
        err.trim(),
        format!(
            "{}Error from server (NotFound): error when creating \"{}\": namespaces \"nowhere\" not found",
            V1ALPHA1_WARNING,
            file.display()
        )
    );
    let (code, status) = send(
        &w,
        Method::POST,
        &flunders_in("nowhere"),
        &flunder_in("nowhere", "lost"),
    )
    .await;
    assert_eq!(code, 404, "{status}");
    assert_eq!(
        status,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
               "message": "namespaces \"nowhere\" not found", "reason": "NotFound",
               "details": {"name": "nowhere", "kind": "namespaces"}, "code": 404})
    );
    // Nothing was stored.
    let (code, _) = send(
        &w,
        Method::GET,
        &format!("{}/lost", flunders_in("nowhere")),
        &json!({}),
    )
    .await;
    assert_eq!(code, 404);

    for (kubectl, namespace) in [
        (kubectl_binary(33), "nowhere"),
        (std::path::PathBuf::from("kubectl"), "elsewhere"),
    ] {
        let out = w.kubectl_of(&kubectl, namespace, &["create", "namespace", namespace]);
        assert!(
            out.status.success(),
            "{}: {}",
            kubectl.display(),
            stderr(&out)
        );
        assert_eq!(stdout(&out), format!("namespace/{namespace} created\n"));
        let file = w.write_file("found.json", &flunder_in(namespace, "found").to_string());
        assert_eq!(
            w.kubectl_ok(&["create", "-f", file.to_str().unwrap()]),
            "flunder.wardle.example.com/found created\n"
        );
    }

    // The namespaces local mode creates at start take objects.
    for namespace in ["default", "kube-system", "kube-public"] {
        let (code, body) = send(
            &w,
            Method::POST,
            &flunders_in(namespace),
            &flunder_in(namespace, "here"),
        )
        .await;
        assert_eq!(code, 201, "{namespace}: {body}");
    }
    // ... and stay: a cluster refuses to delete them.
    let err = w.kubectl_err(&["delete", "namespace", "default"]);
    assert_eq!(
        err.trim(),
        "Error from server (Forbidden): namespaces \"default\" is forbidden: this namespace may not be deleted"
    );
    assert_eq!(
        w.kubectl_ok(&["get", "flunders", "-n", "default", "-o", "name"]),
        "flunder.wardle.example.com/here\n"
    );
}

/// A namespace whose phase is `Terminating` takes no new objects (upstream's 403 with the
/// `NamespaceTerminating` cause), while its existing objects may still be changed and deleted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_terminating_namespace_takes_no_new_objects() {
    let w = Wardle::start();
    let out = w.kubectl(&["create", "namespace", "ending"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let (code, body) = send(
        &w,
        Method::POST,
        &flunders_in("ending"),
        &flunder_in("ending", "early"),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    let (code, mut ns) = send(&w, Method::GET, "/api/v1/namespaces/ending", &json!({})).await;
    assert_eq!(code, 200, "{ns}");
    ns["status"] = json!({"phase": "Terminating"});
    let (code, body) = send(&w, Method::PUT, "/api/v1/namespaces/ending/status", &ns).await;
    assert_eq!(code, 200, "{body}");

    let (code, status) = send(
        &w,
        Method::POST,
        &flunders_in("ending"),
        &flunder_in("ending", "late"),
    )
    .await;
    support::checks::assert_status(
        code,
        &status,
        403,
        "Forbidden",
        "flunders.wardle.example.com \"late\" is forbidden: unable to create new content in namespace ending because it is being terminated",
    );
    assert_eq!(
        status["details"]["causes"],
        json!([{"reason": "NamespaceTerminating", "message": "namespace ending is being terminated",
                "field": "metadata.namespace"}])
    );
    let file = w.write_file("late.json", &flunder_in("ending", "late").to_string());
    let err = w.kubectl_err(&["create", "-f", file.to_str().unwrap()]);
    assert!(
        err.contains(
            "unable to create new content in namespace ending because it is being terminated"
        ),
        "{}",
        err
    );

    // What is there may still change and go.
    assert_eq!(
        w.kubectl_ok(&["label", "flunder", "early", "-n", "ending", "stage=last"]),
        "flunder.wardle.example.com/early labeled\n"
    );
    assert_eq!(
        w.kubectl_ok(&["delete", "flunder", "early", "-n", "ending"]),
        "flunder.wardle.example.com \"early\" deleted\n"
    );
}

/// `--disable-admission-plugins NamespaceLifecycle` lets objects into any namespace, as it
/// does in production mode; the namespaces every cluster keeps still may not be deleted (the
/// local host stands in for the cluster, whose own admission the flag does not reach).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn namespace_lifecycle_can_be_disabled() {
    let w = Wardle::start_with_args(&["--disable-admission-plugins=NamespaceLifecycle"]);
    let (code, body) = send(
        &w,
        Method::POST,
        &flunders_in("nowhere"),
        &flunder_in("nowhere", "lost"),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    let (code, status) = send(
        &w,
        Method::DELETE,
        "/api/v1/namespaces/kube-system",
        &json!({}),
    )
    .await;
    assert_eq!(code, 403, "{status}");
    assert_eq!(
        status["message"],
        "namespaces \"kube-system\" is forbidden: this namespace may not be deleted"
    );
}
