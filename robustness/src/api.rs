//! The client side: wardle's Flunder API over HTTPS with a bearer token, one
//! [`reqwest::Client`] (so one connection) per client, every exchange recorded.

use std::sync::{Arc, RwLock};
use std::time::Duration;

use serde_json::{Value, json};

use crate::history::{Operation, Outcome, PatchType, Request, Seen, Time};
use crate::recorder::Recorder;

/// The Flunder collection the harness uses, relative to the server URL.
pub const COLLECTION: &str = "/apis/wardle.example.com/v1alpha1/namespaces/default/flunders";

/// The field manager of the harness's server-side applies.
pub const FIELD_MANAGER: &str = "robustness";

/// Where the server is and how to talk to it.
#[derive(Debug)]
pub struct Target {
    url: RwLock<String>,
    /// The bearer token.
    pub token: String,
    /// The server's CA certificate (PEM).
    pub ca_pem: String,
}

impl Target {
    /// A target at `url`.
    pub fn new(url: String, token: String, ca_pem: String) -> Target {
        Target {
            url: RwLock::new(url),
            token,
            ca_pem,
        }
    }

    /// The server URL, e.g. `https://127.0.0.1:40123`.
    pub fn url(&self) -> String {
        self.url.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Points at a server restarted elsewhere.
    pub fn set_url(&self, url: String) {
        *self.url.write().unwrap_or_else(|e| e.into_inner()) = url;
    }

    /// A new HTTPS client trusting only the server's CA, sending the token, with `timeout` for
    /// whole requests (none for watches).
    pub fn http(&self, timeout: Option<Duration>) -> reqwest::Client {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let mut headers = reqwest::header::HeaderMap::new();
        if let Ok(v) = reqwest::header::HeaderValue::from_str(&format!("Bearer {}", self.token)) {
            headers.insert(reqwest::header::AUTHORIZATION, v);
        }
        let mut b = reqwest::Client::builder()
            .use_rustls_tls()
            .tls_built_in_root_certs(false)
            .default_headers(headers)
            .connect_timeout(Duration::from_secs(5))
            .pool_max_idle_per_host(1);
        if let Ok(ca) = reqwest::Certificate::from_pem(self.ca_pem.as_bytes()) {
            b = b.add_root_certificate(ca);
        }
        if let Some(t) = timeout {
            b = b.timeout(t);
        }
        b.build()
            .expect("an HTTPS client (rustls with the ring provider)")
    }
}

/// A Flunder with `value` as its `spec.reference`.
pub fn flunder(key: &str, value: &str) -> Value {
    json!({
        "apiVersion": "wardle.example.com/v1alpha1",
        "kind": "Flunder",
        "metadata": {"name": key},
        "spec": {"reference": value, "referenceType": "Flunder"},
    })
}

/// What an object in a response or event shows: name, resourceVersion, `spec.reference`.
pub fn seen(obj: &Value) -> Option<Seen> {
    Some(Seen {
        key: obj.pointer("/metadata/name")?.as_str()?.to_string(),
        rv: obj
            .pointer("/metadata/resourceVersion")?
            .as_str()?
            .parse()
            .ok()?,
        value: obj
            .pointer("/spec/reference")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
    })
}

/// One client of the API.
pub struct Api {
    http: reqwest::Client,
    target: Arc<Target>,
    recorder: Arc<Recorder>,
    /// The client's number in the history.
    pub client: u32,
}

/// An HTTP answer: status and body, or what went wrong.
type Answer = Result<(u16, String), String>;

impl Api {
    /// A client numbered `client`, whose requests give up after `timeout`.
    pub fn new(
        target: Arc<Target>,
        recorder: Arc<Recorder>,
        client: u32,
        timeout: Duration,
    ) -> Api {
        Api {
            http: target.http(Some(timeout)),
            target,
            recorder,
            client,
        }
    }

    fn now(&self) -> Time {
        self.recorder.clock.now()
    }

    /// Runs `request`, records it, and returns the recorded operation.
    pub async fn run(&self, request: Request) -> Operation {
        let id = self.recorder.next_id();
        let invoke = self.now();
        let (outcome, ret) = match &request {
            Request::List { limit, any_version } => self.list(id, *limit, *any_version).await,
            _ => {
                let answer = self.send(id, &request).await;
                (outcome_of(&request, answer), self.now())
            }
        };
        let op = Operation {
            id,
            client: self.client,
            request,
            outcome,
            invoke,
            ret,
        };
        self.recorder.operation(op.clone());
        op
    }

    /// One HTTP exchange, recorded.
    async fn exchange(
        &self,
        id: u64,
        method: reqwest::Method,
        path: String,
        content_type: Option<&str>,
        body: Option<String>,
    ) -> Answer {
        let invoke = self.now();
        let mut req = self
            .http
            .request(method.clone(), format!("{}{path}", self.target.url()));
        if let Some(ct) = content_type {
            req = req.header(reqwest::header::CONTENT_TYPE, ct);
        }
        if let Some(b) = &body {
            req = req.body(b.clone());
        }
        let answer = match req.send().await {
            Ok(res) => {
                let status = res.status().as_u16();
                match res.text().await {
                    Ok(text) => Ok((status, text)),
                    Err(e) => Err(format!("reading the body of a {status}: {e}")),
                }
            }
            Err(e) => Err(error_chain(&e)),
        };
        let (status, response) = match &answer {
            Ok((s, t)) => (Some(*s), t.as_str()),
            Err(e) => (None, e.as_str()),
        };
        self.recorder.exchange(
            id,
            method.as_str(),
            &path,
            body.as_deref(),
            status,
            response,
            invoke,
            self.now(),
        );
        answer
    }

    async fn send(&self, id: u64, request: &Request) -> Answer {
        use reqwest::Method;
        let item = |key: &str| format!("{COLLECTION}/{key}");
        match request {
            Request::Create { key, value } => {
                self.exchange(
                    id,
                    Method::POST,
                    COLLECTION.into(),
                    Some("application/json"),
                    Some(flunder(key, value).to_string()),
                )
                .await
            }
            Request::Get { key } => self.exchange(id, Method::GET, item(key), None, None).await,
            Request::Update {
                key,
                value,
                precondition,
            } => {
                let mut body = flunder(key, value);
                if let Some(rv) = precondition {
                    body["metadata"]["resourceVersion"] = json!(rv.to_string());
                }
                self.exchange(
                    id,
                    Method::PUT,
                    item(key),
                    Some("application/json"),
                    Some(body.to_string()),
                )
                .await
            }
            Request::Patch {
                key,
                value,
                patch_type,
                precondition,
            } => {
                let (ct, body) = match patch_type {
                    PatchType::Json => {
                        let mut ops = vec![
                            json!({"op": "replace", "path": "/spec/reference", "value": value}),
                        ];
                        if let Some(rv) = precondition {
                            ops.push(json!({"op": "replace", "path": "/metadata/resourceVersion", "value": rv.to_string()}));
                        }
                        ("application/json-patch+json", Value::Array(ops))
                    }
                    PatchType::Merge | PatchType::Strategic => {
                        let mut body = json!({"spec": {"reference": value}});
                        if let Some(rv) = precondition {
                            body["metadata"] = json!({"resourceVersion": rv.to_string()});
                        }
                        let ct = if *patch_type == PatchType::Merge {
                            "application/merge-patch+json"
                        } else {
                            "application/strategic-merge-patch+json"
                        };
                        (ct, body)
                    }
                };
                self.exchange(
                    id,
                    Method::PATCH,
                    item(key),
                    Some(ct),
                    Some(body.to_string()),
                )
                .await
            }
            Request::Apply { key, value } => {
                self.exchange(
                    id,
                    Method::PATCH,
                    format!("{}?fieldManager={FIELD_MANAGER}&force=true", item(key)),
                    Some("application/apply-patch+yaml"),
                    Some(flunder(key, value).to_string()),
                )
                .await
            }
            Request::Delete { key, precondition } => {
                let body = precondition.map(|rv| {
                    json!({
                        "kind": "DeleteOptions",
                        "apiVersion": "v1",
                        "preconditions": {"resourceVersion": rv.to_string()},
                    })
                    .to_string()
                });
                let ct = body.as_ref().map(|_| "application/json");
                self.exchange(id, Method::DELETE, item(key), ct, body).await
            }
            Request::DeleteCollection => {
                self.exchange(id, Method::DELETE, COLLECTION.into(), None, None)
                    .await
            }
            Request::List { .. } => unreachable!("lists are paged by Api::list"),
        }
    }

    /// A list, paged with `limit` (every page reads at the first page's revision, so the
    /// operation's window is the first page's); `any_version` reads `resourceVersion=0`.
    async fn list(&self, id: u64, limit: Option<u32>, any_version: bool) -> (Outcome, Time) {
        let mut items = Vec::new();
        let mut cont: Option<String> = None;
        let mut first: Option<(u64, Time)> = None;
        loop {
            let mut path = format!("{COLLECTION}?");
            if let Some(l) = limit {
                path.push_str(&format!("limit={l}&"));
            }
            if let Some(c) = &cont {
                path.push_str(&format!("continue={}&", encode(c)));
            } else if any_version {
                path.push_str("resourceVersion=0&");
            }
            let answer = self
                .exchange(id, reqwest::Method::GET, path, None, None)
                .await;
            let ret = first.map(|(_, t)| t).unwrap_or_else(|| self.now());
            let body = match answer {
                Ok((200, body)) => body,
                other => return (failure(other), ret),
            };
            let Ok(list) = serde_json::from_str::<Value>(&body) else {
                return (
                    Outcome::Unknown {
                        detail: format!("an unreadable list: {body}"),
                    },
                    ret,
                );
            };
            let rv = list
                .pointer("/metadata/resourceVersion")
                .and_then(Value::as_str)
                .and_then(|s| s.parse().ok())
                .unwrap_or(0);
            if first.is_none() {
                first = Some((rv, ret));
            }
            for item in list["items"].as_array().into_iter().flatten() {
                if let Some(s) = seen(item) {
                    items.push(s);
                }
            }
            match list
                .pointer("/metadata/continue")
                .and_then(Value::as_str)
                .filter(|c| !c.is_empty())
            {
                Some(c) => cont = Some(c.to_string()),
                None => {
                    let (rv, ret) = first.unwrap_or((rv, ret));
                    return (Outcome::List { rv, items }, ret);
                }
            }
        }
    }
}

/// The outcome of a single-object request.
fn outcome_of(request: &Request, answer: Answer) -> Outcome {
    match answer {
        Ok((code @ 200..=299, body)) => {
            let Ok(v) = serde_json::from_str::<Value>(&body) else {
                return Outcome::Unknown {
                    detail: format!("{code} with an unreadable body: {body}"),
                };
            };
            match request {
                Request::Delete { .. } => Outcome::Deleted,
                Request::DeleteCollection => Outcome::List {
                    rv: v
                        .pointer("/metadata/resourceVersion")
                        .and_then(Value::as_str)
                        .and_then(|s| s.parse().ok())
                        .unwrap_or(0),
                    items: v["items"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(seen)
                        .collect(),
                },
                _ => match seen(&v) {
                    Some(s) => Outcome::Object(s),
                    None => Outcome::Unknown {
                        detail: format!("{code} without an object: {body}"),
                    },
                },
            }
        }
        other => failure(other),
    }
}

/// A non-2xx answer: a 4xx Status is a definite refusal; a 5xx or no answer is unknown.
fn failure(answer: Answer) -> Outcome {
    match answer {
        Ok((code @ 400..=499, body)) => Outcome::Error {
            code,
            reason: serde_json::from_str::<Value>(&body)
                .ok()
                .and_then(|v| v["reason"].as_str().map(str::to_string))
                .unwrap_or_default(),
        },
        Ok((code, body)) => Outcome::Unknown {
            detail: format!("HTTP {code}: {}", truncate(&body, 300)),
        },
        Err(e) => Outcome::Unknown { detail: e },
    }
}

/// `e` with its sources, one line.
pub fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        s.push_str(": ");
        s.push_str(&cause.to_string());
        source = cause.source();
    }
    s
}

fn truncate(s: &str, n: usize) -> &str {
    match s.char_indices().nth(n) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

/// Percent-encodes a query value.
pub fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}
