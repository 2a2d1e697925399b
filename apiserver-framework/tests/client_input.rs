//! Every parser of client input, fed random text built from the characters that trip byte
//! slicing, integer conversions and escapes: multi-byte characters, operators, brackets,
//! quotes, signs and huge numbers. Each must answer (an error is fine), never panic: a panic
//! in a handler is a 500 (or worse) for a malformed request.

use apiserver_framework::authz::attributes::request_of;
use apiserver_framework::endpoints::field_manager::default_manager;
use apiserver_framework::endpoints::negotiation::{body_format, negotiate, parse_accept};
use apiserver_framework::endpoints::patch::{PatchDocument, PatchKind};
use apiserver_framework::endpoints::query::{Query, parse_resource_version};
use apiserver_framework::endpoints::{jsonpath, request_info, strategic, warning};
use apiserver_framework::registry::rest::continue_token;
use apiserver_framework::selector::{FieldSelector, LabelSelector};
use apiserver_framework::server::filters::deadline;
use apiserver_framework::validation::{label_key_errors, label_value_errors};
use apiserver_framework::yaml_body;
use http::Method;
use serde_json::{Value, json};
use std::time::Duration;

/// Pieces that client text is made of here.
const PIECES: &[&str] = &[
    "a",
    "Z",
    "0",
    "9",
    "-",
    "_",
    ".",
    "/",
    "=",
    "!=",
    "==",
    "!",
    ",",
    "(",
    ")",
    " in ",
    " notin ",
    " ",
    "\t",
    "\n",
    "é",
    "日本",
    "\u{1F600}",
    "\u{85}",
    "\\",
    ":",
    ";",
    "\"",
    "'",
    "[",
    "]",
    "{",
    "}",
    "$",
    "@",
    "%",
    "%E9",
    "%zz",
    "&",
    "?",
    "#",
    "*",
    "+",
    "q=0.5",
    "9223372036854775807",
    "-9223372036854775808",
    "18446744073709551616",
    "1e400",
    "-1",
    "metadata.name",
    "application/json",
    "as=Table",
    "g=meta.k8s.io",
    "v=v1",
    "stream=watch",
];

/// A small deterministic random number generator (xorshift).
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }

    fn text(&mut self, max_pieces: usize) -> String {
        (0..self.below(max_pieces + 1))
            .map(|_| PIECES[self.below(PIECES.len())])
            .collect()
    }
}

#[test]
fn parsers_of_client_text_never_panic() {
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    for _ in 0..20_000 {
        let s = rng.text(12);
        let _ = LabelSelector::parse(&s);
        let _ = FieldSelector::parse(&s);
        let _ = label_key_errors(&s);
        let _ = label_value_errors(&s);
        let _ = continue_token::decode(&s);
        let _ = request_info::parse(&s);
        let _ = request_info::parse(&format!("/apis/g/v1/namespaces/{s}/r/{s}/{s}"));
        let _ = request_of(&Method::GET, &format!("/apis/{s}"), Some(&s));
        let _ = request_of(&Method::PATCH, &format!("/api/v1/{s}"), Some(&s));
        let _ = negotiate(Some(&s), Some(&s));
        let _ = parse_accept(&s);
        let _ = body_format(Some(&s));
        let _ = PatchKind::from_content_type(&s);
        let _ = parse_resource_version(&s);
        let _ = default_manager(Some(&s));
        let _ = warning::header_value(&s);
        let _ = jsonpath::parse(&s);
        let _ = yaml_body::check_depth(s.as_bytes());
        let _ = deadline(Some(&format!("timeout={s}")), Duration::from_secs(60));
        let _ = yaml_body::from_slice::<Value>(s.as_bytes());
        for raw in [
            s.clone(),
            format!("timeoutSeconds={s}&limit={s}&watch={s}&resourceVersion={s}"),
            format!("gracePeriodSeconds={s}&dryRun={s}&fieldValidation={s}&force={s}"),
            format!("continue={s}&resourceVersionMatch={s}&sendInitialEvents={s}"),
        ] {
            let q = Query::parse(Some(&raw));
            let _ = q.list_options(true);
            let _ = q.list_options(false);
            let _ = q.write_options("CreateOptions");
            let _ = q.delete_options();
            let _ = q.is_watch();
        }
    }
}

#[test]
fn huge_numbers_in_the_query_are_answered() {
    for v in [
        "9223372036854775807",
        "-9223372036854775808",
        "18446744073709551615",
        "99999999999999999999",
    ] {
        let q = Query::parse(Some(&format!("timeoutSeconds={v}&limit={v}&watch=1")));
        if let Ok(opts) = q.list_options(true) {
            // A watch can be scheduled that long: the deadline does not overflow.
            let timeout = std::time::Duration::from_secs(opts.timeout_seconds.unwrap());
            assert!(
                std::time::Instant::now().checked_add(timeout).is_some(),
                "{v}"
            );
        }
    }
}

#[test]
fn patches_of_random_shape_never_panic() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let object = json!({
        "apiVersion": "v1", "kind": "K", "metadata": {"name": "n", "labels": {"a": "b"}},
        "spec": {"list": [{"name": "x", "v": 1}, {"name": "y"}], "set": [1, 2], "s": "é"}
    });
    let schema = apiserver_framework::schema::StructuralSchema::from_openapi(
        &json!({"type": "object", "properties": {"spec": {
        "type": "object", "properties": {
            "list": {"type": "array", "x-kubernetes-list-type": "map",
                     "x-kubernetes-list-map-keys": ["name"],
                     "items": {"type": "object", "properties": {"name": {"type": "string"}}}},
            "set": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "integer"}}
        }}}}),
    );
    let values = [
        "1",
        "-1",
        "\"é\"",
        "null",
        "[]",
        "{}",
        "[1,2]",
        "{\"name\":\"x\"}",
        "{\"name\":\"z\",\"$patch\":\"delete\"}",
        "{\"$patch\":\"replace\"}",
        "18446744073709551616",
    ];
    let paths = [
        "/spec",
        "/spec/list",
        "/spec/list/0",
        "/spec/list/-",
        "/spec/list/99",
        "/spec/s/0",
        "/metadata/labels/a",
        "/",
        "",
        "/spec/set/18446744073709551616",
        "/spec/list/-1",
        "/~2",
    ];
    let fields = [
        "list",
        "set",
        "s",
        "$patch",
        "$retainKeys",
        "$setElementOrder/list",
        "$deleteFromPrimitiveList/set",
        "metadata",
        "spec",
    ];
    for _ in 0..5_000 {
        let ops: Vec<String> = (0..rng.below(4))
            .map(|_| {
                let op = ["add", "remove", "replace", "move", "copy", "test"][rng.below(6)];
                format!(
                    r#"{{"op":"{op}","path":"{}","from":"{}","value":{}}}"#,
                    paths[rng.below(paths.len())],
                    paths[rng.below(paths.len())],
                    values[rng.below(values.len())]
                )
            })
            .collect();
        let json_patch = format!("[{}]", ops.join(","));
        let mut map = String::from("{");
        for i in 0..rng.below(4) {
            if i > 0 {
                map.push(',');
            }
            let value = match rng.below(3) {
                0 => format!("[{}]", values[rng.below(values.len())]),
                1 => format!(
                    "{{\"{}\":{}}}",
                    fields[rng.below(fields.len())],
                    values[rng.below(values.len())]
                ),
                _ => values[rng.below(values.len())].to_string(),
            };
            map.push_str(&format!("\"{}\":{value}", fields[rng.below(fields.len())]));
        }
        map.push('}');
        let spec_patch = format!("{{\"spec\":{map}}}");
        for (kind, body) in [
            (PatchKind::Json, &json_patch),
            (PatchKind::Merge, &spec_patch),
            (PatchKind::Strategic, &spec_patch),
            (PatchKind::Strategic, &map),
        ] {
            if let Ok(doc) = PatchDocument::parse(kind, body.as_bytes(), schema.clone()) {
                let _ = doc.apply(object.clone());
            }
        }
        if let Ok(patch) = serde_json::from_str::<Value>(&spec_patch) {
            let _ = strategic::apply(&object, &patch, &schema);
        }
    }
}
