//! Denial-of-service bounds of wardle in production mode (the dev host in this process, the
//! real `wardle serve` binary behind it): what unauthenticated or anonymous callers send must
//! not stay in the server's memory, measured as the resident set of the wardle process
//! (`VmRSS` of `/proc/<pid>/status`).
//!
//! The bounds are generous for a noisy 2-core machine; what they catch is growth of tens of
//! megabytes per thousand requests, which is what keeping each request's data looks like.

#![allow(dead_code)]

#[path = "support/process.rs"]
mod process;
#[path = "production/stack.rs"]
mod stack;

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::time::Duration;

use futures::StreamExt;
use process::rss_mib;
use stack::{FLUNDERS, Stack};

/// `len` random lower-case letters and digits (different on every call).
fn random_text(len: usize) -> String {
    const CHARS: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let state = RandomState::new();
    let mut out = String::with_capacity(len);
    let mut n = 0u64;
    while out.len() < len {
        let mut h = state.build_hasher();
        h.write_u64(n);
        let mut x = h.finish();
        for _ in 0..8 {
            out.push(CHARS[(x % CHARS.len() as u64) as usize] as char);
            x /= CHARS.len() as u64;
        }
        n += 1;
    }
    out.truncate(len);
    out
}

/// A client speaking HTTP/1.1 (whose header and URL limits are far above HTTP/2's), as an
/// attacker with curl would.
fn http1_client(stack: &Stack) -> reqwest::Client {
    reqwest::Client::builder()
        .use_preconfigured_tls(apiserver_framework::testing::tls::http1_config(
            &stack.host.files.ca_pem,
        ))
        .http1_only()
        .timeout(Duration::from_secs(60))
        .build()
        .expect("a client")
}

/// Sends `count` GETs built by `request` (given the request's index), 16 at a time, and
/// returns how many were answered with each status.
async fn flood(
    count: usize,
    request: impl Fn(usize) -> reqwest::RequestBuilder,
) -> std::collections::BTreeMap<u16, usize> {
    let codes: Vec<u16> = futures::stream::iter(0..count)
        .map(|i| {
            let req = request(i);
            async move {
                match req.send().await {
                    Ok(r) => r.status().as_u16(),
                    Err(e) => {
                        eprintln!("request failed: {:?}", e.without_url());
                        0
                    }
                }
            }
        })
        .buffer_unordered(16)
        .collect()
        .await;
    let mut by_code = std::collections::BTreeMap::new();
    for c in codes {
        *by_code.entry(c).or_insert(0) += 1;
    }
    by_code
}

/// Bearer tokens the host rejects, each sent with a request that gives up (`?timeout=1ns`)
/// while its TokenReview is in flight: nothing of the review may stay behind once the
/// request is gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn abandoned_token_reviews_leave_nothing_behind() {
    let stack = Stack::start(&[]).await;
    let client = http1_client(&stack);
    let url = format!("{}{FLUNDERS}?timeout=1ns", stack.wardle_url());
    let pid = stack.wardle_pid();
    // 12 KiB tokens: long, but within what a token may be.
    let send = |n: usize| flood(n, |_| client.get(&url).bearer_auth(random_text(12 * 1024)));

    // Warm up (connections, allocator pools), then measure.
    let warm = send(200).await;
    assert!(warm.keys().all(|c| *c != 0), "requests failed: {warm:?}");
    // The measured subject is memory: the server settles a second before its RSS is read.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let before = rss_mib(pid);
    // Kept, each would hold about 60 KB (its token, the review's body and its state).
    let codes = send(1000).await;
    assert!(codes.keys().all(|c| *c != 0), "requests failed: {codes:?}");
    // The measured subject is memory: two seconds to free what the requests held.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let after = rss_mib(pid);
    assert!(
        after - before < 20.0,
        "wardle's RSS grew from {before:.1} MiB to {after:.1} MiB over 1000 abandoned token \
         reviews ({codes:?})"
    );
}

/// A bearer token longer than any token can be is refused (401) without asking the host.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_tokens_cost_no_token_review() {
    let stack = Stack::start(&[]).await;
    let client = http1_client(&stack);
    let url = format!("{}{FLUNDERS}", stack.wardle_url());
    let reviews = stack.host.token_reviews.entries().len();
    let codes = flood(50, |_| client.get(&url).bearer_auth(random_text(50 * 1024))).await;
    assert_eq!(codes.get(&401), Some(&50), "{codes:?}");
    assert_eq!(
        stack.host.token_reviews.entries().len(),
        reviews,
        "the host reviewed oversized tokens"
    );
    // A token of ordinary length is still reviewed (and the host knows it).
    let (code, body) = stack
        .as_bearer(&client, reqwest::Method::GET, &url, &stack.token("bob"))
        .await;
    assert_eq!(code, 200, "{body}");
    assert_eq!(stack.host.token_reviews.count("token:bob"), 1);
}

/// Anonymous lists with label selectors of about 40 KiB (a URI holds at most 64 KiB): each is
/// a SubjectAccessReview the host denies; the answers must not be kept with their selectors.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn huge_selectors_do_not_fill_the_authorization_cache() {
    let stack = Stack::start(&[]).await;
    let client = http1_client(&stack);
    let pid = stack.wardle_pid();
    let base = format!("{}{FLUNDERS}", stack.wardle_url());
    // `app in (v1,…,vN)`: a valid selector of about 40 KiB, different each time.
    let selector = || {
        let values: Vec<String> = (0..630).map(|_| random_text(63)).collect();
        format!("app in ({})", values.join(","))
    };
    let send = |n: usize| {
        flood(n, |_| {
            client
                .get(&base)
                .query(&[("labelSelector", selector().as_str())])
        })
    };
    let warm = send(60).await;
    assert_eq!(warm.get(&403), Some(&60), "{warm:?}");
    // The measured subject is memory: the server settles a second before its RSS is read.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let before = rss_mib(pid);
    // Kept, each answer would hold about 50 KB (its key is the review with the selector).
    let codes = send(600).await;
    assert_eq!(codes.get(&403), Some(&600), "{codes:?}");
    // The measured subject is memory: two seconds to free what the requests held.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let after = rss_mib(pid);
    assert!(
        after - before < 15.0,
        "wardle's RSS grew from {before:.1} MiB to {after:.1} MiB over 600 anonymous lists \
         with 40 KiB selectors"
    );
}
