//! Two normalised answers compared: the status, the compared headers, and the bodies value by
//! value, each difference named by where it is (`body/spec/reference`, `event[2]/type`).

use serde_json::Value;

use super::answer::{Answer, Body};

/// One place where two answers differ.
#[derive(Clone, Debug)]
pub struct Difference {
    /// Where: `status`, `header warning`, `body`, `body/<path>`, `event[i]/<path>`.
    pub location: String,
    /// Upstream's value there (`(absent)` when it has none).
    pub upstream: String,
    /// Ours.
    pub ours: String,
}

/// What stands for a missing value.
pub const ABSENT: &str = "(absent)";

/// How many characters of a value a report shows (the differences keep them whole).
const SHOWN: usize = 400;

/// Where `ours` differs from `upstream`. A different status is one difference (the bodies of
/// different outcomes are not compared).
pub fn compare(upstream: &Answer, ours: &Answer) -> Vec<Difference> {
    let mut out = Vec::new();
    if upstream.status != ours.status {
        out.push(Difference {
            location: "status".to_string(),
            upstream: format!("{} {}", upstream.status, show_body(&upstream.body)),
            ours: format!("{} {}", ours.status, show_body(&ours.body)),
        });
        return out;
    }
    for name in super::answer::COMPARED_HEADERS {
        let a = header(upstream, name);
        let b = header(ours, name);
        if a != b {
            out.push(Difference {
                location: format!("header {name}"),
                upstream: a.unwrap_or_else(|| ABSENT.to_string()),
                ours: b.unwrap_or_else(|| ABSENT.to_string()),
            });
        }
    }
    match (&upstream.body, &ours.body) {
        (Body::Document(a), Body::Document(b)) => diff_values(a, b, "body", &mut out),
        (Body::Protobuf(a), Body::Protobuf(b)) => diff_values(a, b, "protobuf", &mut out),
        (Body::Events(a), Body::Events(b)) => {
            for i in 0..a.len().max(b.len()) {
                let location = format!("event[{i}]");
                match (a.get(i), b.get(i)) {
                    (Some(x), Some(y)) => diff_values(x, y, &location, &mut out),
                    (x, y) => out.push(Difference {
                        location,
                        upstream: x.map_or(ABSENT.to_string(), show),
                        ours: y.map_or(ABSENT.to_string(), show),
                    }),
                }
            }
        }
        (a, b) if a != b => out.push(Difference {
            location: "body".to_string(),
            upstream: show_body(a),
            ours: show_body(b),
        }),
        _ => {}
    }
    out
}

/// The values of the header `name`, joined; `None` when absent.
fn header(answer: &Answer, name: &str) -> Option<String> {
    let values: Vec<&str> = answer
        .headers
        .iter()
        .filter(|(h, _)| h == name)
        .map(|(_, v)| v.as_str())
        .collect();
    (!values.is_empty()).then(|| values.join(" | "))
}

/// The key that identifies an array's items, when every item is an object with a distinct
/// string value under it: then items are matched by it, not by position. Objects are matched
/// by namespace and name.
fn item_key(a: &[Value], b: &[Value]) -> Option<&'static str> {
    [
        "/metadata/name",
        "/name",
        "/resource",
        "/group",
        "/version",
        "/type",
        "/field",
    ]
    .into_iter()
    .find(|key| {
        [a, b].iter().all(|items| {
            let mut seen = std::collections::BTreeSet::new();
            !items.is_empty()
                && items.iter().all(|i| {
                    i.pointer(key).and_then(Value::as_str).is_some_and(|s| {
                        let ns = i.pointer("/metadata/namespace").and_then(Value::as_str);
                        seen.insert((ns.unwrap_or_default().to_string(), s.to_string()))
                    })
                })
        })
    })
}

/// An item's identity under `key`: its namespace (for objects) and its value there.
fn item_id(v: &Value, key: &str) -> String {
    let name = v.pointer(key).and_then(Value::as_str).unwrap_or_default();
    match v.pointer("/metadata/namespace").and_then(Value::as_str) {
        Some(ns) if key == "/metadata/name" => format!("{ns}/{name}"),
        _ => name.to_string(),
    }
}

/// Adds the differences between `a` (upstream) and `b` (ours) at `path` to `out`.
pub fn diff_values(a: &Value, b: &Value, path: &str, out: &mut Vec<Difference>) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
            keys.sort();
            keys.dedup();
            for k in keys {
                let p = format!("{path}/{k}");
                match (x.get(k), y.get(k)) {
                    (Some(u), Some(o)) => diff_values(u, o, &p, out),
                    (u, o) => out.push(Difference {
                        location: p,
                        upstream: u.map_or(ABSENT.to_string(), show),
                        ours: o.map_or(ABSENT.to_string(), show),
                    }),
                }
            }
        }
        (Value::Array(x), Value::Array(y)) => match item_key(x, y) {
            Some(key) => {
                let id = |v: &Value| item_id(v, key);
                let label = key.rsplit('/').next().unwrap_or(key);
                let mut ids: Vec<String> = x.iter().chain(y.iter()).map(id).collect();
                ids.dedup();
                let mut seen = std::collections::BTreeSet::new();
                for i in ids.into_iter().filter(|i| seen.insert(i.clone())) {
                    let p = format!("{path}[{label}={i}]");
                    let u = x.iter().find(|v| id(v) == i);
                    let o = y.iter().find(|v| id(v) == i);
                    match (u, o) {
                        (Some(u), Some(o)) => diff_values(u, o, &p, out),
                        (u, o) => out.push(Difference {
                            location: p,
                            upstream: u.map_or(ABSENT.to_string(), show),
                            ours: o.map_or(ABSENT.to_string(), show),
                        }),
                    }
                }
                // The order of keyed items is compared as well.
                let order = |v: &[Value]| v.iter().map(id).collect::<Vec<_>>();
                let (ox, oy) = (order(x), order(y));
                let common = |o: &Vec<String>, other: &Vec<String>| {
                    o.iter()
                        .filter(|i| other.contains(i))
                        .cloned()
                        .collect::<Vec<_>>()
                };
                if common(&ox, &oy) != common(&oy, &ox) {
                    out.push(Difference {
                        location: format!("{path}[order]"),
                        upstream: ox.join(", "),
                        ours: oy.join(", "),
                    });
                }
            }
            None => {
                for i in 0..x.len().max(y.len()) {
                    let p = format!("{path}[{i}]");
                    match (x.get(i), y.get(i)) {
                        (Some(u), Some(o)) => diff_values(u, o, &p, out),
                        (u, o) => out.push(Difference {
                            location: p,
                            upstream: u.map_or(ABSENT.to_string(), show),
                            ours: o.map_or(ABSENT.to_string(), show),
                        }),
                    }
                }
            }
        },
        (u, o) if u != o => out.push(Difference {
            location: path.to_string(),
            upstream: show(u),
            ours: show(o),
        }),
        _ => {}
    }
}

/// A value, compact.
pub fn show(v: &Value) -> String {
    v.to_string()
}

/// A body, compact.
pub fn show_body(body: &Body) -> String {
    match body {
        Body::Empty => "(no body)".to_string(),
        Body::Document(v) => show(v),
        Body::Events(e) => format!("{} events: {}", e.len(), Value::Array(e.clone())),
        Body::Protobuf(v) => format!("protobuf {}", show(v)),
        Body::Text(t) => format!("text {t:?}"),
    }
}

/// `s` cut at [`SHOWN`] characters, for a report.
pub fn cut(s: &str) -> String {
    if s.chars().count() <= SHOWN {
        s.to_string()
    } else {
        let head: String = s.chars().take(SHOWN).collect();
        format!("{head}…")
    }
}

/// A body in full (for `DIFFERENTIAL_SHOW`).
pub fn show_full(body: &Body) -> String {
    match body {
        Body::Document(v) | Body::Protobuf(v) => {
            serde_json::to_string_pretty(v).unwrap_or_default()
        }
        Body::Events(e) => serde_json::to_string_pretty(e).unwrap_or_default(),
        other => show_body(other),
    }
}
