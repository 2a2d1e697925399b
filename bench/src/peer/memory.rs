//! The peer group's memory rows: anonymous resident memory (`RssAnon`, heap and stacks
//! without file-backed pages) of wardle, the bare baseline and sample-apiserver at one moment.

use crate::compare::ratio;
use crate::peer::versus::Versus;
use crate::process::anon_bytes;
use crate::report::{Measurement, Row, mib};

/// Anonymous resident memory (`RssAnon`) of `pid`, as a measurement.
pub fn anon(pid: u32) -> Measurement {
    Measurement {
        peak_rss_mib: Some(mib(anon_bytes(pid))),
        count: 1,
        ..Default::default()
    }
}

/// A memory row: `RssAnon` of wardle, the bare baseline and sample-apiserver.
pub fn memory_row(
    scenario: &str,
    w: Measurement,
    b: Measurement,
    s: Measurement,
    note: &str,
) -> Row {
    let r = ratio(w.peak_rss_mib, b.peak_rss_mib);
    let v = Versus::memory(
        w.peak_rss_mib.unwrap_or_default(),
        s.peak_rss_mib.unwrap_or_default(),
    );
    Row::new(
        scenario,
        w,
        "bare baseline",
        b,
        "RssAnon, lower is better",
        r,
    )
    .peer(v)
    .note(note.to_string())
}
