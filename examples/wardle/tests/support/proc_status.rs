//! Memory figures of a process from `/proc/<pid>/status`.

/// The field `field` (`RssAnon:`, `VmRSS:`…) of `/proc/<pid>/status` in MiB; `pid` `None` is
/// this process.
pub fn status_mib(pid: Option<u32>, field: &str) -> f64 {
    let path = match pid {
        Some(pid) => format!("/proc/{pid}/status"),
        None => "/proc/self/status".to_string(),
    };
    let status = std::fs::read_to_string(&path).expect("/proc status");
    let kib: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("{field} in {path}"));
    kib / 1024.0
}
