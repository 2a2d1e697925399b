//! The checker: every property of a recorded [`History`], and the report of what failed.
//!
//! 1. The committed history is gathered from acknowledged writes, reads and watch events
//!    ([`Committed`]); two observations of one revision must agree.
//! 2. Operations of unknown outcome are settled where the committed history can: a write whose
//!    (unique) value was committed took effect at that revision, no later than its value was
//!    first seen; when every revision of the run was observed, a write whose value never shows
//!    up did not take effect. The others stay unknown: they may or may not have taken effect,
//!    at any time after they were sent.
//! 3. Per key, the operations are checked for linearizability ([`crate::linearizability`]).
//! 4. Every watch stream is checked ([`crate::watch_check`]).
//! 5. The final list read after the run must equal the committed history replayed to its
//!    revision, and must be linearizable with the rest (the model's final state).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::json;

use crate::committed::Committed;
use crate::history::{History, NEVER, Operation, Outcome, Request};
use crate::linearizability::{self, Verdict};
use crate::model::{Input, KeyOp, Output};
use crate::violation::{Property, Violation};
use crate::watch_check;

/// Bounds of the checker's work.
#[derive(Clone, Debug)]
pub struct CheckOptions {
    /// Search steps allowed per key.
    pub step_limit: u64,
    /// Checks allowed for minimizing one failing key history.
    pub minimize_budget: usize,
    /// Search steps allowed per check while minimizing.
    pub minimize_step_limit: u64,
    /// Time allowed for minimizing one failing key history.
    pub minimize_time: std::time::Duration,
}

impl Default for CheckOptions {
    fn default() -> Self {
        CheckOptions {
            step_limit: linearizability::DEFAULT_STEP_LIMIT,
            minimize_budget: 2000,
            minimize_step_limit: 200_000,
            minimize_time: std::time::Duration::from_secs(10),
        }
    }
}

/// What the checker found.
#[derive(Clone, Debug, Default, Serialize)]
pub struct CheckReport {
    /// Failed properties.
    pub violations: Vec<Violation>,
    /// Keys whose linearizability search hit its bound: neither passed nor failed.
    pub inconclusive: Vec<String>,
    /// Operations checked per key, summed over keys.
    pub key_operations: usize,
    /// Unknown writes found committed (and so settled).
    pub unknown_committed: usize,
    /// Unknown writes found not committed (every revision was observed).
    pub unknown_not_committed: usize,
    /// Unknown operations left unknown.
    pub unknown_open: usize,
    /// Committed changes gathered.
    pub committed_changes: usize,
    /// Revisions of the run no observation covers.
    pub unobserved_revisions: u64,
    /// Watch streams checked.
    pub streams: usize,
    /// Watch events checked.
    pub events: usize,
}

impl CheckReport {
    /// Whether every property holds and every check was conclusive.
    pub fn passed(&self) -> bool {
        self.violations.is_empty() && self.inconclusive.is_empty()
    }

    /// The failed properties.
    pub fn properties(&self) -> BTreeSet<Property> {
        self.violations.iter().map(|v| v.property).collect()
    }

    /// Writes every violation, with its minimal failing history, to `dir`: `violations.json`
    /// (all of them) and one `minimal-<n>-<property>[-<key>].json` each. Returns the files.
    pub fn write(&self, dir: &Path) -> std::io::Result<Vec<PathBuf>> {
        std::fs::create_dir_all(dir)?;
        let mut files = Vec::new();
        let all = dir.join("violations.json");
        std::fs::write(&all, serde_json::to_vec_pretty(self)?)?;
        files.push(all);
        for (n, v) in self.violations.iter().enumerate() {
            let name = match &v.key {
                Some(k) => format!("minimal-{n}-{}-{k}.json", v.property),
                None => format!("minimal-{n}-{}.json", v.property),
            };
            let path = dir.join(name);
            std::fs::write(&path, serde_json::to_vec_pretty(v)?)?;
            files.push(path);
        }
        Ok(files)
    }
}

/// Checks every property of `history`.
pub fn check(history: &History, opts: &CheckOptions) -> CheckReport {
    let committed = Committed::gather(history);
    let mut report = CheckReport {
        committed_changes: committed.changes.len(),
        ..Default::default()
    };

    for d in &committed.disagreements {
        let from_stream = |s: &str| s.starts_with("stream");
        let property = if from_stream(&d.first.source) || from_stream(&d.other.source) {
            Property::WatchGap
        } else {
            Property::Linearizability
        };
        report.violations.push(Violation {
            property,
            key: Some(d.first.key.clone()),
            stream: None,
            message: format!(
                "revision {} was observed as two different changes: {} ({}) and {} ({})",
                d.rv,
                describe(&d.first),
                d.first.source,
                describe(&d.other),
                d.other.source
            ),
            evidence: json!({"rv": d.rv, "first": d.first, "other": d.other}),
        });
    }

    let final_op = history
        .final_list
        .and_then(|id| history.operations.iter().find(|o| o.id == id));
    let final_rv = match final_op.map(|o| &o.outcome) {
        Some(Outcome::List { rv, .. }) => Some(*rv),
        _ => None,
    };
    let last_rv = final_rv.or_else(|| committed.changes.keys().next_back().copied());
    report.unobserved_revisions = last_rv
        .map(|last| committed.unobserved(history.start_rv + 1, last))
        .unwrap_or(0);
    let complete = final_rv.is_some() && report.unobserved_revisions == 0;

    // Per key: the operations, then linearizability without and with the final read.
    let mut values = Interner::default();
    let mut per_key: BTreeMap<String, Vec<KeyOp>> = history
        .keys
        .iter()
        .map(|k| (k.clone(), Vec::new()))
        .collect();
    let mut final_reads: BTreeMap<String, KeyOp> = BTreeMap::new();
    let by_id: HashMap<u64, &Operation> = history.operations.iter().map(|o| (o.id, o)).collect();
    for op in &history.operations {
        let is_final = Some(op.id) == history.final_list;
        for (key, kop) in key_ops(
            op,
            &history.keys,
            &committed,
            complete,
            &mut values,
            &mut report,
        ) {
            if is_final {
                final_reads.insert(key, kop);
            } else if let Some(ops) = per_key.get_mut(&key) {
                ops.push(kop);
            }
        }
    }
    for stream in &history.streams {
        // The initial events of a `sendInitialEvents` watch are a consistent read.
        if let Some(end) = stream
            .events
            .iter()
            .find(|e| e.initial && e.kind == crate::history::EventType::Bookmark)
        {
            for key in &history.keys {
                let item = stream.events.iter().find(|e| {
                    e.initial && e.kind != crate::history::EventType::Bookmark && &e.key == key
                });
                let output = match item {
                    Some(e) => Output::Present {
                        rv: e.rv,
                        value: values.id(&e.value),
                    },
                    None => Output::Absent,
                };
                if let Some(ops) = per_key.get_mut(key)
                    && stream.selects(key)
                {
                    ops.push(KeyOp {
                        op: u64::MAX - stream.id,
                        input: Input::Read,
                        output,
                        call: stream.opened,
                        ret: end.at,
                    });
                }
            }
        }
    }

    for (key, ops) in &per_key {
        report.key_operations += ops.len();
        let evidence = |ops: &[KeyOp], values: &Interner| {
            json!({
                "key": key,
                "operations": ops.iter().map(|k| {
                    let original = by_id.get(&k.op);
                    json!({
                        "checked_as": k,
                        "request": original.map(|o| &o.request),
                        "outcome": original.map(|o| &o.outcome),
                        "client": original.map(|o| o.client),
                        "invoke": original.map(|o| o.invoke),
                        "ret": original.map(|o| o.ret),
                    })
                }).collect::<Vec<_>>(),
                "values": ops.iter().filter_map(value_of).map(|v| (v, values.name(v))).collect::<BTreeMap<_, _>>(),
            })
        };
        let t0 = std::time::Instant::now();
        let verdict = linearizability::check(ops, opts.step_limit);
        if std::env::var_os("ROBUSTNESS_TRACE").is_some() {
            eprintln!(
                "key {key}: {} ops, {verdict:?} in {:?}",
                ops.len(),
                t0.elapsed()
            );
        }
        match verdict {
            Verdict::Linearizable => {}
            Verdict::Inconclusive { steps } => {
                report.inconclusive.push(format!(
                    "{key}: linearizability search stopped after {steps} steps"
                ));
                continue;
            }
            Verdict::NotLinearizable { stuck, .. } => {
                let t0 = std::time::Instant::now();
                let small = linearizability::minimize(
                    ops,
                    opts.minimize_step_limit,
                    opts.minimize_budget,
                    opts.minimize_time,
                );
                if std::env::var_os("ROBUSTNESS_TRACE").is_some() {
                    eprintln!(
                        "key {key}: minimized to {} in {:?}",
                        small.len(),
                        t0.elapsed()
                    );
                }
                let stuck_op = by_id.get(&ops[stuck].op);
                report.violations.push(Violation {
                    property: Property::Linearizability,
                    key: Some(key.clone()),
                    stream: None,
                    message: format!(
                        "key {key}: {} operations are not linearizable (minimal failing history: {} operations; no linearization gets past {})",
                        ops.len(),
                        small.len(),
                        stuck_op
                            .map(|o| format!("op {} {:?} -> {:?}", o.id, o.request, o.outcome))
                            .unwrap_or_else(|| format!("a watch's initial events ({:?})", ops[stuck]))
                    ),
                    evidence: evidence(&small, &values),
                });
                continue;
            }
        }
        if let Some(final_read) = final_reads.get(key) {
            let mut with_final = ops.clone();
            with_final.push(final_read.clone());
            if let Verdict::NotLinearizable { .. } =
                linearizability::check(&with_final, opts.step_limit)
            {
                let small = linearizability::minimize(
                    &with_final,
                    opts.minimize_step_limit,
                    opts.minimize_budget,
                    opts.minimize_time,
                );
                report.violations.push(Violation {
                    property: Property::FinalState,
                    key: Some(key.clone()),
                    stream: None,
                    message: format!(
                        "key {key}: the final read ({:?}) is not a state the model can be in after the run",
                        final_read.output
                    ),
                    evidence: evidence(&small, &values),
                });
            }
        }
    }

    // The final state against the committed history.
    if let Some(Outcome::List { rv, items }) = final_op.map(|o| &o.outcome) {
        for key in &history.keys {
            let listed = items
                .iter()
                .find(|i| &i.key == key)
                .map(|i| (i.rv, i.value.as_str()));
            let replayed = committed.state_at(key, *rv);
            // A change no observation covers (a write of unknown outcome that took effect while
            // no watcher saw it) may lie between the key's last observed change and the list:
            // then the listed state may differ from the replay, as long as it is one that
            // unobserved change could have made — nothing, or a revision never observed. The
            // model check of the final read above still holds it to what the operations allow.
            let after = committed
                .last_change_at(key, *rv)
                .unwrap_or(history.start_rv);
            let explained = committed.unobserved(after + 1, *rv) > 0
                && listed.is_none_or(|(lrv, _)| lrv > after && !committed.observed(lrv));
            if listed != replayed && !explained {
                report.violations.push(Violation {
                    property: Property::FinalState,
                    key: Some(key.clone()),
                    stream: None,
                    message: format!(
                        "key {key}: the final list at {rv} shows {listed:?}, the committed history replayed to {rv} gives {replayed:?}{}",
                        if report.unobserved_revisions > 0 {
                            format!(" ({} revisions of the run were never observed)", report.unobserved_revisions)
                        } else {
                            String::new()
                        }
                    ),
                    evidence: json!({
                        "final_list_rv": rv,
                        "listed": listed,
                        "replayed": replayed,
                        "last_changes": committed.changes.range(..=*rv).rev()
                            .filter(|(_, c)| &c.key == key).take(5)
                            .map(|(r, c)| json!({"rv": r, "change": c})).collect::<Vec<_>>(),
                    }),
                });
            }
        }
    }

    for stream in &history.streams {
        report.streams += 1;
        report.events += stream.events.len();
        report
            .violations
            .extend(watch_check::check_stream(stream, &committed));
    }
    report
}

fn describe(c: &crate::committed::Change) -> String {
    format!(
        "{} {}={:?}",
        if c.deleted { "delete" } else { "put" },
        c.key,
        c.value
    )
}

fn value_of(k: &KeyOp) -> Option<u32> {
    match (k.input, k.output) {
        (_, Output::Present { value, .. }) => Some(value),
        (Input::Create { value } | Input::Apply { value } | Input::Update { value, .. }, _) => {
            Some(value)
        }
        _ => None,
    }
}

/// Value names to small numbers (values are unique in a run).
#[derive(Default)]
struct Interner {
    ids: HashMap<String, u32>,
    names: Vec<String>,
}

impl Interner {
    fn id(&mut self, value: &str) -> u32 {
        if let Some(&id) = self.ids.get(value) {
            return id;
        }
        let id = self.names.len() as u32;
        self.names.push(value.to_string());
        self.ids.insert(value.to_string(), id);
        id
    }

    fn name(&self, id: u32) -> &str {
        &self.names[id as usize]
    }
}

/// The key operations a recorded operation amounts to.
fn key_ops(
    op: &Operation,
    keys: &[String],
    committed: &Committed,
    complete: bool,
    values: &mut Interner,
    report: &mut CheckReport,
) -> Vec<(String, KeyOp)> {
    let base = |input, output, ret| KeyOp {
        op: op.id,
        input,
        output,
        call: op.invoke,
        ret,
    };
    let write_input = |values: &mut Interner| -> Option<Input> {
        Some(match &op.request {
            Request::Create { value, .. } => Input::Create {
                value: values.id(value),
            },
            Request::Update {
                value,
                precondition,
                ..
            } => Input::Update {
                value: values.id(value),
                precondition: *precondition,
                put: true,
            },
            Request::Patch {
                value,
                precondition,
                ..
            } => Input::Update {
                value: values.id(value),
                precondition: *precondition,
                put: false,
            },
            Request::Apply { value, .. } => Input::Apply {
                value: values.id(value),
            },
            Request::Delete { precondition, .. } => Input::Delete {
                precondition: *precondition,
            },
            _ => return None,
        })
    };
    match &op.request {
        Request::Get { key } => {
            let output = match &op.outcome {
                Outcome::Object(seen) => Output::Present {
                    rv: seen.rv,
                    value: values.id(&seen.value),
                },
                Outcome::Error { code: 404, .. } => Output::Absent,
                _ => return Vec::new(),
            };
            vec![(key.clone(), base(Input::Read, output, op.ret))]
        }
        Request::List { any_version, .. } => match &op.outcome {
            // A list at resourceVersion=0 may be stale by design: not a linearizable read.
            Outcome::List { items, .. } if !any_version => keys
                .iter()
                .map(|key| {
                    let output = match items.iter().find(|i| &i.key == key) {
                        Some(i) => Output::Present {
                            rv: i.rv,
                            value: values.id(&i.value),
                        },
                        None => Output::Absent,
                    };
                    (key.clone(), base(Input::Read, output, op.ret))
                })
                .collect(),
            _ => Vec::new(),
        },
        Request::DeleteCollection => {
            let delete = Input::Delete { precondition: None };
            match &op.outcome {
                Outcome::List { items, .. } => items
                    .iter()
                    .filter(|i| keys.contains(&i.key))
                    .map(|i| (i.key.clone(), base(delete, Output::Deleted, op.ret)))
                    .collect(),
                // Some items may have been deleted before it failed.
                Outcome::Error { code, .. } => {
                    if *code == 409 {
                        // Without preconditions, each item's delete reads it again when a
                        // write raced with it, and one deleted meanwhile is skipped (upstream).
                        report.violations.push(Violation {
                            property: Property::Linearizability,
                            key: None,
                            stream: None,
                            message: format!(
                                "op {}: a deletecollection without preconditions was answered 409 Conflict",
                                op.id
                            ),
                            evidence: json!({"operation": op}),
                        });
                    }
                    keys.iter()
                        .map(|k| (k.clone(), base(delete, Output::Maybe, op.ret)))
                        .collect()
                }
                _ => {
                    report.unknown_open += keys.len();
                    keys.iter()
                        .map(|k| (k.clone(), base(delete, Output::Maybe, NEVER)))
                        .collect()
                }
            }
        }
        _ => {
            let key = op.request.key().unwrap_or_default().to_string();
            let Some(input) = write_input(values) else {
                return Vec::new();
            };
            let output = match &op.outcome {
                Outcome::Object(seen) => {
                    if Some(seen.value.as_str()) != op.request.value() || seen.key != key {
                        report.violations.push(Violation {
                            property: Property::Linearizability,
                            key: Some(key.clone()),
                            stream: None,
                            message: format!(
                                "op {}: {:?} was answered with another object: {seen:?}",
                                op.id, op.request
                            ),
                            evidence: json!({"operation": op}),
                        });
                    }
                    Output::Written { rv: seen.rv }
                }
                Outcome::Deleted => Output::Deleted,
                Outcome::Error { code, .. } => Output::Refused { code: *code },
                Outcome::List { .. } => return Vec::new(),
                Outcome::Unknown { .. } => {
                    return settle_unknown(op, key, input, committed, complete, report);
                }
            };
            vec![(key, base(input, output, op.ret))]
        }
    }
}

/// An operation of unknown outcome, settled as far as the committed history allows.
fn settle_unknown(
    op: &Operation,
    key: String,
    input: Input,
    committed: &Committed,
    complete: bool,
    report: &mut CheckReport,
) -> Vec<(String, KeyOp)> {
    let open = |report: &mut CheckReport| {
        report.unknown_open += 1;
        vec![(
            key.clone(),
            KeyOp {
                op: op.id,
                input,
                output: Output::Maybe,
                call: op.invoke,
                ret: NEVER,
            },
        )]
    };
    let Some(value) = op.request.value() else {
        return open(report);
    };
    match committed.put_at.get(value) {
        Some(&rv) => {
            report.unknown_committed += 1;
            let seen = committed.first_seen.get(value).copied().unwrap_or(NEVER);
            if seen < op.invoke {
                report.violations.push(Violation {
                    property: Property::Linearizability,
                    key: Some(key.clone()),
                    stream: None,
                    message: format!(
                        "op {}: its value {value:?} was seen before the write was sent",
                        op.id
                    ),
                    evidence: json!({"operation": op, "first_seen": seen}),
                });
            }
            vec![(
                key,
                KeyOp {
                    op: op.id,
                    input,
                    output: Output::Written { rv },
                    call: op.invoke,
                    ret: seen.max(op.invoke),
                },
            )]
        }
        None if complete => {
            report.unknown_not_committed += 1;
            Vec::new()
        }
        None => open(report),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::Seen;

    fn op(id: u64, request: Request, outcome: Outcome) -> Operation {
        Operation {
            id,
            client: 1,
            request,
            outcome,
            invoke: id * 10,
            ret: id * 10 + 5,
        }
    }

    fn seen(rv: u64, value: &str) -> Seen {
        Seen {
            key: "k1".into(),
            rv,
            value: value.into(),
        }
    }

    /// A create seen at 11, then `second` (the operation of revision 12), then the final list
    /// at `final_rv` with `final_items`.
    fn history(second: Option<Operation>, final_rv: u64, final_items: Vec<Seen>) -> History {
        let mut operations = vec![op(
            1,
            Request::Create {
                key: "k1".into(),
                value: "a".into(),
            },
            Outcome::Object(seen(11, "a")),
        )];
        operations.extend(second);
        operations.push(op(
            3,
            Request::List {
                limit: None,
                any_version: false,
            },
            Outcome::List {
                rv: final_rv,
                items: final_items,
            },
        ));
        History {
            keys: vec!["k1".into()],
            start_rv: 10,
            operations,
            streams: Vec::new(),
            final_list: Some(3),
        }
    }

    fn final_state_failures(h: &History) -> usize {
        check(h, &CheckOptions::default())
            .violations
            .iter()
            .filter(|v| v.property == Property::FinalState)
            .count()
    }

    #[test]
    fn an_unobserved_delete_of_unknown_outcome_explains_a_missing_object() {
        let delete = op(
            2,
            Request::Delete {
                key: "k1".into(),
                precondition: None,
            },
            Outcome::Unknown {
                detail: "the server was killed".into(),
            },
        );
        assert_eq!(final_state_failures(&history(Some(delete), 12, vec![])), 0);
    }

    #[test]
    fn a_missing_object_nothing_could_have_deleted_is_a_violation() {
        // Revision 12 is unobserved, but no operation could have deleted k1.
        assert!(final_state_failures(&history(None, 12, vec![])) > 0);
        // No revision is unobserved: the replay must match exactly.
        assert!(final_state_failures(&history(None, 11, vec![])) > 0);
    }

    #[test]
    fn an_observed_state_matches_the_replay() {
        assert_eq!(
            final_state_failures(&history(None, 11, vec![seen(11, "a")])),
            0
        );
    }

    #[test]
    fn a_collection_delete_answered_conflict_is_a_violation() {
        let history = |code: u16| History {
            keys: vec!["a".into()],
            start_rv: 1,
            operations: vec![Operation {
                id: 7,
                client: 0,
                request: Request::DeleteCollection,
                outcome: Outcome::Error {
                    code,
                    reason: String::new(),
                },
                invoke: 10,
                ret: 20,
            }],
            ..Default::default()
        };
        let named = |report: &CheckReport| {
            report
                .violations
                .iter()
                .any(|v| v.message.contains("op 7: a deletecollection"))
        };
        let report = check(&history(409), &CheckOptions::default());
        assert!(named(&report), "{:?}", report.violations);
        // Other refusals (throttling) are fine.
        assert!(!named(&check(&history(429), &CheckOptions::default())));
    }
}
