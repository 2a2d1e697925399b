//! A robustness harness for apiserver-framework, in the manner of etcd's robustness tests and
//! Jepsen: concurrent clients run random operations on a small key space of a real wardle
//! server process, watchers follow the collection, faults are injected at random (the server
//! killed and restarted, etcd members killed or paused, the embedded store's disk full, slow
//! watch clients), every request, response and watch event is recorded, and a checker
//! validates the whole history:
//!
//! - per key, acknowledged writes and reads are linearizable against a compare-and-set register
//!   with revisions ([`linearizability`], [`model`]);
//! - every watch stream is strictly ordered, without duplicates, and misses no committed change
//!   of the keys it selects; a resumed watch continues exactly where it left off or gets 410
//!   ([`watch_check`]);
//! - after the run, the state equals the model's ([`checker`]).
//!
//! On failure the checker names the violated [`violation::Property`] and writes the minimal
//! failing history it found. [`run::run`] is one run; the `apiserver-robustness` binary runs
//! the long mode (`./scripts/robustness --minutes 10`).

pub mod api;
pub mod checker;
pub mod committed;
pub mod disk;
pub mod etcd;
pub mod faults;
pub mod history;
pub mod linearizability;
pub mod model;
pub mod recorder;
pub mod report;
pub mod run;
pub mod server;
pub mod system;
pub mod violation;
pub mod watch_check;
pub mod watchers;
pub mod workload;
