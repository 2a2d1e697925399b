//! The committed history: every change the run saw committed, by revision, gathered from the
//! acknowledged writes and from every watch event. Observations of one revision must agree.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use crate::history::{EventType, History, Outcome, Request, Seen, Time};

/// One committed change.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Change {
    /// The object's name.
    pub key: String,
    /// Whether it was deleted (then `value` is its last value).
    pub deleted: bool,
    /// Its value.
    pub value: String,
    /// When the harness first learned of it.
    pub seen: Time,
    /// Who reported it first: `op <id>` or `stream <id>`.
    pub source: String,
}

/// Two observations of one revision that disagree.
#[derive(Clone, Debug, Serialize)]
pub struct Disagreement {
    /// The revision.
    pub rv: u64,
    /// What was recorded first.
    pub first: Change,
    /// What disagrees with it.
    pub other: Change,
}

/// The committed history of a run.
#[derive(Clone, Debug, Default)]
pub struct Committed {
    /// Changes by revision.
    pub changes: BTreeMap<u64, Change>,
    /// Values by the revision they were committed at (puts only).
    pub put_at: HashMap<String, u64>,
    /// When each value was first seen anywhere (an answer, a read, an event).
    pub first_seen: HashMap<String, Time>,
    /// Disagreeing observations.
    pub disagreements: Vec<Disagreement>,
}

impl Committed {
    /// Gathers the committed history of `history`.
    pub fn gather(history: &History) -> Committed {
        let mut c = Committed::default();
        for op in &history.operations {
            let source = format!("op {}", op.id);
            match (&op.request, &op.outcome) {
                (
                    Request::Create { .. }
                    | Request::Update { .. }
                    | Request::Patch { .. }
                    | Request::Apply { .. },
                    Outcome::Object(seen),
                ) => {
                    c.record(
                        seen.rv,
                        Change {
                            key: seen.key.clone(),
                            deleted: false,
                            value: seen.value.clone(),
                            seen: op.ret,
                            source,
                        },
                    );
                }
                // A read of a value at a revision: that value was put at that revision.
                (Request::Get { .. }, Outcome::Object(seen)) => c.read(seen, op.ret, &source),
                (Request::List { .. }, Outcome::List { items, .. }) => {
                    for item in items {
                        c.read(item, op.ret, &source);
                    }
                }
                _ => {}
            }
        }
        for stream in &history.streams {
            for ev in &stream.events {
                let deleted = match ev.kind {
                    EventType::Added | EventType::Modified => false,
                    EventType::Deleted => true,
                    EventType::Bookmark | EventType::Error => continue,
                };
                if ev.initial && !deleted {
                    // The state at the start: a read.
                    let seen = Seen {
                        key: ev.key.clone(),
                        rv: ev.rv,
                        value: ev.value.clone(),
                    };
                    c.read(&seen, ev.at, &format!("stream {}", stream.id));
                    continue;
                }
                c.record(
                    ev.rv,
                    Change {
                        key: ev.key.clone(),
                        deleted,
                        value: ev.value.clone(),
                        seen: ev.at,
                        source: format!("stream {}", stream.id),
                    },
                );
            }
        }
        c
    }

    fn read(&mut self, seen: &Seen, at: Time, source: &str) {
        self.record(
            seen.rv,
            Change {
                key: seen.key.clone(),
                deleted: false,
                value: seen.value.clone(),
                seen: at,
                source: source.to_string(),
            },
        );
    }

    fn saw(&mut self, value: &str, at: Time) {
        let t = self.first_seen.entry(value.to_string()).or_insert(at);
        *t = (*t).min(at);
    }

    fn record(&mut self, rv: u64, change: Change) {
        self.saw(&change.value, change.seen);
        if !change.deleted {
            self.put_at.entry(change.value.clone()).or_insert(rv);
        }
        match self.changes.get_mut(&rv) {
            None => {
                self.changes.insert(rv, change);
            }
            Some(first) => {
                if first.key != change.key
                    || first.deleted != change.deleted
                    || first.value != change.value
                {
                    self.disagreements.push(Disagreement {
                        rv,
                        first: first.clone(),
                        other: change,
                    });
                } else if change.seen < first.seen {
                    first.seen = change.seen;
                }
            }
        }
    }

    /// The revisions in `[from, to]` no observation covers.
    pub fn unobserved(&self, from: u64, to: u64) -> u64 {
        if to < from {
            return 0;
        }
        let seen = self.changes.range(from..=to).count() as u64;
        (to - from + 1) - seen
    }

    /// The revision of the last observed change of `key` at or before `rv`, if any.
    pub fn last_change_at(&self, key: &str, rv: u64) -> Option<u64> {
        self.changes
            .range(..=rv)
            .rev()
            .find(|(_, c)| c.key == key)
            .map(|(&r, _)| r)
    }

    /// Whether some observation covers revision `rv`.
    pub fn observed(&self, rv: u64) -> bool {
        self.changes.contains_key(&rv)
    }

    /// The state of `key` after every change up to `rv`: its revision and value, or `None`.
    pub fn state_at(&self, key: &str, rv: u64) -> Option<(u64, &str)> {
        self.changes
            .range(..=rv)
            .rev()
            .find(|(_, c)| c.key == key)
            .and_then(|(&r, c)| (!c.deleted).then_some((r, c.value.as_str())))
    }
}
