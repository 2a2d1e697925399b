//! metrics: a small metrics server built with apiserver-framework. It serves
//! `metrics.k8s.io/v1beta1` [`NodeMetrics`] for this machine, computed from `/proc` on each
//! request, with metrics-server's field names and shapes, so that `kubectl top node` and
//! `kubectl get nodemetrics` read it as they read metrics-server.
//!
//! Nothing is stored: the resource is a [`ResourceProvider`], which the framework serves
//! read-only (get and list with selectors, paging, tables; every write answers 405).
//! `PodMetrics` are not served: this machine runs no pods to measure.

pub mod proc;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use apiserver_framework::devhost::node;
use apiserver_framework::duration::GoDuration;
use apiserver_framework::prelude::*;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

/// The resource metrics of a node, as metrics-server serves them
/// (`/apis/metrics.k8s.io/v1beta1/nodes/<node>`).
#[derive(ApiResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[resource(
    group = "metrics.k8s.io",
    version = "v1beta1",
    kind = "NodeMetrics",
    plural = "nodes",
    singular = "nodemetrics",
    flat,
    printcolumn(
        name = "CPU",
        json_path = ".usage.cpu",
        description = "CPU in use, in cores"
    ),
    printcolumn(
        name = "Memory",
        json_path = ".usage.memory",
        description = "Memory in use (the working set)"
    ),
    printcolumn(
        name = "Window",
        json_path = ".window",
        description = "The interval the CPU usage is averaged over",
        priority = 1
    )
)]
pub struct NodeMetricsSpec {
    /// When the usage was measured (the end of the window).
    pub timestamp: String,
    /// The interval the CPU usage is averaged over, as a Go duration.
    pub window: String,
    /// `cpu` (nanocores, `<n>n`) and `memory` (`<n>Ki`).
    pub usage: BTreeMap<String, String>,
}

/// How long a CPU sample serves before a request takes a new one.
const MIN_WINDOW: Duration = Duration::from_millis(100);
/// The longest window: an older sample is too stale to average over.
const MAX_WINDOW: Duration = Duration::from_secs(60);
/// How long a request waits between two samples when it has no recent one.
const FIRST_WINDOW: Duration = Duration::from_millis(250);

/// CPU usage between two samples.
#[derive(Clone, Copy, Debug)]
struct Usage {
    nanocores: u64,
    window: Duration,
    at: jiff::Timestamp,
}

/// Measures this machine: CPU usage between the previous request's sample and this one's,
/// memory in use now.
#[derive(Default)]
pub struct MachineMetrics {
    state: parking_lot::Mutex<State>,
}

#[derive(Default)]
struct State {
    last: Option<(Instant, proc::CpuTimes)>,
    usage: Option<Usage>,
}

/// Nanocores used between two samples `elapsed` apart.
fn nanocores(from: proc::CpuTimes, to: proc::CpuTimes, elapsed: Duration) -> u64 {
    let busy_ticks = to.busy.saturating_sub(from.busy) as u128;
    let nanos = elapsed.as_nanos().max(1);
    // ticks / TICKS_PER_SECOND cpu-seconds over `elapsed` seconds, in nanocores.
    let cores_nano =
        busy_ticks * 1_000_000_000 * 1_000_000_000 / (u128::from(proc::TICKS_PER_SECOND) * nanos);
    u64::try_from(cores_nano).unwrap_or(u64::MAX)
}

/// A window as Go prints a duration, to the millisecond: `251ms`, `1.5s`.
fn go_duration(d: Duration) -> String {
    let ms = d.as_millis();
    if ms < 1000 {
        format!("{ms}ms")
    } else {
        let ms = u64::try_from(ms).unwrap_or(u64::MAX);
        GoDuration(Duration::from_millis(ms)).to_string()
    }
}

fn io_error(e: std::io::Error) -> ApiError {
    ApiError::internal(format!("reading /proc: {e}"))
}

impl MachineMetrics {
    /// The CPU usage now: since the last sample when it is recent enough, else over a short
    /// window measured now.
    async fn cpu_usage(&self) -> Result<Usage, ApiError> {
        let sample = || proc::cpu_times().map(|t| (Instant::now(), t));
        let now = sample().map_err(io_error)?;
        let previous = {
            let mut state = self.state.lock();
            match (state.last, state.usage) {
                (Some((t0, _)), Some(u)) if now.0.duration_since(t0) < MIN_WINDOW => {
                    return Ok(u);
                }
                (Some(last), _) if now.0.duration_since(last.0) <= MAX_WINDOW => {
                    state.last = Some(now);
                    Some(last)
                }
                _ => None,
            }
        };
        let (from, to) = match previous {
            Some(last) => (last, now),
            None => {
                tokio::time::sleep(FIRST_WINDOW).await;
                (now, sample().map_err(io_error)?)
            }
        };
        let window = to.0.duration_since(from.0);
        let usage = Usage {
            nanocores: nanocores(from.1, to.1, window),
            window,
            at: jiff::Timestamp::now(),
        };
        let mut state = self.state.lock();
        state.last = Some(to);
        state.usage = Some(usage);
        Ok(usage)
    }
}

#[async_trait]
impl ResourceProvider<NodeMetrics> for MachineMetrics {
    async fn list(&self, _ctx: &RequestContext) -> Result<Vec<NodeMetrics>, ApiError> {
        let cpu = self.cpu_usage().await?;
        let memory = proc::memory().map_err(io_error)?;
        // In a cluster, set `NODE_NAME` from the downward API (`spec.nodeName`) to report on
        // the pod's node; without it, the machine's host name, as the development hosts name
        // their Node.
        let name = std::env::var("NODE_NAME")
            .ok()
            .filter(|n| !n.is_empty())
            .unwrap_or_else(node::hostname);
        let mut metrics = NodeMetrics::new(
            &name,
            NodeMetricsSpec {
                timestamp: cpu.at.strftime("%Y-%m-%dT%H:%M:%SZ").to_string(),
                window: go_duration(cpu.window),
                usage: BTreeMap::from([
                    ("cpu".to_string(), format!("{}n", cpu.nanocores)),
                    ("memory".to_string(), format!("{}Ki", memory.used_kib())),
                ]),
            },
        );
        metrics.metadata.labels = Some(node::labels(&name));
        metrics.metadata.creation_timestamp = serde_json::from_value::<Time>(
            serde_json::Value::String(metrics.spec.timestamp.clone()),
        )
        .ok();
        Ok(vec![metrics])
    }
}

/// The metrics server: `metrics.k8s.io/v1beta1` nodes, computed.
pub fn app() -> App {
    App::new("metrics").computed::<NodeMetrics>(MachineMetrics::default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nanocores_are_busy_ticks_per_second() {
        let from = proc::CpuTimes { busy: 0, total: 0 };
        // 50 ticks (0.5 cpu-seconds) over one second: half a core.
        let to = proc::CpuTimes {
            busy: 50,
            total: 200,
        };
        assert_eq!(nanocores(from, to, Duration::from_secs(1)), 500_000_000);
        // Over 250ms: two cores.
        assert_eq!(
            nanocores(from, to, Duration::from_millis(250)),
            2_000_000_000
        );
        assert_eq!(nanocores(to, from, Duration::from_secs(1)), 0);
    }

    #[test]
    fn windows_print_as_go_durations() {
        assert_eq!(go_duration(Duration::from_micros(251_957)), "251ms");
        assert_eq!(go_duration(Duration::from_millis(1500)), "1.5s");
        assert_eq!(go_duration(Duration::from_secs(10)), "10s");
    }
}
