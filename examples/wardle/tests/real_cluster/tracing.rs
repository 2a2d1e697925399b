//! Issue 48, tracing through the real host: kube-apiserver and wardle both export to one real
//! OTLP receiver (Jaeger v2), kube-apiserver sampling every request (`samplingRatePerMillion:
//! 1000000`) and wardle none of its own (`0`): a `kubectl get flunders` through kube-apiserver is
//! one trace, in which kube-apiserver's request span is an ancestor (through its proxy span) of
//! wardle's request span, which holds wardle's storage span. Wardle records it only because
//! kube-apiserver's `traceparent` says the trace is sampled.

use std::net::IpAddr;
use std::time::Duration;

use apiserver_framework::testing::wait;

use super::cluster::{RealCluster, block_on};
use super::support::jaeger::{Jaeger, Span, describe, new_span_id};

/// How long spans may take to reach the receiver (both servers export every 5 s).
const EXPORTED: Duration = Duration::from_secs(60);

/// Whether `name` is the request span's name of a namespaced Flunder list, as upstream names
/// it (both kube-apiserver's and wardle's): `GET /apis/wardle.example.com/<version>/namespaces/
/// {:namespace}/flunders` (kubectl asks for the preferred version, v1beta1).
fn lists_flunders(name: &str) -> bool {
    name.strip_prefix("GET /apis/wardle.example.com/")
        .and_then(|rest| rest.split_once('/'))
        .is_some_and(|(_, rest)| rest == "namespaces/{:namespace}/flunders")
}

/// Puts kube-apiserver and wardle back as the cluster started them (no tracing), however the
/// check ends.
struct Untraced<'a>(&'a RealCluster);

impl Drop for Untraced<'_> {
    fn drop(&mut self) {
        self.0.script("restart-kube-apiserver");
        self.0.script("stop-wardle");
        self.0.script("start-wardle");
        self.0
            .wait_until("wardle to answer again", Duration::from_secs(120), || {
                self.0
                    .kubectl("admin", &["get", "flunders", "-n", "alice"])
                    .status
                    .success()
            });
    }
}

/// The check.
pub fn one_trace_from_kube_apiserver_to_wardles_storage(cluster: &RealCluster) {
    // The host's side of the pod network: kube-apiserver (on the host) and wardle (in its
    // network namespace) both reach it.
    let host_ip: IpAddr = format!("198.18.{}.1", cluster.env("NET_INDEX"))
        .parse()
        .expect("the host's address in the pod network");
    let jaeger = block_on(Jaeger::start_on(host_ip));
    let configs = cluster.dir().join("tracing");
    let (kube_dir, wardle_dir) = (configs.join("kube-apiserver"), configs.join("wardle"));
    for dir in [&kube_dir, &wardle_dir] {
        std::fs::create_dir_all(dir).expect("a configuration directory");
    }
    let kube_config = jaeger.tracing_config(&kube_dir, 1_000_000);
    let wardle_config = jaeger.tracing_config(&wardle_dir, 0);

    let _untraced = Untraced(cluster);
    cluster.script_with(
        "restart-kube-apiserver",
        &[&format!("--tracing-config-file={}", kube_config.display())],
    );
    cluster.script("stop-wardle");
    cluster.script_with(
        "start-wardle",
        &[
            "all",
            &format!("--tracing-config-file={}", wardle_config.display()),
        ],
    );
    cluster.wait_until(
        "wardle to answer through kube-apiserver",
        Duration::from_secs(120),
        || {
            cluster
                .kubectl("admin", &["get", "flunders", "-n", "alice"])
                .status
                .success()
        },
    );

    // The request to find: a label selector no other request has.
    let marker = new_span_id();
    cluster.kubectl_ok(
        "admin",
        &[
            "get",
            "flunders",
            "-n",
            "alice",
            "-l",
            &format!("trace={marker}"),
        ],
    );
    let mine = |s: &Span| {
        s.service == "wardle" && lists_flunders(&s.name) && s.tag("http.target").contains(&marker)
    };
    let trace_id = block_on(wait::poll(
        "wardle's request span in the receiver",
        EXPORTED,
        || async {
            jaeger
                .traces_of("wardle", 1000)
                .await
                .into_iter()
                .flatten()
                .find(|s| mine(s))
                .map(|s| s.trace_id)
                .ok_or("not there yet")
        },
    ))
    .unwrap_or_else(|e| panic!("{e}; Jaeger's log:\n{}", jaeger.log()));

    let spans = block_on(jaeger.wait_for_trace(&trace_id, EXPORTED, |spans| {
        spans
            .iter()
            .any(|s| s.service == "apiserver" && lists_flunders(&s.name))
            && spans.iter().any(|s| s.name == "List storage")
    }));
    let wardle = spans
        .iter()
        .find(|s| mine(s))
        .expect("wardle's request span");
    // Its parent is kube-apiserver's, in the same trace.
    let parent = wardle
        .parent
        .as_deref()
        .unwrap_or_else(|| panic!("wardle's request span has no parent:{}", describe(&spans)));
    let parent = spans
        .iter()
        .find(|s| s.span_id == parent)
        .unwrap_or_else(|| panic!("wardle's parent is not in the trace:{}", describe(&spans)));
    assert_eq!(parent.service, "apiserver", "{}", describe(&spans));
    // Up from it: kube-apiserver's request span of the same request.
    let mut at = Some(parent);
    let mut reached = false;
    while let Some(span) = at {
        if span.service == "apiserver" && lists_flunders(&span.name) {
            reached = span.tag("http.target").contains(&marker);
            break;
        }
        at = span
            .parent
            .as_deref()
            .and_then(|p| spans.iter().find(|s| s.span_id == p));
    }
    assert!(
        reached,
        "kube-apiserver's request span is not an ancestor of wardle's:{}",
        describe(&spans)
    );
    // Wardle's storage span is its request span's child.
    let storage = spans
        .iter()
        .find(|s| s.name == "List storage" && s.service == "wardle")
        .expect("wardle's storage span");
    assert_eq!(
        storage.parent.as_deref(),
        Some(wardle.span_id.as_str()),
        "{}",
        describe(&spans)
    );
}
