//! The model one key is checked against: a compare-and-set register with revisions.
//!
//! The register is absent or holds a value at a revision. Every write that takes effect moves
//! it to a revision greater than any it had before (revisions are global and strictly
//! increasing, so one key's revisions strictly increase too). Creates need it absent, updates
//! and deletes need it present and, with a precondition, at that revision.
//!
//! Outcomes may be unknown ([`Output::Maybe`]): such an operation may or may not have taken
//! effect, so the model is nondeterministic, and the checker follows a set of states.

use serde::Serialize;

use crate::history::Time;

/// A value of the key, interned per key (values are unique in a run).
pub type ValueId = u32;

/// What a key operation asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Input {
    /// A read (get, or one key of a list).
    Read,
    /// Create if absent.
    Create {
        /// The value written.
        value: ValueId,
    },
    /// Replace (PUT or a patch), with a resourceVersion precondition or none.
    Update {
        /// The value written.
        value: ValueId,
        /// The revision the key must be at.
        precondition: Option<u64>,
        /// A PUT (which needs a resourceVersion) rather than a patch.
        put: bool,
    },
    /// Server-side apply: create or replace.
    Apply {
        /// The value written.
        value: ValueId,
    },
    /// Delete, with a resourceVersion precondition or none.
    Delete {
        /// The revision the key must be at.
        precondition: Option<u64>,
    },
}

/// What came back, as the model sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Output {
    /// A read saw the key at `rv` with `value`.
    Present {
        /// The revision.
        rv: u64,
        /// The value.
        value: ValueId,
    },
    /// A read found no key.
    Absent,
    /// A write took effect at revision `rv` (its value is the input's).
    Written {
        /// The new revision.
        rv: u64,
    },
    /// A delete took effect.
    Deleted,
    /// A definite refusal with this HTTP status code: nothing changed.
    Refused {
        /// The status code.
        code: u16,
    },
    /// Unknown: may or may not have taken effect.
    Maybe,
}

/// One operation on one key, for the linearizability check.
#[derive(Clone, Debug, Serialize)]
pub struct KeyOp {
    /// The recorded operation it comes from.
    pub op: u64,
    /// What it asked.
    pub input: Input,
    /// What came back.
    pub output: Output,
    /// When it was invoked.
    pub call: Time,
    /// When it returned ([`crate::history::NEVER`] when unknown).
    pub ret: Time,
}

/// The register's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum State {
    /// No key; every later write's revision is greater than `floor`.
    Absent {
        /// A revision every later write exceeds.
        floor: u64,
    },
    /// The key holds `value` at revision `rv` (`exact`) or at some revision greater than `rv`
    /// (a write of unknown outcome took effect).
    Present {
        /// The revision, or its strict lower bound.
        rv: u64,
        /// Whether `rv` is the revision itself.
        exact: bool,
        /// The value.
        value: ValueId,
    },
}

/// The state before the run: absent.
pub const INITIAL: State = State::Absent { floor: 0 };

impl State {
    /// The revision any later write must exceed.
    fn floor(self) -> u64 {
        match self {
            State::Absent { floor } => floor,
            State::Present { rv, .. } => rv,
        }
    }

    /// Whether the key may be at revision `p`; if so, the state with that revision known.
    fn at(self, p: u64) -> Option<State> {
        match self {
            State::Present {
                rv,
                exact: true,
                value,
            } if rv == p => Some(State::Present {
                rv,
                exact: true,
                value,
            }),
            State::Present {
                rv,
                exact: false,
                value,
            } if p > rv => Some(State::Present {
                rv: p,
                exact: true,
                value,
            }),
            _ => None,
        }
    }

    /// Whether the key may be at some revision other than `p`.
    fn not_at(self, p: u64) -> bool {
        match self {
            State::Present {
                rv, exact: true, ..
            } => rv != p,
            State::Present { exact: false, .. } => true,
            State::Absent { .. } => false,
        }
    }
}

/// The states `op` may lead to from `s` (none: `op` cannot take place in `s`).
pub fn step(s: State, op: &KeyOp, out: &mut Vec<State>) {
    let present = matches!(s, State::Present { .. });
    match (op.input, op.output) {
        (Input::Read, Output::Present { rv, value }) => {
            if let State::Present {
                rv: r,
                exact,
                value: v,
            } = s
                && v == value
                && (if exact { r == rv } else { rv > r })
            {
                out.push(State::Present {
                    rv,
                    exact: true,
                    value,
                });
            }
        }
        // Absent only when the key is absent (not the catch-all below).
        (Input::Read, Output::Absent) => out.extend((!present).then_some(s)),
        (Input::Read, _) => out.push(s),
        (input, Output::Written { rv }) => {
            if let Some(before) = write_allowed(s, input)
                && rv > before.floor()
                && let Some(value) = written_value(input)
            {
                out.push(State::Present {
                    rv,
                    exact: true,
                    value,
                });
            }
        }
        (Input::Delete { precondition }, Output::Deleted) => {
            if let Some(before) = delete_allowed(s, precondition) {
                out.push(State::Absent {
                    floor: before.floor() + 1,
                });
            }
        }
        (input, Output::Refused { code }) => {
            out.extend(refusal_allowed(s, input, code).then_some(s))
        }
        (input, Output::Maybe) => {
            out.push(s);
            match input {
                Input::Delete { precondition } => {
                    if let Some(before) = delete_allowed(s, precondition) {
                        out.push(State::Absent {
                            floor: before.floor() + 1,
                        });
                    }
                }
                _ => {
                    if let Some(before) = write_allowed(s, input)
                        && let Some(value) = written_value(input)
                    {
                        out.push(State::Present {
                            rv: before.floor(),
                            exact: false,
                            value,
                        });
                    }
                }
            }
        }
        // A write answered as a read, or a delete answered with an object: never allowed.
        _ => {}
    }
}

fn written_value(input: Input) -> Option<ValueId> {
    match input {
        Input::Create { value } | Input::Update { value, .. } | Input::Apply { value } => {
            Some(value)
        }
        _ => None,
    }
}

/// The state a write may take effect in (with a precondition's revision made known).
fn write_allowed(s: State, input: Input) -> Option<State> {
    match (input, s) {
        (Input::Create { .. }, State::Absent { .. }) => Some(s),
        (Input::Apply { .. }, _) => Some(s),
        (
            Input::Update {
                precondition: Some(p),
                ..
            },
            _,
        ) => s.at(p),
        (
            Input::Update {
                precondition: None,
                put: false,
                ..
            },
            State::Present { .. },
        ) => Some(s),
        _ => None,
    }
}

/// The state a delete may take effect in.
fn delete_allowed(s: State, precondition: Option<u64>) -> Option<State> {
    match (precondition, s) {
        (_, State::Absent { .. }) => None,
        (Some(p), _) => s.at(p),
        (None, _) => Some(s),
    }
}

/// Whether a refusal with `code` is a right answer to `input` in `s`.
fn refusal_allowed(s: State, input: Input, code: u16) -> bool {
    let present = matches!(s, State::Present { .. });
    match (code, input) {
        (404, Input::Apply { .. }) => false,
        (404, _) => !present,
        (409, Input::Create { .. }) => present,
        // An apply that creates and loses a race with another create applies to the object
        // that now exists (as upstream): a 409 is a patch that kept losing races, on an object
        // that exists. (The harness applies with force: no field conflicts.)
        (409, Input::Apply { .. }) => present,
        (
            409,
            Input::Update {
                precondition: Some(p),
                ..
            }
            | Input::Delete {
                precondition: Some(p),
            },
        ) => s.not_at(p),
        // A patch that kept losing races.
        (
            409,
            Input::Update {
                precondition: None,
                put: false,
                ..
            },
        ) => present,
        // Never otherwise: a delete without a precondition reads the object again when a
        // write raced with it, as upstream's; a PUT without a resourceVersion is a 422.
        (409, _) => false,
        // A PUT without a resourceVersion is refused when the object exists.
        (
            422,
            Input::Update {
                precondition: None,
                put: true,
                ..
            },
        ) => present,
        // Any other refusal (throttling, validation) changes nothing, whatever the state.
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(input: Input, output: Output) -> KeyOp {
        KeyOp {
            op: 0,
            input,
            output,
            call: 0,
            ret: 1,
        }
    }

    fn next(s: State, input: Input, output: Output) -> Vec<State> {
        let mut out = Vec::new();
        step(s, &op(input, output), &mut out);
        out
    }

    #[test]
    fn a_compare_and_set_needs_the_revision() {
        let s = State::Present {
            rv: 5,
            exact: true,
            value: 1,
        };
        let cas = |p| Input::Update {
            value: 2,
            precondition: Some(p),
            put: true,
        };
        assert_eq!(
            next(s, cas(5), Output::Written { rv: 7 }),
            vec![State::Present {
                rv: 7,
                exact: true,
                value: 2
            }]
        );
        assert!(next(s, cas(4), Output::Written { rv: 7 }).is_empty());
        assert!(next(s, cas(5), Output::Refused { code: 409 }).is_empty());
        assert_eq!(next(s, cas(4), Output::Refused { code: 409 }), vec![s]);
        // Revisions only grow.
        assert!(next(s, cas(5), Output::Written { rv: 5 }).is_empty());
    }

    #[test]
    fn an_unknown_write_may_or_may_not_take_effect() {
        let s = State::Absent { floor: 3 };
        let states = next(s, Input::Create { value: 9 }, Output::Maybe);
        assert_eq!(
            states,
            vec![
                s,
                State::Present {
                    rv: 3,
                    exact: false,
                    value: 9
                }
            ]
        );
        // A later read pins its revision.
        assert_eq!(
            next(states[1], Input::Read, Output::Present { rv: 8, value: 9 }),
            vec![State::Present {
                rv: 8,
                exact: true,
                value: 9
            }]
        );
        assert!(next(states[1], Input::Read, Output::Present { rv: 3, value: 9 }).is_empty());
    }

    #[test]
    fn deletes_and_creates() {
        let s = State::Present {
            rv: 5,
            exact: true,
            value: 1,
        };
        let gone = next(s, Input::Delete { precondition: None }, Output::Deleted);
        assert_eq!(gone, vec![State::Absent { floor: 6 }]);
        assert!(
            next(
                gone[0],
                Input::Create { value: 2 },
                Output::Written { rv: 6 }
            )
            .is_empty()
        );
        assert_eq!(
            next(
                gone[0],
                Input::Create { value: 2 },
                Output::Written { rv: 7 }
            )
            .len(),
            1
        );
        assert!(
            next(
                s,
                Input::Delete {
                    precondition: Some(4)
                },
                Output::Deleted
            )
            .is_empty()
        );
        assert!(next(s, Input::Read, Output::Absent).is_empty());
        assert!(next(s, Input::Create { value: 3 }, Output::Refused { code: 404 }).is_empty());
    }

    #[test]
    fn conflicts_only_where_upstream_answers_them() {
        let present = State::Present {
            rv: 5,
            exact: true,
            value: 1,
        };
        let absent = State::Absent { floor: 5 };
        let conflict = Output::Refused { code: 409 };
        // A delete without a precondition retries a racing write instead.
        assert!(next(present, Input::Delete { precondition: None }, conflict).is_empty());
        // An apply that raced with a create applies to the created object instead; a patch
        // that kept losing races still may, on an object that exists.
        assert!(next(absent, Input::Apply { value: 2 }, conflict).is_empty());
        assert_eq!(
            next(present, Input::Apply { value: 2 }, conflict),
            vec![present]
        );
        let patch = Input::Update {
            value: 2,
            precondition: None,
            put: false,
        };
        assert_eq!(next(present, patch, conflict), vec![present]);
        assert!(next(absent, patch, conflict).is_empty());
        assert_eq!(
            next(present, Input::Create { value: 2 }, conflict),
            vec![present]
        );
        let put = Input::Update {
            value: 2,
            precondition: None,
            put: true,
        };
        assert!(next(present, put, conflict).is_empty());
    }
}
