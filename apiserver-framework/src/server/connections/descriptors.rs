//! The process's open-files limit, and how many connections fit within it.
//!
//! Every connection holds a descriptor. When they run out, `accept` fails with `EMFILE`
//! (the waiting connections stay queued in the kernel, `/readyz` among them) and so does
//! every file or connection the server itself opens (storage, webhooks, the host cluster).
//! The listener therefore keeps client connections below the limit, leaving a reserve for
//! the rest of the process.

/// The soft `RLIMIT_NOFILE` of this process, read from `/proc/self/limits` (Linux); `None`
/// where there is no such file, or when the limit is `unlimited`.
pub fn open_files_limit() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/limits").ok()?;
    soft_open_files(&text)
}

/// The soft limit of the `Max open files` line of a `/proc/<pid>/limits` text.
fn soft_open_files(limits: &str) -> Option<u64> {
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    let soft = line["Max open files".len()..].split_whitespace().next()?;
    soft.parse().ok()
}

/// The descriptors kept for the process itself under a limit of `limit`: an eighth, at
/// least 64 and at most 4096.
pub(crate) fn reserve(limit: u64) -> u64 {
    (limit / 8).clamp(64, 4096)
}

/// How many client connections may be open under an open-files limit of `limit`: the limit
/// less [`reserve`], and at least 16.
pub(crate) fn connections_within(limit: u64) -> usize {
    usize::try_from(limit.saturating_sub(reserve(limit)).max(16)).unwrap_or(usize::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: &str = "Limit                     Soft Limit           Hard Limit           Units     \n\
        Max cpu time              unlimited            unlimited            seconds   \n\
        Max open files            256                  4096                 files     \n\
        Max locked memory         8388608              8388608              bytes     \n";

    #[test]
    fn reads_the_soft_limit() {
        assert_eq!(soft_open_files(LIMITS), Some(256));
        let unlimited = LIMITS.replace("256                  4096", "unlimited  unlimited");
        assert_eq!(soft_open_files(&unlimited), None);
        assert_eq!(soft_open_files("Max cpu time  1  1  seconds"), None);
    }

    #[test]
    fn leaves_a_reserve() {
        assert_eq!(connections_within(256), 192);
        assert_eq!(connections_within(1024), 896);
        assert_eq!(connections_within(1 << 20), (1 << 20) - 4096);
        assert_eq!(connections_within(50), 16);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn this_process_has_a_limit() {
        assert!(open_files_limit().is_some_and(|n| n > 0));
    }
}
