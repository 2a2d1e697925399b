//! `AcceptBackoff`: how long the listener waits after `accept` fails, as Go's `net/http`
//! server does: 5 ms, doubling up to 1 s, reset by the next success. Without it, an `accept`
//! failing at once and forever (`EMFILE`: no descriptor left) spins a core.

use std::io;
use std::time::Duration;

const FIRST: Duration = Duration::from_millis(5);
const MAX: Duration = Duration::from_secs(1);

/// The delay before the next `accept` after failures.
#[derive(Debug, Default)]
pub(crate) struct AcceptBackoff {
    delay: Option<Duration>,
}

impl AcceptBackoff {
    /// An `accept` failed: how long to wait before the next.
    pub fn failed(&mut self) -> Duration {
        let next = match self.delay {
            None => FIRST,
            Some(d) => (d * 2).min(MAX),
        };
        self.delay = Some(next);
        next
    }

    /// An `accept` succeeded.
    pub fn succeeded(&mut self) {
        self.delay = None;
    }
}

/// Whether `error` means the process or the system ran out of descriptors (`EMFILE`,
/// `ENFILE`).
pub(crate) fn out_of_descriptors(error: &io::Error) -> bool {
    // EMFILE is 24 and ENFILE 23 on Linux, the BSDs and macOS.
    cfg!(unix) && matches!(error.raw_os_error(), Some(23 | 24))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_up_to_a_second() {
        let mut b = AcceptBackoff::default();
        let delays: Vec<_> = (0..10).map(|_| b.failed().as_millis()).collect();
        assert_eq!(delays, [5, 10, 20, 40, 80, 160, 320, 640, 1000, 1000]);
        b.succeeded();
        assert_eq!(b.failed(), FIRST);
    }

    #[cfg(unix)]
    #[test]
    fn descriptor_exhaustion() {
        assert!(out_of_descriptors(&io::Error::from_raw_os_error(24)));
        assert!(out_of_descriptors(&io::Error::from_raw_os_error(23)));
        assert!(!out_of_descriptors(&io::Error::from_raw_os_error(103)));
    }
}
