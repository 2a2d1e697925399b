//! The linearizability check of one key's history: the Wing–Gong search with Lowe's
//! memoization (as porcupine implements it), hand-written because no Rust crate checks
//! histories against a model of one's own.
//!
//! Calls and returns are ordered by time in a linked list. The search walks it from the head:
//! a call whose operation the model accepts in the current states is linearized (taken out of
//! the list, pushed on a stack); a return reached before its operation was linearized means
//! the choices so far were wrong, so the last one is undone. A cache of (linearized set, states)
//! pairs already explored prunes the search, and a bound on steps keeps it finite: a history
//! that needs more is reported as inconclusive, never as linearizable.
//!
//! [`minimize`] cuts a failing history down to a small one that still fails, by weakening it
//! only (cutting at a time, dropping reads and refusals, making writes unknown), so the small
//! history failing proves the whole one does.

use std::collections::HashSet;

use serde::Serialize;

use crate::history::{NEVER, Time};
use crate::model::{INITIAL, Input, KeyOp, Output, State, step};

/// The search's answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub enum Verdict {
    /// A linearization exists.
    Linearizable,
    /// None exists.
    NotLinearizable {
        /// The most operations any partial linearization ordered.
        longest: usize,
        /// An operation (its index in the checked slice) whose return was reached before it
        /// could be linearized, at that longest point.
        stuck: usize,
    },
    /// The search took more than its bound of steps.
    Inconclusive {
        /// The steps taken.
        steps: u64,
    },
}

/// The default bound on search steps for one key.
pub const DEFAULT_STEP_LIMIT: u64 = 20_000_000;

const NIL: usize = usize::MAX;

#[derive(Clone, Copy)]
struct Node {
    op: usize,
    call: bool,
    prev: usize,
    next: usize,
    /// The call's return node (for calls).
    ret: usize,
}

/// Which operations are linearized: all below `watermark`, and those in `above`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
struct Linearized {
    watermark: u32,
    above: Vec<u32>,
}

impl Linearized {
    fn insert(&mut self, i: u32) {
        if i == self.watermark {
            self.watermark += 1;
            while self.above.first() == Some(&self.watermark) {
                self.above.remove(0);
                self.watermark += 1;
            }
        } else {
            let at = self.above.partition_point(|&x| x < i);
            self.above.insert(at, i);
        }
    }

    fn remove(&mut self, i: u32) {
        if i < self.watermark {
            let moved: Vec<u32> = (i + 1..self.watermark).collect();
            self.above.splice(0..0, moved);
            self.watermark = i;
        } else if let Ok(at) = self.above.binary_search(&i) {
            self.above.remove(at);
        }
    }
}

/// Checks one key's operations (in any order) against the register model from its initial
/// (absent) state, taking at most `limit` steps.
pub fn check(ops: &[KeyOp], limit: u64) -> Verdict {
    check_from(ops, &[INITIAL], limit)
}

/// Checks `ops` starting from any of `initial`.
pub fn check_from(ops: &[KeyOp], initial: &[State], limit: u64) -> Verdict {
    // Operations by call time: the linearized set's watermark follows this order.
    let mut order: Vec<usize> = (0..ops.len()).collect();
    order.sort_by_key(|&i| (ops[i].call, ops[i].ret));
    let ops: Vec<&KeyOp> = order.iter().map(|&i| &ops[i]).collect();

    // Entries: (time, is return, op). At equal times calls come first, so operations that
    // touch at an instant count as concurrent.
    let mut entries: Vec<(Time, bool, usize)> = Vec::with_capacity(ops.len() * 2);
    for (i, op) in ops.iter().enumerate() {
        entries.push((op.call, false, i));
        entries.push((op.ret.max(op.call), true, i));
    }
    entries.sort();
    // Node 0 is the head sentinel.
    let mut nodes = vec![Node {
        op: NIL,
        call: false,
        prev: NIL,
        next: NIL,
        ret: NIL,
    }];
    let mut ret_node = vec![NIL; ops.len()];
    let mut call_node = vec![NIL; ops.len()];
    for &(_, is_ret, op) in &entries {
        let id = nodes.len();
        nodes.push(Node {
            op,
            call: !is_ret,
            prev: id - 1,
            next: NIL,
            ret: NIL,
        });
        nodes[id - 1].next = id;
        if is_ret {
            ret_node[op] = id;
        } else {
            call_node[op] = id;
        }
    }
    for op in 0..ops.len() {
        nodes[call_node[op]].ret = ret_node[op];
    }

    let lift = |nodes: &mut Vec<Node>, n: usize| {
        for id in [n, nodes[n].ret] {
            let Node { prev, next, .. } = nodes[id];
            nodes[prev].next = next;
            if next != NIL {
                nodes[next].prev = prev;
            }
        }
    };
    let unlift = |nodes: &mut Vec<Node>, n: usize| {
        for id in [nodes[n].ret, n] {
            let Node { prev, next, .. } = nodes[id];
            nodes[prev].next = id;
            if next != NIL {
                nodes[next].prev = id;
            }
        }
    };

    let mut states: Vec<State> = initial.to_vec();
    states.sort();
    states.dedup();
    let mut linearized = Linearized::default();
    let mut cache: HashSet<(Linearized, Vec<State>)> = HashSet::new();
    let mut stack: Vec<(usize, Vec<State>)> = Vec::new();
    let mut entry = nodes[0].next;
    let mut steps = 0u64;
    let mut longest = 0usize;
    let mut stuck = 0usize;
    let mut scratch = Vec::new();
    while nodes[0].next != NIL {
        steps += 1;
        if steps > limit {
            return Verdict::Inconclusive { steps };
        }
        let node = nodes[entry];
        if node.call {
            let op = ops[node.op];
            let mut next_states = Vec::new();
            for &s in &states {
                scratch.clear();
                step(s, op, &mut scratch);
                next_states.extend_from_slice(&scratch);
            }
            if !next_states.is_empty() {
                next_states.sort();
                next_states.dedup();
                let mut next_linearized = linearized.clone();
                next_linearized.insert(node.op as u32);
                if cache.insert((next_linearized.clone(), next_states.clone())) {
                    stack.push((entry, std::mem::replace(&mut states, next_states)));
                    linearized = next_linearized;
                    lift(&mut nodes, entry);
                    if stack.len() > longest {
                        longest = stack.len();
                    }
                    entry = nodes[0].next;
                    continue;
                }
            }
            entry = node.next;
        } else {
            // A return before its call was linearized: undo the last choice.
            if stack.len() == longest {
                stuck = order[node.op];
            }
            let Some((call, before)) = stack.pop() else {
                return Verdict::NotLinearizable { longest, stuck };
            };
            linearized.remove(nodes[call].op as u32);
            states = before;
            unlift(&mut nodes, call);
            entry = nodes[call].next;
        }
    }
    Verdict::Linearizable
}

/// A smaller history that still fails, found by weakening `ops` only, within `budget` checks of
/// at most `limit` steps each and `time` overall (a check that hits its bound counts as
/// passing, so the result always fails). `ops` must fail [`check`].
pub fn minimize(ops: &[KeyOp], limit: u64, budget: usize, time: std::time::Duration) -> Vec<KeyOp> {
    let deadline = std::time::Instant::now() + time;
    let fails = |h: &[KeyOp]| matches!(check(h, limit), Verdict::NotLinearizable { .. });
    let mut checks = 0usize;
    let left = |checks: &mut usize| {
        *checks += 1;
        *checks <= budget && std::time::Instant::now() < deadline
    };

    // 1. The earliest cut that fails: operations returned by then kept, those still running
    //    made unknown (reads among them dropped), later ones dropped.
    let mut cuts: Vec<Time> = ops.iter().map(|o| o.ret).filter(|&r| r != NEVER).collect();
    cuts.sort_unstable();
    cuts.dedup();
    let mut best: Vec<KeyOp> = ops.to_vec();
    let (mut lo, mut hi) = (0usize, cuts.len());
    while lo < hi && left(&mut checks) {
        let mid = (lo + hi) / 2;
        let candidate = cut_at(ops, cuts[mid]);
        if fails(&candidate) {
            best = candidate;
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }

    // 2. Drop reads and refusals (they only constrain) one at a time, from the latest to the
    //    earliest, keeping each drop that still fails.
    let mut i = best.len();
    while i > 0 {
        i -= 1;
        if !(best[i].input == Input::Read || matches!(best[i].output, Output::Refused { .. })) {
            continue;
        }
        if !left(&mut checks) {
            break;
        }
        let mut candidate = best.clone();
        candidate.remove(i);
        if fails(&candidate) {
            best = candidate;
        }
    }
    best.sort_by_key(|o| (o.call, o.ret));
    best
}

/// `ops` cut at time `t`: what returned by `t` as recorded, what was still running unknown
/// (reads among them dropped: an unknown read says nothing), what started later dropped.
fn cut_at(ops: &[KeyOp], t: Time) -> Vec<KeyOp> {
    ops.iter()
        .filter(|o| o.call <= t)
        .filter_map(|o| {
            if o.ret <= t {
                Some(o.clone())
            } else if o.input == Input::Read {
                None
            } else {
                Some(KeyOp {
                    output: Output::Maybe,
                    ret: NEVER,
                    ..o.clone()
                })
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Input;

    fn op(input: Input, output: Output, call: Time, ret: Time) -> KeyOp {
        KeyOp {
            op: call,
            input,
            output,
            call,
            ret,
        }
    }

    fn create(v: u32, rv: u64, call: Time, ret: Time) -> KeyOp {
        op(
            Input::Create { value: v },
            Output::Written { rv },
            call,
            ret,
        )
    }

    fn read(v: u32, rv: u64, call: Time, ret: Time) -> KeyOp {
        op(Input::Read, Output::Present { rv, value: v }, call, ret)
    }

    fn cas(v: u32, p: u64, rv: u64, call: Time, ret: Time) -> KeyOp {
        op(
            Input::Update {
                value: v,
                precondition: Some(p),
                put: true,
            },
            Output::Written { rv },
            call,
            ret,
        )
    }

    #[test]
    fn sequential_histories() {
        let h = vec![
            create(1, 2, 0, 10),
            read(1, 2, 20, 30),
            cas(2, 2, 3, 40, 50),
            read(2, 3, 60, 70),
        ];
        assert_eq!(check(&h, 1000), Verdict::Linearizable);
        let stale = vec![
            create(1, 2, 0, 10),
            cas(2, 2, 3, 40, 50),
            read(1, 2, 60, 70),
        ];
        assert!(matches!(
            check(&stale, 1000),
            Verdict::NotLinearizable { .. }
        ));
    }

    #[test]
    fn concurrent_operations_may_take_effect_in_either_order() {
        // The read overlaps the update: it may see either value.
        let h = vec![
            create(1, 2, 0, 10),
            cas(2, 2, 3, 20, 40),
            read(1, 2, 25, 35),
            read(2, 3, 30, 50),
        ];
        assert_eq!(check(&h, 1000), Verdict::Linearizable);
        // Two compare-and-sets on the same revision cannot both succeed.
        let h = vec![
            create(1, 2, 0, 10),
            cas(2, 2, 3, 20, 40),
            cas(3, 2, 4, 20, 40),
        ];
        assert!(matches!(check(&h, 1000), Verdict::NotLinearizable { .. }));
    }

    #[test]
    fn an_unknown_write_may_be_seen_much_later() {
        let h = vec![
            create(1, 2, 0, 10),
            op(
                Input::Update {
                    value: 2,
                    precondition: Some(2),
                    put: true,
                },
                Output::Maybe,
                20,
                NEVER,
            ),
            read(1, 2, 30, 40),
            read(2, 5, 100, 110),
        ];
        assert_eq!(check(&h, 1000), Verdict::Linearizable);
    }

    #[test]
    fn the_step_bound_makes_a_search_inconclusive() {
        let mut h = vec![create(1, 2, 0, 10)];
        for i in 0..20 {
            h.push(read(1, 2, 20 + i, 100));
        }
        assert!(matches!(check(&h, 5), Verdict::Inconclusive { .. }));
    }

    #[test]
    fn minimizing_keeps_a_failing_history() {
        let mut h = vec![create(1, 2, 0, 10)];
        for i in 0..50u64 {
            h.push(read(1, 2, 20 + i * 10, 25 + i * 10));
        }
        h.push(cas(2, 2, 3, 600, 610));
        h.push(read(1, 2, 620, 630)); // stale: the violation
        for i in 0..50u64 {
            h.push(read(2, 3, 700 + i * 10, 705 + i * 10));
        }
        assert!(matches!(
            check(&h, 100_000),
            Verdict::NotLinearizable { .. }
        ));
        let small = minimize(&h, 100_000, 1000, std::time::Duration::from_secs(10));
        assert!(matches!(
            check(&small, 100_000),
            Verdict::NotLinearizable { .. }
        ));
        assert!(small.len() <= 3, "{small:?}");
        assert!(
            small
                .iter()
                .any(|o| o.output == Output::Present { rv: 2, value: 1 } && o.call == 620)
        );
    }
}
