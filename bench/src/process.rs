//! The server processes of a run: spawning them, and what `/proc` says of their CPU time and
//! resident memory.

use std::net::{SocketAddr, TcpListener};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use http::{Method, StatusCode};

use crate::client::{self, Target};

/// The environment variable that makes the bench binary run a server instead of the bench.
pub const ROLE_ENV: &str = "APISERVER_BENCH_ROLE";

/// When set (to anything but `0`), the baseline gathers its HTTP/2 writes as wardle's server
/// does (`BatchedWrites`), to tell that gain from the rest of wardle's: a run to compare, not
/// the benchmark's baseline, and its report says so.
pub const BASELINE_BATCHED_ENV: &str = "APISERVER_BENCH_BASELINE_BATCHED_WRITES";

/// Whether [`BASELINE_BATCHED_ENV`] asks the baseline to batch its HTTP/2 writes.
pub fn baseline_batched() -> bool {
    std::env::var(BASELINE_BATCHED_ENV).is_ok_and(|v| !v.is_empty() && v != "0")
}

/// `/proc/<pid>/stat` counts CPU time in clock ticks of `USER_HZ`, 100 on Linux.
const TICKS_PER_SECOND: f64 = 100.0;

/// A child process, killed when dropped.
pub struct Proc {
    child: Child,
    /// Its process id.
    pub pid: u32,
    /// When it was spawned.
    pub spawned: Instant,
}

impl Proc {
    /// Runs this binary again as `role` (`wardle` or `baseline`) with `args`, in `dir`, its
    /// output appended to `log`.
    pub fn role(role: &str, args: &[String], dir: &Path, log: &Path) -> std::io::Result<Self> {
        let exe = std::env::current_exe()?;
        let mut command = Command::new(exe);
        command.env(ROLE_ENV, role);
        Self::spawn(command, args, dir, log)
    }

    /// Runs `command` with `args` in `dir`, its output appended to `log`.
    pub fn spawn(
        mut command: Command,
        args: &[String],
        dir: &Path,
        log: &Path,
    ) -> std::io::Result<Self> {
        let out = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)?;
        command
            .args(args)
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(out.try_clone()?)
            .stderr(out);
        let spawned = Instant::now();
        let child = command.spawn()?;
        Ok(Proc {
            pid: child.id(),
            child,
            spawned,
        })
    }

    /// Whether it has exited, and how.
    pub fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// Waits until `/readyz` answers 200 on `target`, polling every millisecond, and returns the
    /// time since the spawn.
    pub async fn wait_ready(
        &mut self,
        target: &Target,
        within: Duration,
    ) -> Result<Duration, String> {
        let deadline = self.spawned + within;
        loop {
            if let Some(status) = self.exited() {
                return Err(format!("the server exited ({status}) before it was ready"));
            }
            if let Ok(mut sender) = target.connect().await {
                let request = target.request(Method::GET, "/readyz", Default::default());
                if let Ok((StatusCode::OK, _)) = client::send(&mut sender, request).await {
                    return Ok(self.spawned.elapsed());
                }
            }
            if Instant::now() > deadline {
                return Err(format!("not ready within {within:?}"));
            }
            // The measured subject is the time to ready: polled every millisecond, on purpose.
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A loopback address whose port was free a moment ago.
pub fn free_addr() -> SocketAddr {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free loopback port")
}

/// The user plus system CPU time of process `pid` and all its threads, in seconds.
pub fn cpu_seconds(pid: u32) -> f64 {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return 0.0;
    };
    // Fields after the command name, which is in parentheses and may hold spaces: state is the
    // first, utime the 12th, stime the 13th.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0)
    };
    (ticks(11) + ticks(12)) as f64 / TICKS_PER_SECOND
}

/// The resident set size of process `pid` in bytes (`VmRSS`).
pub fn rss_bytes(pid: u32) -> u64 {
    status_bytes(pid, "VmRSS:")
}

/// The resident anonymous memory of process `pid` in bytes (`RssAnon`): its heap and stacks,
/// without the pages of its executable and other files, which the kernel can reclaim and
/// which moving code around changes.
pub fn anon_bytes(pid: u32) -> u64 {
    status_bytes(pid, "RssAnon:")
}

/// A `kB` field of `/proc/<pid>/status` in bytes, 0 where it cannot be read.
fn status_bytes(pid: u32, field: &str) -> u64 {
    let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
        return 0;
    };
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kib| kib * 1024)
}

/// The write system calls process `pid` has made so far (`syscw` of `/proc/<pid>/io`: `write`,
/// `writev` and the like), 0 where it cannot be read.
pub fn write_calls(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/io"))
        .ok()
        .and_then(|io| {
            io.lines()
                .find_map(|l| l.strip_prefix("syscw:"))
                .and_then(|v| v.trim().parse().ok())
        })
        .unwrap_or(0)
}

/// CPU time, write system calls and peak resident memory of some processes over a window of
/// time.
pub struct Probe {
    pids: Vec<u32>,
    cpu_at_start: Vec<f64>,
    writes_at_start: Vec<u64>,
    stop: Arc<AtomicBool>,
    peak: Arc<AtomicU64>,
    sampler: Option<JoinHandle<()>>,
}

/// What a [`Probe`] saw.
#[derive(Clone, Copy, Debug, Default)]
pub struct Usage {
    /// CPU seconds of all the processes together.
    pub cpu_seconds: f64,
    /// CPU seconds of the first process alone (the server under test, without etcd or the
    /// development host).
    pub first_cpu_seconds: f64,
    /// The highest resident memory of the first process, in bytes, sampled every 10 ms.
    pub peak_rss: u64,
    /// Write system calls of all the processes together.
    pub write_calls: u64,
    /// Write system calls of the first process alone.
    pub first_write_calls: u64,
}

impl Probe {
    /// Starts watching `pids`; the first one's memory is sampled.
    pub fn start(pids: &[u32]) -> Self {
        let pids = pids.to_vec();
        let cpu_at_start = pids.iter().map(|p| cpu_seconds(*p)).collect();
        let writes_at_start = pids.iter().map(|p| write_calls(*p)).collect();
        let stop = Arc::new(AtomicBool::new(false));
        let peak = Arc::new(AtomicU64::new(pids.first().map_or(0, |p| rss_bytes(*p))));
        let sampler = pids.first().copied().map(|pid| {
            let (stop, peak) = (stop.clone(), peak.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    peak.fetch_max(rss_bytes(pid), Ordering::Relaxed);
                    // The measured subject: the peak RSS, sampled every 10 ms on purpose.
                    std::thread::sleep(Duration::from_millis(10));
                }
            })
        });
        Probe {
            pids,
            cpu_at_start,
            writes_at_start,
            stop,
            peak,
            sampler,
        }
    }

    /// Stops watching and returns what was seen.
    pub fn finish(mut self) -> Usage {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(sampler) = self.sampler.take() {
            let _ = sampler.join();
        }
        let spent: Vec<f64> = self
            .pids
            .iter()
            .zip(&self.cpu_at_start)
            .map(|(p, start)| cpu_seconds(*p) - start)
            .collect();
        let writes: Vec<u64> = self
            .pids
            .iter()
            .zip(&self.writes_at_start)
            .map(|(p, start)| write_calls(*p).saturating_sub(*start))
            .collect();
        if let Some(pid) = self.pids.first() {
            self.peak.fetch_max(rss_bytes(*pid), Ordering::Relaxed);
        }
        Usage {
            cpu_seconds: spent.iter().sum(),
            first_cpu_seconds: spent.first().copied().unwrap_or(0.0),
            peak_rss: self.peak.load(Ordering::Relaxed),
            write_calls: writes.iter().sum(),
            first_write_calls: writes.first().copied().unwrap_or(0),
        }
    }
}

/// The machine's CPU time so far, all cores together, in clock ticks (`/proc/stat`): the
/// total and the part the hypervisor gave to other guests (`steal`).
#[derive(Clone, Copy, Debug, Default)]
pub struct MachineCpu {
    total: u64,
    stolen: u64,
}

impl MachineCpu {
    /// Reads `/proc/stat`; `None` where it is missing or has no `steal` column.
    pub fn read() -> Option<Self> {
        let stat = std::fs::read_to_string("/proc/stat").ok()?;
        parse_cpu_line(stat.lines().next()?)
    }

    /// The percentage of the machine's CPU time stolen between `earlier` and `self`.
    pub fn stolen_percent_since(&self, earlier: &MachineCpu) -> Option<f64> {
        let total = self.total.checked_sub(earlier.total)?;
        let stolen = self.stolen.checked_sub(earlier.stolen)?;
        (total > 0).then(|| 100.0 * stolen as f64 / total as f64)
    }
}

/// The `cpu` line of `/proc/stat`: user, nice, system, idle, iowait, irq, softirq, steal, …
/// (guest time is already counted in user time, so only the first eight are added up).
fn parse_cpu_line(line: &str) -> Option<MachineCpu> {
    let mut fields = line.split_whitespace();
    if fields.next()? != "cpu" {
        return None;
    }
    let ticks: Vec<u64> = fields
        .take(8)
        .map(|f| f.parse().ok())
        .collect::<Option<_>>()?;
    let stolen = *ticks.get(7)?;
    Some(MachineCpu {
        total: ticks.iter().sum(),
        stolen,
    })
}

/// The machine's load average over 1, 5 and 15 minutes (`/proc/loadavg`).
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

/// Raises this process's soft limit of open files to its hard limit; the server processes
/// spawned afterwards inherit it. Returns the new soft limit.
pub fn raise_open_files() -> std::io::Result<u64> {
    rlimit::increase_nofile_limit(u64::MAX)
}

/// The soft limit of open files of process `pid` (`/proc/<pid>/limits`).
pub fn open_files_limit(pid: u32) -> Option<u64> {
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).ok()?;
    limits
        .lines()
        .find(|l| l.starts_with("Max open files"))?
        .split_whitespace()
        .nth(3)?
        .parse()
        .ok()
}

/// How many established TCP connections process `pid` holds to loopback port `port`: its
/// socket descriptors matched against `/proc/<pid>/net/tcp` and `tcp6`.
pub fn connections_to(pid: u32, port: u16) -> usize {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return 0;
    };
    let inodes: std::collections::HashSet<String> = fds
        .filter_map(|fd| std::fs::read_link(fd.ok()?.path()).ok())
        .filter_map(|link| {
            let link = link.to_string_lossy().into_owned();
            Some(
                link.strip_prefix("socket:[")?
                    .strip_suffix(']')?
                    .to_string(),
            )
        })
        .collect();
    let port = format!("{port:04X}");
    ["tcp", "tcp6"]
        .iter()
        .filter_map(|t| std::fs::read_to_string(format!("/proc/{pid}/net/{t}")).ok())
        .map(|table| {
            table
                .lines()
                .skip(1)
                .filter(|line| {
                    // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
                    let f: Vec<&str> = line.split_whitespace().collect();
                    f.len() > 9
                        && f[2].rsplit(':').next() == Some(port.as_str())
                        && f[3] == "01"
                        && inodes.contains(f[9])
                })
                .count()
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cpu_line_adds_up_eight_columns_and_keeps_steal() {
        let cpu = parse_cpu_line("cpu  100 5 20 800 10 0 15 50 7 0").expect("a cpu line");
        assert_eq!((cpu.total, cpu.stolen), (1000, 50));
        assert!(parse_cpu_line("cpu0 1 2 3 4 5 6 7 8").is_none());
        assert!(parse_cpu_line("cpu  1 2 3 4").is_none(), "no steal column");
    }

    #[test]
    fn stolen_time_is_a_share_of_the_interval() {
        let start = parse_cpu_line("cpu  100 0 0 800 0 0 0 100").expect("a cpu line");
        let end = parse_cpu_line("cpu  400 0 0 1300 0 0 0 300").expect("a cpu line");
        assert_eq!(end.stolen_percent_since(&start), Some(20.0));
        assert_eq!(start.stolen_percent_since(&start), None, "no time passed");
        assert_eq!(start.stolen_percent_since(&end), None, "counters went back");
    }

    /// Write system calls are counted from `/proc/<pid>/io`: this process's count grows by
    /// its writes, and a process that does not exist counts none.
    #[test]
    fn write_calls_count_a_process_writes() {
        use std::io::Write as _;
        let me = std::process::id();
        let before = write_calls(me);
        let mut file = tempfile::tempfile().expect("a temporary file");
        for _ in 0..10 {
            file.write_all(b"x").expect("a write");
        }
        assert!(write_calls(me) >= before + 10, "ten writes counted");
        assert_eq!(write_calls(u32::MAX), 0, "no such process");
    }
}
