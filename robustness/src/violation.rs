//! The properties the checker checks, and what it reports when one fails.

use serde::Serialize;

/// A property of the history.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Property {
    /// Per key, the acknowledged writes and the reads are linearizable against a
    /// compare-and-set register with revisions.
    Linearizability,
    /// A watch stream is strictly ordered by resourceVersion, without duplicates.
    WatchOrder,
    /// A watch stream misses no committed change of the keys it selects (between where it
    /// started and the last revision it reached), and delivers each as committed.
    WatchGap,
    /// A watch resumed from a revision continues exactly after it, or gets 410 Expired.
    WatchResume,
    /// After the run, the state equals the model's.
    FinalState,
}

impl Property {
    /// Every property.
    pub const ALL: [Property; 5] = [
        Property::Linearizability,
        Property::WatchOrder,
        Property::WatchGap,
        Property::WatchResume,
        Property::FinalState,
    ];

    /// Its name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Property::Linearizability => "linearizability",
            Property::WatchOrder => "watch-order",
            Property::WatchGap => "watch-gap",
            Property::WatchResume => "watch-resume",
            Property::FinalState => "final-state",
        }
    }
}

impl std::fmt::Display for Property {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// One failed property, with the smallest evidence the checker found.
#[derive(Clone, Debug, Serialize)]
pub struct Violation {
    /// The property.
    pub property: Property,
    /// The key it concerns, if one.
    pub key: Option<String>,
    /// The watch stream it concerns, if one.
    pub stream: Option<u64>,
    /// What is wrong, in one line.
    pub message: String,
    /// The minimal failing history (operations of the key, or the stream's events around the
    /// problem with the committed changes there).
    pub evidence: serde_json::Value,
}
