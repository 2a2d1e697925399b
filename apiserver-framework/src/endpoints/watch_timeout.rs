//! The lifetime of watches that do not ask for one (`--min-request-timeout`).

use std::time::Duration;

use rand::Rng;

/// The lifetime of a watch when `--min-request-timeout` is 0, and the longest any watch
/// lasts: ten years.
const NEVER_SECS: u64 = crate::registry::store::MAX_WATCH_TIMEOUT.as_secs();

/// `--min-request-timeout`, carried in a request's extensions to the watch handler: a watch
/// without `timeoutSeconds` lasts a random time in `[min, 2*min)`, as upstream spreads
/// reconnects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct MinRequestTimeout(pub Duration);

impl Default for MinRequestTimeout {
    /// Upstream's default, 1800 s.
    fn default() -> Self {
        MinRequestTimeout(Duration::from_secs(1800))
    }
}

impl MinRequestTimeout {
    /// A watch lifetime in whole seconds, at least 1: `min * (1 + r)` with `r` in `[0, 1)`.
    /// A zero minimum means watches do not end on their own (ten years here).
    pub fn pick_seconds(&self) -> u64 {
        if self.0.is_zero() {
            return NEVER_SECS;
        }
        let factor: f64 = rand::rng().random_range(1.0..2.0);
        ((self.0.as_secs_f64() * factor) as u64).clamp(1, NEVER_SECS)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picks_within_range() {
        let t = MinRequestTimeout(Duration::from_secs(10));
        for _ in 0..200 {
            let s = t.pick_seconds();
            assert!((10..20).contains(&s), "{s}");
        }
        assert_eq!(
            MinRequestTimeout(Duration::from_millis(100)).pick_seconds(),
            1
        );
        assert_eq!(MinRequestTimeout(Duration::ZERO).pick_seconds(), NEVER_SECS);
        assert_eq!(MinRequestTimeout::default().0.as_secs(), 1800);
        // A huge minimum is cut to the longest watch (a deadline that does not overflow).
        assert_eq!(
            MinRequestTimeout(Duration::from_secs(u64::MAX)).pick_seconds(),
            NEVER_SECS
        );
    }
}
