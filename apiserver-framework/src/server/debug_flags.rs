//! `/debug/flags/v`: the log verbosity changed while the server runs, as upstream's
//! `routes.DebugFlags` with klog's setter. `PUT` a number (`3`) and the server logs as `-v=3`
//! would have it, answering `successfully set klog.logging.verbosity to 3`; another method
//! is `406 unsupported http method`, a body that is no number `400`. `/debug/flags` (and
//! `/debug/flags/`) lists the flags on an HTML page. Like every path that is not always
//! allowed, these pass authentication and authorization first (`put` on the non-resource URL
//! `/debug/flags/v`), and they are not listed in the server's index.
//!
//! The log filter is process-wide, as klog's verbosity is: the command line's logging
//! installs the setter ([`set_verbosity_setter`]); without one (a server embedded in a
//! program that installs its own subscriber) `PUT` answers 400.

use std::sync::OnceLock;

use axum::body::Body;
use http::{HeaderValue, Method, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Limited};

/// The path of the verbosity flag.
pub const VERBOSITY_PATH: &str = "/debug/flags/v";

/// The most bytes of a `PUT` body read: a verbosity is a few digits.
const MAX_BODY: usize = 64;

/// Sets the process's log verbosity.
type Setter = Box<dyn Fn(u32) + Send + Sync>;

static SETTER: OnceLock<Setter> = OnceLock::new();

/// Installs how `PUT /debug/flags/v` changes the process's log verbosity (once per process;
/// later calls are ignored).
pub fn set_verbosity_setter(setter: impl Fn(u32) + Send + Sync + 'static) {
    let _ = SETTER.set(Box::new(setter));
}

/// Whether `path` is one of the debug flags' paths (`/debug/flags` and every path below it,
/// the unknown ones answered with the index, as upstream).
pub(crate) fn serves(path: &str) -> bool {
    path == "/debug/flags" || path.starts_with("/debug/flags/")
}

/// The answer to `req`, of one of the paths [`serves`] names.
pub(crate) async fn respond(req: Request<Body>) -> Response<Body> {
    if req.uri().path() != VERBOSITY_PATH {
        return index();
    }
    if req.method() != Method::PUT {
        return plain(StatusCode::NOT_ACCEPTABLE, "unsupported http method");
    }
    let body = match Limited::new(req.into_body(), MAX_BODY).collect().await {
        Ok(body) => body.to_bytes(),
        Err(e) => {
            return plain(
                StatusCode::BAD_REQUEST,
                &format!("error reading request body: {e}"),
            );
        }
    };
    let value = String::from_utf8_lossy(&body);
    match set_verbosity(&value) {
        Ok(text) => plain(StatusCode::OK, &text),
        Err(text) => plain(StatusCode::BAD_REQUEST, &text),
    }
}

/// Sets the verbosity to `value`, with upstream's answers.
fn set_verbosity(value: &str) -> Result<String, String> {
    let verbosity: u32 = value
        .parse()
        .map_err(|_| format!("strconv.ParseUint: parsing {value:?}: invalid syntax"))?;
    let setter = SETTER.get().ok_or_else(|| {
        format!("failed set klog.logging.verbosity {value}: no logger to set it on")
    })?;
    setter(verbosity);
    Ok(format!(
        "successfully set klog.logging.verbosity to {value}"
    ))
}

/// Upstream's page listing the flags.
fn index() -> Response<Body> {
    let page = "<html>\n<head>\n<title>/debug/flags/</title>\n</head>\n<body>\n/debug/flags/<br>\n\
                <br>\nflags:<br>\n<table>\n<tr>v<br>\n</table>\n<br>\nfull flags configurable<br>\n\
                </body>\n</html>\n";
    let mut res = Response::new(Body::from(page));
    res.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    res
}

/// A plain-text answer, as upstream's `writePlainText`.
fn plain(code: StatusCode, text: &str) -> Response<Body> {
    let mut res = Response::new(Body::from(format!("{text}\n")));
    *res.status_mut() = code;
    let headers = res.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    res
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_verbosity_must_be_a_number() {
        assert_eq!(
            set_verbosity("x").unwrap_err(),
            "strconv.ParseUint: parsing \"x\": invalid syntax"
        );
        assert!(set_verbosity("-1").is_err());
        assert!(serves("/debug/flags/v") && serves("/debug/flags/") && !serves("/debug/pprof"));
    }
}
