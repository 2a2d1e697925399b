//! The corpus: every request of the suite, in the order sent. Each section builds on the
//! objects the ones before it left (the same on every target, as the requests are the same).

use reqwest::Method;
use serde_json::{Value, json};

use super::answer::Answer;
use super::request::{Identity, Request, View};

/// The group's path.
pub const GROUP: &str = "/apis/wardle.example.com";
/// `wardle.example.com/v1alpha1`.
pub const V1A: &str = "/apis/wardle.example.com/v1alpha1";
/// `wardle.example.com/v1beta1`.
pub const V1B: &str = "/apis/wardle.example.com/v1beta1";
/// v1alpha1 flunders of `default`.
pub const FL: &str = "/apis/wardle.example.com/v1alpha1/namespaces/default/flunders";
/// v1beta1 flunders of `default`.
pub const FLB: &str = "/apis/wardle.example.com/v1beta1/namespaces/default/flunders";
/// Fischers.
pub const FI: &str = "/apis/wardle.example.com/v1alpha1/fischers";

/// Aggregated discovery v2.
pub const AGGREGATED_V2: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
/// Aggregated discovery v2beta1.
pub const AGGREGATED_V2BETA1: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList";
/// A Table.
pub const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io";
/// PartialObjectMetadata.
pub const POM: &str = "application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io";
/// PartialObjectMetadataList.
pub const POM_LIST: &str = "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io";
/// Protobuf.
pub const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";
/// What client-go sends when protobuf is enabled.
pub const PROTOBUF_OR_JSON: &str = "application/vnd.kubernetes.protobuf, application/json";
/// YAML.
pub const YAML: &str = "application/yaml";

/// The patch media types.
pub const MERGE: &str = "application/merge-patch+json";
/// JSON patch.
pub const JSON_PATCH: &str = "application/json-patch+json";
/// Strategic merge patch.
pub const STRATEGIC: &str = "application/strategic-merge-patch+json";
/// Server-side apply.
pub const APPLY: &str = "application/apply-patch+yaml";

/// A v1alpha1 Flunder named `name` referring to `reference`, with `labels`.
pub fn flunder(name: &str, reference: Option<&str>, labels: Value) -> Value {
    let mut spec = json!({});
    if let Some(r) = reference {
        spec["reference"] = json!(r);
    }
    json!({
        "apiVersion": "wardle.example.com/v1alpha1",
        "kind": "Flunder",
        "metadata": {"name": name, "labels": labels},
        "spec": spec,
    })
}

/// A v1beta1 Flunder named `name` with `spec`.
pub fn flunder_v1beta1(name: &str, spec: Value) -> Value {
    json!({
        "apiVersion": "wardle.example.com/v1beta1",
        "kind": "Flunder",
        "metadata": {"name": name},
        "spec": spec,
    })
}

/// A Fischer named `name` banning `disallowed`.
pub fn fischer(name: &str, disallowed: &[&str]) -> Value {
    json!({
        "apiVersion": "wardle.example.com/v1alpha1",
        "kind": "Fischer",
        "metadata": {"name": name},
        "disallowedFlunders": disallowed,
    })
}

fn get(name: &str, path: impl Into<String>) -> Request {
    Request::new(name, Method::GET, path)
}

fn post(name: &str, path: impl Into<String>, body: Value) -> Request {
    Request::new(name, Method::POST, path).json(body)
}

fn put(name: &str, path: impl Into<String>, body: Value) -> Request {
    Request::new(name, Method::PUT, path).json(body)
}

fn patch(name: &str, path: impl Into<String>, media: &str, body: impl Into<String>) -> Request {
    let body: String = body.into();
    Request::new(name, Method::PATCH, path).body_of(media, body.into_bytes())
}

fn delete(name: &str, path: impl Into<String>) -> Request {
    Request::new(name, Method::DELETE, path)
}

/// Whether an answer's status is 403 (the condition of the BanFlunder dry runs).
fn forbidden(a: &Answer) -> bool {
    a.status == 403
}

/// Whether an answer's status is 429 (the condition of requests sent while others are held).
fn too_many(a: &Answer) -> bool {
    a.status == 429
}

/// Whether an answer is not a 429 (upstream's watch cache answers `429` to watches until it
/// has listed its store, after a restart).
fn not_throttled(a: &Answer) -> bool {
    a.status != 429
}

/// The whole corpus, in order.
pub fn corpus() -> Vec<Request> {
    let mut c = Vec::new();
    c.extend(discovery());
    c.extend(creates());
    c.extend(reads());
    c.extend(negotiation());
    c.extend(lists());
    c.extend(watches());
    c.extend(updates());
    c.extend(patches());
    c.extend(subresources());
    c.extend(apply());
    c.extend(fischers());
    c.extend(deletes());
    c.extend(errors());
    c.extend(unvalidated());
    c.extend(openapi());
    c.extend(policies());
    c.extend(mutating_policies());
    c.extend(throttling());
    c.extend(compaction());
    c
}

/// Discovery, legacy and aggregated, in every media type; health.
fn discovery() -> Vec<Request> {
    let mut c = Vec::new();
    for (label, accept) in [
        ("json", "application/json"),
        ("default", ""),
        ("aggregated-v2", AGGREGATED_V2),
        ("aggregated-v2beta1", AGGREGATED_V2BETA1),
        (
            "aggregated-or-legacy",
            "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json",
        ),
        ("yaml", YAML),
        ("protobuf", PROTOBUF),
        ("protobuf-or-json", PROTOBUF_OR_JSON),
        ("wildcard", "*/*"),
        ("html", "text/html"),
    ] {
        for (what, path) in [
            ("apis", "/apis"),
            ("group", GROUP),
            ("v1alpha1", V1A),
            ("v1beta1", V1B),
        ] {
            let mut r = get(&format!("discovery {what} {label}"), path);
            if !accept.is_empty() {
                r = r.accept(accept);
            }
            c.push(r);
        }
    }
    c.push(get("discovery unknown version", format!("{GROUP}/v1")));
    c.push(get(
        "discovery unknown group",
        "/apis/nothing.example.com/v1",
    ));
    c.push(get("discovery apis as bob", "/apis").by(Identity::Bob));
    c.push(get("discovery apis anonymous", "/apis").by(Identity::Anonymous));
    c.push(get("discovery api", "/api"));
    c.push(get("discovery pretty", format!("{V1A}?pretty=true")));
    for path in [
        "/healthz",
        "/livez",
        "/readyz",
        "/healthz/ping",
        "/readyz/nothing",
    ] {
        c.push(get(&format!("health {path}"), path));
    }
    c.push(get("version", "/version").view(View::NoBody));
    c
}

/// Creates of every kind and version, with every create option and the create errors.
fn creates() -> Vec<Request> {
    let labels_a = json!({"app": "a", "tier": "front"});
    vec![
        post("create f0", FL, flunder("f0", None, json!({"app": "zero"})))
            .capture("uidf0", "/metadata/uid")
            .capture("rvf0", "/metadata/resourceVersion"),
        post("create f1", FL, flunder("f1", Some("f0"), labels_a.clone()))
            .capture("uidf1", "/metadata/uid")
            .capture("rvf1", "/metadata/resourceVersion"),
        post("create f2", FL, flunder("f2", Some("f1"), json!({"app": "b"})))
            .capture("rvf2", "/metadata/resourceVersion"),
        post(
            "create f3 referring to a fischer",
            FL,
            json!({"apiVersion": "wardle.example.com/v1alpha1", "kind": "Flunder",
                   "metadata": {"name": "f3", "labels": {"app": "c"}},
                   "spec": {"reference": "fi1", "referenceType": "Fischer"}}),
        ),
        post("create f4 without labels", FL, json!({"apiVersion": "wardle.example.com/v1alpha1", "kind": "Flunder", "metadata": {"name": "f4"}})),
        post(
            "create generateName",
            FL,
            json!({"apiVersion": "wardle.example.com/v1alpha1", "kind": "Flunder",
                   "metadata": {"generateName": "gen-"}, "spec": {}}),
        )
        .capture("genname", "/metadata/name"),
        post("create duplicate", FL, flunder("f1", None, json!({}))),
        post("create dryRun", format!("{FL}?dryRun=All"), flunder("dry", Some("f1"), json!({}))),
        get("create dryRun left nothing", format!("{FL}/dry")),
        post("create dryRun bad value", format!("{FL}?dryRun=Some"), flunder("dry2", None, json!({}))),
        post("create fieldManager", format!("{FL}?fieldManager=tester"), flunder("fm", None, json!({}))),
        post(
            "create fieldManager too long",
            format!("{FL}?fieldManager={}", "m".repeat(129)),
            flunder("fm2", None, json!({})),
        ),
        post(
            "create fieldValidation Strict unknown field",
            format!("{FL}?fieldValidation=Strict"),
            json!({"apiVersion": "wardle.example.com/v1alpha1", "kind": "Flunder",
                   "metadata": {"name": "strict"}, "spec": {"bogus": 1}}),
        ),
        post(
            "create fieldValidation Warn unknown field",
            format!("{FL}?fieldValidation=Warn"),
            json!({"apiVersion": "wardle.example.com/v1alpha1", "kind": "Flunder",
                   "metadata": {"name": "warned"}, "spec": {"bogus": 1}, "extra": true}),
        ),
        post(
            "create fieldValidation Ignore unknown field",
            format!("{FL}?fieldValidation=Ignore"),
            json!({"apiVersion": "wardle.example.com/v1alpha1", "kind": "Flunder",
                   "metadata": {"name": "ignored"}, "spec": {"bogus": 1}}),
        ),
        post(
            "create fieldValidation default unknown field",
            FL,
            json!({"apiVersion": "wardle.example.com/v1alpha1", "kind": "Flunder",
                   "metadata": {"name": "defaulted"}, "spec": {"bogus": 1}}),
        ),
        post(
            "create fieldValidation bad value",
            format!("{FL}?fieldValidation=Sometimes"),
            flunder("fv", None, json!({})),
        ),
        post(
            "create fieldValidation Strict duplicate field",
            format!("{FL}?fieldValidation=Strict"),
            json!({}),
        )
        .body_of(
            "application/json",
            r#"{"apiVersion":"wardle.example.com/v1alpha1","kind":"Flunder","metadata":{"name":"dup"},"spec":{"reference":"a","reference":"b"}}"#,
        ),
        post(
            "create invalid type without reference",
            FL,
            json!({"apiVersion": "wardle.example.com/v1alpha1", "kind": "Flunder",
                   "metadata": {"name": "invalid"}, "spec": {"referenceType": "Fischer"}}),
        ),
        post(
            "create without a name",
            FL,
            json!({"apiVersion": "wardle.example.com/v1alpha1", "kind": "Flunder", "metadata": {}}),
        ),
        post(
            "create wrong apiVersion",
            FL,
            json!({"apiVersion": "wardle.example.com/v1beta1", "kind": "Flunder",
                   "metadata": {"name": "wrongversion"}}),
        ),
        post(
            "create wrong kind",
            FL,
            json!({"apiVersion": "wardle.example.com/v1alpha1", "kind": "Fischer",
                   "metadata": {"name": "wrongkind"}}),
        ),
        post(
            "create without kind",
            FL,
            json!({"apiVersion": "wardle.example.com/v1alpha1", "metadata": {"name": "nokind"}}),
        ),
        post(
            "create namespace mismatch",
            FL,
            json!({"apiVersion": "wardle.example.com/v1alpha1", "kind": "Flunder",
                   "metadata": {"name": "otherns", "namespace": "kube-system"}}),
        ),
        post("create malformed json", FL, json!({})).body_of("application/json", "{\"apiVersion\": "),
        post("create body not an object", FL, json!([1, 2])),
        post("create yaml", FL, json!({})).body_of(
            YAML,
            "apiVersion: wardle.example.com/v1alpha1\nkind: Flunder\nmetadata:\n  name: fromyaml\nspec:\n  reference: f1\n",
        ),
        post("create answered as yaml", FL, flunder("yamlanswer", None, json!({}))).accept(YAML),
        post("create unknown content type", FL, json!({})).body_of("text/plain", "hello"),
        post("create in an unknown namespace", format!("{V1A}/namespaces/nowhere/flunders"), flunder("lost", None, json!({}))),
        post("create as bob", FL, flunder("bobs", None, json!({}))).by(Identity::Bob),
        post("create anonymous", FL, flunder("anon", None, json!({}))).by(Identity::Anonymous),
        post("create v1beta1 b1", FLB, flunder_v1beta1("b1", json!({"referenceType": "Flunder", "flunderReference": "f1"})))
            .capture("rvb1", "/metadata/resourceVersion"),
        post("create v1beta1 b2 fischer reference", FLB, flunder_v1beta1("b2", json!({"referenceType": "Fischer", "fischerReference": "fi1"}))),
        post("create v1beta1 both references", FLB, flunder_v1beta1("b3", json!({"referenceType": "Flunder", "flunderReference": "a", "fischerReference": "b"}))),
        post("create v1beta1 no reference", FLB, flunder_v1beta1("b4", json!({"referenceType": "Flunder"}))),
        post("create v1beta1 unknown type", FLB, flunder_v1beta1("b5", json!({"referenceType": "Other", "flunderReference": "a"}))),
        post("create v1beta1 with v1alpha1 body", FLB, flunder("b6", None, json!({}))),
        post("create fischer fi1", FI, fischer("fi1", &["banned", "evil"]))
            .capture("rvfi1", "/metadata/resourceVersion"),
        post("create fischer duplicate", FI, fischer("fi1", &[])),
        post("create fischer namespaced path", format!("{V1A}/namespaces/default/fischers"), fischer("fi2", &[])),
        post("create banned flunder dry run", format!("{FL}?dryRun=All"), flunder("banned", None, json!({})))
            .until(forbidden),
        post("create banned flunder", FL, flunder("banned", None, json!({}))),
        post("create banned flunder v1beta1", FLB, flunder_v1beta1("evil", json!({}))),
    ]
}

/// Gets, in each version, with resourceVersion.
fn reads() -> Vec<Request> {
    vec![
        get("get f1", format!("{FL}/f1")),
        get("get f1 v1beta1", format!("{FLB}/f1")),
        get("get f3 v1beta1 fischer reference", format!("{FLB}/f3")),
        get("get b1 v1alpha1", format!("{FL}/b1")),
        get("get b2 v1alpha1", format!("{FL}/b2")),
        get("get generated", format!("{FL}/{{genname}}")),
        get("get missing", format!("{FL}/missing")),
        get("get missing v1beta1", format!("{FLB}/missing")),
        get(
            "get in another namespace",
            format!("{V1A}/namespaces/kube-system/flunders/f1"),
        ),
        get(
            "get resourceVersion 0",
            format!("{FL}/f1?resourceVersion=0"),
        ),
        get(
            "get resourceVersion of create",
            format!("{FL}/f1?resourceVersion={{rvf1}}"),
        ),
        get(
            "get resourceVersion bogus",
            format!("{FL}/f1?resourceVersion=bogus"),
        ),
        get("get as bob", format!("{FL}/f1")).by(Identity::Bob),
        get(
            "get in kube-system as bob",
            format!("{V1A}/namespaces/kube-system/flunders/f1"),
        )
        .by(Identity::Bob),
        get("get anonymous", format!("{FL}/f1")).by(Identity::Anonymous),
        get("get pretty", format!("{FL}/f1?pretty=true")),
        get("get fischer", format!("{FI}/fi1")),
        get("get fischer missing", format!("{FI}/missing")),
        get("get fischer as bob", format!("{FI}/fi1")).by(Identity::Bob),
        get("get unknown subresource", format!("{FL}/f1/nothing")),
        get(
            "get unknown resource",
            format!("{V1A}/namespaces/default/nothings"),
        ),
        get(
            "get unknown resource object",
            format!("{V1A}/namespaces/default/nothings/x"),
        ),
        get("get fischer v1beta1", format!("{V1B}/fischers/fi1")),
        get("get with export", format!("{FL}/f1?export=true")),
        get("get with timeout", format!("{FL}/f1?timeout=10s")),
        get("get with bad timeout", format!("{FL}/f1?timeout=bogus")),
    ]
}

/// Every media type asked of an object, a list and an error.
fn negotiation() -> Vec<Request> {
    let mut c = Vec::new();
    for (label, accept) in [
        ("json", "application/json"),
        ("yaml", YAML),
        ("protobuf", PROTOBUF),
        ("protobuf-or-json", PROTOBUF_OR_JSON),
        ("wildcard", "*/*"),
        ("application-wildcard", "application/*"),
        ("json-with-charset", "application/json; charset=utf-8"),
        ("weighted", "application/yaml;q=0.5, application/json;q=0.9"),
        ("unknown", "text/html"),
        ("unknown-or-json", "text/html, application/json"),
        ("cbor", "application/cbor"),
        ("table", TABLE),
        (
            "table-v1beta1",
            "application/json;as=Table;v=v1beta1;g=meta.k8s.io",
        ),
        ("table-yaml", "application/yaml;as=Table;v=v1;g=meta.k8s.io"),
        (
            "table-protobuf",
            "application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io",
        ),
        (
            "table-or-json",
            "application/json;as=Table;v=v1;g=meta.k8s.io, application/json",
        ),
        ("pom", POM),
        ("pom-list", POM_LIST),
        (
            "pom-protobuf",
            "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;v=v1;g=meta.k8s.io",
        ),
        (
            "pom-list-protobuf",
            "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io",
        ),
        (
            "pom-v1beta1",
            "application/json;as=PartialObjectMetadata;v=v1beta1;g=meta.k8s.io",
        ),
        (
            "unknown-as",
            "application/json;as=Nothing;v=v1;g=meta.k8s.io",
        ),
    ] {
        c.push(get(&format!("negotiate object {label}"), format!("{FL}/f1")).accept(accept));
        c.push(
            get(
                &format!("negotiate list {label}"),
                format!("{FL}?labelSelector=app%3Da"),
            )
            .accept(accept),
        );
        c.push(
            get(
                &format!("negotiate missing {label}"),
                format!("{FL}/missing"),
            )
            .accept(accept),
        );
    }
    for (label, query) in [
        ("includeObject None", "includeObject=None"),
        ("includeObject Metadata", "includeObject=Metadata"),
        ("includeObject Object", "includeObject=Object"),
        ("includeObject bogus", "includeObject=Bogus"),
    ] {
        c.push(get(&format!("table list {label}"), format!("{FL}?{query}")).accept(TABLE));
    }
    c.push(get("table fischers", FI).accept(TABLE));
    c.push(get("table v1beta1 list", FLB).accept(TABLE));
    c.push(get("pom list fischers", FI).accept(POM_LIST));
    c.push(get("pom list v1beta1", FLB).accept(POM_LIST));
    c
}

/// Lists with selectors, paging, resourceVersion and its match.
fn lists() -> Vec<Request> {
    let mut c = vec![
        get("list all", FL).capture("rvlist", "/metadata/resourceVersion"),
        get("list v1beta1", FLB),
        get("list all namespaces", format!("{V1A}/flunders")),
        get("list all namespaces v1beta1", format!("{V1B}/flunders")),
        get(
            "list other namespace",
            format!("{V1A}/namespaces/kube-system/flunders"),
        ),
        get("list fischers", FI),
        get("list as bob", FL).by(Identity::Bob),
        get("list all namespaces as bob", format!("{V1A}/flunders")).by(Identity::Bob),
        get("list fischers as bob", FI).by(Identity::Bob),
        get("list with timeoutSeconds", format!("{FL}?timeoutSeconds=5")),
    ];
    for (label, selector) in [
        ("equals", "app%3Da"),
        ("double equals", "app%3D%3Da"),
        ("not equals", "app!%3Da"),
        ("in", "app%20in%20(a,b)"),
        ("notin", "app%20notin%20(a)"),
        ("exists", "tier"),
        ("not exists", "!tier"),
        ("two requirements", "app%3Da,tier%3Dfront"),
        ("no match", "app%3Dnone"),
        ("malformed", "app%3D%3D%3Da"),
        ("bad value", "app%3Da%20b"),
        ("greater than", "app%3E1"),
    ] {
        c.push(get(
            &format!("list labelSelector {label}"),
            format!("{FL}?labelSelector={selector}"),
        ));
    }
    for (label, selector) in [
        ("name", "metadata.name%3Df1"),
        ("name not", "metadata.name!%3Df1"),
        ("namespace", "metadata.namespace%3Ddefault"),
        ("other namespace", "metadata.namespace%3Dother"),
        ("spec.reference", "spec.reference%3Df0"),
        ("unknown field", "spec.nothing%3Dx"),
        ("malformed", "metadata.name"),
        ("set based", "metadata.name%20in%20(f1)"),
    ] {
        c.push(get(
            &format!("list fieldSelector {label}"),
            format!("{FL}?fieldSelector={selector}"),
        ));
    }
    c.push(get(
        "list fischers fieldSelector name",
        format!("{FI}?fieldSelector=metadata.name%3Dfi1"),
    ));
    c.push(get(
        "list fischers fieldSelector namespace",
        format!("{FI}?fieldSelector=metadata.namespace%3Ddefault"),
    ));
    // Paging: a page, the pages after it, a stale and a forged token.
    c.push(get("list limit 2", format!("{FL}?limit=2")).capture("continue1", "/metadata/continue"));
    c.push(
        get(
            "list continue page 2",
            format!("{FL}?limit=2&continue={{continue1}}"),
        )
        .capture("continue2", "/metadata/continue"),
    );
    c.push(get(
        "list continue page 3",
        format!("{FL}?limit=2&continue={{continue2}}"),
    ));
    c.push(get(
        "list continue without limit",
        format!("{FL}?continue={{continue1}}"),
    ));
    c.push(get(
        "list continue with resourceVersion",
        format!("{FL}?limit=2&continue={{continue1}}&resourceVersion={{rvlist}}"),
    ));
    c.push(get(
        "list continue with resourceVersionMatch",
        format!("{FL}?limit=2&continue={{continue1}}&resourceVersionMatch=NotOlderThan"),
    ));
    c.push(get(
        "list continue forged",
        format!("{FL}?limit=2&continue=bm90IGEgdG9rZW4"),
    ));
    c.push(get(
        "list continue not base64",
        format!("{FL}?limit=2&continue=%25%25%25"),
    ));
    c.push(get("list limit 0", format!("{FL}?limit=0")));
    c.push(get("list limit negative", format!("{FL}?limit=-1")));
    c.push(get("list limit bogus", format!("{FL}?limit=bogus")));
    c.push(get("list limit 1000", format!("{FL}?limit=1000")));
    c.push(get(
        "list limit with labelSelector",
        format!("{FL}?limit=1&labelSelector=app%3Da"),
    ));
    c.push(get(
        "list limit all namespaces",
        format!("{V1A}/flunders?limit=3"),
    ));
    // resourceVersion and resourceVersionMatch.
    for (label, query) in [
        ("rv 0", "resourceVersion=0"),
        ("rv of the list", "resourceVersion={rvlist}"),
        ("rv of the list limit", "resourceVersion={rvlist}&limit=2"),
        ("rv 0 limit", "resourceVersion=0&limit=2"),
        ("rv bogus", "resourceVersion=bogus"),
        ("rv future", "resourceVersion=99999999"),
        (
            "match NotOlderThan",
            "resourceVersion={rvlist}&resourceVersionMatch=NotOlderThan",
        ),
        (
            "match NotOlderThan rv 0",
            "resourceVersion=0&resourceVersionMatch=NotOlderThan",
        ),
        (
            "match Exact",
            "resourceVersion={rvlist}&resourceVersionMatch=Exact",
        ),
        (
            "match Exact older",
            "resourceVersion={rvf1}&resourceVersionMatch=Exact",
        ),
        (
            "match Exact rv 0",
            "resourceVersion=0&resourceVersionMatch=Exact",
        ),
        ("match without rv", "resourceVersionMatch=NotOlderThan"),
        (
            "match bogus",
            "resourceVersion=0&resourceVersionMatch=Bogus",
        ),
        (
            "sendInitialEvents on a list",
            "sendInitialEvents=true&resourceVersionMatch=NotOlderThan&resourceVersion=0",
        ),
        ("allowWatchBookmarks on a list", "allowWatchBookmarks=true"),
    ] {
        c.push(get(&format!("list {label}"), format!("{FL}?{query}")));
    }
    c
}

/// Watches: from a resource version (the events since), with bookmarks and initial events, with
/// selectors, in each version, and the invalid ones. Each ends when its `timeoutSeconds` does.
fn watches() -> Vec<Request> {
    let mut c = Vec::new();
    for (label, query) in [
        ("from f0", "resourceVersion={rvf0}"),
        (
            "from f0 label",
            "resourceVersion={rvf0}&labelSelector=app%3Da",
        ),
        (
            "from f0 field",
            "resourceVersion={rvf0}&fieldSelector=metadata.name%3Df2",
        ),
        ("from the list", "resourceVersion={rvlist}"),
        (
            "from the list bookmarks",
            "resourceVersion={rvlist}&allowWatchBookmarks=true",
        ),
        (
            "initial events",
            "sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true",
        ),
        (
            "initial events rv 0",
            "sendInitialEvents=true&resourceVersionMatch=NotOlderThan&resourceVersion=0&allowWatchBookmarks=true",
        ),
        (
            "initial events selector",
            "sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&labelSelector=app%3Da",
        ),
        (
            "initial events without bookmarks",
            "sendInitialEvents=true&resourceVersionMatch=NotOlderThan",
        ),
        ("initial events without match", "sendInitialEvents=true"),
        (
            "initial events false",
            "sendInitialEvents=false&resourceVersionMatch=NotOlderThan",
        ),
        (
            "match without initial events",
            "resourceVersionMatch=NotOlderThan",
        ),
        (
            "match Exact",
            "sendInitialEvents=true&resourceVersionMatch=Exact&resourceVersion={rvlist}",
        ),
        ("rv 1", "resourceVersion=1"),
        ("rv bogus", "resourceVersion=bogus"),
        ("rv future", "resourceVersion=99999999&timeoutSeconds=1"),
        ("no rv", ""),
        ("rv 0", "resourceVersion=0"),
    ] {
        let sep = if query.is_empty() { "" } else { "&" };
        c.push(get(
            &format!("watch {label}"),
            format!("{FL}?watch=true&timeoutSeconds=1{sep}{query}"),
        ));
    }
    c.push(get(
        "watch v1beta1 from f0",
        format!("{FLB}?watch=true&timeoutSeconds=1&resourceVersion={{rvf0}}"),
    ));
    c.push(get(
        "watch all namespaces from f0",
        format!("{V1A}/flunders?watch=true&timeoutSeconds=1&resourceVersion={{rvf0}}"),
    ));
    c.push(get(
        "watch fischers from f0",
        format!("{FI}?watch=true&timeoutSeconds=1&resourceVersion={{rvf0}}"),
    ));
    c.push(get(
        "watch deprecated path",
        format!(
            "{V1A}/watch/namespaces/default/flunders?timeoutSeconds=1&resourceVersion={{rvf0}}"
        ),
    ));
    c.push(get(
        "watch deprecated path one object",
        format!(
            "{V1A}/watch/namespaces/default/flunders/f1?timeoutSeconds=1&resourceVersion={{rvf0}}"
        ),
    ));
    c.push(
        get(
            "watch as table",
            format!(
                "{FL}?watch=true&timeoutSeconds=1&resourceVersion={{rvf0}}&labelSelector=app%3Da"
            ),
        )
        .accept(TABLE),
    );
    c.push(
        get(
            "watch as metadata",
            format!(
                "{FL}?watch=true&timeoutSeconds=1&resourceVersion={{rvf0}}&labelSelector=app%3Da"
            ),
        )
        .accept(POM),
    );
    c.push(
        get(
            "watch as yaml",
            format!("{FL}?watch=true&timeoutSeconds=1&resourceVersion={{rvf0}}"),
        )
        .accept(YAML),
    );
    c.push(
        get(
            "watch as protobuf",
            format!("{FL}?watch=true&timeoutSeconds=1&resourceVersion={{rvf0}}"),
        )
        .accept(PROTOBUF)
        .view(View::NoBody),
    );
    c.push(
        get(
            "watch as bob",
            format!("{FL}?watch=true&timeoutSeconds=1&resourceVersion={{rvf0}}"),
        )
        .by(Identity::Bob),
    );
    c.push(
        get(
            "watch other namespace as bob",
            format!("{V1A}/namespaces/kube-system/flunders?watch=true&timeoutSeconds=1"),
        )
        .by(Identity::Bob),
    );
    c.push(get(
        "watch timeoutSeconds bogus",
        format!("{FL}?watch=true&timeoutSeconds=bogus"),
    ));
    c
}

/// Updates (PUT), with preconditions and every option.
fn updates() -> Vec<Request> {
    let with_rv = |name: &str, rv: &str, reference: &str| {
        json!({"apiVersion": "wardle.example.com/v1alpha1", "kind": "Flunder",
               "metadata": {"name": name, "resourceVersion": rv, "labels": {"app": "a", "tier": "front"}},
               "spec": {"reference": reference}})
    };
    vec![
        put("update f1", format!("{FL}/f1"), with_rv("f1", "{rvf1}", "f2")).capture("rvf1u", "/metadata/resourceVersion"),
        put("update f1 stale", format!("{FL}/f1"), with_rv("f1", "{rvf1}", "f3")),
        put("update f1 without resourceVersion", format!("{FL}/f1"), flunder("f1", Some("f3"), json!({"app": "a"}))),
        put("update f1 name mismatch", format!("{FL}/f1"), with_rv("f2", "{rvf1u}", "f3")),
        put("update missing", format!("{FL}/missing"), with_rv("missing", "1", "f3")),
        put("update missing without resourceVersion", format!("{FL}/missing"), flunder("missing", None, json!({}))),
        put("update dryRun", format!("{FL}/f1?dryRun=All"), with_rv("f1", "{rvf1u}", "dry")),
        put("update fieldManager", format!("{FL}/f1?fieldManager=updater"), with_rv("f1", "{rvf1u}", "f4")).capture("rvf1u2", "/metadata/resourceVersion"),
        put("update fieldValidation Strict", format!("{FL}/f1?fieldValidation=Strict"), {
            let mut b = with_rv("f1", "{rvf1u2}", "f4");
            b["spec"]["bogus"] = json!(true);
            b
        }),
        put("update fieldValidation Warn", format!("{FL}/f1?fieldValidation=Warn"), {
            let mut b = with_rv("f1", "{rvf1u2}", "f4");
            b["spec"]["bogus"] = json!(true);
            b
        })
        .capture("rvf1u3", "/metadata/resourceVersion"),
        put("update invalid", format!("{FL}/f1"), json!({"apiVersion": "wardle.example.com/v1alpha1", "kind": "Flunder",
            "metadata": {"name": "f1", "resourceVersion": "{rvf1u3}"}, "spec": {"referenceType": "Fischer"}})),
        put("update wrong apiVersion", format!("{FL}/f1"), json!({"apiVersion": "wardle.example.com/v1beta1", "kind": "Flunder",
            "metadata": {"name": "f1", "resourceVersion": "{rvf1u3}"}})),
        put("update as bob", format!("{FL}/f1"), with_rv("f1", "{rvf1u3}", "x")).by(Identity::Bob),
        put("update v1beta1", format!("{FLB}/b1"), json!({"apiVersion": "wardle.example.com/v1beta1", "kind": "Flunder",
            "metadata": {"name": "b1", "resourceVersion": "{rvb1}"}, "spec": {"referenceType": "Fischer", "fischerReference": "fi1"}})),
        put("update uid mismatch", format!("{FL}/f1"), json!({"apiVersion": "wardle.example.com/v1alpha1", "kind": "Flunder",
            "metadata": {"name": "f1", "resourceVersion": "{rvf1u3}", "uid": "00000000-0000-0000-0000-000000000000"}})),
        put("update malformed", format!("{FL}/f1"), json!({})).body_of("application/json", "{"),
        put("update yaml", format!("{FL}/f4"), json!({})).body_of(YAML, "apiVersion: wardle.example.com/v1alpha1\nkind: Flunder\nmetadata:\n  name: f4\n  resourceVersion: \"1\"\n"),
        get("get f1 after updates", format!("{FL}/f1")).capture("rvf1now", "/metadata/resourceVersion"),
    ]
}

/// Every patch type, with its options and errors.
fn patches() -> Vec<Request> {
    let f2 = format!("{FL}/f2");
    vec![
        patch(
            "merge patch",
            &f2,
            MERGE,
            r#"{"metadata":{"labels":{"patched":"merge"}},"spec":{"reference":"f0"}}"#,
        ),
        patch(
            "merge patch removes a label",
            &f2,
            MERGE,
            r#"{"metadata":{"labels":{"patched":null}}}"#,
        ),
        patch(
            "json patch",
            &f2,
            JSON_PATCH,
            r#"[{"op":"add","path":"/metadata/labels/json","value":"yes"},{"op":"replace","path":"/spec/reference","value":"f1"}]"#,
        ),
        patch(
            "json patch test fails",
            &f2,
            JSON_PATCH,
            r#"[{"op":"test","path":"/spec/reference","value":"nope"}]"#,
        ),
        patch(
            "json patch bad path",
            &f2,
            JSON_PATCH,
            r#"[{"op":"remove","path":"/spec/nothing"}]"#,
        ),
        patch("json patch malformed", &f2, JSON_PATCH, r#"{"op":"add"}"#),
        patch(
            "json patch unknown op",
            &f2,
            JSON_PATCH,
            r#"[{"op":"frobnicate","path":"/spec"}]"#,
        ),
        patch(
            "strategic merge patch",
            &f2,
            STRATEGIC,
            r#"{"metadata":{"labels":{"smp":"yes"}}}"#,
        ),
        patch(
            "strategic merge patch directive",
            &f2,
            STRATEGIC,
            r#"{"metadata":{"labels":{"$patch":"replace","app":"b"}}}"#,
        ),
        patch(
            "merge patch stale resourceVersion",
            &f2,
            MERGE,
            r#"{"metadata":{"resourceVersion":"{rvf2}","labels":{"x":"y"}}}"#,
        ),
        patch(
            "merge patch invalid",
            &f2,
            MERGE,
            r#"{"spec":{"reference":null,"referenceType":"Fischer"}}"#,
        ),
        patch(
            "merge patch changes the name",
            &f2,
            MERGE,
            r#"{"metadata":{"name":"other"}}"#,
        ),
        patch("merge patch malformed", &f2, MERGE, "{"),
        patch(
            "merge patch dryRun",
            format!("{f2}?dryRun=All"),
            MERGE,
            r#"{"spec":{"reference":"dry"}}"#,
        ),
        patch(
            "merge patch fieldManager",
            format!("{f2}?fieldManager=patcher"),
            MERGE,
            r#"{"metadata":{"annotations":{"by":"patcher"}}}"#,
        ),
        patch(
            "merge patch fieldValidation Strict",
            format!("{f2}?fieldValidation=Strict"),
            MERGE,
            r#"{"spec":{"bogus":1}}"#,
        ),
        patch(
            "merge patch fieldValidation Warn",
            format!("{f2}?fieldValidation=Warn"),
            MERGE,
            r#"{"spec":{"bogus":1}}"#,
        ),
        patch(
            "merge patch force",
            format!("{f2}?force=true"),
            MERGE,
            r#"{"spec":{"reference":"f1"}}"#,
        ),
        patch(
            "merge patch missing",
            format!("{FL}/missing"),
            MERGE,
            r#"{"spec":{}}"#,
        ),
        patch("merge patch as bob", &f2, MERGE, r#"{"spec":{}}"#).by(Identity::Bob),
        patch("patch unknown type", &f2, "application/xml", "<x/>"),
        patch(
            "patch json content type",
            &f2,
            "application/json",
            r#"{"spec":{}}"#,
        ),
        patch(
            "merge patch v1beta1",
            format!("{FLB}/f2"),
            MERGE,
            r#"{"spec":{"referenceType":"Fischer","fischerReference":"fi1","flunderReference":null}}"#,
        ),
        patch(
            "json patch v1beta1",
            format!("{FLB}/f2"),
            JSON_PATCH,
            r#"[{"op":"replace","path":"/spec/fischerReference","value":"fi2"}]"#,
        ),
        get("get f2 after patches", &f2).capture("rvf2now", "/metadata/resourceVersion"),
    ]
}

/// The status and scale subresources (wardle serves them, sample-apiserver does not), on an
/// object of their own, deleted after, so that what they change is in no later answer.
fn subresources() -> Vec<Request> {
    let st = format!("{FL}/st");
    vec![
        post(
            "create st",
            FL,
            flunder("st", Some("f1"), json!({"sub": "yes"})),
        )
        .capture("rvst", "/metadata/resourceVersion"),
        get("get status subresource", format!("{st}/status")),
        get("get scale subresource", format!("{st}/scale")),
        put("update status subresource", format!("{st}/status"), {
            let mut f = flunder("st", Some("f1"), json!({"sub": "yes"}));
            f["metadata"]["resourceVersion"] = json!("{rvst}");
            f
        }),
        patch(
            "merge patch status",
            format!("{st}/status"),
            MERGE,
            r#"{"status":{}}"#,
        ),
        patch(
            "merge patch scale",
            format!("{st}/scale"),
            MERGE,
            r#"{"spec":{"replicas":2}}"#,
        ),
        get("get st after its subresources", &st),
        delete("delete st", &st),
    ]
}

/// Server-side apply: creates, updates, conflicts, force, and the apply errors.
fn apply() -> Vec<Request> {
    let applied = |name: &str, reference: &str| {
        format!(
            "apiVersion: wardle.example.com/v1alpha1\nkind: Flunder\nmetadata:\n  name: {name}\n  labels:\n    applied: \"yes\"\nspec:\n  reference: {reference}\n"
        )
    };
    let a1 = format!("{FL}/applied");
    vec![
        patch(
            "apply creates",
            format!("{a1}?fieldManager=alpha"),
            APPLY,
            applied("applied", "f1"),
        ),
        patch(
            "apply again unchanged",
            format!("{a1}?fieldManager=alpha"),
            APPLY,
            applied("applied", "f1"),
        ),
        patch(
            "apply another manager conflicts",
            format!("{a1}?fieldManager=beta"),
            APPLY,
            applied("applied", "f2"),
        ),
        patch(
            "apply another manager same value",
            format!("{a1}?fieldManager=beta"),
            APPLY,
            applied("applied", "f1"),
        ),
        patch(
            "apply conflict two fields",
            format!("{a1}?fieldManager=gamma"),
            APPLY,
            "apiVersion: wardle.example.com/v1alpha1\nkind: Flunder\nmetadata:\n  name: applied\n  labels:\n    applied: \"no\"\nspec:\n  reference: f3\n",
        ),
        patch(
            "apply force",
            format!("{a1}?fieldManager=beta&force=true"),
            APPLY,
            applied("applied", "f2"),
        ),
        patch(
            "apply without fieldManager",
            &a1,
            APPLY,
            applied("applied", "f2"),
        ),
        patch(
            "apply force false",
            format!("{a1}?fieldManager=alpha&force=false"),
            APPLY,
            applied("applied", "f0"),
        ),
        patch(
            "apply dryRun",
            format!("{a1}?fieldManager=alpha&dryRun=All"),
            APPLY,
            applied("applied", "dry"),
        ),
        patch(
            "apply json body",
            format!("{a1}?fieldManager=alpha&force=true"),
            APPLY,
            r#"{"apiVersion":"wardle.example.com/v1alpha1","kind":"Flunder","metadata":{"name":"applied"},"spec":{"reference":"json"}}"#,
        ),
        patch(
            "apply wrong version",
            format!("{a1}?fieldManager=alpha"),
            APPLY,
            "apiVersion: wardle.example.com/v1beta1\nkind: Flunder\nmetadata:\n  name: applied\n",
        ),
        patch(
            "apply with managedFields",
            format!("{a1}?fieldManager=alpha"),
            APPLY,
            "apiVersion: wardle.example.com/v1alpha1\nkind: Flunder\nmetadata:\n  name: applied\n  managedFields:\n  - manager: x\n    operation: Apply\n",
        ),
        patch(
            "apply name mismatch",
            format!("{a1}?fieldManager=alpha"),
            APPLY,
            applied("other", "f1"),
        ),
        patch(
            "apply malformed yaml",
            format!("{a1}?fieldManager=alpha"),
            APPLY,
            "a: [\n",
        ),
        patch(
            "apply without kind",
            format!("{a1}?fieldManager=alpha"),
            APPLY,
            "apiVersion: wardle.example.com/v1alpha1\nmetadata:\n  name: applied\n",
        ),
        patch(
            "apply strict unknown field",
            format!("{a1}?fieldManager=alpha&fieldValidation=Strict"),
            APPLY,
            "apiVersion: wardle.example.com/v1alpha1\nkind: Flunder\nmetadata:\n  name: applied\nspec:\n  bogus: 1\n",
        ),
        patch(
            "apply invalid",
            format!("{a1}?fieldManager=alpha&force=true"),
            APPLY,
            "apiVersion: wardle.example.com/v1alpha1\nkind: Flunder\nmetadata:\n  name: applied\nspec:\n  referenceType: Fischer\n",
        ),
        patch(
            "apply to an object created by post",
            format!("{FL}/f0?fieldManager=alpha"),
            APPLY,
            applied("f0", "f9"),
        ),
        patch(
            "apply v1beta1",
            format!("{FLB}/appliedb?fieldManager=alpha"),
            APPLY,
            "apiVersion: wardle.example.com/v1beta1\nkind: Flunder\nmetadata:\n  name: appliedb\nspec:\n  referenceType: Flunder\n  flunderReference: f1\n",
        ),
        patch(
            "apply as bob",
            format!("{a1}?fieldManager=bob"),
            APPLY,
            applied("applied", "f1"),
        )
        .by(Identity::Bob),
        patch(
            "apply fischer",
            format!("{FI}/fi3?fieldManager=alpha"),
            APPLY,
            "apiVersion: wardle.example.com/v1alpha1\nkind: Fischer\nmetadata:\n  name: fi3\ndisallowedFlunders:\n- a\n- b\n",
        ),
        patch(
            "apply fischer other manager",
            format!("{FI}/fi3?fieldManager=beta"),
            APPLY,
            "apiVersion: wardle.example.com/v1alpha1\nkind: Fischer\nmetadata:\n  name: fi3\ndisallowedFlunders:\n- c\n",
        ),
        get("get applied", &a1),
    ]
}

/// Fischers: every verb.
fn fischers() -> Vec<Request> {
    vec![
        put("update fischer", format!("{FI}/fi1"), {
            let mut f = fischer("fi1", &["banned", "evil", "worse"]);
            f["metadata"]["resourceVersion"] = json!("{rvfi1}");
            f
        }),
        put("update fischer stale", format!("{FI}/fi1"), {
            let mut f = fischer("fi1", &["x"]);
            f["metadata"]["resourceVersion"] = json!("{rvfi1}");
            f
        }),
        patch(
            "merge patch fischer",
            format!("{FI}/fi1"),
            MERGE,
            r#"{"disallowedFlunders":["banned","evil","merged"]}"#,
        ),
        patch(
            "json patch fischer",
            format!("{FI}/fi1"),
            JSON_PATCH,
            r#"[{"op":"add","path":"/disallowedFlunders/-","value":"appended"}]"#,
        ),
        patch(
            "strategic merge patch fischer",
            format!("{FI}/fi1"),
            STRATEGIC,
            r#"{"disallowedFlunders":["smp"]}"#,
        ),
        post("create fischer fi4", FI, fischer("fi4", &[])),
        post("create fischer as bob", FI, fischer("fi5", &[])).by(Identity::Bob),
        delete("delete fischer fi4", format!("{FI}/fi4")),
        delete("delete fischer missing", format!("{FI}/fi4")),
        get("list fischers after", FI),
    ]
}

/// Deletes with every option, and deletecollection.
fn deletes() -> Vec<Request> {
    let mut c = Vec::new();
    for name in ["d1", "d2", "d3", "d4", "d5", "d6", "d7", "d8", "d9"] {
        c.push(
            post(
                &format!("create {name}"),
                FL,
                flunder(name, None, json!({"del": "yes"})),
            )
            .capture(&format!("uid{name}"), "/metadata/uid")
            .capture(&format!("rv{name}"), "/metadata/resourceVersion"),
        );
    }
    c.extend([
        delete("delete d1", format!("{FL}/d1")),
        delete("delete d1 again", format!("{FL}/d1")),
        delete("delete d2 dryRun", format!("{FL}/d2?dryRun=All")),
        get("get d2 after dry run", format!("{FL}/d2")),
        delete("delete d2 preconditions uid mismatch", format!("{FL}/d2"))
            .json(json!({"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": {"uid": "00000000-0000-0000-0000-000000000000"}})),
        delete("delete d2 preconditions resourceVersion mismatch", format!("{FL}/d2"))
            .json(json!({"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": {"resourceVersion": "1"}})),
        delete("delete d2 preconditions match", format!("{FL}/d2"))
            .json(json!({"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": {"uid": "{uidd2}", "resourceVersion": "{rvd2}"}})),
        delete("delete d3 propagationPolicy Foreground", format!("{FL}/d3?propagationPolicy=Foreground")),
        get("get d3 after Foreground", format!("{FL}/d3")),
        patch("remove d3 finalizers", format!("{FL}/d3"), MERGE, r#"{"metadata":{"finalizers":null}}"#),
        get("get d3 after its finalizers", format!("{FL}/d3")),
        delete("delete d4 propagationPolicy Orphan", format!("{FL}/d4?propagationPolicy=Orphan")),
        get("get d4 after Orphan", format!("{FL}/d4")),
        patch("remove d4 finalizers", format!("{FL}/d4"), MERGE, r#"{"metadata":{"finalizers":null}}"#),
        delete("delete d5 propagationPolicy Background", format!("{FL}/d5?propagationPolicy=Background")),
        delete("delete d6 propagationPolicy bogus", format!("{FL}/d6?propagationPolicy=Bogus")),
        delete("delete d6 orphanDependents and propagationPolicy", format!("{FL}/d6?orphanDependents=true&propagationPolicy=Background")),
        delete("delete d6 gracePeriodSeconds 0", format!("{FL}/d6?gracePeriodSeconds=0")),
        delete("delete d7 gracePeriodSeconds bogus", format!("{FL}/d7?gracePeriodSeconds=bogus")),
        delete("delete d7 body with options", format!("{FL}/d7"))
            .json(json!({"kind": "DeleteOptions", "apiVersion": "meta.k8s.io/v1", "propagationPolicy": "Background", "gracePeriodSeconds": 0})),
        delete("delete d8 malformed body", format!("{FL}/d8")).body_of("application/json", "{"),
        delete("delete d8 as bob", format!("{FL}/d8")).by(Identity::Bob),
        delete("delete d8 v1beta1", format!("{FLB}/d8")),
        delete("delete d9 with a finalizer", format!("{FL}/d9?dryRun=All&propagationPolicy=Foreground")),
        delete("delete missing", format!("{FL}/missing")),
        delete("delete with a name in another namespace", format!("{V1A}/namespaces/kube-system/flunders/f1")),
        delete("deletecollection dryRun", format!("{FL}?labelSelector=del%3Dyes&dryRun=All")),
        get("list after deletecollection dryRun", format!("{FL}?labelSelector=del%3Dyes")),
        delete("deletecollection as bob", format!("{FL}?labelSelector=del%3Dyes")).by(Identity::Bob),
        delete("deletecollection bad selector", format!("{FL}?labelSelector=%3D%3D")),
        delete("deletecollection", format!("{FL}?labelSelector=del%3Dyes")),
        get("list after deletecollection", format!("{FL}?labelSelector=del%3Dyes")),
        delete("deletecollection fischers none", format!("{FI}?labelSelector=nothing%3Dhere")),
        get("watch deletes", format!("{FL}?watch=true&timeoutSeconds=1&labelSelector=del%3Dyes&resourceVersion={{rvd1}}")),
    ]);
    c
}

/// The errors left: methods, sizes, bodies.
fn errors() -> Vec<Request> {
    let big = format!(
        r#"{{"apiVersion":"wardle.example.com/v1alpha1","kind":"Flunder","metadata":{{"name":"big","annotations":{{"a":"{}"}}}}}}"#,
        "x".repeat(3 * 1024 * 1024 + 10)
    );
    vec![
        Request::new("put on a collection", Method::PUT, FL).json(flunder("x", None, json!({}))),
        Request::new("post on an object", Method::POST, format!("{FL}/f1")).json(flunder(
            "f1",
            None,
            json!({}),
        )),
        Request::new("patch on a collection", Method::PATCH, FL).body_of(MERGE, "{}"),
        Request::new("options on a collection", Method::OPTIONS, FL),
        Request::new("head on an object", Method::HEAD, format!("{FL}/f1")),
        Request::new(
            "connect method",
            Method::from_bytes(b"CONNECT").expect("a method"),
            format!("{FL}/f1"),
        ),
        Request::new("post on discovery", Method::POST, V1A).json(json!({})),
        Request::new("delete on discovery", Method::DELETE, "/apis"),
        Request::new("post on a fischer", Method::POST, format!("{FI}/fi1")).json(json!({})),
        post("create too large", FL, json!({})).body_of("application/json", big.clone()),
        put("update too large", format!("{FL}/f1"), json!({})).body_of("application/json", big),
        patch(
            "json patch too many operations",
            format!("{FL}/f1"),
            JSON_PATCH,
            {
                let ops: Vec<String> = (0..10_001)
                    .map(|_| r#"{"op":"test","path":"/kind","value":"Flunder"}"#.to_string())
                    .collect();
                format!("[{}]", ops.join(","))
            },
        ),
        get("get with an invalid token", format!("{FL}/f1"))
            .by(Identity::Anonymous)
            .header("Authorization", "Bearer not-a-token"),
        get("list with an invalid token", FL)
            .by(Identity::Anonymous)
            .header("Authorization", "Bearer not-a-token"),
        get(
            "path with a double slash",
            format!("{V1A}//namespaces/default/flunders"),
        ),
        get("path with a trailing slash", format!("{FL}/")),
        get(
            "path with an empty namespace",
            format!("{V1A}/namespaces//flunders"),
        ),
        get("unknown top-level path", "/nothing"),
        get("root", "/"),
        get("metrics as bob", "/metrics")
            .by(Identity::Bob)
            .view(View::NoBody),
        get("name with a dot", format!("{FL}/a.b")),
        get("name with an encoded slash", format!("{FL}/a%2Fb")),
    ]
}

/// What sample-apiserver does not validate (object metadata, v1alpha1's reference type) and
/// wardle does: last, so that the objects only upstream creates (and then deletes) are in no
/// list or watch of the sections before.
fn unvalidated() -> Vec<Request> {
    vec![
        post(
            "create invalid name",
            FL,
            flunder("Not_A_Name", None, json!({})),
        ),
        delete("cleanup invalid name", format!("{FL}/Not_A_Name")),
        post(
            "create invalid referenceType",
            FL,
            json!({"apiVersion": "wardle.example.com/v1alpha1", "kind": "Flunder",
                   "metadata": {"name": "invalid2"}, "spec": {"reference": "x", "referenceType": "Nothing"}}),
        ),
        delete("cleanup invalid referenceType", format!("{FL}/invalid2")),
        post(
            "create invalid label",
            FL,
            flunder("badlabel", None, json!({"bad key!": "v"})),
        ),
        delete("cleanup invalid label", format!("{FL}/badlabel")),
        post("create fischer invalid name", FI, fischer("Bad_Name", &[])),
        delete("cleanup fischer invalid name", format!("{FI}/Bad_Name")),
    ]
}

/// The OpenAPI documents: v2 (the wardle group's part) and v3 (its index and the group's two
/// documents).
fn openapi() -> Vec<Request> {
    vec![
        get("openapi v2", "/openapi/v2").view(View::OpenApiWardle),
        get("openapi v2 protobuf", "/openapi/v2")
            .accept("application/com.github.proto-openapi.spec.v2@v1.0+protobuf")
            .view(View::NoBody),
        get("openapi v2 as bob", "/openapi/v2")
            .by(Identity::Bob)
            .view(View::NoBody),
        get("openapi v3 index", "/openapi/v3"),
        get("openapi v3 v1alpha1", format!("/openapi/v3{V1A}")).view(View::OpenApiWardle),
        get("openapi v3 v1beta1", format!("/openapi/v3{V1B}")).view(View::OpenApiWardle),
        get(
            "openapi v3 unknown",
            "/openapi/v3/apis/nothing.example.com/v1",
        ),
        get("openapi v3 protobuf", format!("/openapi/v3{V1A}"))
            .accept("application/com.github.proto-openapi.spec.v3@v1.0+protobuf")
            .view(View::NoBody),
    ]
}

/// How many mutating requests sample-apiserver serves at once: genericapiserver's default
/// `MaxMutatingRequestsInFlight` (it has no flag to change it; priority and fairness is off in
/// the suite, so this limit applies), as wardle's `--max-mutating-requests-inflight`.
const MAX_MUTATING_IN_FLIGHT: usize = 200;

/// How many of the admin's creates are held: more than the limit, which the server serves all
/// the same (`system:masters` is never refused; each held request must succeed). The margin
/// is wide: now and then a few of the held requests had not reached the limit yet however long
/// the suite waited (on sample-apiserver and on wardle alike, with one more than the limit, in
/// about one run of three), so that no 429 came; with 50 more, all the places are taken.
const HELD: usize = MAX_MUTATING_IN_FLIGHT + 50;

/// The host's ValidatingAdmissionPolicies, created on each target's dev host: a policy with a
/// ConfigMap parameter, a variable and a `messageExpression` denies (`Deny`) Flunders whose name
/// starts with the parameter's prefix, another warns (`Warn`) of bronze ones; both take only
/// Flunders labelled `policy-test: "yes"`, so that the rest of the corpus is untouched. The
/// server reads the policies through its own watch: the first denial is waited for.
fn policies() -> Vec<Request> {
    let host = |name: &str, path: &str, body: Value| {
        Request::new(format!("policy host {name}"), Method::POST, path)
            .json(body)
            .sent_to_host()
    };
    let vap = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies";
    let vapb = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings";
    // As a real host returns them, defaulted: sample-apiserver's matcher takes an unset
    // `matchPolicy` for `Exact` and an unset `namespaceSelector` for one that selects nothing
    // (kube-apiserver defaults them to `Equivalent` and `{}`; the dev host stores policies as
    // they are sent).
    let rules = json!({
        "matchPolicy": "Equivalent",
        "namespaceSelector": {},
        "resourceRules": [{"apiGroups": ["wardle.example.com"], "apiVersions": ["v1beta1"],
                           "operations": ["CREATE", "UPDATE"], "resources": ["flunders"]}],
        "objectSelector": {"matchLabels": {"policy-test": "yes"}},
    });
    let flunder = |name: &str, tier: &str| {
        json!({"apiVersion": "wardle.example.com/v1alpha1", "kind": "Flunder",
               "metadata": {"name": name, "labels": {"policy-test": "yes", "tier": tier}},
               "spec": {"reference": "x", "referenceType": "Fischer"}})
    };
    let denied: fn(&Answer) -> bool = |a| a.status == 422;
    vec![
        host(
            "params",
            "/api/v1/namespaces/default/configmaps",
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": "policy-params"}, "data": {"prefix": "bad-"}}),
        ),
        host(
            "deny policy",
            vap,
            json!({"apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicy", "metadata": {"name": "no-bad-names"},
            "spec": {
                "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
                "matchConstraints": rules.clone(),
                "variables": [{"name": "name", "expression": "object.metadata.name"}],
                "validations": [{
                    "expression": "!variables.name.startsWith(params.data.prefix)",
                    "messageExpression": "'name ' + variables.name + ' starts with ' + params.data.prefix",
                }, {
                    "expression": "object.spec.referenceType == 'Fischer' || object.metadata.name.size() < 5",
                    "message": "long names refer to Fischers",
                    "reason": "Forbidden",
                }],
            }}),
        ),
        host(
            "deny binding",
            vapb,
            json!({"apiVersion": "admissionregistration.k8s.io/v1",
                   "kind": "ValidatingAdmissionPolicyBinding",
                   "metadata": {"name": "no-bad-names-binding"},
                   "spec": {"policyName": "no-bad-names",
                            "paramRef": {"name": "policy-params", "namespace": "default",
                                         "parameterNotFoundAction": "Deny"},
                            "validationActions": ["Deny"]}}),
        ),
        host(
            "warn policy",
            vap,
            json!({"apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicy", "metadata": {"name": "no-bronze"},
            "spec": {
                "matchConstraints": rules,
                "validations": [{"expression": "object.metadata.labels['tier'] != 'bronze'",
                                 "message": "bronze is discouraged"}],
            }}),
        ),
        host(
            "warn binding",
            vapb,
            json!({"apiVersion": "admissionregistration.k8s.io/v1",
                   "kind": "ValidatingAdmissionPolicyBinding",
                   "metadata": {"name": "no-bronze-binding"},
                   "spec": {"policyName": "no-bronze", "validationActions": ["Warn"]}}),
        ),
        // A dry run, sent again until the server has read the policy.
        Request::new(
            "policy denies a bad name in a dry run",
            Method::POST,
            format!("{FL}?dryRun=All"),
        )
        .json(flunder("bad-policy", "gold"))
        .until(denied),
        Request::new("policy denies a bad name", Method::POST, FL)
            .json(flunder("bad-policy", "gold")),
        Request::new("policy denies a Flunder reference", Method::POST, FL).json({
            let mut f = flunder("refers-to-flunder", "gold");
            f["spec"]["referenceType"] = json!("Flunder");
            f
        }),
        Request::new(
            "policy dry run denied too",
            Method::POST,
            format!("{FL}?dryRun=All"),
        )
        .json(flunder("bad-dry-run", "gold")),
        Request::new("policy warns of bronze", Method::POST, FL).json(flunder("shiny", "bronze")),
        Request::new("policy lets gold through", Method::POST, FL).json(flunder("golden", "gold")),
        Request::new(
            "policy update to a bad tier warned",
            Method::PATCH,
            format!("{FL}/golden"),
        )
        .header("Content-Type", "application/merge-patch+json")
        .body_of(
            "application/merge-patch+json",
            r#"{"metadata":{"labels":{"tier":"bronze"}}}"#,
        ),
        Request::new("policy untouched without the label", Method::POST, FL).json(
            json!({"apiVersion": "wardle.example.com/v1alpha1", "kind": "Flunder",
                   "metadata": {"name": "bad-but-unlabelled"},
                   "spec": {"reference": "x", "referenceType": "Fischer"}}),
        ),
    ]
}

/// The host's MutatingAdmissionPolicies (v1beta1, each server's plugin on): an apply
/// configuration labels and a JSON patch annotates Flunders labelled `mutate-test: "yes"`; a
/// patch that does not apply refuses the write, and one whose `test` fails is not applied. The
/// policy matches v1alpha1, the version the requests are sent in: sample-apiserver cannot
/// convert a Flunder mutated in v1beta1 back (`converting (v1beta1.Flunder) to
/// (v1alpha1.Flunder): unknown conversion`), which wardle can (`tests/production/policies.rs`).
/// The first mutation is waited for in a dry run.
fn mutating_policies() -> Vec<Request> {
    let flunder = |name: &str| {
        json!({"apiVersion": "wardle.example.com/v1alpha1", "kind": "Flunder",
               "metadata": {"name": name, "labels": {"mutate-test": "yes"}},
               "spec": {"reference": "x", "referenceType": "Fischer"}})
    };
    let mutated: fn(&Answer) -> bool = |a| {
        a.status == 201
            && matches!(&a.body, super::answer::Body::Document(d)
                if d["metadata"]["labels"]["mutated-in"] == "v1alpha1")
    };
    vec![
        Request::new(
            "mutating policy host policy",
            Method::POST,
            "/apis/admissionregistration.k8s.io/v1beta1/mutatingadmissionpolicies",
        )
        .json(json!({
            "apiVersion": "admissionregistration.k8s.io/v1beta1",
            "kind": "MutatingAdmissionPolicy", "metadata": {"name": "label-flunders"},
            "spec": {
                "failurePolicy": "Fail",
                "reinvocationPolicy": "Never",
                "matchConstraints": {
                    "matchPolicy": "Equivalent",
                    "namespaceSelector": {},
                    "objectSelector": {"matchLabels": {"mutate-test": "yes"}},
                    "resourceRules": [{"apiGroups": ["wardle.example.com"],
                                       "apiVersions": ["v1alpha1"],
                                       "operations": ["CREATE"], "resources": ["flunders"]}],
                },
                "variables": [{"name": "version",
                               "expression": "object.apiVersion.split('/')[1]"}],
                "mutations": [{
                    "patchType": "ApplyConfiguration",
                    "applyConfiguration": {"expression":
                        "Object{metadata: Object.metadata{labels: {'mutated-in': variables.version}}}"},
                }, {
                    "patchType": "JSONPatch",
                    "jsonPatch": {"expression":
                        "[JSONPatch{op: 'add', path: '/metadata/annotations', value: {'patched': 'yes'}}]"},
                }, {
                    "patchType": "JSONPatch",
                    "jsonPatch": {"expression":
                        "object.metadata.name.startsWith('broken') ? [JSONPatch{op: 'remove', path: '/spec/nothing'}] : []"},
                }, {
                    "patchType": "JSONPatch",
                    "jsonPatch": {"expression":
                        "object.metadata.name.startsWith('tested') ? [JSONPatch{op: 'add', path: '/metadata/labels/tested', value: 'yes'}, JSONPatch{op: 'test', path: '/metadata/name', value: 'other'}] : []"},
                }],
            },
        }))
        .sent_to_host(),
        Request::new(
            "mutating policy host binding",
            Method::POST,
            "/apis/admissionregistration.k8s.io/v1beta1/mutatingadmissionpolicybindings",
        )
        .json(json!({
            "apiVersion": "admissionregistration.k8s.io/v1beta1",
            "kind": "MutatingAdmissionPolicyBinding",
            "metadata": {"name": "label-flunders-binding"},
            "spec": {"policyName": "label-flunders"},
        }))
        .sent_to_host(),
        Request::new(
            "mutating policy labels a dry run",
            Method::POST,
            format!("{FL}?dryRun=All"),
        )
        .json(flunder("mutated"))
        .until(mutated),
        Request::new("mutating policy labels and annotates", Method::POST, FL)
            .json(flunder("mutated")),
        Request::new("mutating policy patch does not apply", Method::POST, FL)
            .json(flunder("broken-patch")),
        Request::new("mutating policy patch fails its test", Method::POST, FL)
            .json(flunder("tested-patch")),
        Request::new("mutating policy leaves unlabelled ones", Method::POST, FL).json(json!({
            "apiVersion": "wardle.example.com/v1alpha1", "kind": "Flunder",
            "metadata": {"name": "not-mutated"},
            "spec": {"reference": "x", "referenceType": "Fischer"}})),
    ]
}

/// The in-flight limit: while more of the admin's dry-run creates than the limit allows are
/// held in flight (their bodies not finished), a mutating request of anyone else is refused
/// with `429` and `Retry-After` (the admin's never are, nor are reads, which have a limit of
/// their own).
fn throttling() -> Vec<Request> {
    let held = post(
        "held create",
        format!("{FL}?dryRun=All"),
        flunder("held", None, json!({"held": "yes"})),
    );
    vec![
        post(
            "too many requests create as bob",
            FL,
            flunder("refused", None, json!({})),
        )
        .by(Identity::Bob)
        .while_held(held.clone(), HELD)
        .until(too_many),
        delete("too many requests delete anonymous", format!("{FL}/f2"))
            .by(Identity::Anonymous)
            .while_held(held.clone(), HELD)
            .until(too_many),
        get("read while writes are held as bob", format!("{FL}/f1"))
            .by(Identity::Bob)
            .while_held(held, HELD),
    ]
}

/// Compaction: each store compacted to its current revision and its server restarted
/// (`Targets::compact_and_restart`). Lists at an older resource version, continue tokens of
/// lists read before and watches from an older resource version answer `410 Gone`.
fn compaction() -> Vec<Request> {
    let after_f0 = |what: &str| format!("{FL}?{what}resourceVersion={{rvf0}}");
    vec![
        get("list after compaction", FL)
            .compact_first()
            .until(|a| a.status == 200)
            .capture("rvcompacted", "/metadata/resourceVersion"),
        get(
            "list exact rv of f0 after compaction",
            after_f0("resourceVersionMatch=Exact&"),
        ),
        get("list limit at rv of f0 after compaction", after_f0("limit=2&")),
        get(
            "list not older than rv of f0 after compaction",
            after_f0("resourceVersionMatch=NotOlderThan&"),
        )
        .until(not_throttled),
        get(
            "list continue after compaction",
            format!("{FL}?limit=2&continue={{continue1}}"),
        )
        .capture("continue410", "/metadata/continue"),
        get(
            "list continue of the expired answer",
            format!("{FL}?limit=2&continue={{continue410}}"),
        ),
        get(
            "watch from f0 after compaction",
            after_f0("watch=true&timeoutSeconds=1&"),
        )
        .until(not_throttled),
        get(
            "watch one object from f0 after compaction",
            format!(
                "{V1A}/watch/namespaces/default/flunders/f1?timeoutSeconds=1&resourceVersion={{rvf0}}"
            ),
        )
        .until(not_throttled),
        get(
            "watch from the list after compaction",
            format!("{FL}?watch=true&timeoutSeconds=1&resourceVersion={{rvcompacted}}"),
        )
        .until(not_throttled),
        get(
            "get f1 at rv of f0 after compaction",
            format!("{FL}/f1?resourceVersion={{rvf0}}"),
        ),
    ]
}
