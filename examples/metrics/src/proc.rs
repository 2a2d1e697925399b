//! What `/proc` says about this machine: CPU time and memory.

/// CPU time spent since boot, summed over every CPU, in clock ticks (`USER_HZ`, 100 on Linux).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpuTimes {
    /// Ticks spent working (everything but `idle` and `iowait`).
    pub busy: u64,
    /// Every tick.
    pub total: u64,
}

/// Clock ticks per second of `/proc/stat` (`USER_HZ`): 100 on every Linux architecture.
pub const TICKS_PER_SECOND: u64 = 100;

/// Parses the `cpu` line of `/proc/stat`.
pub fn parse_cpu_times(stat: &str) -> Option<CpuTimes> {
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let fields: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(|f| f.parse().ok())
        .collect::<Option<_>>()?;
    // user nice system idle iowait irq softirq steal [guest guest_nice]: guest time is
    // already counted in user and nice.
    let total: u64 = fields.iter().take(8).sum();
    let idle = fields.get(3).copied().unwrap_or(0) + fields.get(4).copied().unwrap_or(0);
    Some(CpuTimes {
        busy: total.saturating_sub(idle),
        total,
    })
}

/// The CPU times now.
pub fn cpu_times() -> std::io::Result<CpuTimes> {
    let text = std::fs::read_to_string("/proc/stat")?;
    parse_cpu_times(&text).ok_or_else(|| std::io::Error::other("/proc/stat has no cpu line"))
}

/// Memory figures of `/proc/meminfo`, in KiB.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Memory {
    /// `MemTotal`.
    pub total_kib: u64,
    /// `MemAvailable`.
    pub available_kib: u64,
}

impl Memory {
    /// What is in use: total less available (the machine's working set).
    pub fn used_kib(&self) -> u64 {
        self.total_kib.saturating_sub(self.available_kib)
    }
}

/// Parses `/proc/meminfo`.
pub fn parse_meminfo(text: &str) -> Option<Memory> {
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim_start_matches(':').split_whitespace().next())
            .and_then(|v| v.parse().ok())
    };
    Some(Memory {
        total_kib: field("MemTotal")?,
        available_kib: field("MemAvailable")?,
    })
}

/// The memory figures now.
pub fn memory() -> std::io::Result<Memory> {
    let text = std::fs::read_to_string("/proc/meminfo")?;
    parse_meminfo(&text)
        .ok_or_else(|| std::io::Error::other("/proc/meminfo lacks MemTotal or MemAvailable"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_line() {
        let stat = "cpu  100 5 50 1000 20 1 2 3 7 0\ncpu0 50 2 25 500 10 0 1 1 0 0\n";
        let t = parse_cpu_times(stat).unwrap();
        assert_eq!(t.total, 100 + 5 + 50 + 1000 + 20 + 1 + 2 + 3);
        assert_eq!(t.busy, t.total - 1020);
        assert_eq!(parse_cpu_times("intr 1\n"), None);
    }

    #[test]
    fn meminfo() {
        let text = "MemTotal:        8000000 kB\nMemFree:  100 kB\nMemAvailable:    6000000 kB\n";
        let m = parse_meminfo(text).unwrap();
        assert_eq!(
            (m.total_kib, m.available_kib, m.used_kib()),
            (8000000, 6000000, 2000000)
        );
        assert_eq!(parse_meminfo("MemTotal: 1 kB\n"), None);
    }

    #[test]
    fn this_machine() {
        let t = cpu_times().unwrap();
        assert!(t.total > 0 && t.busy <= t.total);
        let m = memory().unwrap();
        assert!(m.total_kib > 0 && m.used_kib() <= m.total_kib);
    }
}
