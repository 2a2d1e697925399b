//! Discovery and OpenAPI documents built from hand-written resource descriptions.

use apiserver_framework::discovery::aggregated::{
    AGGREGATED_CONTENT_TYPE, etag, group_discovery_list, wants_aggregated,
};
use apiserver_framework::discovery::legacy::{api_group, api_group_list, api_resource_list};
use apiserver_framework::discovery::{ServedGroup, ServedResource, ServedVersion};
use apiserver_framework::openapi::{spec_hash, v2_document, v3_group_version, v3_root};
use apiserver_framework::schema::object_schema;
use apiserver_framework::{ResourceInfo, Scope};
use base64::Engine as _;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

const GROUP: &str = "wardle.example.com";
const VERSION: &str = "v1alpha1";

/// Flunder: namespaced, with status, short name and category. Its spec has a nullable field
/// and an int-or-string field, which Swagger 2 cannot express as such.
fn flunder() -> ServedResource {
    let spec = json!({
        "type": "object",
        "properties": {
            "reference": {"type": "string", "nullable": true, "description": "Another flunder."},
            "size": {
                "x-kubernetes-int-or-string": true,
                "anyOf": [{"type": "integer"}, {"type": "string"}],
            },
            "mode": {
                "nullable": true,
                "oneOf": [{"type": "string", "enum": ["A", "B"]}, {"type": "integer"}],
            },
        },
    });
    let status = json!({"type": "object", "properties": {"phase": {"type": "string"}}});
    ServedResource {
        storage_version: VERSION.into(),
        info: ResourceInfo {
            group: GROUP.into(),
            version: VERSION.into(),
            kind: "Flunder".into(),
            plural: "flunders".into(),
            singular: "flunder".into(),
            scope: Scope::Namespaced,
            short_names: vec!["fl".into()],
            categories: vec!["all".into()],
            status_subresource: true,
            printer_columns: Vec::new(),
            selectable_fields: Vec::new(),
            scale: None,
            schema: std::sync::Arc::new(object_schema("A Flunder.", spec, Some(status), false)),
        },
        verbs: [
            "create",
            "delete",
            "deletecollection",
            "get",
            "list",
            "patch",
            "update",
            "watch",
        ]
        .map(String::from)
        .to_vec(),
        status_verbs: ["get", "patch", "update"].map(String::from).to_vec(),
        scale_verbs: Vec::new(),
        custom_subresources: Vec::new(),
    }
}

/// Fischer: cluster-scoped, no status, no short names or categories, read-mostly.
fn fischer() -> ServedResource {
    let spec = json!({
        "type": "object",
        "properties": {"disallowedFlunders": {"type": "array", "items": {"type": "string"}}},
    });
    ServedResource {
        storage_version: VERSION.into(),
        info: ResourceInfo {
            group: GROUP.into(),
            version: VERSION.into(),
            kind: "Fischer".into(),
            plural: "fischers".into(),
            singular: "fischer".into(),
            scope: Scope::Cluster,
            short_names: Vec::new(),
            categories: Vec::new(),
            status_subresource: false,
            printer_columns: Vec::new(),
            selectable_fields: Vec::new(),
            scale: None,
            schema: std::sync::Arc::new(object_schema("A Fischer.", spec, None, true)),
        },
        // Deliberately out of order and duplicated: documents sort and de-duplicate.
        verbs: ["list", "get", "create", "delete", "watch", "get"]
            .map(String::from)
            .to_vec(),
        status_verbs: Vec::new(),
        scale_verbs: Vec::new(),
        custom_subresources: Vec::new(),
    }
}

fn version() -> ServedVersion {
    ServedVersion {
        version: VERSION.into(),
        resources: vec![flunder(), fischer()],
    }
}

fn group() -> ServedGroup {
    ServedGroup {
        name: GROUP.into(),
        versions: vec![version()],
    }
}

/// The storage version hash computed from its definition, independently of the library.
fn expected_hash(kind: &str) -> String {
    let digest = Sha256::digest(format!("{GROUP}/{VERSION}/{kind}"));
    base64::engine::general_purpose::STANDARD.encode(&digest[..8])
}

// ---------------------------------------------------------------------------------------------
// Legacy discovery

#[test]
fn storage_version_hash_matches_upstream_definition() {
    // A value known from upstream: apps/v1 Deployment.
    assert_eq!(
        apiserver_framework::discovery::legacy::storage_version_hash("apps", "v1", "Deployment"),
        "8aSe+NMegvE="
    );
    assert_eq!(
        apiserver_framework::discovery::legacy::storage_version_hash(GROUP, VERSION, "Flunder"),
        expected_hash("Flunder")
    );
}

#[test]
fn legacy_resource_list_has_exact_shape() {
    let doc = api_resource_list(GROUP, &version());
    let expected = json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": "wardle.example.com/v1alpha1",
        "resources": [
            {
                "name": "fischers",
                "singularName": "fischer",
                "namespaced": false,
                "kind": "Fischer",
                "verbs": ["create", "delete", "get", "list", "watch"],
                "storageVersionHash": expected_hash("Fischer"),
            },
            {
                "name": "flunders",
                "singularName": "flunder",
                "namespaced": true,
                "kind": "Flunder",
                "verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"],
                "shortNames": ["fl"],
                "categories": ["all"],
                "storageVersionHash": expected_hash("Flunder"),
            },
            {
                "name": "flunders/status",
                "singularName": "",
                "namespaced": true,
                "kind": "Flunder",
                "verbs": ["get", "patch", "update"],
            },
        ],
    });
    assert_eq!(doc, expected);
}

#[test]
fn legacy_group_documents_have_exact_shape() {
    let mut g = group();
    g.versions.push(ServedVersion {
        version: "v1beta1".into(),
        resources: Vec::new(),
    });
    let expected_group = json!({
        "kind": "APIGroup",
        "apiVersion": "v1",
        "name": "wardle.example.com",
        "versions": [
            {"groupVersion": "wardle.example.com/v1alpha1", "version": "v1alpha1"},
            {"groupVersion": "wardle.example.com/v1beta1", "version": "v1beta1"},
        ],
        "preferredVersion": {"groupVersion": "wardle.example.com/v1alpha1", "version": "v1alpha1"},
    });
    assert_eq!(api_group(&g), expected_group);

    let empty = ServedGroup {
        name: "empty.example.com".into(),
        versions: Vec::new(),
    };
    let list = api_group_list(&[g, empty]);
    let mut expected_group = expected_group;
    expected_group.as_object_mut().unwrap().remove("kind");
    expected_group.as_object_mut().unwrap().remove("apiVersion");
    assert_eq!(list["kind"], "APIGroupList");
    // As upstream encodes it (for the empty group-version): a kind, no apiVersion.
    assert!(list.get("apiVersion").is_none(), "{list}");
    let groups = list["groups"].as_array().unwrap();
    assert_eq!(groups.len(), 1, "groups without versions are not listed");
    assert_eq!(groups[0]["versions"], expected_group["versions"]);
    assert_eq!(
        groups[0]["preferredVersion"],
        expected_group["preferredVersion"]
    );
}

// ---------------------------------------------------------------------------------------------
// Aggregated discovery

#[test]
fn aggregated_discovery_has_exact_shape() {
    let doc = group_discovery_list(&[group()]);
    // In the resource's own group-version: both empty, as upstream's.
    let kind = |k: &str| json!({"group": "", "version": "", "kind": k});
    let expected = json!({
        "kind": "APIGroupDiscoveryList",
        "apiVersion": "apidiscovery.k8s.io/v2",
        "metadata": {},
        "items": [{
            "metadata": {"name": "wardle.example.com"},
            "versions": [{
                "version": "v1alpha1",
                "freshness": "Current",
                "resources": [
                    {
                        "resource": "fischers",
                        "responseKind": kind("Fischer"),
                        "scope": "Cluster",
                        "singularResource": "fischer",
                        "verbs": ["create", "delete", "get", "list", "watch"],
                    },
                    {
                        "resource": "flunders",
                        "responseKind": kind("Flunder"),
                        "scope": "Namespaced",
                        "singularResource": "flunder",
                        "verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"],
                        "shortNames": ["fl"],
                        "categories": ["all"],
                        "subresources": [{
                            "subresource": "status",
                            "responseKind": kind("Flunder"),
                            "verbs": ["get", "patch", "update"],
                        }],
                    },
                ],
            }],
        }],
    });
    assert_eq!(doc, expected);
}

#[test]
fn wants_aggregated_follows_client_accept_headers() {
    // client-go's discovery client.
    assert!(wants_aggregated(
        "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json"
    ));
    // Newest client-go, with the peer profile entry first.
    assert!(wants_aggregated(
        "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList;profile=nopeer,application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json"
    ));
    // Parameter order and spacing do not matter.
    assert!(wants_aggregated(
        "application/json; as=APIGroupDiscoveryList; v=v2; g=apidiscovery.k8s.io"
    ));
    assert!(wants_aggregated(AGGREGATED_CONTENT_TYPE));
    // Plain JSON, wildcards and no preference: legacy.
    assert!(!wants_aggregated("application/json"));
    assert!(!wants_aggregated("*/*"));
    assert!(!wants_aggregated(""));
    assert!(!wants_aggregated("application/json, */*"));
    // Only v2beta1 asked: legacy (v2beta1 is not served).
    assert!(!wants_aggregated(
        "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json"
    ));
    // Plain JSON preferred over aggregated by quality.
    assert!(!wants_aggregated(
        "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList;q=0.5,application/json"
    ));
    // A media type we do not serve is skipped.
    assert!(wants_aggregated(
        "application/vnd.kubernetes.protobuf,application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
    ));
    // Table is not discovery.
    assert!(!wants_aggregated(
        "application/json;as=Table;v=v1;g=meta.k8s.io"
    ));
}

#[test]
fn etag_is_quoted_upper_hex_sha512() {
    let tag = etag(b"{}");
    assert_eq!(tag.len(), 130);
    assert!(tag.starts_with('"') && tag.ends_with('"'));
    let hex = &tag[1..129];
    assert!(
        hex.chars()
            .all(|c| c.is_ascii_digit() || ('A'..='F').contains(&c))
    );
    assert_eq!(hex, spec_hash(b"{}"));
    assert!(hex.starts_with("27C74670ADB75075"), "{hex}");
}

// ---------------------------------------------------------------------------------------------
// Reference checks

/// Collects every `$ref` in `value`.
fn collect_refs<'a>(value: &'a Value, out: &mut Vec<&'a str>) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                if k == "$ref" {
                    out.push(v.as_str().expect("$ref is a string"));
                } else {
                    collect_refs(v, out);
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| collect_refs(v, out)),
        _ => {}
    }
}

/// Asserts that every `$ref` of `doc` points (with `prefix`) at a key of `definitions`.
fn assert_refs_resolve(doc: &Value, prefix: &str, definitions: &Value) {
    let mut refs = Vec::new();
    collect_refs(doc, &mut refs);
    assert!(!refs.is_empty());
    for reference in refs {
        let name = reference
            .strip_prefix(prefix)
            .unwrap_or_else(|| panic!("{reference} does not start with {prefix}"));
        assert!(
            definitions.get(name).is_some(),
            "{reference} does not resolve"
        );
    }
}

/// Asserts that no schema keyword in `value` is one Swagger 2 does not know.
fn assert_swagger2_clean(value: &Value, at: &str) {
    match value {
        Value::Object(map) => {
            for key in ["nullable", "anyOf", "oneOf", "not"] {
                assert!(!map.contains_key(key), "{key} at {at}");
            }
            for (k, v) in map {
                if k == "properties" {
                    // Property names are not keywords.
                    for (name, schema) in v.as_object().unwrap() {
                        assert_swagger2_clean(schema, &format!("{at}.{name}"));
                    }
                } else {
                    assert_swagger2_clean(v, &format!("{at}/{k}"));
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| assert_swagger2_clean(v, at)),
        _ => {}
    }
}

fn param_names(op: &Value, location: &str) -> Vec<String> {
    op["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["in"] == location)
        .map(|p| p["name"].as_str().unwrap().to_owned())
        .collect()
}

const META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.";

// ---------------------------------------------------------------------------------------------
// OpenAPI v2

#[test]
fn v2_document_paths_and_operations() {
    let doc = v2_document(&[group()], "Wardle", "0.1");
    assert_eq!(doc["swagger"], "2.0");
    assert_eq!(doc["info"], json!({"title": "Wardle", "version": "0.1"}));
    let paths = doc["paths"].as_object().unwrap();
    let base = "/apis/wardle.example.com/v1alpha1";
    let ns = format!("{base}/namespaces/{{namespace}}/flunders");

    let mut expected_paths = vec![
        "/apis/wardle.example.com/".to_owned(),
        format!("{base}/"),
        ns.clone(),
        format!("{ns}/{{name}}"),
        format!("{ns}/{{name}}/status"),
        format!("{base}/flunders"),
        format!("{base}/watch/namespaces/{{namespace}}/flunders"),
        format!("{base}/watch/namespaces/{{namespace}}/flunders/{{name}}"),
        format!("{base}/watch/flunders"),
        format!("{base}/fischers"),
        format!("{base}/fischers/{{name}}"),
        format!("{base}/watch/fischers"),
        format!("{base}/watch/fischers/{{name}}"),
    ];
    expected_paths.sort();
    let mut actual: Vec<String> = paths.keys().cloned().collect();
    actual.sort();
    assert_eq!(actual, expected_paths);

    // Operations exist exactly for the served verbs.
    let methods = |p: &str| {
        let mut m: Vec<String> = paths[p].as_object().unwrap().keys().cloned().collect();
        m.sort();
        m
    };
    assert_eq!(methods(&ns), ["delete", "get", "post"]);
    assert_eq!(
        methods(&format!("{ns}/{{name}}")),
        ["delete", "get", "patch", "put"]
    );
    assert_eq!(
        methods(&format!("{ns}/{{name}}/status")),
        ["get", "patch", "put"]
    );
    assert_eq!(methods(&format!("{base}/fischers")), ["get", "post"]);
    assert_eq!(
        methods(&format!("{base}/fischers/{{name}}")),
        ["delete", "get"]
    );

    // Operation ids, actions and GVKs.
    let expect = [
        (
            ns.as_str(),
            "get",
            "listWardleExampleComV1alpha1NamespacedFlunder",
            "list",
        ),
        (
            &ns,
            "post",
            "createWardleExampleComV1alpha1NamespacedFlunder",
            "post",
        ),
        (
            &ns,
            "delete",
            "deleteWardleExampleComV1alpha1CollectionNamespacedFlunder",
            "deletecollection",
        ),
    ];
    for (path, method, id, action) in expect {
        let op = &paths[path][method];
        assert_eq!(op["operationId"], id);
        assert_eq!(op["x-kubernetes-action"], action);
    }
    let item = &paths[&format!("{ns}/{{name}}")];
    assert_eq!(
        item["get"]["operationId"],
        "readWardleExampleComV1alpha1NamespacedFlunder"
    );
    assert_eq!(
        item["put"]["operationId"],
        "replaceWardleExampleComV1alpha1NamespacedFlunder"
    );
    assert_eq!(
        item["patch"]["operationId"],
        "patchWardleExampleComV1alpha1NamespacedFlunder"
    );
    assert_eq!(
        item["delete"]["operationId"],
        "deleteWardleExampleComV1alpha1NamespacedFlunder"
    );
    let status = &paths[&format!("{ns}/{{name}}/status")];
    assert_eq!(
        status["patch"]["operationId"],
        "patchWardleExampleComV1alpha1NamespacedFlunderStatus"
    );
    assert_eq!(
        paths[&format!("{base}/flunders")]["get"]["operationId"],
        "listWardleExampleComV1alpha1FlunderForAllNamespaces"
    );
    assert_eq!(
        paths[&format!("{base}/watch/flunders")]["get"]["operationId"],
        "watchWardleExampleComV1alpha1FlunderListForAllNamespaces"
    );
    assert_eq!(
        paths[&format!("{base}/watch/namespaces/{{namespace}}/flunders")]["get"]["x-kubernetes-action"],
        "watchlist"
    );
    assert_eq!(
        paths[&format!("{base}/watch/fischers/{{name}}")]["get"]["operationId"],
        "watchWardleExampleComV1alpha1Fischer"
    );
    assert_eq!(
        paths[&format!("{base}/fischers")]["get"]["operationId"],
        "listWardleExampleComV1alpha1Fischer"
    );

    // Every resource operation: common fields and the GVK as one object.
    for (path, item) in paths {
        for (method, op) in item.as_object().unwrap() {
            assert_eq!(op["schemes"], json!(["https"]), "{method} {path}");
            assert!(op["consumes"].is_array() && op["produces"].is_array());
            assert!(op["operationId"].is_string());
            assert_eq!(op["responses"]["401"]["description"], "Unauthorized");
            if path.ends_with("/apis/wardle.example.com/") {
                assert_eq!(op["tags"], json!(["wardleExampleCom"]));
                continue;
            }
            assert_eq!(op["tags"], json!(["wardleExampleCom_v1alpha1"]));
            if path.ends_with("v1alpha1/") {
                assert!(op.get("x-kubernetes-group-version-kind").is_none());
                continue;
            }
            let kind = if path.contains("fischers") {
                "Fischer"
            } else {
                "Flunder"
            };
            assert_eq!(
                op["x-kubernetes-group-version-kind"],
                json!({"group": GROUP, "version": VERSION, "kind": kind}),
                "{method} {path}"
            );
            assert!(param_names(op, "query").contains(&"pretty".to_owned()));
            if path.contains("{namespace}") {
                assert!(param_names(op, "path").contains(&"namespace".to_owned()));
            }
            if path.contains("{name}") {
                assert!(param_names(op, "path").contains(&"name".to_owned()));
            }
        }
    }

    // Parameters per verb.
    let patch = &item["patch"];
    assert_eq!(
        patch["consumes"],
        json!([
            "application/json-patch+json",
            "application/merge-patch+json",
            "application/strategic-merge-patch+json",
            "application/apply-patch+yaml"
        ])
    );
    assert_eq!(
        param_names(patch, "query"),
        [
            "dryRun",
            "fieldManager",
            "fieldValidation",
            "force",
            "pretty"
        ]
    );
    assert_eq!(param_names(patch, "body"), ["body"]);
    assert_eq!(
        patch["parameters"][0]["schema"]["$ref"],
        format!("#/definitions/{META}Patch")
    );
    assert_eq!(
        param_names(&item["put"], "query"),
        ["dryRun", "fieldManager", "fieldValidation", "pretty"]
    );
    assert_eq!(
        param_names(&paths[&ns]["post"], "query"),
        ["dryRun", "fieldManager", "fieldValidation", "pretty"]
    );
    assert_eq!(
        param_names(&paths[&ns]["get"], "query"),
        [
            "allowWatchBookmarks",
            "continue",
            "fieldSelector",
            "labelSelector",
            "limit",
            "pretty",
            "resourceVersion",
            "resourceVersionMatch",
            "sendInitialEvents",
            "timeoutSeconds",
            "watch",
        ]
    );
    let delete_collection = param_names(&paths[&ns]["delete"], "query");
    for name in [
        "gracePeriodSeconds",
        "propagationPolicy",
        "labelSelector",
        "limit",
        "dryRun",
    ] {
        assert!(delete_collection.contains(&name.to_owned()), "{name}");
    }
    assert!(!delete_collection.contains(&"watch".to_owned()));
    assert_eq!(
        param_names(&item["delete"], "query"),
        [
            "dryRun",
            "gracePeriodSeconds",
            "ignoreStoreReadErrorWithClusterBreakingPotential",
            "orphanDependents",
            "pretty",
            "propagationPolicy",
        ]
    );
    let limit = paths[&ns]["get"]["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "limit")
        .unwrap();
    assert_eq!(limit["type"], "integer");

    // Responses.
    let create = &paths[&ns]["post"]["responses"];
    for code in ["200", "201", "202"] {
        assert_eq!(
            create[code]["schema"]["$ref"],
            "#/definitions/com.example.wardle.v1alpha1.Flunder"
        );
    }
    assert_eq!(
        paths[&ns]["get"]["responses"]["200"]["schema"]["$ref"],
        "#/definitions/com.example.wardle.v1alpha1.FlunderList"
    );
    assert_eq!(
        item["delete"]["responses"]["200"]["schema"]["$ref"],
        format!("#/definitions/{META}Status")
    );
}

#[test]
fn v2_document_definitions() {
    let doc = v2_document(&[group()], "Wardle", "0.1");
    let defs = &doc["definitions"];
    assert_refs_resolve(&doc, "#/definitions/", defs);
    assert_swagger2_clean(defs, "definitions");

    for name in [
        "ObjectMeta",
        "ManagedFieldsEntry",
        "OwnerReference",
        "FieldsV1",
        "Time",
        "ListMeta",
        "Status",
        "StatusDetails",
        "StatusCause",
        "DeleteOptions",
        "Preconditions",
        "WatchEvent",
        "Patch",
    ] {
        assert!(defs.get(format!("{META}{name}")).is_some(), "{name}");
    }

    let flunder = &defs["com.example.wardle.v1alpha1.Flunder"];
    assert_eq!(
        flunder["x-kubernetes-group-version-kind"],
        json!([{"group": GROUP, "kind": "Flunder", "version": VERSION}])
    );
    let metadata = &flunder["properties"]["metadata"];
    assert_eq!(metadata["$ref"], format!("#/definitions/{META}ObjectMeta"));
    assert!(metadata.get("allOf").is_none());
    // Nullable dropped, oneOf resolved to its first alternative, int-or-string untyped.
    let spec = &flunder["properties"]["spec"]["properties"];
    assert_eq!(spec["reference"]["type"], "string");
    assert_eq!(spec["mode"]["type"], "string");
    assert_eq!(spec["mode"]["enum"], json!(["A", "B"]));
    assert!(spec["size"].get("type").is_none());
    assert_eq!(spec["size"]["x-kubernetes-int-or-string"], true);
    // ObjectMeta's Time fields reference Time with a description beside the reference.
    let created = &defs[format!("{META}ObjectMeta")]["properties"]["creationTimestamp"];
    assert_eq!(created["$ref"], format!("#/definitions/{META}Time"));

    let list = &defs["com.example.wardle.v1alpha1.FlunderList"];
    assert_eq!(
        list["x-kubernetes-group-version-kind"],
        json!([{"group": GROUP, "kind": "FlunderList", "version": VERSION}])
    );
    assert_eq!(
        list["properties"]["items"]["items"]["$ref"],
        "#/definitions/com.example.wardle.v1alpha1.Flunder"
    );
    assert!(defs.get("com.example.wardle.v1alpha1.Fischer").is_some());
    assert!(
        defs.get("com.example.wardle.v1alpha1.FischerList")
            .is_some()
    );
    // The Fischer's fields are flat.
    assert!(
        defs["com.example.wardle.v1alpha1.Fischer"]["properties"]
            .get("disallowedFlunders")
            .is_some()
    );
}

// ---------------------------------------------------------------------------------------------
// OpenAPI v3

#[test]
fn v3_group_version_document() {
    let doc = v3_group_version(&group(), &version());
    assert_eq!(doc["openapi"], "3.0.0");
    assert!(doc["info"]["title"].is_string());
    let schemas = &doc["components"]["schemas"];
    assert_refs_resolve(&doc, "#/components/schemas/", schemas);

    let paths = doc["paths"].as_object().unwrap();
    assert!(paths.keys().all(|k| k.starts_with('/')));
    // Same set as v2 for this group-version.
    let v2 = v2_document(&[group()], "Wardle", "0.1");
    let mut v2_paths: Vec<&String> = v2["paths"]
        .as_object()
        .unwrap()
        .keys()
        .filter(|k| k.starts_with("/apis/wardle.example.com/v1alpha1/"))
        .collect();
    v2_paths.sort();
    let mut v3_paths: Vec<&String> = paths.keys().collect();
    v3_paths.sort();
    assert_eq!(v3_paths, v2_paths);

    let item = &paths["/apis/wardle.example.com/v1alpha1/namespaces/{namespace}/flunders/{name}"];
    let patch = &item["patch"];
    assert_eq!(
        patch["x-kubernetes-group-version-kind"],
        json!({"group": GROUP, "version": VERSION, "kind": "Flunder"})
    );
    assert_eq!(patch["x-kubernetes-action"], "patch");
    // kubectl's server-side field validation check.
    let field_validation = patch["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "fieldValidation" && p["in"] == "query")
        .expect("fieldValidation on patch");
    assert_eq!(field_validation["schema"]["type"], "string");
    let mut media: Vec<&String> = patch["requestBody"]["content"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    media.sort();
    assert_eq!(
        media,
        [
            "application/apply-patch+yaml",
            "application/json-patch+json",
            "application/merge-patch+json",
            "application/strategic-merge-patch+json"
        ]
    );
    assert_eq!(
        patch["requestBody"]["content"]["application/merge-patch+json"]["schema"]["$ref"],
        format!("#/components/schemas/{META}Patch")
    );
    let ok = &patch["responses"]["200"]["content"];
    for media_type in ["application/json", "application/yaml"] {
        assert_eq!(
            ok[media_type]["schema"]["$ref"],
            "#/components/schemas/com.example.wardle.v1alpha1.Flunder"
        );
    }
    // Write operations all take fieldValidation; parameters are inline with schemas.
    for method in ["put", "patch"] {
        for p in item[method]["parameters"].as_array().unwrap() {
            assert!(p["schema"]["type"].is_string(), "{p}");
            assert!(p.get("type").is_none());
        }
        assert!(param_names(&item[method], "query").contains(&"fieldValidation".to_owned()));
    }
    let create =
        &paths["/apis/wardle.example.com/v1alpha1/namespaces/{namespace}/flunders"]["post"];
    assert!(param_names(create, "query").contains(&"fieldValidation".to_owned()));
    assert_eq!(create["requestBody"]["required"], true);

    // Resource schema: metadata via allOf, GVK arrays.
    let flunder = &schemas["com.example.wardle.v1alpha1.Flunder"];
    assert_eq!(
        flunder["properties"]["metadata"],
        json!({
            "allOf": [{"$ref": format!("#/components/schemas/{META}ObjectMeta")}],
            "default": {},
            "description": flunder["properties"]["metadata"]["description"],
        })
    );
    assert!(flunder["properties"]["metadata"]["description"].is_string());
    assert_eq!(
        schemas["com.example.wardle.v1alpha1.FischerList"]["x-kubernetes-group-version-kind"],
        json!([{"group": GROUP, "kind": "FischerList", "version": VERSION}])
    );
    // The nullable field keeps its OpenAPI 3 form.
    assert_eq!(
        flunder["properties"]["spec"]["properties"]["reference"]["nullable"],
        true
    );
}

/// What `kubectl explain flunders.spec` does: take the GVK of the resource's operations and
/// find the schema that declares it in `components.schemas`, then walk to the field.
#[test]
fn v3_lets_kubectl_explain_find_the_kind() {
    let doc = v3_group_version(&group(), &version());
    let op =
        &doc["paths"]["/apis/wardle.example.com/v1alpha1/namespaces/{namespace}/flunders"]["get"];
    let gvk = &op["x-kubernetes-group-version-kind"];
    assert_eq!(gvk["kind"], "Flunder");
    let schemas = doc["components"]["schemas"].as_object().unwrap();
    let found: Vec<&Value> = schemas
        .values()
        .filter(|s| {
            s["x-kubernetes-group-version-kind"]
                .as_array()
                .is_some_and(|gvks| gvks.iter().any(|g| g == gvk))
        })
        .collect();
    assert_eq!(found.len(), 1);
    let spec = &found[0]["properties"]["spec"];
    assert_eq!(spec["type"], "object");
    assert!(spec["properties"]["reference"].is_object());
}

#[test]
fn v3_root_and_hash() {
    let doc = v3_group_version(&group(), &version());
    let body = serde_json::to_vec(&doc).unwrap();
    let hash = spec_hash(&body);
    assert_eq!(hash.len(), 128);
    assert_eq!(hash, hash.to_uppercase());
    assert_eq!(spec_hash(&body), hash, "deterministic");
    let root = v3_root(&[("apis/wardle.example.com/v1alpha1".to_owned(), hash.clone())]);
    assert_eq!(
        root,
        json!({"paths": {"apis/wardle.example.com/v1alpha1": {
            "serverRelativeURL": format!("/openapi/v3/apis/wardle.example.com/v1alpha1?hash={hash}"),
        }}})
    );
}

#[test]
fn documents_are_deterministic() {
    let a = serde_json::to_vec(&v2_document(&[group()], "Wardle", "0.1")).unwrap();
    let b = serde_json::to_vec(&v2_document(&[group()], "Wardle", "0.1")).unwrap();
    assert_eq!(a, b);
    let a = serde_json::to_vec(&group_discovery_list(&[group()])).unwrap();
    let b = serde_json::to_vec(&group_discovery_list(&[group()])).unwrap();
    assert_eq!(etag(&a), etag(&b));
}
