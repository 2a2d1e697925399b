//! The clients: each runs random operations on a small key space until told to stop, so that
//! conflicts are frequent.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::api::Api;
use crate::history::{Outcome, PatchType, Request};

/// One client's loop: random requests on `keys` until `stop`, each writing a value no other
/// write of the run writes (`c<client>-<n>`).
pub async fn client_loop(api: Api, keys: Arc<Vec<String>>, seed: u64, stop: Arc<AtomicBool>) {
    let mut rng = StdRng::seed_from_u64(seed);
    // The last revision this client saw of each key: its preconditions (often stale).
    let mut known: HashMap<String, u64> = HashMap::new();
    let mut n = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let key = keys[rng.random_range(0..keys.len())].clone();
        n += 1;
        let value = format!("c{}-{n}", api.client);
        let remembered = known.get(&key).copied();
        let roll = rng.random_range(0..100u32);
        let request = match roll {
            0..14 => Request::Get { key: key.clone() },
            14..20 => Request::List {
                limit: None,
                any_version: false,
            },
            20..24 => Request::List {
                limit: Some(rng.random_range(1..=3)),
                any_version: false,
            },
            24..26 => Request::List {
                limit: None,
                any_version: true,
            },
            26..38 => Request::Create {
                key: key.clone(),
                value,
            },
            38..52 => {
                // Read-modify-write half the time, else whatever revision this client last
                // saw (a conflict when someone wrote since).
                let precondition = if rng.random_bool(0.5) {
                    match api.run(Request::Get { key: key.clone() }).await.outcome {
                        Outcome::Object(s) => Some(s.rv),
                        _ => remembered,
                    }
                } else {
                    remembered
                };
                Request::Update {
                    key: key.clone(),
                    value,
                    precondition: precondition.or(Some(1)),
                }
            }
            52..54 => Request::Update {
                key: key.clone(),
                value,
                precondition: None,
            },
            54..76 => {
                let patch_type = match rng.random_range(0..3) {
                    0 => PatchType::Json,
                    1 => PatchType::Merge,
                    _ => PatchType::Strategic,
                };
                let precondition = if rng.random_bool(0.25) {
                    remembered
                } else {
                    None
                };
                Request::Patch {
                    key: key.clone(),
                    value,
                    patch_type,
                    precondition,
                }
            }
            76..86 => Request::Apply {
                key: key.clone(),
                value,
            },
            86..92 => Request::Delete {
                key: key.clone(),
                precondition: None,
            },
            92..99 => Request::Delete {
                key: key.clone(),
                precondition: remembered.or(Some(1)),
            },
            _ => Request::DeleteCollection,
        };
        let op = api.run(request).await;
        if op.request == Request::DeleteCollection {
            known.clear();
            continue;
        }
        match &op.outcome {
            Outcome::Object(s) => {
                known.insert(s.key.clone(), s.rv);
            }
            Outcome::List { items, .. } => {
                for s in items {
                    known.insert(s.key.clone(), s.rv);
                }
            }
            Outcome::Deleted => {
                known.remove(&key);
            }
            // After a failure, a short pause: the server may be down.
            Outcome::Unknown { .. } => {
                tokio::time::sleep(std::time::Duration::from_millis(rng.random_range(20..200)))
                    .await
            }
            Outcome::Error { .. } => {}
        }
    }
}
