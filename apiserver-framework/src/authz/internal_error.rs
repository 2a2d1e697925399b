//! The answer when an authorizer could not decide: upstream's `responsewriters.InternalError`,
//! a plain-text `500` reading `Internal Server Error: "<request URI>": <error>`.

use axum::body::Body;
use http::{Response, StatusCode};

use super::forbidden::sanitize;
use crate::quote::go_quote;

/// The body text: `Internal Server Error: "<request URI>": <error>`, HTML-escaped, with the
/// trailing newline Go's `http.Error` writes.
pub fn internal_error_text(request_uri: &str, err: &str) -> String {
    let text = format!("Internal Server Error: {}: {err}", go_quote(request_uri));
    format!("{}\n", sanitize(&text))
}

/// The plain-text 500 for a request whose authorization failed with `err`.
pub fn internal_error_response(request_uri: &str, err: &str) -> Response<Body> {
    crate::endpoints::response::plain_text(
        StatusCode::INTERNAL_SERVER_ERROR,
        internal_error_text(request_uri, err),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text() {
        assert_eq!(
            internal_error_text("/apis/g/v1/things?watch=1", "host unreachable"),
            "Internal Server Error: \"/apis/g/v1/things?watch=1\": host unreachable\n"
        );
        assert_eq!(
            internal_error_text("/a<b>", "x & y"),
            "Internal Server Error: \"/a&lt;b&gt;\": x &amp; y\n"
        );
    }
}
