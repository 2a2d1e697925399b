//! The watchers: each follows the collection (or one key) through a chain of watch streams,
//! starting after a consistent list, with `sendInitialEvents`, or from an old revision, with or
//! without bookmarks, restarting at random and resuming from the last revision it reached; a
//! 410 starts a new chain. A watcher told to be slow stops reading for a while.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::Value;

use crate::api::{Api, COLLECTION, Target, encode, error_chain, seen};
use crate::history::{
    EventType, Outcome, Request, StreamEnd, StreamStart, Time, WatchEvent, WatchStream,
};
use crate::recorder::Recorder;

/// Client numbers of watchers' lists start here.
pub const WATCHER_CLIENT_BASE: u32 = 1000;

/// What the harness shares with one watcher.
#[derive(Debug, Default)]
pub struct WatcherControl {
    /// The watcher reads nothing until this time (the slow-client fault).
    pub pause_until: AtomicU64,
    /// The revision its current chain reached, when the chain watches the whole collection
    /// (`u64::MAX` while it watches one key: nothing to wait for).
    pub progress: AtomicU64,
}

/// Revisions seen so far, for watches that start from an old one.
#[derive(Debug, Default)]
pub struct Revisions {
    seen: Mutex<Vec<u64>>,
}

impl Revisions {
    /// Remembers `rv`.
    pub fn push(&self, rv: u64) {
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        seen.push(rv);
        if seen.len() > 20_000 {
            // Keep a spread of old and new ones.
            let kept: Vec<u64> = seen.iter().copied().step_by(2).collect();
            *seen = kept;
        }
    }

    /// A revision seen earlier, `None` when none: half the time among the latest tenth (likely
    /// still in the history, so the watch must continue after it), else any (likely compacted,
    /// so it must get 410).
    pub fn pick(&self, rng: &mut StdRng) -> Option<u64> {
        let seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        let from = if rng.random_bool(0.5) {
            seen.len() - seen.len() / 10
        } else {
            0
        };
        (!seen.is_empty()).then(|| seen[rng.random_range(from.min(seen.len() - 1)..seen.len())])
    }
}

/// How a watcher runs.
#[derive(Clone, Debug)]
pub struct WatcherOptions {
    /// The shortest and longest `timeoutSeconds` of its watches.
    pub timeout_seconds: (u64, u64),
    /// The chance that a stream is cut by the watcher before the server ends it.
    pub restart_chance: f64,
    /// Whether it only ever starts after a list, without key selectors, old revisions or
    /// restarts of its own (the auditor that keeps the committed history complete).
    pub steady: bool,
}

/// Everything a watcher needs.
pub struct Watcher {
    /// Its number.
    pub id: u32,
    /// The server.
    pub target: Arc<Target>,
    /// The recorder.
    pub recorder: Arc<Recorder>,
    /// The keys of the run.
    pub keys: Arc<Vec<String>>,
    /// Shared state with the harness.
    pub control: Arc<WatcherControl>,
    /// Revisions seen by all watchers.
    pub revisions: Arc<Revisions>,
    /// Options.
    pub options: WatcherOptions,
    /// Timeout of its lists.
    pub request_timeout: Duration,
}

impl Watcher {
    /// Runs until `stop`.
    pub async fn run(self, seed: u64, stop: Arc<AtomicBool>) {
        let mut rng = StdRng::seed_from_u64(seed);
        let api = Api::new(
            self.target.clone(),
            self.recorder.clone(),
            WATCHER_CLIENT_BASE + self.id,
            self.request_timeout,
        );
        // Watches have no overall timeout: the server ends them.
        let http = self.target.http(None);
        while !stop.load(Ordering::Relaxed) {
            let steady = self.options.steady;
            let key = (!steady && rng.random_bool(0.25))
                .then(|| self.keys[rng.random_range(0..self.keys.len())].clone());
            let roll = if steady { 0 } else { rng.random_range(0..4) };
            // `sendInitialEvents` needs bookmarks: the bookmark that ends the initial events.
            let bookmarks = steady || roll == 2 || rng.random_bool(0.7);
            let (mut start, mut from) = match roll {
                0 | 1 => match api
                    .run(Request::List {
                        limit: None,
                        any_version: false,
                    })
                    .await
                    .outcome
                {
                    Outcome::List { rv, .. } => (StreamStart::AfterList, rv),
                    _ => {
                        tokio::time::sleep(Duration::from_millis(rng.random_range(50..300))).await;
                        continue;
                    }
                },
                2 => (StreamStart::InitialEvents, 0),
                _ => match self.revisions.pick(&mut rng) {
                    Some(rv) => (StreamStart::OldRevision, rv),
                    None => continue,
                },
            };
            self.control.progress.store(
                if key.is_some() { u64::MAX } else { from },
                Ordering::Relaxed,
            );
            // The chain: resume from the last revision reached until a 410 or the end.
            loop {
                let (end, reached) = self
                    .stream(
                        &http,
                        &mut rng,
                        start,
                        from,
                        key.as_deref(),
                        bookmarks,
                        &stop,
                    )
                    .await;
                match end {
                    StreamEnd::Expired { .. } => break,
                    StreamEnd::Stopped if stop.load(Ordering::Relaxed) => return,
                    StreamEnd::Failed { .. } => {
                        tokio::time::sleep(Duration::from_millis(rng.random_range(50..300))).await
                    }
                    _ => {}
                }
                match reached {
                    Some(rv) => {
                        start = StreamStart::Resume;
                        from = rv;
                    }
                    // Initial events cut short: nothing to resume from.
                    None => break,
                }
            }
        }
    }

    /// One watch stream, recorded; returns how it ended and the revision to resume from.
    #[allow(clippy::too_many_arguments)]
    async fn stream(
        &self,
        http: &reqwest::Client,
        rng: &mut StdRng,
        start: StreamStart,
        from: u64,
        key: Option<&str>,
        bookmarks: bool,
        stop: &AtomicBool,
    ) -> (StreamEnd, Option<u64>) {
        let clock = self.recorder.clock;
        let (lo, hi) = self.options.timeout_seconds;
        let timeout = rng.random_range(lo..=hi.max(lo));
        let cut_at: Option<Time> = (!self.options.steady
            && rng.random_bool(self.options.restart_chance))
        .then(|| clock.now() + rng.random_range(300_000_000..=timeout * 1_000_000_000));
        let mut path = format!("{COLLECTION}?watch=true&timeoutSeconds={timeout}");
        if bookmarks {
            path.push_str("&allowWatchBookmarks=true");
        }
        if start == StreamStart::InitialEvents {
            path.push_str("&sendInitialEvents=true&resourceVersionMatch=NotOlderThan");
        } else {
            path.push_str(&format!("&resourceVersion={from}"));
        }
        if let Some(k) = key {
            path.push_str(&format!(
                "&fieldSelector={}",
                encode(&format!("metadata.name={k}"))
            ));
        }
        let id = self.recorder.next_id();
        let mut stream = WatchStream {
            id,
            watcher: self.id,
            start,
            from,
            key: key.map(str::to_string),
            bookmarks,
            opened: clock.now(),
            events: Vec::new(),
            end: StreamEnd::Stopped,
            closed: 0,
        };
        let mut reached = (start != StreamStart::InitialEvents).then_some(from);
        let mut in_initial = start == StreamStart::InitialEvents;
        let end = 'read: {
            let res = match http
                .get(format!("{}{path}", self.target.url()))
                .send()
                .await
            {
                Ok(res) => res,
                Err(e) => {
                    break 'read StreamEnd::Failed {
                        detail: error_chain(&e),
                    };
                }
            };
            let status = res.status().as_u16();
            if status != 200 {
                let body = res.text().await.unwrap_or_default();
                self.recorder.exchange(
                    id,
                    "GET",
                    &path,
                    None,
                    Some(status),
                    &body,
                    stream.opened,
                    clock.now(),
                );
                let message = serde_json::from_str::<Value>(&body)
                    .ok()
                    .and_then(|v| v["message"].as_str().map(str::to_string))
                    .unwrap_or(body);
                break 'read if status == 410 {
                    StreamEnd::Expired { message }
                } else {
                    StreamEnd::Failed {
                        detail: format!("HTTP {status}: {message}"),
                    }
                };
            }
            self.recorder.exchange(
                id,
                "GET",
                &path,
                None,
                Some(200),
                "(watch)",
                stream.opened,
                clock.now(),
            );
            let mut body = res.bytes_stream();
            let mut buf: Vec<u8> = Vec::new();
            loop {
                if stop.load(Ordering::Relaxed) || cut_at.is_some_and(|t| clock.now() >= t) {
                    break 'read StreamEnd::Stopped;
                }
                let pause = self.control.pause_until.load(Ordering::Relaxed);
                if clock.now() < pause {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
                let chunk =
                    match tokio::time::timeout(Duration::from_millis(200), body.next()).await {
                        Err(_) => continue,
                        Ok(None) => break 'read StreamEnd::Closed,
                        Ok(Some(Err(e))) => {
                            break 'read StreamEnd::Failed {
                                detail: error_chain(&e),
                            };
                        }
                        Ok(Some(Ok(chunk))) => chunk,
                    };
                buf.extend_from_slice(&chunk);
                while let Some(nl) = buf.iter().position(|&b| b == b'\n') {
                    let line: Vec<u8> = buf.drain(..=nl).collect();
                    let at = clock.now();
                    let text = String::from_utf8_lossy(&line);
                    let text = text.trim();
                    if text.is_empty() {
                        continue;
                    }
                    self.recorder.log(serde_json::json!({
                        "kind": "event", "stream": id, "at": at, "line": text,
                    }));
                    let Some(ev) = parse_event(text, at, in_initial) else {
                        break 'read StreamEnd::Failed {
                            detail: format!("an unreadable watch event: {text}"),
                        };
                    };
                    match ev.kind {
                        EventType::Error => {
                            let code = ev.code;
                            let message = serde_json::from_str::<Value>(text)
                                .ok()
                                .and_then(|v| v["object"]["message"].as_str().map(str::to_string))
                                .unwrap_or_default();
                            stream.events.push(ev);
                            break 'read if code == 410 {
                                StreamEnd::Expired { message }
                            } else {
                                StreamEnd::Failed {
                                    detail: format!("ERROR event {code}: {message}"),
                                }
                            };
                        }
                        EventType::Bookmark if in_initial => {
                            if ev.initial {
                                in_initial = false;
                                reached = Some(ev.rv);
                            }
                        }
                        _ if in_initial => {}
                        _ => {
                            reached = Some(reached.unwrap_or(0).max(ev.rv));
                            if ev.kind != EventType::Bookmark {
                                self.revisions.push(ev.rv);
                            }
                        }
                    }
                    if key.is_none()
                        && let Some(rv) = reached
                    {
                        self.control.progress.store(rv, Ordering::Relaxed);
                    }
                    stream.events.push(ev);
                }
            }
        };
        stream.end = end.clone();
        stream.closed = clock.now();
        self.recorder.stream(stream);
        (end, reached)
    }
}

/// A watch event line: `{"type": …, "object": …}`.
fn parse_event(text: &str, at: Time, in_initial: bool) -> Option<WatchEvent> {
    let v: Value = serde_json::from_str(text).ok()?;
    let kind = match v["type"].as_str()? {
        "ADDED" => EventType::Added,
        "MODIFIED" => EventType::Modified,
        "DELETED" => EventType::Deleted,
        "BOOKMARK" => EventType::Bookmark,
        "ERROR" => EventType::Error,
        _ => return None,
    };
    let obj = &v["object"];
    Some(match kind {
        EventType::Error => WatchEvent {
            kind,
            key: String::new(),
            rv: 0,
            value: String::new(),
            initial: false,
            code: obj["code"].as_u64().unwrap_or(0) as u16,
            at,
        },
        EventType::Bookmark => WatchEvent {
            kind,
            key: String::new(),
            rv: obj
                .pointer("/metadata/resourceVersion")?
                .as_str()?
                .parse()
                .ok()?,
            value: String::new(),
            initial: obj
                .pointer("/metadata/annotations/k8s.io~1initial-events-end")
                .and_then(Value::as_str)
                == Some("true"),
            code: 0,
            at,
        },
        _ => {
            let s = seen(obj)?;
            WatchEvent {
                kind,
                key: s.key,
                rv: s.rv,
                value: s.value,
                initial: in_initial,
                code: 0,
                at,
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_read() {
        let ev = parse_event(
            r#"{"type":"MODIFIED","object":{"metadata":{"name":"k1","resourceVersion":"17"},"spec":{"reference":"c1-4"}}}"#,
            5,
            false,
        )
        .unwrap();
        assert_eq!(
            (ev.kind, ev.key.as_str(), ev.rv, ev.value.as_str()),
            (EventType::Modified, "k1", 17, "c1-4")
        );
        let end = parse_event(
            r#"{"type":"BOOKMARK","object":{"kind":"Flunder","metadata":{"resourceVersion":"20","annotations":{"k8s.io/initial-events-end":"true"}}}}"#,
            5,
            true,
        )
        .unwrap();
        assert!(end.initial && end.rv == 20 && end.kind == EventType::Bookmark);
        let gone = parse_event(
            r#"{"type":"ERROR","object":{"kind":"Status","code":410,"reason":"Expired"}}"#,
            5,
            false,
        )
        .unwrap();
        assert_eq!((gone.kind, gone.code), (EventType::Error, 410));
    }
}
