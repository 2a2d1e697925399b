//! What must differ between two servers' answers, made equal: uids, timestamps, resource
//! versions, generated names, continue tokens, ages. What stays is compared.
//!
//! Resource versions keep their meaning: one equal to a value the corpus remembered becomes
//! that value's name (`<rv:created>`), and the others their rank within the answer
//! (`<rv#0>` is the oldest of the answer), so that "the list is newer than its items" and "this
//! is the version created above" still compare while the numbers themselves do not.

use std::collections::{BTreeSet, HashMap};

use serde_json::Value;

use super::answer::{Answer, Body};

/// Keys whose string values are timestamps.
const TIME_KEYS: [&str; 5] = [
    "creationTimestamp",
    "deletionTimestamp",
    "time",
    "lastTransitionTime",
    "lastUpdateTime",
];

/// Remembered values shorter than this are not replaced inside other strings (resource
/// versions are short numbers that also occur by chance).
const MIN_SUBSTITUTED_LEN: usize = 8;

/// `answer` with what must differ replaced; `vars` are the target's remembered values.
pub fn normalise(answer: &Answer, vars: &HashMap<String, String>) -> Answer {
    let mut out = answer.clone();
    let mut n = Normaliser::new(vars);
    match &mut out.body {
        Body::Document(v) => {
            n.collect_rvs(v);
            n.walk(v, None);
        }
        Body::Events(events) => {
            for e in events.iter() {
                n.collect_rvs(e);
            }
            for e in events.iter_mut() {
                n.walk(e, None);
            }
        }
        Body::Protobuf(v) => n.walk(v, None),
        Body::Text(t) => *t = n.substitute(t),
        Body::Empty => {}
    }
    for (_, value) in &mut out.headers {
        *value = n.substitute(value);
    }
    out
}

struct Normaliser<'a> {
    vars: &'a HashMap<String, String>,
    /// The answer's resource versions, by number.
    rvs: BTreeSet<u64>,
    /// Remembered values worth replacing inside strings, longest first.
    long_vars: Vec<(&'a str, &'a str)>,
}

impl<'a> Normaliser<'a> {
    fn new(vars: &'a HashMap<String, String>) -> Self {
        let mut long_vars: Vec<(&str, &str)> = vars
            .iter()
            .filter(|(_, v)| v.len() >= MIN_SUBSTITUTED_LEN)
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        long_vars.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then(a.0.cmp(b.0)));
        Normaliser {
            vars,
            rvs: BTreeSet::new(),
            long_vars,
        }
    }

    /// Notes every `resourceVersion` of `v`.
    fn collect_rvs(&mut self, v: &Value) {
        match v {
            Value::Object(map) => {
                for (k, child) in map {
                    if k == "resourceVersion"
                        && let Some(n) = child.as_str().and_then(|s| s.parse().ok())
                    {
                        self.rvs.insert(n);
                    }
                    self.collect_rvs(child);
                }
            }
            Value::Array(items) => items.iter().for_each(|i| self.collect_rvs(i)),
            _ => {}
        }
    }

    /// The name of a remembered value equal to `value` whose name starts with `prefix`.
    fn var_named(&self, prefix: &str, value: &str) -> Option<&str> {
        let mut names: Vec<&str> = self
            .vars
            .iter()
            .filter(|(k, v)| k.starts_with(prefix) && v.as_str() == value)
            .map(|(k, _)| k.as_str())
            .collect();
        names.sort();
        names.first().copied()
    }

    fn rv(&self, value: &str) -> String {
        if value.is_empty() {
            return String::new();
        }
        if let Some(name) = self.var_named("rv", value) {
            return format!("<rv:{name}>");
        }
        match value.parse::<u64>() {
            Ok(n) => format!("<rv#{}>", self.rvs.range(..n).count()),
            Err(_) => format!("<rv?{value}>"),
        }
    }

    /// Remembered long values inside `text` replaced by their names.
    fn substitute(&self, text: &str) -> String {
        let mut out = text.to_string();
        for (name, value) in &self.long_vars {
            if out.contains(value) {
                out = out.replace(value, &format!("{{{name}}}"));
            }
        }
        out
    }

    /// `s` with the resource versions of a `too old resource version: A (B)` message (a
    /// watch from before the compacted revision) named as the others are: A, the one asked
    /// for, and B, where the server's history starts.
    fn too_old(&self, s: &str) -> String {
        const MARK: &str = "too old resource version: ";
        let Some(rest) = s.strip_prefix(MARK) else {
            return s.to_string();
        };
        match rest.strip_suffix(')').and_then(|r| r.split_once(" (")) {
            Some((asked, start)) => format!("{MARK}{} ({})", self.rv(asked), self.rv(start)),
            None => format!("{MARK}{}", self.rv(rest)),
        }
    }

    fn walk(&mut self, v: &mut Value, key: Option<&str>) {
        match v {
            Value::Object(map) => {
                let generate_name = map
                    .get("generateName")
                    .and_then(Value::as_str)
                    .map(str::to_string);
                for (k, child) in map.iter_mut() {
                    // The index of paths (`{"paths": [...]}`) is a set: compared path by path.
                    if k == "paths"
                        && let Value::Array(paths) = child
                        && paths.iter().all(Value::is_string)
                    {
                        *child = Value::Object(
                            paths
                                .iter()
                                .filter_map(|p| p.as_str())
                                .map(|p| (p.to_string(), Value::Bool(true)))
                                .collect(),
                        );
                        continue;
                    }
                    match (k.as_str(), child.as_str()) {
                        ("resourceVersion", Some(s)) => *child = Value::String(self.rv(s)),
                        ("uid", Some(s)) => {
                            *child = Value::String(match self.var_named("uid", s) {
                                Some(name) => format!("<uid:{name}>"),
                                None => "<uid>".to_string(),
                            })
                        }
                        (k, Some(s)) if TIME_KEYS.contains(&k) && !s.is_empty() => {
                            *child = Value::String("<time>".to_string())
                        }
                        ("serverAddress", Some(_)) => {
                            *child = Value::String("<address>".to_string())
                        }
                        ("continue", Some(s)) if !s.is_empty() => {
                            *child = Value::String("<continue>".to_string())
                        }
                        ("name", Some(s))
                            if generate_name
                                .as_deref()
                                .is_some_and(|g| !g.is_empty() && s.starts_with(g)) =>
                        {
                            let g = generate_name.as_deref().unwrap_or_default();
                            *child = Value::String(format!("{g}<generated>"));
                        }
                        _ => self.walk(child, Some(k)),
                    }
                }
            }
            Value::Array(items) => {
                // Upstream lists an apply's conflicts in the order of a Go map: sorted here.
                if key == Some("causes")
                    && items.iter().all(|c| c["reason"] == "FieldManagerConflict")
                {
                    items.sort_by_key(|c| (c["message"].to_string(), c["field"].to_string()));
                }
                let cells = key == Some("cells");
                for item in items.iter_mut() {
                    if cells && item.as_str().is_some_and(is_age) {
                        *item = Value::String("<age>".to_string());
                    } else if cells && item.as_str().is_some_and(is_timestamp) {
                        *item = Value::String("<time>".to_string());
                    } else {
                        self.walk(item, None);
                    }
                }
            }
            Value::String(s) => {
                *s = self.too_old(&without_quoted_rvs(&without_hash(&self.substitute(s))))
            }
            _ => {}
        }
    }
}

/// `s` with the resource versions a message quotes (`... in record (48)`) left out.
fn without_quoted_rvs(s: &str) -> String {
    const MARK: &str = "ResourceVersion in record (";
    match s.find(MARK) {
        Some(i) => {
            let start = i + MARK.len();
            let end = s[start..].find(')').map_or(s.len(), |e| start + e);
            format!("{}<rv>{}", &s[..start], &s[end..])
        }
        None => s.to_string(),
    }
}

/// `s` without the value of a `hash=` query parameter (OpenAPI v3's index names each document
/// by its content's hash).
fn without_hash(s: &str) -> String {
    match s.find("hash=") {
        Some(i) => format!("{}hash=<hash>", &s[..i]),
        None => s.to_string(),
    }
}

/// Whether `s` is an age as tables print it (`0s`, `5m3s`, `2d`).
fn is_age(s: &str) -> bool {
    let mut digits = false;
    let mut units = false;
    for c in s.chars() {
        if c.is_ascii_digit() {
            digits = true;
        } else if "smhdy".contains(c) && digits {
            units = true;
            digits = false;
        } else {
            return false;
        }
    }
    units && !digits
}

/// Whether `s` is an RFC 3339 time in UTC as Kubernetes writes them (`2026-12-07T07:02:57Z`).
fn is_timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 20
        && b[4] == b'-'
        && b[7] == b'-'
        && b[10] == b'T'
        && b[13] == b':'
        && b[16] == b':'
        && b[19] == b'Z'
        && b.iter()
            .enumerate()
            .all(|(i, c)| [4, 7, 10, 13, 16, 19].contains(&i) || c.is_ascii_digit())
}
