//! Response compression as upstream's API handlers do it (`responsewriters`'
//! `deferredResponseWriter`): a response is gzip-encoded, at level 1, when the request's
//! `Accept-Encoding` lists `gzip` and the response is larger than 128 KiB; it then carries
//! `Content-Encoding: gzip` and `Vary: Accept-Encoding`. Watches are never compressed, nor is
//! any response whose size is not known before it is sent (a stream).
//!
//! tower-http's compression layer does the encoding. Which requests go through it is decided
//! here with upstream's rule, which differs from tower-http's own negotiation: upstream reads
//! only the first `Accept-Encoding` header and wants the bare token `gzip` (`gzip;q=0.5` does
//! not count), and never answers `406 Not Acceptable`. So the layer only sees requests that
//! upstream would compress for, with their `Accept-Encoding` narrowed to `gzip`; the header
//! is restored before the handler chain sees the request.

use std::convert::Infallible;

use axum::body::Body;
use http::{HeaderMap, HeaderValue, Request, Response, header};
use tower::ServiceExt;
use tower_http::compression::predicate::Predicate;
use tower_http::compression::{Compression, CompressionLevel};

/// Responses larger than this are compressed (upstream's `defaultGzipThresholdBytes`).
pub(crate) const GZIP_THRESHOLD_BYTES: u64 = 128 * 1024;

/// Upstream's gzip level (`gzipContentEncodingLevel`): the least CPU for nearly the same
/// ratio.
const GZIP_LEVEL: i32 = 1;

/// Whether upstream would gzip a large response to a request with `headers`: the first
/// `Accept-Encoding` header holds, between commas, the token `gzip` alone.
pub fn accepts_gzip(headers: &HeaderMap) -> bool {
    headers
        .get(header::ACCEPT_ENCODING)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|token| token.trim() == "gzip"))
}

/// Compresses bodies of a known size above [`GZIP_THRESHOLD_BYTES`].
#[derive(Clone, Copy, Debug)]
struct LargerThanThreshold;

impl Predicate for LargerThanThreshold {
    fn should_compress<B: http_body::Body>(&self, response: &Response<B>) -> bool {
        response
            .body()
            .size_hint()
            .exact()
            .is_some_and(|n| n > GZIP_THRESHOLD_BYTES)
    }
}

/// The request's own `Accept-Encoding` headers while the compression layer sees `gzip`.
#[derive(Clone, Debug)]
struct OriginalAcceptEncoding(Vec<HeaderValue>);

/// Serves `req` with `handler`, compressing the response when it is large. Only for
/// requests that [`accepts_gzip`] and that are not watches.
pub async fn compressed<F, Fut>(mut req: Request<Body>, handler: F) -> Response<Body>
where
    F: FnOnce(Request<Body>) -> Fut + Send + 'static,
    Fut: Future<Output = Response<Body>> + Send + 'static,
{
    let original: Vec<HeaderValue> = req
        .headers()
        .get_all(header::ACCEPT_ENCODING)
        .iter()
        .cloned()
        .collect();
    req.headers_mut()
        .insert(header::ACCEPT_ENCODING, HeaderValue::from_static("gzip"));
    req.extensions_mut()
        .insert(OriginalAcceptEncoding(original));
    let mut handler = Some(handler);
    let inner = tower::service_fn(move |mut req: Request<Body>| {
        if let Some(OriginalAcceptEncoding(values)) = req.extensions_mut().remove() {
            let headers = req.headers_mut();
            headers.remove(header::ACCEPT_ENCODING);
            for v in values {
                headers.append(header::ACCEPT_ENCODING, v);
            }
        }
        let handler = handler.take();
        async move {
            Ok::<_, Infallible>(match handler {
                Some(handler) => handler(req).await,
                None => unreachable_response(),
            })
        }
    });
    let service = Compression::new(inner)
        .gzip(true)
        .quality(CompressionLevel::Precise(GZIP_LEVEL))
        .compress_when(LargerThanThreshold);
    match service.oneshot(req).await {
        Ok(res) => res.map(Body::new),
        Err(never) => match never {},
    }
}

/// The one-shot service is called once; a second call would be a bug, answered 500.
fn unreachable_response() -> Response<Body> {
    axum::response::IntoResponse::into_response(crate::error::ApiError::internal(
        "the compression layer called its handler twice",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    fn headers(values: &[&str]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for v in values {
            h.append(header::ACCEPT_ENCODING, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn upstream_negotiation() {
        assert!(accepts_gzip(&headers(&["gzip"])));
        assert!(accepts_gzip(&headers(&["deflate, gzip"])));
        assert!(accepts_gzip(&headers(&[" br ,gzip ,x"])));
        assert!(!accepts_gzip(&headers(&[])));
        assert!(!accepts_gzip(&headers(&["gzip;q=1"])));
        assert!(!accepts_gzip(&headers(&["GZIP"])));
        assert!(!accepts_gzip(&headers(&["*"])));
        assert!(!accepts_gzip(&headers(&["br", "gzip"])));
    }

    async fn respond(accept: &[&str], size: usize) -> Response<Body> {
        let mut req = Request::new(Body::empty());
        *req.headers_mut() = headers(accept);
        compressed(req, move |req: Request<Body>| async move {
            // The handler sees the request's own header.
            let seen: Vec<_> = req
                .headers()
                .get_all(header::ACCEPT_ENCODING)
                .iter()
                .collect();
            assert_eq!(seen.len(), 2);
            Response::new(Body::from(vec![b'a'; size]))
        })
        .await
    }

    #[tokio::test]
    async fn large_responses_only() {
        let accept = ["deflate, gzip, identity;q=0", "br"];
        let small = respond(&accept, GZIP_THRESHOLD_BYTES as usize).await;
        assert!(small.headers().get(header::CONTENT_ENCODING).is_none());
        assert!(small.headers().get(header::VARY).is_none());
        let large = respond(&accept, GZIP_THRESHOLD_BYTES as usize + 1).await;
        assert_eq!(large.headers()[header::CONTENT_ENCODING], "gzip");
        assert_eq!(large.headers()[header::VARY], "accept-encoding");
        let bytes = large.into_body().collect().await.unwrap().to_bytes();
        let mut plain = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&bytes[..]), &mut plain)
            .unwrap();
        assert_eq!(plain, vec![b'a'; GZIP_THRESHOLD_BYTES as usize + 1]);
    }
}
