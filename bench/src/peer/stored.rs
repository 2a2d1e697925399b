//! Many stored objects beside sample-apiserver: the anonymous memory each server gains a
//! stored Flunder, and a paged sweep through all of them, against the bare baseline answering
//! wardle's pages.

use std::path::Path;

use crate::baseline::Recordings;
use crate::client::Error;
use crate::lists::{ratio_of, sweep, sweeps};
use crate::peer::versus::PEER;
use crate::peer::versus::Versus;
use crate::peer::writes;
use crate::plan::Plan;
use crate::process::anon_bytes;
use crate::profile::Profiles;
use crate::report::{Measurement, Row, mib};
use crate::requests::{collection, write_recordings};
use crate::servers::{self, Server};
use crate::tls::Pki;

/// The namespace the objects are stored in.
pub const NAMESPACE: &str = "peer-memory";

/// A server holding objects: it, and the processes whose CPU its fill counts.
pub type Side<'a> = (&'a Server, &'a [u32]);

/// `RssAnon` of `pid` once it has settled for `plan.settle`.
async fn settled_anon(plan: &Plan, pids: [u32; 2]) -> [u64; 2] {
    // The measured subject is memory: the servers settle before it is read.
    tokio::time::sleep(plan.settle).await;
    pids.map(anon_bytes)
}

/// Stores `plan.memory_objects` Flunders in each server, reading `RssAnon` before and after,
/// then sweeps them `plan.page_limit` at a time on each server and on a bare baseline
/// answering wardle's pages. `object_bytes` is one create answer's size on wardle.
pub async fn rows(
    plan: &Plan,
    dir: &Path,
    pki: &Pki,
    wardle: Side<'_>,
    sample: Side<'_>,
    object_bytes: usize,
    say: &impl Fn(&str),
) -> Result<Vec<Row>, Error> {
    let n = plan.memory_objects;
    let (w, s) = (wardle.0, sample.0);
    let before = settled_anon(plan, [w.pid(), s.pid()]).await;
    say(&format!("  storing {n} objects in each server"));
    for (server, pids) in [wardle, sample] {
        let conc = plan.concurrency;
        writes::fill(&server.target, NAMESPACE, "m-", n, conc, pids).await?;
    }
    let after = settled_anon(plan, [w.pid(), s.pid()]).await;
    let per_object = |i: usize| (after[i] as f64 - before[i] as f64) / n.max(1) as f64;
    let (wb, sb) = (per_object(0), per_object(1));
    let json = object_bytes as f64;
    let framework = Measurement {
        peak_rss_mib: Some(mib(after[0])),
        count: n,
        ..Default::default()
    };
    let objects = Measurement {
        peak_rss_mib: Some(mib(object_bytes as u64 * n)),
        count: n,
        ..Default::default()
    };
    let mut rows = vec![
        Row::new(
            format!("peer: RssAnon per stored object, {n} Flunders"),
            framework,
            "the objects' JSON",
            objects,
            "RssAnon bytes an object ÷ its JSON bytes, lower is better",
            crate::compare::ratio(Some(wb), Some(json)),
        )
        .peer(Versus::per_object(wb, sb))
        .note(format!(
            "RssAnon gained over the fill, settled, ÷ {n}: wardle {wb:.0} bytes an object, sample-apiserver {sb:.0}; each object's JSON (a create answer) {object_bytes} bytes; both servers keep their watch cache on, as they run by default; peak RSS MiB is each server's RssAnon with the objects"
        )),
    ];

    say("  paged sweep");
    let path = collection(NAMESPACE);
    let limit = plan.page_limit;
    let mut recordings = Recordings::new();
    let first = sweep(&w.target, &path, limit, Some((&mut recordings, n))).await?;
    let file = write_recordings(dir, "recordings-pages.json", &recordings)?;
    drop(recordings);
    let bare = servers::baseline(dir, "baseline-pages", pki, &file).await?;
    // Three rounds of each server's sweep, about as long as the recording one each.
    let length = first.elapsed * 6;
    let profiles = Profiles::start(
        plan,
        "sweep",
        &[("wardle", w.pid()), (PEER, s.pid())],
        Some((&s.target, length)),
    );
    let [
        (wm, w_time, w_slowest),
        (sm, s_time, s_slowest),
        (bm, b_time, _),
    ] = sweeps(
        [
            (&w.target, w.pid()),
            (&s.target, s.pid()),
            (&bare.target, bare.pid()),
        ],
        &path,
        limit,
    )
    .await?;
    profiles.finish().await;
    let versus = Versus::throughput(&wm, sm, None);
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1000.0;
    rows.push(
        Row::new(
            format!("peer: paged LIST of {n} objects, limit={limit}"),
            wm,
            "bare baseline (the same pages)",
            bm,
            "time of a whole sweep ÷ the bare baseline's, lower is better",
            ratio_of(w_time, b_time),
        )
        .peer(versus)
        .note(format!(
            "{} pages a sweep on one connection, following each page's continue token; a sweep took {:.0} ms on wardle, {:.0} ms on sample-apiserver ({:.2} ×), {:.0} ms on the bare baseline (means of 3); the slowest page {:.0} ms on wardle, {:.0} ms on sample-apiserver; req/s and req/CPU-s count pages, CPU the server's own process",
            first.pages,
            ms(w_time),
            ms(s_time),
            ratio_of(w_time, s_time).unwrap_or(f64::NAN),
            ms(b_time),
            w_slowest,
            s_slowest,
        )),
    );
    Ok(rows)
}
