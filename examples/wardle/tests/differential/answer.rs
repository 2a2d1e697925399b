//! Sending a request to a target and reading its answer into values that compare: the status,
//! the headers that matter, and the body parsed by its content type (JSON, YAML, a watch's
//! events, protobuf's envelope, text).

use std::collections::HashMap;
use std::time::Duration;

use futures::StreamExt;
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
    /// `https://127.0.0.1:<port>` of its dev host (trusted by the same client).
    pub host_url: String,
    /// A client trusting its serving certificate's CA.
    pub client: reqwest::Client,
    /// The client of held requests (`Target::hold`): it presents a client certificate of
    /// `system:masters` issued by the host's CA, which the server authenticates itself (no
    /// TokenReview, whose cached answer may expire while hundreds of requests start), and
    /// keeps no idle connection: each held request opens a connection of its own.
    pub held_client: reqwest::Client,
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
    /// at most [`UNTIL_TIMEOUT`]) and reads its answer. With [`Request::while_held`], the held
    /// requests are sent first, and released once it is answered.
    pub async fn answer(&mut self, req: &Request) -> Answer {
        let mut held: Vec<Held> = match &req.while_held {
            Some((h, copies)) => (0..*copies).map(|_| self.hold(h)).collect(),
            None => Vec::new(),
        };
        for h in &mut held {
            h.sent().await;
        }
        let answer = self.answer_until(req).await;
        futures::future::join_all(held.into_iter().map(|h| h.release(self.name))).await;
        answer
    }

    async fn answer_until(&mut self, req: &Request) -> Answer {
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
        let base = if req.to_host {
            &self.host_url
        } else {
            &self.url
        };
        let url = format!("{base}{}", self.substitute(&req.path));
        let mut builder = self.request(req, &url);
        if let Some(body) = self.body(req) {
            builder = builder.body(body);
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

impl Target {
    /// `req` to `url` as its identity, with its headers, without its body.
    fn request(&self, req: &Request, url: &str) -> reqwest::RequestBuilder {
        let builder = self.client.request(req.method.clone(), url);
        let builder = match req.identity {
            Identity::Admin => builder.bearer_auth(&self.admin_token),
            Identity::Bob => builder.bearer_auth(&self.bob_token),
            Identity::Anonymous => builder,
        };
        self.with_headers(builder, req)
    }

    /// `builder` with the headers of `req`.
    fn with_headers(
        &self,
        mut builder: reqwest::RequestBuilder,
        req: &Request,
    ) -> reqwest::RequestBuilder {
        for (name, value) in &req.headers {
            builder = builder.header(name, self.substitute(value));
        }
        builder
    }

    /// The body of `req`, its remembered values substituted when it is text.
    fn body(&self, req: &Request) -> Option<Vec<u8>> {
        let body = req.body.as_ref()?;
        Some(match String::from_utf8(body.clone()) {
            Ok(text) => self.substitute(&text).into_bytes(),
            Err(bytes) => bytes.into_bytes(),
        })
    }

    /// Starts `req` with its body sent but for the last byte (the body is chunked), so that
    /// the server admits it and its handler waits for the rest, in flight. It is sent by
    /// [`Target::held_client`], as a member of `system:masters`, whatever its identity.
    pub fn hold(&self, req: &Request) -> Held {
        let base = if req.to_host {
            &self.host_url
        } else {
            &self.url
        };
        let url = format!("{base}{}", self.substitute(&req.path));
        let mut body = self
            .body(req)
            .unwrap_or_else(|| panic!("the held request {} has a body", req.name));
        let last = body.split_off(body.len().saturating_sub(1));
        let (rest, chunks) = futures::channel::mpsc::unbounded::<Result<Vec<u8>, std::io::Error>>();
        // The client asks for the body's first part once the connection is open and the
        // request's head written: then the request is told sent.
        let (started, head_sent) = futures::channel::oneshot::channel();
        let first = futures::stream::once(async move {
            let _ = started.send(());
            Ok(body)
        });
        let held = self.held_client.request(req.method.clone(), &url);
        let sent = self
            .with_headers(held, req)
            .body(reqwest::Body::wrap_stream(first.chain(chunks)))
            .send();
        let name = req.name.clone();
        let answer = tokio::spawn(async move {
            match sent.await {
                Ok(res) => (res.status().as_u16(), res.text().await.unwrap_or_default()),
                Err(e) => panic!("the held request {name}: {e}"),
            }
        });
        Held {
            name: req.name.clone(),
            head_sent: Some(head_sent),
            rest,
            last,
            answer,
        }
    }
}

/// A request held in flight by [`Target::hold`].
pub struct Held {
    name: String,
    /// Told once the request's head is written and its body asked for.
    head_sent: Option<futures::channel::oneshot::Receiver<()>>,
    /// The body's stream, open.
    rest: futures::channel::mpsc::UnboundedSender<Result<Vec<u8>, std::io::Error>>,
    /// The body's last byte.
    last: Vec<u8>,
    /// Its status and body, once answered.
    answer: tokio::task::JoinHandle<(u16, String)>,
}

impl Held {
    /// Waits until the request's head is written (its connection open) and the first part of
    /// its body asked for: the server has it, or will have it at once.
    pub async fn sent(&mut self) {
        if let Some(head_sent) = self.head_sent.take() {
            head_sent
                .await
                .unwrap_or_else(|_| panic!("the held request {} failed", self.name));
        }
    }

    /// Sends the last byte and waits for the answer, which must be a success (the request is
    /// the admin's, whom the in-flight limit never refuses).
    pub async fn release(self, target: &str) {
        self.rest
            .unbounded_send(Ok(self.last))
            .expect("the held body is open");
        drop(self.rest);
        let (status, body) = self.answer.await.expect("the held request's task");
        assert!(
            (200..300).contains(&status),
            "{target}: the held request {} answered {status}: {body}",
            self.name
        );
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
