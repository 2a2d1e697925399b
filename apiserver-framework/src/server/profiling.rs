//! `/debug/pprof/`: CPU profiles of the running server in the pprof format that
//! `go tool pprof` reads, as upstream's `routes.Profiling` serves Go's (`--profiling`, on by
//! default as upstream). Like every path that is not always allowed, these pass authentication
//! and authorization first (`get` on the non-resource URL), and they are not listed in the
//! server's index.
//!
//! - `/debug/pprof` redirects (302) to `/debug/pprof/`, the index page;
//! - `/debug/pprof/profile?seconds=N` samples the whole process's CPU for `N` seconds (30 when
//!   missing or not a positive number, as Go's handler) with the `pprof` crate at 100 Hz and
//!   answers the profile as `application/octet-stream`; a second profile while one runs is
//!   answered as Go answers it: 500, `Could not enable CPU profiling: cpu profiling already in
//!   use`;
//! - every other name is `404 Unknown profile`: Go's runtime profiles (heap, goroutine, allocs,
//!   block, mutex, threadcreate) and its symbol and trace endpoints have no counterpart here.

use std::time::Duration;

use axum::body::Body;
use http::{HeaderValue, Request, Response, StatusCode, header};
use pprof::protos::Message as _;

/// The sampling frequency of CPU profiles, Go's (`runtime.SetCPUProfileRate(100)`).
const FREQUENCY: i32 = 100;

/// Whether `path` is one of the profiling paths.
pub(crate) fn serves(path: &str) -> bool {
    path == "/debug/pprof" || path.starts_with("/debug/pprof/")
}

/// The answer to `req`, of one of the paths [`serves`] names.
pub(crate) async fn respond(req: Request<Body>) -> Response<Body> {
    match req.uri().path() {
        "/debug/pprof" => {
            let mut res = text(StatusCode::FOUND, "text/html; charset=utf-8", "");
            res.headers_mut()
                .insert(header::LOCATION, HeaderValue::from_static("/debug/pprof/"));
            res
        }
        "/debug/pprof/" => text(StatusCode::OK, "text/html; charset=utf-8", INDEX),
        "/debug/pprof/profile" => cpu_profile(seconds(req.uri().query())).await,
        _ => plain_error(StatusCode::NOT_FOUND, "Unknown profile"),
    }
}

/// The `seconds` query parameter as Go's handler reads it: 30 unless a positive integer.
fn seconds(query: Option<&str>) -> u64 {
    form_urlencoded::parse(query.unwrap_or_default().as_bytes())
        .find(|(k, _)| k == "seconds")
        .and_then(|(_, v)| v.parse::<i64>().ok())
        .filter(|s| *s > 0)
        .map_or(30, |s| s as u64)
}

/// Samples the process for `seconds` and answers the profile.
async fn cpu_profile(seconds: u64) -> Response<Body> {
    let guard = match pprof::ProfilerGuardBuilder::default()
        .frequency(FREQUENCY)
        .blocklist(&["libc", "libgcc", "pthread", "vdso"])
        .build()
    {
        Ok(guard) => guard,
        Err(pprof::Error::Running) => {
            return plain_error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "Could not enable CPU profiling: cpu profiling already in use",
            );
        }
        Err(e) => {
            return plain_error(
                StatusCode::INTERNAL_SERVER_ERROR,
                &format!("Could not enable CPU profiling: {e}"),
            );
        }
    };
    tokio::time::sleep(Duration::from_secs(seconds)).await;
    // Symbolizing and encoding take CPU time of their own: off the runtime's workers.
    let encoded = tokio::task::spawn_blocking(move || {
        let profile = guard.report().build()?.pprof()?;
        drop(guard);
        Ok::<_, pprof::Error>(profile.encode_to_vec())
    })
    .await;
    match encoded {
        Ok(Ok(bytes)) => {
            let mut res = Response::new(Body::from(bytes));
            let headers = res.headers_mut();
            headers.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/octet-stream"),
            );
            headers.insert(
                header::CONTENT_DISPOSITION,
                HeaderValue::from_static("attachment; filename=\"profile\""),
            );
            headers.insert(
                header::X_CONTENT_TYPE_OPTIONS,
                HeaderValue::from_static("nosniff"),
            );
            res
        }
        Ok(Err(e)) => plain_error(
            StatusCode::INTERNAL_SERVER_ERROR,
            &format!("Could not write the CPU profile: {e}"),
        ),
        Err(e) => plain_error(
            StatusCode::INTERNAL_SERVER_ERROR,
            &format!("Could not write the CPU profile: {e}"),
        ),
    }
}

/// An error as Go's pprof handlers write it (`serveError`).
fn plain_error(code: StatusCode, message: &str) -> Response<Body> {
    let mut res = text(code, "text/plain; charset=utf-8", &format!("{message}\n"));
    res.headers_mut()
        .insert("x-go-pprof", HeaderValue::from_static("1"));
    res
}

fn text(code: StatusCode, content_type: &'static str, body: &str) -> Response<Body> {
    let mut res = Response::new(Body::from(body.to_string()));
    *res.status_mut() = code;
    let headers = res.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    res
}

/// The index page: the one profile there is.
const INDEX: &str = "<html>\n<head>\n<title>/debug/pprof/</title>\n</head>\n<body>\n\
/debug/pprof/\n<br>\nTypes of profiles available:\n<table>\n<thead><td>Count</td><td>Profile</td></thead>\n\
<tr><td></td><td><a href='profile'>profile</a></td></tr>\n</table>\n\
<p>profile: CPU profile. You can specify the duration in the seconds GET parameter. After you \
get the profile file, use the go tool pprof command to investigate the profile.</p>\n\
</body>\n</html>\n";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_are_read_as_go_reads_them() {
        assert_eq!(seconds(None), 30);
        assert_eq!(seconds(Some("seconds=5")), 5);
        assert_eq!(seconds(Some("seconds=0")), 30);
        assert_eq!(seconds(Some("seconds=-3")), 30);
        assert_eq!(seconds(Some("seconds=x")), 30);
        assert!(serves("/debug/pprof") && serves("/debug/pprof/heap") && !serves("/debug/pprofx"));
    }
}
