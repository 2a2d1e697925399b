//! The watch properties of one stream: strictly ordered by resourceVersion without duplicates
//! (`watch-order`), no change of the keys it selects missing between where it started and the
//! last revision it reached (`watch-gap`), and a watch that resumes from a revision continues
//! exactly after it (`watch-resume`); a 410 instead is allowed.

use serde_json::json;

use crate::committed::Committed;
use crate::history::{EventType, StreamEnd, StreamStart, WatchEvent, WatchStream};
use crate::violation::{Property, Violation};

/// The violations of `stream` against the committed history.
pub fn check_stream(stream: &WatchStream, committed: &Committed) -> Vec<Violation> {
    let mut out = Vec::new();
    let resumed = matches!(stream.start, StreamStart::Resume | StreamStart::OldRevision);
    let live: Vec<&WatchEvent> = stream
        .events
        .iter()
        .filter(|e| !e.initial && e.kind != EventType::Error)
        .collect();
    // Where the changes start: after the revision asked for, or after the bookmark that ends
    // the initial events.
    let start = match stream.start {
        StreamStart::InitialEvents => {
            match stream
                .events
                .iter()
                .find(|e| e.initial && e.kind == EventType::Bookmark)
            {
                Some(end) => end.rv,
                // The stream ended before its initial events did: nothing to check.
                None => return out,
            }
        }
        _ => stream.from,
    };

    // Order: every change after the start and after everything delivered before it; a
    // bookmark never behind what was delivered.
    let mut last_event = start;
    let mut last_bookmark = start;
    let mut order_reported = false;
    for (i, ev) in live.iter().enumerate() {
        let behind = if ev.kind == EventType::Bookmark {
            ev.rv < last_event
        } else {
            ev.rv <= last_event.max(last_bookmark)
        };
        if behind && !order_reported {
            let property = if resumed && ev.rv <= stream.from && i == 0 {
                Property::WatchResume
            } else {
                Property::WatchOrder
            };
            let what = if ev.kind == EventType::Bookmark {
                "a bookmark behind a change already delivered"
            } else if ev.rv <= start {
                "a change at or before the revision the watch started after"
            } else {
                "a change out of order or repeated"
            };
            out.push(Violation {
                property,
                key: Some(ev.key.clone()).filter(|k| !k.is_empty()),
                stream: Some(stream.id),
                message: format!(
                    "stream {} (watcher {}, {:?} from {}): {what}: {:?} at {} after {} (bookmark {})",
                    stream.id,
                    stream.watcher,
                    stream.start,
                    stream.from,
                    ev.kind,
                    ev.rv,
                    last_event,
                    last_bookmark
                ),
                evidence: json!({
                    "stream": summary(stream),
                    "events": window(&live, i),
                }),
            });
            order_reported = true;
        }
        if ev.kind == EventType::Bookmark {
            last_bookmark = last_bookmark.max(ev.rv);
        } else {
            last_event = last_event.max(ev.rv);
        }
    }

    // Gaps: every committed change of a selected key in (start, reached].
    let reached = live.iter().map(|e| e.rv).max().unwrap_or(start);
    let first_change = live
        .iter()
        .filter(|e| e.kind != EventType::Bookmark)
        .map(|e| e.rv)
        .min();
    let changes_by_rv: std::collections::HashMap<u64, &WatchEvent> = live
        .iter()
        .filter(|e| e.kind != EventType::Bookmark)
        .map(|e| (e.rv, *e))
        .collect();
    let mut missing = Vec::new();
    let mut differing = Vec::new();
    let range = if reached > start {
        committed.changes.range(start + 1..=reached)
    } else {
        committed.changes.range(0..0)
    };
    for (&rv, change) in range {
        if !stream.selects(&change.key) {
            continue;
        }
        match changes_by_rv.get(&rv) {
            None => missing.push(rv),
            Some(ev) => {
                let deleted = ev.kind == EventType::Deleted;
                if ev.key != change.key || deleted != change.deleted || ev.value != change.value {
                    differing.push(rv);
                }
            }
        }
    }
    let (before_first, after_first): (Vec<u64>, Vec<u64>) = missing
        .iter()
        .partition(|&&rv| resumed && first_change.is_none_or(|f| rv < f));
    let mut gap = |property: Property, rvs: &[u64], what: &str| {
        let Some(&rv) = rvs.first() else { return };
        let change = &committed.changes[&rv];
        let at = live.iter().position(|e| e.rv > rv).unwrap_or(live.len());
        out.push(Violation {
            property,
            key: Some(change.key.clone()),
            stream: Some(stream.id),
            message: format!(
                "stream {} (watcher {}, {:?} from {}, reached {reached}): {what} {} change(s), the first at {rv} ({} {} = {:?}, reported by {})",
                stream.id,
                stream.watcher,
                stream.start,
                stream.from,
                rvs.len(),
                if change.deleted { "delete of" } else { "put of" },
                change.key,
                change.value,
                change.source
            ),
            evidence: json!({
                "stream": summary(stream),
                "committed": committed.changes.range(rv.saturating_sub(3)..=rv + 3)
                    .filter(|(_, c)| stream.selects(&c.key))
                    .map(|(r, c)| json!({"rv": r, "change": c}))
                    .collect::<Vec<_>>(),
                "events": window(&live, at),
                "rvs": rvs,
            }),
        });
    };
    gap(
        Property::WatchResume,
        &before_first,
        "resumed but did not continue where it left off: missing",
    );
    gap(Property::WatchGap, &after_first, "missing");
    gap(
        Property::WatchGap,
        &differing,
        "delivered, differently from what was committed,",
    );

    // A 410 must say which revision was compacted, and that it is not older than the one asked.
    if let StreamEnd::Expired { message } = &stream.end
        && let Some((requested, compacted)) = parse_too_old(message)
        && compacted < requested
    {
        out.push(Violation {
            property: Property::WatchResume,
            key: None,
            stream: Some(stream.id),
            message: format!(
                "stream {}: 410 for revision {requested}, though only revisions up to {compacted} were compacted",
                stream.id
            ),
            evidence: json!({"stream": summary(stream), "message": message}),
        });
    }
    out
}

/// `(requested, compacted)` from "too old resource version: 12 (40)".
fn parse_too_old(message: &str) -> Option<(u64, u64)> {
    let rest = message.split("too old resource version: ").nth(1)?;
    let (requested, rest) = rest.split_once(" (")?;
    let compacted = rest.split(')').next()?;
    Some((
        requested.trim().parse().ok()?,
        compacted.trim().parse().ok()?,
    ))
}

fn summary(stream: &WatchStream) -> serde_json::Value {
    json!({
        "id": stream.id,
        "watcher": stream.watcher,
        "start": stream.start,
        "from": stream.from,
        "key": stream.key,
        "bookmarks": stream.bookmarks,
        "opened": stream.opened,
        "closed": stream.closed,
        "end": stream.end,
        "events": stream.events.len(),
    })
}

/// Up to five events on each side of `at`.
fn window(events: &[&WatchEvent], at: usize) -> Vec<WatchEvent> {
    let from = at.saturating_sub(5);
    let to = (at + 5).min(events.len());
    events[from..to].iter().map(|e| (*e).clone()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::{History, Operation, Outcome, Request, Seen};

    fn ev(kind: EventType, key: &str, rv: u64, value: &str) -> WatchEvent {
        WatchEvent {
            kind,
            key: key.into(),
            rv,
            value: value.into(),
            initial: false,
            code: 0,
            at: rv * 10,
        }
    }

    fn stream(start: StreamStart, from: u64, events: Vec<WatchEvent>) -> WatchStream {
        WatchStream {
            id: 1,
            watcher: 0,
            start,
            from,
            key: None,
            bookmarks: true,
            opened: 0,
            events,
            end: StreamEnd::Stopped,
            closed: 1000,
        }
    }

    fn committed(writes: &[(u64, &str, &str)]) -> Committed {
        let history = History {
            operations: writes
                .iter()
                .enumerate()
                .map(|(i, &(rv, key, value))| Operation {
                    id: i as u64,
                    client: 0,
                    request: Request::Create {
                        key: key.into(),
                        value: value.into(),
                    },
                    outcome: Outcome::Object(Seen {
                        key: key.into(),
                        rv,
                        value: value.into(),
                    }),
                    invoke: rv,
                    ret: rv + 1,
                })
                .collect(),
            ..Default::default()
        };
        Committed::gather(&history)
    }

    fn properties(v: &[Violation]) -> Vec<Property> {
        v.iter().map(|v| v.property).collect()
    }

    #[test]
    fn a_complete_ordered_stream_passes() {
        let c = committed(&[(2, "a", "x"), (3, "b", "y"), (4, "a", "z")]);
        let s = stream(
            StreamStart::AfterList,
            1,
            vec![
                ev(EventType::Added, "a", 2, "x"),
                ev(EventType::Added, "b", 3, "y"),
                ev(EventType::Bookmark, "", 3, ""),
                ev(EventType::Modified, "a", 4, "z"),
            ],
        );
        assert!(check_stream(&s, &c).is_empty());
    }

    #[test]
    fn gaps_reorders_and_bad_resumes_are_named() {
        let c = committed(&[(2, "a", "x"), (3, "b", "y"), (4, "a", "z")]);
        let gap = stream(
            StreamStart::AfterList,
            1,
            vec![
                ev(EventType::Added, "a", 2, "x"),
                ev(EventType::Modified, "a", 4, "z"),
            ],
        );
        assert_eq!(
            properties(&check_stream(&gap, &c)),
            vec![Property::WatchGap]
        );
        let reordered = stream(
            StreamStart::AfterList,
            1,
            vec![
                ev(EventType::Added, "b", 3, "y"),
                ev(EventType::Added, "a", 2, "x"),
                ev(EventType::Modified, "a", 4, "z"),
            ],
        );
        assert_eq!(
            properties(&check_stream(&reordered, &c)),
            vec![Property::WatchOrder]
        );
        let resumed_late = stream(
            StreamStart::Resume,
            2,
            vec![ev(EventType::Modified, "a", 4, "z")],
        );
        assert_eq!(
            properties(&check_stream(&resumed_late, &c)),
            vec![Property::WatchResume]
        );
        let resumed_early = stream(
            StreamStart::Resume,
            3,
            vec![
                ev(EventType::Added, "b", 3, "y"),
                ev(EventType::Modified, "a", 4, "z"),
            ],
        );
        assert_eq!(
            properties(&check_stream(&resumed_early, &c)),
            vec![Property::WatchResume]
        );
        // A bookmark promises everything up to it.
        let bookmark_past_a_gap = stream(
            StreamStart::AfterList,
            1,
            vec![
                ev(EventType::Added, "a", 2, "x"),
                ev(EventType::Bookmark, "", 4, ""),
            ],
        );
        assert_eq!(
            properties(&check_stream(&bookmark_past_a_gap, &c)),
            vec![Property::WatchGap]
        );
    }

    #[test]
    fn too_old_messages_are_read() {
        assert_eq!(
            parse_too_old("too old resource version: 12 (40)"),
            Some((12, 40))
        );
        assert_eq!(parse_too_old("something else"), None);
    }
}
