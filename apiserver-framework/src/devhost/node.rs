//! The development hosts' one `Node` (`/api/v1/nodes/<hostname>`): this machine, computed from
//! `/proc` on each request, so that clients that relate metrics to nodes (`kubectl top node`)
//! find the machine a metrics server reports on.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::error::ApiError;
use crate::registry::rest::RequestContext;
use crate::registry::rest::computed::ResourceProvider;

/// A node (`/api/v1/nodes/<name>`): this machine.
#[derive(
    crate::ApiResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema,
)]
#[resource(
    group = "",
    version = "v1",
    kind = "Node",
    status = "NodeStatus",
    shortname = "no",
    printcolumn(
        name = "Version",
        json_path = ".status.nodeInfo.kubeletVersion",
        description = "The kubelet version (none here)"
    ),
    printcolumn(
        name = "Kernel-Version",
        json_path = ".status.nodeInfo.kernelVersion",
        description = "The kernel's release",
        priority = 1
    ),
    crate = "crate"
)]
pub struct NodeSpec {}

/// What a node reports about itself (the fields of upstream's `NodeStatus` a development
/// host can fill).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct NodeStatus {
    /// Total resources: `cpu` (cores) and `memory` (`<n>Ki`).
    #[serde(default)]
    pub capacity: BTreeMap<String, String>,
    /// Resources available to workloads (all of them here).
    #[serde(default)]
    pub allocatable: BTreeMap<String, String>,
    /// `Ready`.
    #[serde(default)]
    pub conditions: Vec<NodeCondition>,
    /// The machine's host name.
    #[serde(default)]
    pub addresses: Vec<NodeAddress>,
    /// Kernel and architecture.
    #[serde(default)]
    pub node_info: NodeSystemInfo,
}

/// A node condition.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct NodeCondition {
    /// `Ready`.
    #[serde(rename = "type")]
    pub type_: String,
    /// `True`.
    pub status: String,
    /// Why.
    #[serde(default)]
    pub reason: String,
    /// Details.
    #[serde(default)]
    pub message: String,
}

/// A node address.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub(crate) struct NodeAddress {
    /// `Hostname`.
    #[serde(rename = "type")]
    pub type_: String,
    /// The address.
    pub address: String,
}

/// Facts about the machine.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct NodeSystemInfo {
    /// `amd64`, `arm64`, … (Go's names).
    pub architecture: String,
    /// `linux`.
    pub operating_system: String,
    /// The kernel's release (`/proc/sys/kernel/osrelease`).
    pub kernel_version: String,
    /// No kubelet runs here: empty.
    #[serde(default)]
    pub kubelet_version: String,
}

/// This machine's host name (`/proc/sys/kernel/hostname`), lower-cased as node names are.
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_ascii_lowercase())
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".into())
}

/// The architecture as Go names it (`GOARCH`), as nodes label themselves.
pub(crate) fn go_arch() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        "x86" => "386",
        "powerpc64" => "ppc64le",
        other => other,
    }
}

/// The labels every node carries: `kubernetes.io/hostname`, `kubernetes.io/os` and
/// `kubernetes.io/arch`.
pub fn labels(hostname: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        ("kubernetes.io/arch".to_string(), go_arch().to_string()),
        ("kubernetes.io/hostname".to_string(), hostname.to_string()),
        ("kubernetes.io/os".to_string(), "linux".to_string()),
    ])
}

/// `MemTotal` of `/proc/meminfo`, in KiB.
fn memory_total_kib() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
}

/// The number of CPUs: the `cpuN` lines of `/proc/stat`.
fn cpus() -> usize {
    std::fs::read_to_string("/proc/stat")
        .map(|t| {
            t.lines()
                .filter(|l| {
                    l.strip_prefix("cpu")
                        .is_some_and(|r| r.starts_with(|c: char| c.is_ascii_digit()))
                })
                .count()
        })
        .unwrap_or(0)
        .max(1)
}

/// The boot time (`btime` of `/proc/stat`), as RFC 3339, the node's creation time.
fn boot_time() -> Option<String> {
    let text = std::fs::read_to_string("/proc/stat").ok()?;
    let secs: i64 = text
        .lines()
        .find_map(|l| l.strip_prefix("btime "))?
        .trim()
        .parse()
        .ok()?;
    jiff::Timestamp::from_second(secs)
        .ok()
        .map(|t| t.to_string())
}

/// This machine as a Node.
pub fn this_machine() -> Node {
    let name = hostname();
    let resources = BTreeMap::from([
        ("cpu".to_string(), cpus().to_string()),
        (
            "memory".to_string(),
            format!("{}Ki", memory_total_kib().unwrap_or(0)),
        ),
        ("pods".to_string(), "110".to_string()),
    ]);
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|k| k.trim().to_string())
        .unwrap_or_default();
    let mut node = Node::new(&name, NodeSpec {});
    node.metadata = ObjectMeta {
        name: Some(name.clone()),
        labels: Some(labels(&name)),
        uid: Some(format!("node-{name}")),
        creation_timestamp: boot_time()
            .and_then(|t| serde_json::from_value(serde_json::Value::String(t)).ok()),
        ..Default::default()
    };
    node.status = Some(NodeStatus {
        capacity: resources.clone(),
        allocatable: resources,
        conditions: vec![NodeCondition {
            type_: "Ready".into(),
            status: "True".into(),
            reason: "DevelopmentHost".into(),
            message: "this machine, as the development host's node".into(),
        }],
        addresses: vec![NodeAddress {
            type_: "Hostname".into(),
            address: name,
        }],
        node_info: NodeSystemInfo {
            architecture: go_arch().into(),
            operating_system: "linux".into(),
            kernel_version: kernel,
            kubelet_version: String::new(),
        },
    });
    node
}

/// Computes the one Node on each request.
pub(crate) struct ThisMachine;

#[async_trait::async_trait]
impl ResourceProvider<Node> for ThisMachine {
    async fn list(&self, _ctx: &RequestContext) -> Result<Vec<Node>, ApiError> {
        Ok(vec![this_machine()])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_machine_has_cpu_and_memory() {
        let node = this_machine();
        let status = node.status.unwrap();
        let cpu: usize = status.capacity["cpu"].parse().unwrap();
        assert!(cpu >= 1);
        let memory = &status.allocatable["memory"];
        let kib: u64 = memory.strip_suffix("Ki").unwrap().parse().unwrap();
        assert!(kib > 0, "{memory}");
        assert_eq!(node.metadata.name.as_deref(), Some(hostname().as_str()));
        assert_eq!(node.metadata.labels.unwrap()["kubernetes.io/os"], "linux");
    }
}
