//! The three servers the corpus is sent to, each behind a dev host of its own (which answers
//! their TokenReviews and SubjectAccessReviews): Kubernetes' sample-apiserver on etcd 3.6, the
//! reference; wardle on etcd 3.6; wardle on its embedded store. Requests go to each server
//! directly, not through the aggregator, so that what is compared is the server's own answer.

use std::collections::HashMap;

use std::time::Duration;

use apiserver_framework::devhost::files::users;
use apiserver_framework::storage::Storage;
use apiserver_framework::testing::etcd::Etcd;
use apiserver_framework::testing::tls;

use super::answer::Target;
use crate::client_go::build_upstream;
use crate::stack::Stack;

/// The running servers, and what they need kept alive.
pub struct Targets {
    /// sample-apiserver first, then wardle on etcd, then wardle on the embedded store.
    pub targets: Vec<Target>,
    /// The stacks (dev host and server), stopped on drop.
    pub stacks: Vec<Stack>,
    /// The two etcds: sample-apiserver's, then wardle's.
    etcds: Vec<Etcd>,
}

impl Targets {
    /// Builds what is missing (`scripts/build-upstream sample-apiserver`, `etcd`) and starts
    /// the three servers.
    pub async fn start() -> Targets {
        let sample_apiserver = build_upstream("sample-apiserver", "sample-apiserver");
        let etcd_binary = build_upstream("etcd", "etcd");
        let upstream_etcd = Etcd::start_binary(&etcd_binary).expect("etcd 3.6 starts");
        let wardle_etcd = Etcd::start_binary(&etcd_binary).expect("etcd 3.6 starts");
        let (upstream_url, wardle_url) = (upstream_etcd.url(), wardle_etcd.url());
        // Mutating admission policies on, as sample-apiserver's feature gate is here.
        let mutating = "--enable-admission-plugins=MutatingAdmissionPolicy";
        let on_etcd_flags = ["--etcd-servers", wardle_url.as_str(), mutating];
        let embedded_flags = [mutating];
        let (upstream, on_etcd, embedded) = tokio::join!(
            Stack::start_sample_apiserver(sample_apiserver, &upstream_url),
            Stack::start(&on_etcd_flags),
            Stack::start(&embedded_flags),
        );
        let stacks = vec![upstream, on_etcd, embedded];
        let names = ["sample-apiserver", "wardle (etcd)", "wardle (embedded)"];
        let targets = stacks
            .iter()
            .zip(names)
            .map(|(stack, name)| Target {
                name,
                url: stack.wardle_url(),
                host_url: stack.host_url().to_string(),
                client: client(stack),
                held_client: held_client(stack),
                admin_token: stack.token(users::ADMIN),
                bob_token: stack.token(users::BOB),
                vars: HashMap::new(),
            })
            .collect();
        Targets {
            targets,
            stacks,
            etcds: vec![upstream_etcd, wardle_etcd],
        }
    }

    /// Stops the three servers, compacts each store to its current revision (the two etcds
    /// through etcd's Compact call, the embedded store through its own `Storage::compact`)
    /// and starts the servers again: their watch caches start afresh at the current revision,
    /// so that what answers a request from an older resource version is the same on each (a
    /// running cache may still hold events its store compacted away).
    pub async fn compact_and_restart(&mut self) {
        for stack in &mut self.stacks {
            stack.stop_wardle();
        }
        for etcd in &self.etcds {
            let store = etcd.storage("/registry").await.expect("a client of etcd");
            let revision = store.current_revision().await.expect("etcd's revision");
            store.compact(revision).await.expect("compact etcd");
        }
        self.stacks[2].compact_embedded_store().await;
        futures::future::join_all(self.stacks.iter_mut().map(|s| s.start_wardle())).await;
    }

    /// The logs of the three servers, for a failure's report.
    pub fn logs(&self) -> String {
        self.stacks
            .iter()
            .zip(&self.targets)
            .map(|(s, t)| {
                format!(
                    "---- {} log (last 40 lines):\n{}",
                    t.name,
                    tail(&s.log(), 40)
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// How long one answer may take: long, as the machine may be paused for minutes while
/// another job measures (a watch's answer takes its `timeoutSeconds`).
const ANSWER_TIMEOUT: Duration = Duration::from_secs(300);

/// A client trusting the stack's CA (which issued the server's certificate).
fn client(stack: &Stack) -> reqwest::Client {
    reqwest::Client::builder()
        .use_preconfigured_tls(tls::http1_config(&stack.host.files.ca_pem))
        .timeout(ANSWER_TIMEOUT)
        .build()
        .expect("a client")
}

/// The client of held requests: a client certificate of `system:masters` from the host's CA,
/// and no idle connections kept.
fn held_client(stack: &Stack) -> reqwest::Client {
    let (cert, key) = stack.issue_client_cert("ca", "held-admin", Some("system:masters"), false);
    let identity = format!("{cert}{key}");
    reqwest::Client::builder()
        .use_preconfigured_tls(tls::client_config_with_identity(
            &stack.host.files.ca_pem,
            &identity,
            tls::HTTP1,
        ))
        .timeout(ANSWER_TIMEOUT)
        .pool_max_idle_per_host(0)
        .build()
        .expect("a client")
}

fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}
