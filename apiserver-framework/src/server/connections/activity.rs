//! [`Activity`]: what one connection is doing (requests in flight, how long it has been
//! idle, whether a request has begun arriving), and from that, when it must be closed.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use parking_lot::Mutex;
use tokio::sync::Notify;

use super::limits::ConnectionLimits;
use super::upgraded::Upgrade;

/// The state of one connection, shared by its task, its requests and the listener.
#[derive(Debug)]
pub struct Activity {
    state: Mutex<State>,
    /// Set by the first read after the connection became idle (a fast path for
    /// [`Activity::note_read`], which runs on every read).
    read_since_idle: AtomicBool,
    /// Chosen to be closed (set under the [`OpenConnections`] lock); not chosen again.
    evicting: AtomicBool,
    /// The listener wants this connection closed (to make room for a new one).
    evict: Notify,
    /// The connection became idle.
    became_idle: Notify,
    /// Whether the connection was upgraded, and its stream since.
    pub(crate) upgrade: Upgrade,
}

#[derive(Debug)]
struct State {
    in_flight: usize,
    /// When the last request finished (or, before any, when the connection was accepted and
    /// then when its TLS handshake completed).
    idle_since: Instant,
    /// A request has arrived on this connection.
    served: bool,
    /// When the first byte after `idle_since` was read, if one was.
    first_read: Option<Instant>,
    /// The responses being sent that must be sent by a deadline: by the order they began
    /// in, so the first is due first.
    sending: BTreeMap<u64, Instant>,
    /// The number of the next response to begin.
    next_send: u64,
}

impl Default for Activity {
    fn default() -> Self {
        Activity {
            state: Mutex::new(State {
                in_flight: 0,
                idle_since: Instant::now(),
                served: false,
                first_read: None,
                sending: BTreeMap::new(),
                next_send: 0,
            }),
            read_since_idle: AtomicBool::new(false),
            evicting: AtomicBool::new(false),
            evict: Notify::new(),
            became_idle: Notify::new(),
            upgrade: Upgrade::default(),
        }
    }
}

/// A request in flight on a connection; dropping it ends the request (it lives as long as
/// the response body).
#[derive(Debug)]
pub struct InFlight {
    activity: Arc<Activity>,
    /// Its response's place among the responses with a send deadline.
    sending: Option<u64>,
}

impl InFlight {
    /// The response began to be sent and must be sent by `deadline` (until this guard is
    /// dropped), or the connection is closed ([`Activity::send_deadline`]). The connection's
    /// own task watches the deadline: no task, timer or wake-up per response.
    pub fn send_by(&mut self, deadline: Instant) {
        let mut s = self.activity.state.lock();
        let id = s.next_send;
        s.next_send += 1;
        s.sending.insert(id, deadline);
        drop(s);
        self.sending = Some(id);
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let mut s = self.activity.state.lock();
        if let Some(id) = self.sending {
            s.sending.remove(&id);
        }
        s.in_flight -= 1;
        if s.in_flight == 0 {
            s.idle_since = Instant::now();
            s.first_read = None;
            self.activity
                .read_since_idle
                .store(false, Ordering::Relaxed);
            drop(s);
            self.activity.became_idle.notify_one();
        }
    }
}

impl Activity {
    /// The TLS handshake is done: the first request's headers are due from now.
    pub fn handshake_done(&self) {
        let mut s = self.state.lock();
        s.idle_since = Instant::now();
        s.first_read = None;
        self.read_since_idle.store(false, Ordering::Relaxed);
    }

    /// Bytes were read from the client.
    pub fn note_read(&self) {
        if !self.read_since_idle.load(Ordering::Relaxed)
            && !self.read_since_idle.swap(true, Ordering::Relaxed)
        {
            let mut s = self.state.lock();
            if s.first_read.is_none() {
                s.first_read = Some(Instant::now());
            }
        }
    }

    /// A request arrived; it is in flight until the returned guard is dropped.
    pub fn request_started(self: &Arc<Self>) -> InFlight {
        let mut s = self.state.lock();
        s.in_flight += 1;
        s.served = true;
        InFlight {
            activity: self.clone(),
            sending: None,
        }
    }

    /// Requests in flight.
    pub fn in_flight(&self) -> usize {
        self.state.lock().in_flight
    }

    /// When the connection must be closed unless something happens first, as Go's server
    /// decides it: never while a request is in flight; the first request's headers within
    /// `read_header_timeout` of the handshake; then (HTTP/1.1) the next request's first byte
    /// within `idle_timeout` of the last response and its headers within
    /// `read_header_timeout` of that byte; (HTTP/2) a new stream within `idle_timeout`.
    /// `None`: no deadline.
    pub fn deadline(&self, limits: &ConnectionLimits, http2: bool) -> Option<Instant> {
        let s = self.state.lock();
        let after = |since: Instant, timeout: std::time::Duration| {
            (!timeout.is_zero()).then(|| since + timeout)
        };
        match (s.in_flight, s.served, s.first_read) {
            (1.., _, _) => None,
            (0, false, _) => after(s.idle_since, limits.read_header_timeout),
            (0, true, Some(first)) if !http2 => after(first, limits.read_header_timeout),
            (0, true, _) => after(s.idle_since, limits.idle_timeout),
        }
    }

    /// When the connection became idle, if it is idle (no request in flight), not already
    /// chosen to be closed, and not upgraded (an upgraded connection is busy for as long as
    /// it lives, see `upgraded`).
    fn idle_since(&self) -> Option<Instant> {
        if self.evicting.load(Ordering::Relaxed) || self.upgrade.upgraded() {
            return None;
        }
        let s = self.state.lock();
        (s.in_flight == 0).then_some(s.idle_since)
    }

    /// Resolves once the listener wants this connection closed.
    pub async fn evicted(&self) {
        self.evict.notified().await
    }

    /// Resolves once the last request in flight has finished.
    pub async fn idle(&self) {
        self.became_idle.notified().await
    }

    /// When the response being sent longest must have been sent (see
    /// [`ConnectionLimits::response_send_timeout`] and [`InFlight::send_by`]); past it the
    /// connection is closed at once, with whatever it still holds. `None`: no response with
    /// a deadline is being sent.
    pub fn send_deadline(&self) -> Option<Instant> {
        self.state.lock().sending.first_key_value().map(|(_, d)| *d)
    }
}

/// The open connections of a listener, bounded.
#[derive(Debug)]
pub struct OpenConnections {
    bound: usize,
    open: Mutex<Open>,
}

#[derive(Debug, Default)]
struct Open {
    next_id: u64,
    connections: std::collections::HashMap<u64, Arc<Activity>>,
    /// How many of them were chosen to be closed.
    evicting: usize,
}

impl Open {
    /// Chooses `activity` to be closed and tells its task.
    fn evict(&mut self, activity: &Activity) {
        activity.evicting.store(true, Ordering::Relaxed);
        self.evicting += 1;
        activity.evict.notify_one();
    }
}

/// An open connection's place among the [`OpenConnections`]; dropping it frees the place.
#[derive(Debug)]
pub struct Registered {
    id: u64,
    set: Arc<OpenConnections>,
    /// The connection's activity.
    pub activity: Arc<Activity>,
}

impl Drop for Registered {
    fn drop(&mut self) {
        let mut open = self.set.open.lock();
        open.connections.remove(&self.id);
        if self.activity.evicting.load(Ordering::Relaxed) {
            open.evicting -= 1;
        }
    }
}

impl OpenConnections {
    /// At most `bound` connections open at once (`usize::MAX`: no bound).
    pub fn new(bound: usize) -> Arc<Self> {
        Arc::new(OpenConnections {
            bound,
            open: Mutex::new(Open::default()),
        })
    }

    /// How many connections are open.
    pub fn len(&self) -> usize {
        self.open.lock().connections.len()
    }

    /// A place for a new connection. At the bound, the connection idle longest is told to
    /// close first; when none is idle, there is no place (`None`).
    pub fn admit(self: &Arc<Self>) -> Option<Registered> {
        let mut open = self.open.lock();
        if open.connections.len() - open.evicting >= self.bound {
            let idlest = Self::idlest(&open)?;
            open.evict(&idlest);
        }
        let id = open.next_id;
        open.next_id += 1;
        let activity = Arc::new(Activity::default());
        open.connections.insert(id, activity.clone());
        Some(Registered {
            id,
            set: self.clone(),
            activity,
        })
    }

    /// Tells the connection idle longest to close (when descriptors ran out); `false` when
    /// no connection is idle.
    pub fn evict_idlest(&self) -> bool {
        let mut open = self.open.lock();
        match Self::idlest(&open) {
            Some(a) => {
                open.evict(&a);
                true
            }
            None => false,
        }
    }

    fn idlest(open: &Open) -> Option<Arc<Activity>> {
        open.connections
            .values()
            .filter_map(|a| a.idle_since().map(|t| (t, a)))
            .min_by_key(|(t, _)| *t)
            .map(|(_, a)| a.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn limits() -> ConnectionLimits {
        ConnectionLimits {
            read_header_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(100),
            ..Default::default()
        }
    }

    #[test]
    fn deadlines_follow_the_connection() {
        let a = Arc::new(Activity::default());
        a.handshake_done();
        let start = Instant::now();
        let first = a.deadline(&limits(), false).unwrap();
        assert!(first <= start + Duration::from_secs(10));
        assert!(first + Duration::from_secs(1) > start + Duration::from_secs(10));
        let req = a.request_started();
        assert_eq!(a.deadline(&limits(), false), None);
        let other = a.request_started();
        drop(req);
        assert_eq!(a.deadline(&limits(), true), None);
        drop(other);
        // Idle: the next request may take the idle timeout to begin…
        let idle = a.deadline(&limits(), false).unwrap();
        assert!(idle > start + Duration::from_secs(90));
        assert_eq!(a.deadline(&limits(), true), Some(idle));
        // …and once it has begun (HTTP/1.1), its headers are due within the header timeout.
        a.note_read();
        let reading = a.deadline(&limits(), false).unwrap();
        assert!(reading < start + Duration::from_secs(11));
        assert_eq!(a.deadline(&limits(), true), Some(idle));
        // Zero: no limit.
        let none = ConnectionLimits {
            read_header_timeout: Duration::ZERO,
            ..limits()
        };
        assert_eq!(a.deadline(&none, false), None);
    }

    #[test]
    fn the_response_sent_longest_sets_the_send_deadline() {
        let a = Arc::new(Activity::default());
        let start = Instant::now();
        let mut first = a.request_started();
        let mut second = a.request_started();
        let third = a.request_started();
        assert_eq!(a.send_deadline(), None);
        first.send_by(start + Duration::from_secs(5));
        second.send_by(start + Duration::from_secs(6));
        assert_eq!(a.send_deadline(), Some(start + Duration::from_secs(5)));
        drop(first);
        assert_eq!(a.send_deadline(), Some(start + Duration::from_secs(6)));
        // A request whose response has no deadline (a watch) sets none.
        drop(second);
        assert_eq!(a.send_deadline(), None);
        assert_eq!(a.in_flight(), 1);
        drop(third);
        assert_eq!(a.in_flight(), 0);
    }

    #[test]
    fn at_the_bound_the_idlest_makes_room() {
        let set = OpenConnections::new(2);
        let first = set.admit().unwrap();
        std::thread::sleep(Duration::from_millis(5));
        let second = set.admit().unwrap();
        let _busy = second.activity.request_started();
        // The first is idle and is chosen; the new one gets its place.
        let third = set.admit().unwrap();
        assert!(first.activity.evicting.load(Ordering::Relaxed));
        assert_eq!(set.len(), 3);
        drop(first);
        // Now every other connection is busy or new; the newest idle one goes next.
        let _busy3 = third.activity.request_started();
        assert!(set.admit().is_none());
        assert!(!set.evict_idlest());
        assert_eq!(set.len(), 2);
    }

    #[test]
    fn an_upgraded_connection_counts_and_is_never_idle() {
        let set = OpenConnections::new(1);
        let upgraded = set.admit().unwrap();
        // Its 101 was answered and the request is over; the stream lives on.
        drop(upgraded.activity.request_started());
        upgraded.activity.upgrade.begin();
        assert!(set.admit().is_none());
        assert!(!set.evict_idlest());
        assert!(!upgraded.activity.evicting.load(Ordering::Relaxed));
        drop(upgraded);
        assert!(set.admit().is_some());
    }
}
