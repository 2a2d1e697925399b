//! Faults, chosen at random during a run by a thread of their own: `kill -9` and restart of the
//! server, kill or pause (SIGSTOP) of an etcd member or of the leader, a full disk under the
//! embedded store, and watchers that stop reading. A fault that cannot run here is recorded as
//! not run, with the reason, and never counted as injected.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::Serialize;

use crate::history::Time;
use crate::recorder::Clock;
use crate::system::System;
use crate::watchers::WatcherControl;

/// A kind of fault.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum FaultKind {
    /// `kill -9` of the server, then a restart on the same data.
    ServerKill,
    /// `kill -9` of a random etcd member, then a restart.
    EtcdKill,
    /// `kill -9` of the etcd leader, then a restart.
    EtcdKillLeader,
    /// SIGSTOP of a random etcd member for a while, then SIGCONT.
    EtcdPause,
    /// SIGSTOP of the etcd leader for a while, then SIGCONT.
    EtcdPauseLeader,
    /// The embedded store's filesystem filled to the last byte for a while.
    DiskFull,
    /// A watcher stops reading its watch for a while.
    SlowWatcher,
}

impl FaultKind {
    /// The faults that make sense on the embedded store.
    pub const EMBEDDED: [FaultKind; 3] = [
        FaultKind::ServerKill,
        FaultKind::DiskFull,
        FaultKind::SlowWatcher,
    ];

    /// The faults that make sense on etcd.
    pub const ETCD: [FaultKind; 6] = [
        FaultKind::ServerKill,
        FaultKind::EtcdKill,
        FaultKind::EtcdKillLeader,
        FaultKind::EtcdPause,
        FaultKind::EtcdPauseLeader,
        FaultKind::SlowWatcher,
    ];

    /// Its name in reports.
    pub fn name(self) -> &'static str {
        match self {
            FaultKind::ServerKill => "server-kill",
            FaultKind::EtcdKill => "etcd-kill",
            FaultKind::EtcdKillLeader => "etcd-kill-leader",
            FaultKind::EtcdPause => "etcd-pause",
            FaultKind::EtcdPauseLeader => "etcd-pause-leader",
            FaultKind::DiskFull => "disk-full",
            FaultKind::SlowWatcher => "slow-watcher",
        }
    }
}

/// One fault of the run.
#[derive(Clone, Debug, Serialize)]
pub struct FaultRecord {
    /// Its kind.
    pub kind: FaultKind,
    /// When it began.
    pub start: Time,
    /// When everything it broke was back.
    pub end: Time,
    /// What was done ("member 2 (leader) paused 2.1s", "bytes filled"…).
    pub detail: String,
    /// Whether it ran; when not, `detail` says why.
    pub injected: bool,
}

/// How faults are paced.
#[derive(Clone, Debug)]
pub struct FaultOptions {
    /// The kinds to choose from.
    pub kinds: Vec<FaultKind>,
    /// Quiet time before each fault, at least and at most.
    pub quiet: (Duration, Duration),
    /// How long a fault lasts (a pause, a full disk, a slow watcher), at least and at most.
    pub hold: (Duration, Duration),
}

/// What the fault thread hands back.
pub struct FaultOutcome {
    /// The system, healed.
    pub system: System,
    /// Every fault, in order.
    pub records: Vec<FaultRecord>,
    /// Times the server exited by itself (status and the end of its log).
    pub server_exits: Vec<String>,
    /// Faults after which the server took no write within [`RECOVERY`] once everything was
    /// back (it was then restarted so that the run could go on).
    pub unrecovered: Vec<String>,
    /// Why healing at the end failed, if it did.
    pub heal_error: Option<String>,
}

/// How long the server may take to take a write again once a fault is over.
pub const RECOVERY: Duration = Duration::from_secs(30);

/// Injects faults until `stop`, then heals the system and hands it back. After each fault,
/// once everything is back, `probe` (a write through the server) must succeed within
/// [`RECOVERY`].
pub fn fault_loop(
    mut system: System,
    opts: FaultOptions,
    seed: u64,
    clock: Clock,
    watchers: Vec<Arc<WatcherControl>>,
    stop: Arc<AtomicBool>,
    probe: impl Fn() -> bool,
) -> FaultOutcome {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut records = Vec::new();
    let mut server_exits = Vec::new();
    let mut unrecovered = Vec::new();
    let recovered = |probe: &dyn Fn() -> bool| {
        let until = std::time::Instant::now() + RECOVERY;
        loop {
            if probe() {
                return true;
            }
            if std::time::Instant::now() > until {
                return false;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    };
    let sleep = |d: Duration, stop: &AtomicBool| {
        let until = std::time::Instant::now() + d;
        while std::time::Instant::now() < until && !stop.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    let between = |rng: &mut StdRng, (lo, hi): (Duration, Duration)| {
        Duration::from_secs_f64(
            rng.random_range(lo.as_secs_f64()..=hi.as_secs_f64().max(lo.as_secs_f64())),
        )
    };
    while !stop.load(Ordering::Relaxed) && !opts.kinds.is_empty() {
        sleep(between(&mut rng, opts.quiet), &stop);
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let kind = opts.kinds[rng.random_range(0..opts.kinds.len())];
        let start = clock.now();
        let hold = between(&mut rng, opts.hold);
        let result = inject(&mut system, kind, hold, &mut rng, &clock, &watchers);
        if let Some(status) = system.server.exited() {
            server_exits.push(format!(
                "after {}: {status}; its log ends:\n{}",
                kind.name(),
                system.server.log_tail(20)
            ));
        }
        let mut healed = system.heal();
        if healed.is_ok() && !recovered(&probe) {
            unrecovered.push(format!(
                "after {} ({:?}): no write succeeded within {RECOVERY:?} once it was over; the server was restarted. Its log ends:\n{}",
                kind.name(),
                result.as_ref().ok(),
                system.server.log_tail(10)
            ));
            healed = system.server.restart();
            system.target.set_url(system.server.url());
        }
        let (detail, injected) = match (result, healed) {
            (Ok(d), Ok(())) => (d, true),
            (Ok(d), Err(e)) => (format!("{d}; healing failed: {e}"), true),
            (Err(Skip::NotRun(why)), _) => (why, false),
            (Err(Skip::Failed(why)), _) => (format!("failed: {why}"), false),
        };
        records.push(FaultRecord {
            kind,
            start,
            end: clock.now(),
            detail,
            injected,
        });
    }
    let heal_error = system.heal().err();
    FaultOutcome {
        system,
        records,
        server_exits,
        unrecovered,
        heal_error,
    }
}

enum Skip {
    /// The fault cannot run here (no tmpfs, no etcd).
    NotRun(String),
    /// It was tried and could not be done.
    Failed(String),
}

fn inject(
    system: &mut System,
    kind: FaultKind,
    hold: Duration,
    rng: &mut StdRng,
    clock: &Clock,
    watchers: &[Arc<WatcherControl>],
) -> Result<String, Skip> {
    match kind {
        FaultKind::ServerKill => {
            system.server.kill();
            let down = Duration::from_millis(rng.random_range(0..500));
            std::thread::sleep(down);
            system.server.restart().map_err(Skip::Failed)?;
            system.target.set_url(system.server.url());
            Ok(format!("killed, restarted after {down:?}"))
        }
        FaultKind::EtcdKill
        | FaultKind::EtcdKillLeader
        | FaultKind::EtcdPause
        | FaultKind::EtcdPauseLeader => {
            let Some(etcd) = system.etcd.as_mut() else {
                return Err(Skip::NotRun("no etcd in this run".into()));
            };
            let leader = etcd.leader();
            let wants_leader =
                matches!(kind, FaultKind::EtcdKillLeader | FaultKind::EtcdPauseLeader);
            let member = if wants_leader {
                leader.ok_or_else(|| Skip::Failed("no member says it leads".into()))?
            } else {
                rng.random_range(0..etcd.size())
            };
            let role = if Some(member) == leader {
                "leader"
            } else {
                "follower"
            };
            if matches!(kind, FaultKind::EtcdKill | FaultKind::EtcdKillLeader) {
                etcd.kill(member);
                std::thread::sleep(hold);
                etcd.restart(member).map_err(Skip::Failed)?;
                Ok(format!(
                    "member {member} ({role}) killed for {hold:?}, restarted"
                ))
            } else {
                etcd.pause(member).map_err(Skip::Failed)?;
                std::thread::sleep(hold);
                etcd.resume(member).map_err(Skip::Failed)?;
                Ok(format!("member {member} ({role}) paused for {hold:?}"))
            }
        }
        FaultKind::DiskFull => {
            let Some(disk) = &system.disk else {
                return Err(Skip::NotRun(match &system.disk_unavailable {
                    Some(why) => format!("no size-limited filesystem: {why}"),
                    None => "the store is not on a size-limited filesystem".into(),
                }));
            };
            let filled = disk.fill().map_err(Skip::Failed)?;
            std::thread::sleep(hold);
            disk.free().map_err(Skip::Failed)?;
            Ok(format!("{filled} bytes filled, full for {hold:?}"))
        }
        FaultKind::SlowWatcher => {
            if watchers.is_empty() {
                return Err(Skip::NotRun("no watchers".into()));
            }
            let w = rng.random_range(0..watchers.len());
            watchers[w]
                .pause_until
                .store(clock.now() + hold.as_nanos() as u64, Ordering::Relaxed);
            std::thread::sleep(hold);
            Ok(format!("watcher {w} read nothing for {hold:?}"))
        }
    }
}
