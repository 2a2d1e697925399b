//! The differences kept on purpose, each named, with its reason (the book's compatibility page,
//! `book/src/compatibility.md`, gives the same list). A difference of the run that none of them
//! matches is undecided, and fails the suite; so does a decided difference the run no longer
//! shows. The first entry that matches a difference names it.

use super::compare::{ABSENT, Difference};
use super::request::Request;

/// A difference between wardle and sample-apiserver kept on purpose.
pub struct Decided {
    /// Its name, as the book's compatibility page lists it.
    pub name: &'static str,
    /// Why it is kept.
    pub reason: &'static str,
    /// Whether a difference of an answer to a request is this one.
    pub matches: fn(&Request, &Difference) -> bool,
}

/// The value of the request's `Accept` header, or "".
fn accept(r: &Request) -> &str {
    r.headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("accept"))
        .map_or("", |(_, v)| v.as_str())
}

/// Whether the request is one of `names`.
fn named(r: &Request, names: &[&str]) -> bool {
    names.contains(&r.name.as_str())
}

/// `text` without the protobuf media types it lists.
fn without_protobuf(text: &str) -> String {
    text.replace(", application/vnd.kubernetes.protobuf;stream=watch", "")
        .replace(", application/vnd.kubernetes.protobuf", "")
}

/// wardle's subresources beyond upstream's (sample-apiserver serves none).
const EXTRA_SUBRESOURCES: [&str; 5] = ["status", "scale", "console", "describe", "topping"];

/// Whether `location` names one of wardle's extra subresources (`flunders/status` in legacy
/// discovery, a path ending in it in OpenAPI, a `subresources` entry of aggregated discovery,
/// the kinds only they answer with).
fn extra_subresource(location: &str) -> bool {
    location.contains("/subresources")
        || location.contains("definitions/v1alpha1.FlunderDescription")
        || location.contains("definitions/v1alpha1.ToppingRequest")
        || EXTRA_SUBRESOURCES.iter().any(|s| {
            location.contains(&format!("flunders/{s}]"))
                || location.contains(&format!("{{name}}/{s}"))
        })
}

/// wardle's Flunder fields beyond upstream's: `spec.replicas`, `spec.toppings`, and the
/// status' `replicas` and `selector` (the scale subresource's).
fn extra_field(location: &str) -> bool {
    ["replicas", "toppings", "selector"]
        .iter()
        .any(|f| location.contains(&format!("/properties/{f}")))
}

/// Every decided difference.
pub fn decided() -> Vec<Decided> {
    vec![
        Decided {
            name: "extra-subresources",
            reason: "wardle's Flunder serves the status and scale subresources (as a custom \
                     resource's spec.subresources) and three custom ones (describe, topping, \
                     console) that show the framework's subresource kinds; sample-apiserver \
                     serves none. They appear in discovery and OpenAPI, answer where upstream \
                     has no route, and what they write shows in the object.",
            matches: |r, d| {
                extra_subresource(&d.location)
                    || named(
                        r,
                        &[
                            "get status subresource",
                            "get scale subresource",
                            "update status subresource",
                            "merge patch status",
                            "merge patch scale",
                            "get st after its subresources",
                        ],
                    )
            },
        },
        Decided {
            name: "extra-spec-fields",
            reason: "wardle's Flunder has spec.replicas and spec.toppings, and a status with \
                     replicas and selector (for the scale subresource and list-map merging); \
                     sample-apiserver's spec has reference and referenceType only.",
            matches: |_, d| extra_field(&d.location),
        },
        Decided {
            name: "short-names-and-categories",
            reason: "wardle declares short names (fl, fi) and puts Flunder in the category all, \
                     for kubectl get fl and kubectl get all; sample-apiserver declares neither.",
            matches: |_, d| {
                d.upstream == ABSENT
                    && (d.location.ends_with("/shortNames") || d.location.ends_with("/categories"))
            },
        },
        Decided {
            name: "printer-columns",
            reason: "wardle's tables have the columns Name, Age, Reference and Type (its printer \
                     columns, as a CRD's additionalPrinterColumns); sample-apiserver's default \
                     table convertor has Name and Created At.",
            matches: |_, d| {
                d.location.contains("/columnDefinitions") || d.location.contains("/cells")
            },
        },
        Decided {
            name: "list-items-carry-apiVersion-and-kind",
            reason: "Each item of a list names its apiVersion and kind, as the items of custom \
                     resources' lists do (upstream's typed lists leave them out). Clients read \
                     both forms; the derived Rust types expect them.",
            matches: |_, d| {
                d.upstream == ABSENT
                    && (d.location.contains("/items[") || d.location.contains("/rows["))
                    && (d.location.ends_with("]/kind")
                        || d.location.ends_with("]/apiVersion")
                        || d.location.ends_with("/object/kind")
                        || d.location.ends_with("/object/apiVersion"))
            },
        },
        Decided {
            name: "generation-maintained",
            reason: "metadata.generation starts at 1 and grows with each change of the spec, as \
                     for custom resources and most built-in kinds; sample-apiserver's strategy \
                     never sets it. Controllers compare it with status.observedGeneration.",
            matches: |_, d| d.location.ends_with("/metadata/generation"),
        },
        Decided {
            name: "empty-spec-and-status-omitted",
            reason: "An empty spec or status is left out of an object (optional fields, as for \
                     custom resources); Go's non-pointer structs always print as {}, and \
                     upstream's OpenAPI gives them (and strings in lists) Go's zero value as \
                     default. Clients read an absent and an empty object alike.",
            matches: |_, d| {
                (d.upstream == "{}"
                    && d.ours == ABSENT
                    && (d.location.ends_with("/spec") || d.location.ends_with("/status")))
                    || (d.location.ends_with("/default") && d.ours == ABSENT)
            },
        },
        Decided {
            name: "managed-fields-as-custom-resources",
            reason: "managedFields of a write compare the object with the empty object of its \
                     kind, as for custom resources: an object's spec is owned itself (\".\"), \
                     and an empty spec or label map is recorded. Upstream's typed objects start \
                     from Go's zero value, whose spec and status already exist and whose empty \
                     maps vanish. Ownership of every field set, and apply conflicts, are the \
                     same.",
            matches: |_, d| {
                d.location.contains("/managedFields") && !d.location.ends_with("/manager")
            },
        },
        Decided {
            name: "metadata-validated",
            reason: "wardle validates object metadata (names, labels) as every Kubernetes API \
                     does; sample-apiserver's ValidateFlunder checks the spec only, so it \
                     stores objects no client can address (Not_A_Name), and its cleanup then \
                     finds them.",
            matches: |r, _| {
                named(
                    r,
                    &[
                        "create invalid name",
                        "cleanup invalid name",
                        "create invalid label",
                        "cleanup invalid label",
                        "create fischer invalid name",
                        "cleanup fischer invalid name",
                    ],
                )
            },
        },
        Decided {
            name: "reference-type-enumerated",
            reason: "spec.referenceType is an enumeration (Flunder or Fischer) in wardle's \
                     schema, so another value is refused when the body is decoded (400) and \
                     the OpenAPI schemas list the values; sample-apiserver's is a free string \
                     that its v1alpha1 validation never checks (and its v1beta1 validation \
                     answers with a 422).",
            matches: |r, d| {
                named(
                    r,
                    &[
                        "create invalid referenceType",
                        "cleanup invalid referenceType",
                        "create v1beta1 unknown type",
                    ],
                ) || d.location.ends_with("/referenceType/enum")
            },
        },
        Decided {
            name: "protobuf-not-served",
            reason: "wardle's kinds are Rust types without protobuf messages, so wardle answers \
                     JSON or YAML only (and says so in 406 answers, its OpenAPI and its \
                     discovery documents); a client asking for protobuf with a JSON fallback, \
                     as client-go does, gets JSON. sample-apiserver has generated protobuf \
                     for every kind.",
            matches: |r, d| {
                accept(r).contains("protobuf")
                    || d.upstream.contains("protobuf")
                    || (d.location.contains("application/vnd.kubernetes.protobuf")
                        && d.ours == ABSENT)
                    || without_protobuf(&d.upstream) == d.ours
            },
        },
        Decided {
            name: "conversions-json-meta-v1-only",
            reason: "Table and PartialObjectMetadata are served as meta.k8s.io/v1 in JSON; \
                     upstream also encodes them in YAML and serves meta.k8s.io/v1beta1, which \
                     Kubernetes deprecated in 1.19 and no current client asks for.",
            matches: |r, _| {
                let a = accept(r);
                (a.contains("as=Table") || a.contains("as=PartialObjectMetadata"))
                    && (a.contains("yaml") || a.contains("v=v1beta1"))
            },
        },
        Decided {
            name: "decoder-error-texts",
            reason: "When a body, patch or continue token does not decode, the message quotes \
                     the decoder's own error: Go's encoding/json and type names upstream \
                     (*wardle.FlunderList), serde's here. Status code, reason and the message's \
                     fixed part are upstream's.",
            matches: |r, d| {
                d.location == "body/message"
                    && named(
                        r,
                        &[
                            "create wrong kind",
                            "create malformed json",
                            "create body not an object",
                            "update malformed",
                            "json patch malformed",
                            "merge patch malformed",
                            "apply malformed yaml",
                            "list continue forged",
                            "negotiate list pom",
                            "negotiate object pom-list",
                        ],
                    )
            },
        },
        Decided {
            name: "json-patch-errors",
            reason: "A JSON patch operation that fails names the operation and path in a \
                     cause (upstream gives none); an unknown operation is refused when the \
                     patch is decoded (400 BadRequest), where upstream's library fails it \
                     when applying (422 with no detail).",
            matches: |r, _| {
                named(
                    r,
                    &[
                        "json patch test fails",
                        "json patch bad path",
                        "json patch unknown op",
                    ],
                )
            },
        },
        Decided {
            name: "client-errors-not-500",
            reason: "A malformed resourceVersion, DeleteOptions body or strict apply \
                     configuration is the client's error: 400 BadRequest. Upstream answers \
                     these with 500 InternalError (its storage's parse error or the typed \
                     patch's error surfacing unwrapped).",
            matches: |r, d| {
                d.location == "status"
                    && d.upstream.starts_with("500")
                    && named(
                        r,
                        &[
                            "get resourceVersion bogus",
                            "watch rv bogus",
                            "delete d8 malformed body",
                            "apply strict unknown field",
                        ],
                    )
            },
        },
        Decided {
            name: "field-selectors-as-custom-resources",
            reason: "Flunder declares spec.reference as a selectable field (as a CRD's \
                     selectableFields), so ?fieldSelector=spec.reference=x works; a field \
                     that is not selectable gets the custom resources' message (field label \
                     not supported: ...). sample-apiserver selects on metadata.name and \
                     metadata.namespace only.",
            matches: |r, _| {
                named(
                    r,
                    &[
                        "list fieldSelector spec.reference",
                        "list fieldSelector unknown field",
                    ],
                )
            },
        },
        Decided {
            name: "storage-key-layout",
            reason: "A failed precondition names the object's storage key, which follows each \
                     server's layout: /registry/wardle.example.com/wardle.example.com/... \
                     upstream (its etcd prefix and resource prefix), \
                     /wardle.example.com/flunders/... here (kube-apiserver's layout below the \
                     configured prefix).",
            matches: |r, d| named(r, &["update uid mismatch"]) && d.location == "body/message",
        },
        Decided {
            name: "index-lists-own-paths",
            reason: "The index of paths (GET /, and 404s outside any group) lists each server's \
                     own health checks and endpoints: upstream's poststarthooks, etcd checks, \
                     /metrics/slis and /openapi/v3/ are not wardle's.",
            matches: |_, d| d.location.starts_with("body/paths/") && !d.location.contains("wardle"),
        },
        Decided {
            name: "path-empty-segments",
            reason: "wardle reads a path by its non-empty segments, the reading its authorizer \
                     uses too, so a doubled slash changes nothing and an empty namespace \
                     segment is no namespace (404); upstream's router matches segment by \
                     segment: a doubled slash matches no route, and an empty namespace lists \
                     every namespace.",
            matches: |r, d| {
                d.location == "status"
                    && named(
                        r,
                        &["path with a double slash", "path with an empty namespace"],
                    )
            },
        },
        Decided {
            name: "strict-patch-message-embeds-object",
            reason: "A merge patch refused by fieldValidation=Strict quotes the patched object \
                     in its message, encoded by each server (its key order and the metadata it \
                     keeps); the strict decoding error after it is the same.",
            matches: |r, d| {
                let tail = |m: &str| {
                    m.rsplit_once("strict decoding error")
                        .map(|(_, t)| t.to_string())
                };
                named(r, &["merge patch fieldValidation Strict"])
                    && tail(&d.upstream).is_some()
                    && tail(&d.upstream) == tail(&d.ours)
            },
        },
        Decided {
            name: "openapi-v3-group-version-documents",
            reason: "/openapi/v3 lists one document per group-version; upstream also lists \
                     documents for /apis, /apis/<group> and /version, and answers 200 with no \
                     body for a group-version it does not serve, where wardle answers 404.",
            matches: |r, _| named(r, &["openapi v3 index", "openapi v3 unknown"]),
        },
    ]
}
