//! Sending a request to a target and reading its answer into values that compare: the status,
//! the headers that matter, and the body parsed by its content type (JSON, YAML, a watch's
//! events, protobuf's envelope, text).

use std::collections::HashMap;
use std::time::Duration;

use prost::Message;
use serde_json::{Value, json};

use super::request::{Identity, Request, View};

/// The response headers compared (Date, Audit-Id and the like differ by nature).
pub const COMPARED_HEADERS: [&str; 4] = [
    "content-type",
    "warning",
    "retry-after",
    "x-content-type-options",
];

/// How long a request waits for its condition.
pub const UNTIL_TIMEOUT: Duration = Duration::from_secs(30);

/// A server the corpus is sent to.
pub struct Target {
    /// Its name in reports: `sample-apiserver`, `wardle (etcd)`, `wardle (embedded)`.
    pub name: &'static str,
    /// `https://127.0.0.1:<port>` of the server itself (not of the aggregator in front).
    pub url: String,
    /// A client trusting its serving certificate's CA.
    pub client: reqwest::Client,
    /// The bearer tokens of the admin and of bob.
    pub admin_token: String,
    /// Bob's token.
    pub bob_token: String,
    /// Values remembered from its answers (`Request::capture`).
    pub vars: HashMap<String, String>,
}

/// An answer, read.
#[derive(Clone, Debug)]
pub struct Answer {
    /// The status code.
    pub status: u16,
    /// The compared headers present, lower-case names, values in order.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Body,
}

/// A body, parsed by its content type.
#[derive(Clone, Debug, PartialEq)]
pub enum Body {
    /// No body.
    Empty,
    /// A JSON or YAML document.
    Document(Value),
    /// A watch stream's events, in order.
    Events(Vec<Value>),
    /// A protobuf envelope: its type meta and content type, and for metadata-only objects
    /// their items' names.
    Protobuf(Value),
    /// Anything else, as text.
    Text(String),
}

impl Target {
    /// Replaces every `{name}` of a remembered value in `text`.
    pub fn substitute(&self, text: &str) -> String {
        let mut out = text.to_string();
        for (name, value) in &self.vars {
            out = out.replace(&format!("{{{name}}}"), value);
        }
        out
    }

    /// Sends `req` (again, while its answer does not meet its [`Request::until`] condition, for
    /// at most [`UNTIL_TIMEOUT`]) and reads its answer.
    pub async fn answer(&mut self, req: &Request) -> Answer {
        let Some(condition) = req.until else {
            return self.send(req).await;
        };
        let deadline = tokio::time::Instant::now() + UNTIL_TIMEOUT;
        loop {
            let answer = self.send(req).await;
            if condition(&answer) {
                return answer;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "{}: the answer to {} did not meet its condition within {UNTIL_TIMEOUT:?}: {answer:?}",
                self.name,
                req.name
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Sends `req` and reads its answer (the whole stream, for a watch); remembers its captures.
    pub async fn send(&mut self, req: &Request) -> Answer {
        let url = format!("{}{}", self.url, self.substitute(&req.path));
        let mut builder = self.client.request(req.method.clone(), &url);
        match req.identity {
            Identity::Admin => builder = builder.bearer_auth(&self.admin_token),
            Identity::Bob => builder = builder.bearer_auth(&self.bob_token),
            Identity::Anonymous => {}
        }
        for (name, value) in &req.headers {
            builder = builder.header(name, self.substitute(value));
        }
        if let Some(body) = &req.body {
            let text = String::from_utf8(body.clone());
            builder = match text {
                Ok(text) => builder.body(self.substitute(&text)),
                Err(bytes) => builder.body(bytes.into_bytes()),
            };
        }
        let res = builder
            .send()
            .await
            .unwrap_or_else(|e| panic!("{}: {} {url}: {e}", self.name, req.method));
        let status = res.status().as_u16();
        let headers: Vec<(String, String)> = COMPARED_HEADERS
            .iter()
            .flat_map(|h| {
                res.headers()
                    .get_all(*h)
                    .iter()
                    .map(|v| {
                        (
                            h.to_string(),
                            String::from_utf8_lossy(v.as_bytes()).into_owned(),
                        )
                    })
                    .collect::<Vec<_>>()
            })
            .collect();
        let content_type = headers
            .iter()
            .find(|(h, _)| h == "content-type")
            .map(|(_, v)| v.clone())
            .unwrap_or_default();
        let bytes = res
            .bytes()
            .await
            .unwrap_or_else(|e| panic!("{}: read the answer to {}: {e}", self.name, req.name));
        let watch = is_watch(&req.path) && status == 200;
        let body = match req.view {
            View::NoBody => Body::Empty,
            View::Whole => parse(&content_type, &bytes, watch),
            View::OpenApiWardle => match parse(&content_type, &bytes, watch) {
                Body::Document(v) => Body::Document(super::openapi::structure(&v)),
                other => other,
            },
        };
        for (name, pointer) in &req.captures {
            let value = match &body {
                Body::Document(v) => v.pointer(pointer).cloned(),
                _ => None,
            };
            match value {
                Some(Value::String(s)) => {
                    self.vars.insert(name.clone(), s);
                }
                Some(other) => {
                    self.vars.insert(name.clone(), other.to_string());
                }
                None => panic!(
                    "{}: the answer to {} has nothing at {pointer} to remember as {name}: {status} {body:?}",
                    self.name, req.name
                ),
            }
        }
        Answer {
            status,
            headers,
            body,
        }
    }
}

/// Whether `path` asks for a watch.
pub fn is_watch(path: &str) -> bool {
    path.contains("watch=true") || path.contains("watch=1") || path.contains("/watch/")
}

/// Parses a body of `content_type`.
fn parse(content_type: &str, bytes: &[u8], watch: bool) -> Body {
    if bytes.is_empty() {
        return Body::Empty;
    }
    let media = content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    if media == "application/vnd.kubernetes.protobuf"
        || media == "application/vnd.kubernetes.protobuf;stream=watch"
    {
        return Body::Protobuf(protobuf_summary(bytes));
    }
    if watch && media.contains("json") {
        let text = String::from_utf8_lossy(bytes);
        let events = text
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).unwrap_or_else(|_| Value::String(l.to_string())))
            .collect();
        return Body::Events(events);
    }
    if media.contains("json")
        && let Ok(v) = serde_json::from_slice(bytes)
    {
        return Body::Document(v);
    }
    if media.contains("yaml")
        && let Ok(v) = serde_yaml_ng::from_slice::<Value>(bytes)
    {
        return Body::Document(v);
    }
    Body::Text(String::from_utf8_lossy(bytes).into_owned())
}

/// What a protobuf body says: the envelope's type meta and content type, and for
/// PartialObjectMetadata(List) the names it holds.
fn protobuf_summary(bytes: &[u8]) -> Value {
    use k8s_pb::apimachinery::pkg::apis::meta::v1 as meta;
    use k8s_pb::apimachinery::pkg::runtime::Unknown;
    let Some(rest) = bytes.strip_prefix(b"k8s\0") else {
        return json!({"error": "no k8s protobuf magic", "length": bytes.len()});
    };
    let Ok(unknown) = Unknown::decode(rest) else {
        return json!({"error": "not a runtime.Unknown"});
    };
    let type_meta = unknown.type_meta.unwrap_or_default();
    let kind = type_meta.kind.unwrap_or_default();
    let raw = unknown.raw.unwrap_or_default();
    let names = |items: Vec<meta::PartialObjectMetadata>| -> Vec<Value> {
        items
            .into_iter()
            .map(|i| {
                let m = i.metadata.unwrap_or_default();
                json!({"name": m.name, "namespace": m.namespace, "labels": m.labels})
            })
            .collect()
    };
    let content = match kind.as_str() {
        "PartialObjectMetadataList" => meta::PartialObjectMetadataList::decode(raw.as_slice())
            .map(|l| Value::Array(names(l.items)))
            .unwrap_or_else(|e| json!(format!("undecodable: {e}"))),
        "PartialObjectMetadata" => meta::PartialObjectMetadata::decode(raw.as_slice())
            .map(|o| Value::Array(names(vec![o])))
            .unwrap_or_else(|e| json!(format!("undecodable: {e}"))),
        _ => Value::Null,
    };
    json!({
        "apiVersion": type_meta.api_version,
        "kind": kind,
        "contentEncoding": unknown.content_encoding,
        "contentType": unknown.content_type,
        "items": content,
    })
}
