//! A real OTLP receiver for the tracing tests: Jaeger v2 (`scripts/build-upstream jaeger`), with
//! its OTLP/gRPC receiver, in-memory storage and query API on free ports, and the spans it
//! received read back through that API (`/api/traces/<trace id>`, `/api/traces?service=`).

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use apiserver_framework::testing::{free_port, wait};
use serde_json::Value;

/// How long Jaeger may take to answer its health check.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// One span as Jaeger stored it.
#[derive(Clone, Debug)]
pub struct Span {
    /// The trace id (32 hex digits).
    pub trace_id: String,
    /// The span id (16 hex digits).
    pub span_id: String,
    /// The parent span's id (its `CHILD_OF` reference), if any.
    pub parent: Option<String>,
    /// Its links (`FOLLOWS_FROM` references): `(trace id, span id)` of each.
    pub links: Vec<(String, String)>,
    /// The span's name (Jaeger's operation name).
    pub name: String,
    /// The `service.name` of the process that sent it.
    pub service: String,
    /// Its attributes, each written as text.
    pub tags: BTreeMap<String, String>,
}

impl Span {
    /// The attribute `key`, or "".
    pub fn tag(&self, key: &str) -> &str {
        self.tags.get(key).map_or("", String::as_str)
    }
}

/// A running Jaeger, killed on drop.
pub struct Jaeger {
    child: Child,
    dir: tempfile::TempDir,
    /// Where it takes OTLP over gRPC: `<ip>:<port>`.
    pub otlp_endpoint: String,
    query_url: String,
    http: reqwest::Client,
}

/// The Jaeger binary, built once per test process.
pub fn binary() -> &'static Path {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY.get_or_init(|| super::client_go::build_upstream("jaeger", "jaeger"))
}

impl Jaeger {
    /// Starts Jaeger taking OTLP on 127.0.0.1 and waits until it is healthy.
    pub async fn start() -> Jaeger {
        Self::start_on(IpAddr::from([127, 0, 0, 1])).await
    }

    /// Starts Jaeger taking OTLP on `otlp_ip` (its query API and health check stay on
    /// 127.0.0.1) and waits until it is healthy.
    pub async fn start_on(otlp_ip: IpAddr) -> Jaeger {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let port = || free_port().expect("a free port");
        let (otlp, query, query_grpc, health) = (port(), port(), port(), port());
        let otlp_endpoint = match otlp_ip {
            IpAddr::V4(ip) => format!("{ip}:{otlp}"),
            IpAddr::V6(ip) => format!("[{ip}]:{otlp}"),
        };
        let config = dir.path().join("jaeger.yaml");
        std::fs::write(
            &config,
            format!(
                "service:
  extensions: [jaeger_storage, jaeger_query, healthcheckv2]
  pipelines:
    traces:
      receivers: [otlp]
      processors: []
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
    logs:
      level: warn
extensions:
  jaeger_query:
    storage:
      traces: memstore
    http:
      endpoint: 127.0.0.1:{query}
    grpc:
      endpoint: 127.0.0.1:{query_grpc}
  jaeger_storage:
    backends:
      memstore:
        memory:
          max_traces: 100000
  healthcheckv2:
    use_v2: true
    http:
      endpoint: 127.0.0.1:{health}
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: {otlp_endpoint}
exporters:
  jaeger_storage_exporter:
    trace_storage: memstore
"
            ),
        )
        .expect("write Jaeger's configuration");
        let log = std::fs::File::create(dir.path().join("jaeger.log")).expect("Jaeger's log");
        let child = Command::new(binary())
            .arg("--config")
            .arg(format!("file:{}", config.display()))
            // Jaeger's own spans are not wanted (they would go to localhost:4317).
            .env("OTEL_SDK_DISABLED", "true")
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("clone the log handle"))
            .stderr(log)
            .spawn()
            .expect("spawn jaeger");
        let mut jaeger = Jaeger {
            child,
            dir,
            otlp_endpoint,
            query_url: format!("http://127.0.0.1:{query}"),
            // No pooled connections: a test may ask from one runtime after another.
            http: reqwest::Client::builder()
                .pool_max_idle_per_host(0)
                .build()
                .expect("an HTTP client"),
        };
        let status = format!("http://127.0.0.1:{health}/status");
        let healthy = wait::poll("Jaeger to be healthy", START_TIMEOUT, || {
            let (http, status) = (jaeger.http.clone(), status.clone());
            async move {
                let res = http.get(&status).send().await.map_err(|e| e.to_string())?;
                if res.status().is_success() {
                    Ok(())
                } else {
                    Err(format!("status {}", res.status()))
                }
            }
        })
        .await;
        if let Err(e) = healthy {
            let exited = jaeger.child.try_wait().ok().flatten();
            panic!("{e} (exited: {exited:?}); its log:\n{}", jaeger.log());
        }
        jaeger
    }

    /// Its log.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("jaeger.log")).unwrap_or_default()
    }

    /// A `TracingConfiguration` file sending spans here with `samplingRatePerMillion: rate`,
    /// written in `dir` as `tracing.yaml`; its path.
    pub fn tracing_config(&self, dir: &Path, rate: u32) -> PathBuf {
        let path = dir.join("tracing.yaml");
        std::fs::write(
            &path,
            format!(
                "apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\n\
                 endpoint: {}\nsamplingRatePerMillion: {rate}\n",
                self.otlp_endpoint
            ),
        )
        .expect("write the tracing configuration");
        path
    }

    /// The spans of trace `trace_id` received so far (none when Jaeger knows no such trace).
    pub async fn trace(&self, trace_id: &str) -> Vec<Span> {
        let url = format!("{}/api/traces/{trace_id}", self.query_url);
        let res = self.http.get(&url).send().await.expect("ask Jaeger");
        if res.status() == reqwest::StatusCode::NOT_FOUND {
            return Vec::new();
        }
        let body: Value = res.json().await.expect("Jaeger's JSON");
        spans_of(&body).into_iter().flatten().collect()
    }

    /// The traces holding spans of `service` (at most `limit`), each as its spans.
    pub async fn traces_of(&self, service: &str, limit: usize) -> Vec<Vec<Span>> {
        let url = format!(
            "{}/api/traces?service={service}&limit={limit}&lookback=1h",
            self.query_url
        );
        let body: Value = self
            .http
            .get(&url)
            .send()
            .await
            .expect("ask Jaeger")
            .json()
            .await
            .expect("Jaeger's JSON");
        spans_of(&body)
    }

    /// Waits (at most `timeout`) until trace `trace_id` satisfies `done`; its spans then. The
    /// servers export in batches, every few seconds.
    pub async fn wait_for_trace(
        &self,
        trace_id: &str,
        timeout: Duration,
        done: impl Fn(&[Span]) -> bool,
    ) -> Vec<Span> {
        let found = wait::poll(&format!("trace {trace_id} in Jaeger"), timeout, || async {
            let spans = self.trace(trace_id).await;
            if done(&spans) {
                Ok(spans)
            } else {
                Err(format!("spans so far: {}", describe(&spans)))
            }
        })
        .await;
        found.unwrap_or_else(|e| panic!("{e}; Jaeger's log:\n{}", self.log()))
    }
}

impl Drop for Jaeger {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The traces of a query answer (`{"data": [{"spans": [...], "processes": {...}}]}`).
fn spans_of(body: &Value) -> Vec<Vec<Span>> {
    let Some(traces) = body["data"].as_array() else {
        return Vec::new();
    };
    traces
        .iter()
        .map(|trace| {
            let processes = &trace["processes"];
            trace["spans"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|s| {
                    let parent = s["references"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .find(|r| r["refType"] == "CHILD_OF")
                        .and_then(|r| r["spanID"].as_str())
                        .map(str::to_owned);
                    let text = |v: &Value| match v {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    };
                    let links = s["references"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter(|r| r["refType"] == "FOLLOWS_FROM")
                        .map(|r| (text(&r["traceID"]), text(&r["spanID"])))
                        .collect();
                    let tags = s["tags"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .map(|t| (text(&t["key"]), text(&t["value"])))
                        .collect();
                    let process = s["processID"].as_str().unwrap_or_default();
                    Span {
                        trace_id: text(&s["traceID"]),
                        span_id: text(&s["spanID"]),
                        parent,
                        links,
                        name: text(&s["operationName"]),
                        service: text(&processes[process]["serviceName"]),
                        tags,
                    }
                })
                .collect()
        })
        .collect()
}

/// `service: name (id, parent)` of each span, for failure messages.
pub fn describe(spans: &[Span]) -> String {
    spans
        .iter()
        .map(|s| {
            format!(
                "\n  {}: {} ({}, parent {})",
                s.service,
                s.name,
                s.span_id,
                s.parent.as_deref().unwrap_or("-")
            )
        })
        .collect()
}

/// A new W3C trace id (32 hex digits, random).
pub fn new_trace_id() -> String {
    format!("{:032x}", rand_u128())
}

/// A new span id (16 hex digits, random).
pub fn new_span_id() -> String {
    format!("{:016x}", rand_u128() as u64 | 1)
}

/// 128 random bits, from the standard library's randomly keyed hasher.
fn rand_u128() -> u128 {
    use std::hash::{BuildHasher, Hasher};
    let half = || {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u128(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos()),
        );
        h.finish()
    };
    (u128::from(half()) << 64) | u128::from(half())
}
