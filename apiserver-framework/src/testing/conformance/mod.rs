//! A conformance check of a server's own resources, driven by the resource types its app
//! registered: the counterpart, for servers, of `storage::conformance` for storage
//! backends.
//!
//! For every resource of the app's registry, [`Conformance::run`] checks over HTTPS with a real
//! client (kube-rs) that the server behaves as Kubernetes clients expect:
//!
//! - **discovery**: `/apis` lists the group-version, and `/apis/<group>/<version>` the resource
//!   with its kind, scope, singular name, short names and verbs;
//! - **OpenAPI**: `/openapi/v3` and `/openapi/v2` describe the kind (by
//!   `x-kubernetes-group-version-kind`), and every printer column's JSON path names a field of
//!   the kind's schema;
//! - **CRUD**: create, get, list, update, a stale update refused with `409 Conflict`, delete,
//!   and a get of the deleted object answered `404 NotFound`; the Table form of a get carries
//!   every printer column;
//! - **watch**: a watch from a list's `resourceVersion` sees `ADDED`, `MODIFIED` and `DELETED`
//!   for the object, in order;
//! - **paging**: a list with `limit=1` follows its `continue` tokens through every object once;
//! - **selectors**: label selectors (equality and set-based) and the `metadata.name` field
//!   selector choose exactly the matching objects; an unknown field selector is a
//!   `400 BadRequest`;
//! - **patch and apply**: a JSON merge patch and a JSON patch change what they say and keep the
//!   rest; a server-side apply records its field manager, and applying the same configuration
//!   again is a round trip that changes nothing.
//!
//! Each resource needs one valid object to create. By default it is generated from the
//! resource's schema (required fields with their defaults, the first value of an enum, the
//! minimum of a number, at least 1); give one with [`Conformance::sample`] when validation
//! wants more. The check creates its objects in the namespace `default` under names starting
//! with `conformance-`, and deletes them.
//!
//! ```no_run
//! use apiserver_framework::testing::{TestServer, conformance::Conformance};
//!
//! # async fn f(app: apiserver_framework::App) {
//! let server = TestServer::start(app).await.expect("the server starts");
//! Conformance::new(&server).run().await.assert_passed();
//! # }
//! ```

mod api;
mod discovery;
mod objects;
mod sample;
mod schema_path;

use std::collections::BTreeMap;
use std::fmt;

use serde::Serialize;
use serde_json::Value;

use crate::resource::{ApiResource, ResourceInfo};
use crate::testing::TestServer;

/// The namespace the check creates namespaced objects in.
pub const NAMESPACE: &str = "default";

/// The conformance check of a [`TestServer`]'s resources.
pub struct Conformance {
    client: kube::Client,
    resources: Vec<(ResourceInfo, Vec<&'static str>)>,
    samples: BTreeMap<(String, String), Value>,
}

/// The outcome of one check of one resource.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// `<kind>.<group>/<version>` of the resource.
    pub resource: String,
    /// The check (`discovery`, `openapi`, `crud`, `watch`, `paging`, `selectors`, `patch`).
    pub check: &'static str,
    /// Why it failed; `None` when it passed.
    pub failure: Option<String>,
}

/// Every outcome of a [`Conformance::run`].
#[derive(Clone, Debug)]
pub struct Report {
    /// One outcome per check and resource, in order.
    pub outcomes: Vec<Outcome>,
}

impl Report {
    /// The outcomes that failed.
    pub fn failures(&self) -> Vec<&Outcome> {
        self.outcomes
            .iter()
            .filter(|o| o.failure.is_some())
            .collect()
    }

    /// Whether every check passed.
    pub fn passed(&self) -> bool {
        self.failures().is_empty()
    }

    /// Panics with every failure when a check failed.
    #[track_caller]
    pub fn assert_passed(&self) {
        if !self.passed() {
            panic!("{self}");
        }
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let failures = self.failures();
        if failures.is_empty() {
            return write!(f, "conformance: all {} checks passed", self.outcomes.len());
        }
        writeln!(
            f,
            "conformance: {} of {} checks failed:",
            failures.len(),
            self.outcomes.len()
        )?;
        for o in failures {
            writeln!(
                f,
                "- {} {}: {}",
                o.resource,
                o.check,
                o.failure.as_deref().unwrap_or_default()
            )?;
        }
        Ok(())
    }
}

impl Conformance {
    /// Checks every resource of `server`'s app, through [`TestServer::client`].
    pub fn new(server: &TestServer) -> Self {
        let resources = server
            .registry()
            .resources()
            .iter()
            .map(|r| (r.info().clone(), r.verbs()))
            .collect();
        Conformance {
            client: server.client(),
            resources,
            samples: BTreeMap::new(),
        }
    }

    /// Creates `object` (its name is replaced) where the check needs an object of `T`, instead
    /// of one generated from the schema.
    pub fn sample<T: ApiResource + Serialize>(mut self, object: &T) -> Self {
        let info = T::resource_info();
        let value = serde_json::to_value(object).unwrap_or(Value::Null);
        self.samples.insert((info.group, info.kind), value);
        self
    }

    /// Checks only resources whose kind is in `kinds`.
    pub fn only(mut self, kinds: &[&str]) -> Self {
        self.resources
            .retain(|(info, _)| kinds.contains(&info.kind.as_str()));
        self
    }

    /// Runs every check on every resource and reports all outcomes (it never panics on a
    /// failed check; see [`Report::assert_passed`]).
    pub async fn run(&self) -> Report {
        let mut outcomes = Vec::new();
        for (info, verbs) in &self.resources {
            let resource = format!("{}.{}/{}", info.kind, info.group, info.version);
            let mut record = |check: &'static str, result: Result<(), String>| {
                outcomes.push(Outcome {
                    resource: resource.clone(),
                    check,
                    failure: result.err(),
                });
            };
            record(
                "discovery",
                discovery::discovery(&self.client, info, verbs).await,
            );
            record("openapi", discovery::openapi(&self.client, info).await);
            let all = [
                "create", "get", "list", "update", "patch", "delete", "watch",
            ];
            if !all.iter().all(|v| verbs.contains(v)) {
                // Not a stored resource (e.g. a review): the object checks do not apply.
                continue;
            }
            let sample = self
                .samples
                .get(&(info.group.clone(), info.kind.clone()))
                .cloned()
                .unwrap_or_else(|| sample::generate(info));
            let objects = objects::Objects::new(&self.client, info, sample);
            record("crud", objects.crud().await);
            record("watch", objects.watch().await);
            record("paging", objects.paging().await);
            record("selectors", objects.selectors().await);
            record("patch", objects.patch_and_apply().await);
            objects.clean_up().await;
        }
        Report { outcomes }
    }
}
