//! HTTP abuse against the real `wardle` binary over real TLS, written on raw sockets so that
//! each attack is exactly what it says: slow headers and bodies, header floods, huge request
//! lines, request smuggling, pipelining floods, HTTP/2 CONTINUATION, SETTINGS, PING and
//! rapid-reset floods, zero flow-control windows, too many streams, stalled and malformed TLS
//! handshakes, and connection floods.
//!
//! After every case the server answers `/readyz` 200 and its resident memory (VmRSS of the
//! server process) stays within a stated bound over what it used before the case. One server
//! process serves all the cases of a test; the cases of a test run one after another, so that
//! each memory reading is that case's.

mod support;

#[path = "production/h2_frames.rs"]
#[allow(dead_code)]
mod h2_frames;

use std::sync::Arc;
use std::time::{Duration, Instant};

use rustls::pki_types::ServerName;
use support::process::rss_mib;
use support::{FISCHERS, FLUNDERS, Wardle};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;

/// The server's deadlines in these tests: short, so that the cases that wait for them are quick.
const SHORT_TIMEOUTS: &[&str] = &[
    "--read-header-timeout",
    "2s",
    "--tls-handshake-timeout",
    "2s",
    "--request-timeout",
    "4s",
    "--idle-connection-timeout",
    "5s",
    "--http2-max-streams-per-connection",
    "100",
    "--http2-read-idle-timeout",
    "2s",
    "--http2-ping-timeout",
    "2s",
];

/// How long past a deadline of the server a connection may take to be closed on a busy
/// two-core machine.
const SLACK: Duration = Duration::from_secs(6);

/// A TLS client configuration trusting the server's CA, offering `alpn`.
fn tls_config(w: &Wardle, alpn: &[&[u8]]) -> Arc<rustls::ClientConfig> {
    Arc::new(apiserver_framework::testing::tls::client_config(
        &w.ca_pem, alpn,
    ))
}

fn authority(w: &Wardle) -> String {
    w.url.trim_start_matches("https://").to_string()
}

/// A TLS connection to the server.
async fn connect(w: &Wardle, config: &Arc<rustls::ClientConfig>) -> TlsStream<TcpStream> {
    let tcp = TcpStream::connect(authority(w)).await.expect("connect");
    tokio_rustls::TlsConnector::from(config.clone())
        .connect(ServerName::try_from("127.0.0.1").expect("a name"), tcp)
        .await
        .expect("a TLS handshake")
}

/// An HTTP/1.1 connection.
async fn h1(w: &Wardle) -> TlsStream<TcpStream> {
    connect(w, &tls_config(w, &[b"http/1.1"])).await
}

/// Reads until the peer closes the connection (or fails it) or `within` passes; the bytes
/// read and whether it was closed.
async fn read_until_closed<S: AsyncRead + Unpin>(s: &mut S, within: Duration) -> (Vec<u8>, bool) {
    let deadline = tokio::time::Instant::now() + within;
    let mut out = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match tokio::time::timeout_at(deadline, s.read(&mut buf)).await {
            Err(_) => return (out, false),
            Ok(Ok(0)) | Ok(Err(_)) => return (out, true),
            Ok(Ok(n)) => out.extend_from_slice(&buf[..n]),
        }
    }
}

/// The status codes of the HTTP/1.1 responses in `bytes`.
fn statuses(bytes: &[u8]) -> Vec<u16> {
    let text = String::from_utf8_lossy(bytes);
    text.match_indices("HTTP/1.1 ")
        .filter_map(|(i, _)| text.get(i + 9..i + 12)?.parse().ok())
        .collect()
}

/// Checks after a case: `/readyz` answers 200 (on a fresh connection) and the server's RSS is
/// at most `bound_mib` over `baseline_mib`.
async fn after_case(w: &Wardle, case: &str, baseline_mib: f64, bound_mib: f64) {
    let res = w
        .client()
        .get(w.at("/readyz"))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{case}: /readyz failed afterwards: {e}"));
    assert_eq!(res.status(), 200, "{case}: /readyz afterwards");
    let rss = rss_mib(w.pid());
    println!(
        "{case}: RSS {rss:.1} MiB (before the case {baseline_mib:.1} MiB, bound +{bound_mib} MiB)"
    );
    assert!(
        rss <= baseline_mib + bound_mib,
        "{case}: RSS {rss:.1} MiB is over {baseline_mib:.1} + {bound_mib} MiB"
    );
}

/// Warms the server up (both protocols, a list, a write) so that the baseline holds what any
/// server that served a little holds.
async fn warm_up(w: &Wardle) {
    let client = w.client();
    for _ in 0..20 {
        let res = client.get(w.at(FLUNDERS)).send().await.expect("a list");
        assert_eq!(res.status(), 200);
    }
    let res = client
        .post(w.at(FLUNDERS))
        .json(&serde_json::json!({
            "apiVersion": "wardle.example.com/v1alpha1", "kind": "Flunder",
            "metadata": {"name": "warm-up"}, "spec": {}
        }))
        .send()
        .await
        .expect("a create");
    assert_eq!(res.status(), 201);
}

// ---------------------------------------------------------------------------------------------
// HTTP/1.1

/// Slow headers (slowloris): 50 connections sending a header byte every 300 ms are all closed
/// at the header timeout (2 s), without an answer, as Go's server closes them.
async fn slowloris_headers(w: &Wardle) {
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..50 {
        let mut s = h1(w).await;
        tasks.push(tokio::spawn(async move {
            s.write_all(b"GET /readyz HTTP/1.1\r\nHost: x\r\n")
                .await
                .ok();
            for _ in 0..200 {
                if s.write_all(b"X").await.is_err() || s.flush().await.is_err() {
                    break;
                }
                let (_, closed) = read_until_closed(&mut s, Duration::from_millis(300)).await;
                if closed {
                    return Some(started.elapsed());
                }
            }
            None
        }));
    }
    for t in tasks {
        let closed_at = t.await.expect("a slowloris task");
        let at = closed_at.expect("a slowloris connection stayed open for a minute");
        assert!(
            at <= Duration::from_secs(2) + SLACK,
            "closed only after {at:?}"
        );
    }
}

/// Slow bodies: 20 POSTs announcing 100 kB and sending 10 bytes every 300 ms are answered
/// (or closed) by the request timeout (4 s), and none is stored.
async fn slow_bodies(w: &Wardle) {
    let started = Instant::now();
    let mut tasks = Vec::new();
    for i in 0..20 {
        let mut s = h1(w).await;
        let head = format!(
            "POST {FLUNDERS} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{{\"metadata\":{{\"name\":\"slow-{i}\"}},\"spec\":{{\"x\":\"",
            w.token
        );
        tasks.push(tokio::spawn(async move {
            s.write_all(head.as_bytes()).await.ok();
            let mut answer = Vec::new();
            for _ in 0..200 {
                if s.write_all(b"aaaaaaaaaa").await.is_err() {
                    break;
                }
                let (bytes, closed) = read_until_closed(&mut s, Duration::from_millis(300)).await;
                answer.extend(bytes);
                if closed || !answer.is_empty() {
                    let (rest, _) = read_until_closed(&mut s, Duration::from_millis(500)).await;
                    answer.extend(rest);
                    return (Some(started.elapsed()), answer);
                }
            }
            (None, answer)
        }));
    }
    for t in tasks {
        let (at, answer) = t.await.expect("a slow body task");
        let at = at.expect("a slow body was neither answered nor closed in a minute");
        assert!(
            at <= Duration::from_secs(4) + SLACK,
            "answered only after {at:?}"
        );
        for code in statuses(&answer) {
            assert!(
                code >= 400,
                "a slow body got {code}: {}",
                String::from_utf8_lossy(&answer)
            );
        }
    }
    let list: serde_json::Value = w
        .client()
        .get(w.at(FLUNDERS))
        .send()
        .await
        .expect("a list")
        .json()
        .await
        .expect("a list body");
    let stored = list["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter(|i| {
            i["metadata"]["name"]
                .as_str()
                .is_some_and(|n| n.starts_with("slow-"))
        })
        .count();
    assert_eq!(stored, 0, "a slow body was stored");
}

/// Sends `request` on a fresh HTTP/1.1 connection and reads the answer until the server
/// closes the connection; the status codes and whether it was closed.
async fn one_shot(w: &Wardle, request: &[u8]) -> (Vec<u16>, bool, String) {
    let mut s = h1(w).await;
    // The server may answer and close before everything is written.
    let _ = s.write_all(request).await;
    let _ = s.flush().await;
    let (bytes, closed) = read_until_closed(&mut s, Duration::from_secs(10)).await;
    let text = String::from_utf8_lossy(&bytes[..bytes.len().min(400)]).into_owned();
    (statuses(&bytes), closed, text)
}

/// Header floods: 500 headers, one header of 1 MiB, and 64 KiB of headers of 1 KiB each are
/// answered 431 and the connection is closed.
async fn header_floods(w: &Wardle) {
    let mut many = String::from("GET /readyz HTTP/1.1\r\nHost: x\r\n");
    for i in 0..500 {
        many.push_str(&format!("X-H{i}: v\r\n"));
    }
    many.push_str("\r\n");
    let huge = format!(
        "GET /readyz HTTP/1.1\r\nHost: x\r\nX-Big: {}\r\n\r\n",
        "a".repeat(1 << 20)
    );
    let mut wide = String::from("GET /readyz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n");
    for i in 0..64 {
        wide.push_str(&format!("X-W{i}: {}\r\n", "b".repeat(1024)));
    }
    wide.push_str("\r\n");
    for (name, request) in [("500 headers", many), ("a 1 MiB header", huge)] {
        let (codes, closed, text) = one_shot(w, request.as_bytes()).await;
        assert_eq!(codes, [431], "{name}: {text}");
        assert!(closed, "{name}: the connection stays open");
    }
    // 64 KiB in all is within Go's 1 MiB and hyper's buffer: served.
    let (codes, _, text) = one_shot(w, wide.as_bytes()).await;
    assert_eq!(codes.first(), Some(&200), "64 KiB of headers: {text}");
}

/// A request line of 1 MiB (a huge URI) is refused (414 or 431) and the connection closed.
async fn huge_request_line(w: &Wardle) {
    let request = format!(
        "GET /readyz?x={} HTTP/1.1\r\nHost: x\r\n\r\n",
        "u".repeat(1 << 20)
    );
    let (codes, closed, text) = one_shot(w, request.as_bytes()).await;
    assert!(
        codes == [414] || codes == [431],
        "a 1 MiB request line: {codes:?}: {text}"
    );
    assert!(closed, "a 1 MiB request line: the connection stays open");
}

/// Request smuggling: a request with both Content-Length and Transfer-Encoding, one with two
/// different Content-Lengths, malformed chunked bodies and an unknown transfer coding. None
/// is answered as if the bytes after its framing were a second request the server trusts:
/// at most one answer, never a 2xx for the smuggled request, and the connection is closed.
async fn request_smuggling(w: &Wardle) {
    let auth = format!("Authorization: Bearer {}\r\n", w.token);
    let smuggled = format!("GET {FLUNDERS}/smuggled HTTP/1.1\r\nHost: x\r\n{auth}\r\n");
    let cases = [
        (
            "Content-Length and Transfer-Encoding",
            format!(
                "POST {FLUNDERS} HTTP/1.1\r\nHost: x\r\n{auth}Content-Type: application/json\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n{smuggled}"
            ),
        ),
        (
            "two Content-Lengths",
            format!(
                "POST {FLUNDERS} HTTP/1.1\r\nHost: x\r\n{auth}Content-Type: application/json\r\nContent-Length: 2\r\nContent-Length: 30\r\n\r\n{{}}{smuggled}"
            ),
        ),
        (
            "a chunk size that is not hex",
            format!(
                "POST {FLUNDERS} HTTP/1.1\r\nHost: x\r\n{auth}Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{{}}\r\n0\r\n\r\n{smuggled}"
            ),
        ),
        (
            "a chunk size past 64 bits",
            format!(
                "POST {FLUNDERS} HTTP/1.1\r\nHost: x\r\n{auth}Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nfffffffffffffffffffff\r\n{{}}\r\n0\r\n\r\n{smuggled}"
            ),
        ),
        (
            "an unknown transfer coding",
            format!(
                "POST {FLUNDERS} HTTP/1.1\r\nHost: x\r\n{auth}Content-Type: application/json\r\nTransfer-Encoding: gzip\r\n\r\n{{}}{smuggled}"
            ),
        ),
        (
            "chunked, then another coding",
            format!(
                "POST {FLUNDERS} HTTP/1.1\r\nHost: x\r\n{auth}Content-Type: application/json\r\nTransfer-Encoding: chunked, identity\r\n\r\n0\r\n\r\n{smuggled}"
            ),
        ),
    ];
    for (name, request) in cases {
        let (codes, closed, text) = one_shot(w, request.as_bytes()).await;
        println!("request smuggling, {name}: answered {codes:?}, closed: {closed}");
        assert!(
            codes.len() <= 1,
            "{name}: {} answers: {codes:?}: {text}",
            codes.len()
        );
        if let Some(code) = codes.first() {
            assert!(
                (400..500).contains(code) || *code == 501,
                "{name}: answered {code}: {text}"
            );
        }
        assert!(
            closed,
            "{name}: the connection stays open after {codes:?}: {text}"
        );
    }
}

/// A pipelining flood: 5,000 requests written on one connection whose answers are not read
/// for 2 s (less than the request timeout, past which an unsent answer closes the
/// connection); the server stops reading when its answers back up (memory stays bounded),
/// then answers every one, in order.
async fn pipelining_flood(w: &Wardle, baseline: f64) {
    const REQUESTS: usize = 5_000;
    let s = h1(w).await;
    let (mut reader, mut writer) = tokio::io::split(s);
    let request = format!(
        "GET {FLUNDERS} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {}\r\n\r\n",
        w.token
    );
    let write = tokio::spawn(async move {
        let all = request.repeat(REQUESTS);
        writer
            .write_all(all.as_bytes())
            .await
            .expect("write the requests");
        writer
    });
    // The measured subject: what two seconds of a flood whose answers back up leave in memory.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let rss = rss_mib(w.pid());
    println!("pipelining flood: RSS {rss:.1} MiB while the answers back up");
    assert!(
        rss <= baseline + 64.0,
        "pipelining flood: RSS {rss:.1} MiB while backed up"
    );
    let mut bytes = Vec::new();
    let mut buf = vec![0u8; 256 * 1024];
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut answered = 0;
    while answered < REQUESTS && Instant::now() < deadline {
        let n = tokio::time::timeout(Duration::from_secs(30), reader.read(&mut buf))
            .await
            .expect("the answers keep coming")
            .expect("read the answers");
        assert!(n > 0, "closed after {answered} answers");
        bytes.extend_from_slice(&buf[..n]);
        answered = statuses(&bytes).len();
    }
    let codes = statuses(&bytes);
    assert_eq!(codes.len(), REQUESTS);
    assert!(codes.iter().all(|c| *c == 200), "not every answer is 200");
    drop(write.await.expect("the writer"));
}

/// Runs one case against `$w`: its resident memory before, the case, then [`after_case`]
/// with `$bound`; the case sees the memory before as `$baseline`.
macro_rules! case {
    ($w:ident, $name:literal, $bound:expr, |$baseline:ident| $run:expr) => {{
        let $baseline = rss_mib($w.pid());
        let started = Instant::now();
        $run;
        println!("{}: done in {:?}", $name, started.elapsed());
        after_case(&$w, $name, $baseline, $bound).await;
    }};
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http1_abuse() {
    let w = Wardle::start_with_args(SHORT_TIMEOUTS);
    warm_up(&w).await;
    case!(w, "slowloris headers", 32.0, |_b| slowloris_headers(&w)
        .await);
    case!(w, "slow bodies", 32.0, |_b| slow_bodies(&w).await);
    case!(w, "header floods", 32.0, |_b| header_floods(&w).await);
    case!(w, "huge request line", 32.0, |_b| huge_request_line(&w)
        .await);
    case!(w, "request smuggling", 32.0, |_b| request_smuggling(&w)
        .await);
    case!(w, "pipelining flood", 64.0, |b| pipelining_flood(&w, b)
        .await);
}

// ---------------------------------------------------------------------------------------------
// HTTP/2, as raw frames (RFC 9113) with literal HPACK fields (RFC 7541), so that a misbehaving
// client can be written.

use h2_frames::{
    CONTINUATION, DATA, END_HEADERS, END_STREAM, GOAWAY, HEADERS, PING, PREFACE, RST_STREAM,
    SETTINGS, frame, hpack_field,
};
/// SETTINGS_INITIAL_WINDOW_SIZE.
const INITIAL_WINDOW_SIZE: u16 = 0x4;
/// RST_STREAM's REFUSED_STREAM and CANCEL codes.
const REFUSED_STREAM: u32 = 0x7;
const CANCEL: u32 = 0x8;

/// The header block of a GET of `path` with the bearer token.
fn get_block(w: &Wardle, path: &str) -> Vec<u8> {
    let mut block = Vec::new();
    hpack_field(&mut block, ":method", "GET");
    hpack_field(&mut block, ":scheme", "https");
    hpack_field(&mut block, ":authority", &authority(w));
    hpack_field(&mut block, ":path", path);
    hpack_field(&mut block, "authorization", &format!("Bearer {}", w.token));
    block
}

/// An HTTP/2 connection with the preface and the client's SETTINGS (`settings` as id/value
/// pairs) sent.
async fn h2(w: &Wardle, settings: &[(u16, u32)]) -> TlsStream<TcpStream> {
    let mut s = connect(w, &tls_config(w, &[b"h2"])).await;
    assert_eq!(
        s.get_ref().1.alpn_protocol(),
        Some(&b"h2"[..]),
        "no h2 by ALPN"
    );
    let mut payload = Vec::new();
    for (id, value) in settings {
        payload.extend_from_slice(&id.to_be_bytes());
        payload.extend_from_slice(&value.to_be_bytes());
    }
    let mut hello = PREFACE.to_vec();
    hello.extend(frame(SETTINGS, 0, 0, &payload));
    s.write_all(&hello).await.expect("send the preface");
    s
}

/// A frame read from the server.
#[derive(Debug)]
struct Frame {
    kind: u8,
    flags: u8,
    payload: Vec<u8>,
}

/// The frames in `bytes` (a trailing partial frame is left out).
fn frames(bytes: &[u8]) -> Vec<Frame> {
    let mut out = Vec::new();
    let mut at = 0;
    while bytes.len() >= at + 9 {
        let len = u32::from_be_bytes([0, bytes[at], bytes[at + 1], bytes[at + 2]]) as usize;
        if bytes.len() < at + 9 + len {
            break;
        }
        out.push(Frame {
            kind: bytes[at + 3],
            flags: bytes[at + 4],
            payload: bytes[at + 9..at + 9 + len].to_vec(),
        });
        at += 9 + len;
    }
    out
}

/// The error code of a GOAWAY among `frames`, if the server sent one.
fn goaway(frames: &[Frame]) -> Option<u32> {
    frames
        .iter()
        .find(|f| f.kind == GOAWAY && f.payload.len() >= 8)
        .map(|f| u32::from_be_bytes([f.payload[4], f.payload[5], f.payload[6], f.payload[7]]))
}

/// Writes `chunk` again and again (at most `most` bytes) until the server closes the
/// connection or stops reading for 5 s; the bytes written and whether writing ended because
/// the connection was closed.
async fn write_flood<S: AsyncWrite + Unpin>(s: &mut S, chunk: &[u8], most: usize) -> (usize, bool) {
    let mut written = 0;
    while written < most {
        match tokio::time::timeout(Duration::from_secs(5), s.write_all(chunk)).await {
            Err(_) => return (written, false),
            Ok(Err(_)) => return (written, true),
            Ok(Ok(())) => written += chunk.len(),
        }
    }
    (written, false)
}

/// A CONTINUATION flood (CVE-2024-27316 and kin): a HEADERS frame without END_HEADERS and
/// then CONTINUATION frames without end. The server stops at its header list bound (16 KiB):
/// the stream is refused with 431 or the connection closed, long before 16 MiB are sent.
async fn continuation_flood(w: &Wardle) {
    let mut s = h2(w, &[]).await;
    let block = get_block(w, "/readyz");
    let _ = s.write_all(&frame(HEADERS, 0, 1, &block)).await;
    let mut filler = Vec::new();
    hpack_field(&mut filler, "x-filler", &"f".repeat(16_000));
    let chunk = frame(CONTINUATION, 0, 1, &filler);
    let (written, closed) = write_flood(&mut s, &chunk, 16 << 20).await;
    let (bytes, closed_after) = read_until_closed(&mut s, Duration::from_secs(10)).await;
    let got = frames(&bytes);
    println!(
        "CONTINUATION flood: {written} bytes written, closed while writing: {closed}, GOAWAY {:?}",
        goaway(&got)
    );
    assert!(
        written < 16 << 20,
        "the server read 16 MiB of CONTINUATION frames"
    );
    assert!(closed || closed_after, "the connection stays open");
}

/// A SETTINGS or PING flood whose acknowledgements are never read: the server stops reading
/// once its answers back up (or closes the connection); its memory stays bounded.
async fn control_frame_flood(w: &Wardle, kind: u8, payload: &[u8], baseline: f64) {
    let mut s = h2(w, &[]).await;
    let chunk: Vec<u8> = (0..1000).flat_map(|_| frame(kind, 0, 0, payload)).collect();
    let (written, closed) = write_flood(&mut s, &chunk, 64 << 20).await;
    let rss = rss_mib(w.pid());
    println!("{kind:#x} flood: {written} bytes written, closed: {closed}, RSS {rss:.1} MiB");
    assert!(
        written < 64 << 20,
        "the server read 64 MiB of control frames unanswered"
    );
    assert!(rss <= baseline + 64.0, "RSS {rss:.1} MiB during the flood");
}

/// A rapid-reset flood (CVE-2023-44487): HEADERS of a list and RST_STREAM at once, for 20,000
/// streams. The server bounds the work (it refuses the connection with GOAWAY once resets pile
/// up) and closes the connection.
async fn rapid_reset(w: &Wardle) {
    let mut s = h2(w, &[]).await;
    let block = get_block(w, FLUNDERS);
    let mut sent = 0;
    let mut closed = false;
    for batch in 0..200u32 {
        let mut chunk = Vec::new();
        for i in 0..100u32 {
            let stream = 1 + 2 * (batch * 100 + i);
            chunk.extend(frame(HEADERS, END_HEADERS | END_STREAM, stream, &block));
            chunk.extend(frame(RST_STREAM, 0, stream, &CANCEL.to_be_bytes()));
        }
        match tokio::time::timeout(Duration::from_secs(5), s.write_all(&chunk)).await {
            Ok(Ok(())) => sent += 100,
            _ => {
                closed = true;
                break;
            }
        }
    }
    let (bytes, closed_after) = read_until_closed(&mut s, Duration::from_secs(10)).await;
    let got = frames(&bytes);
    let answered = got.iter().filter(|f| f.kind == HEADERS).count();
    println!(
        "rapid reset: {sent} streams sent and reset, {answered} answered, GOAWAY {:?}",
        goaway(&got)
    );
    assert!(
        closed || closed_after,
        "the connection stays open after {sent} resets"
    );
    assert!(goaway(&got).is_some() || closed, "no GOAWAY");
    assert!(answered <= 1_000, "{answered} reset streams were served");
}

/// A zero flow-control window: the client opens 100 streams of a large list with an initial
/// window of 0, never grants more, and answers the server's PINGs, so that the connection
/// looks alive. The server cannot send; it holds at most those 100 answers, and closes the
/// connection once they are unsent past the request timeout (4 s), as upstream's timeout
/// aborts an answer it could not write in time.
async fn zero_window(w: &Wardle, baseline: f64) {
    let mut s = h2(w, &[(INITIAL_WINDOW_SIZE, 0)]).await;
    let block = get_block(w, FLUNDERS);
    let mut chunk = Vec::new();
    for i in 0..100u32 {
        chunk.extend(frame(HEADERS, END_HEADERS | END_STREAM, 1 + 2 * i, &block));
    }
    s.write_all(&chunk).await.expect("open the streams");
    let started = Instant::now();
    let (mut pending, mut data, mut peak) = (Vec::new(), 0, 0f64);
    let closed = loop {
        let (bytes, closed) = read_until_closed(&mut s, Duration::from_millis(250)).await;
        peak = peak.max(rss_mib(w.pid()));
        pending.extend(bytes);
        let got = frames(&pending);
        let used: usize = got.iter().map(|f| 9 + f.payload.len()).sum();
        for f in &got {
            if f.kind == PING && f.flags & 0x1 == 0 {
                let _ = s.write_all(&frame(PING, 0x1, 0, &f.payload)).await;
            }
            data += usize::from(f.kind == DATA && !f.payload.is_empty());
        }
        pending.drain(..used);
        if closed || started.elapsed() > Duration::from_secs(4) + SLACK * 2 {
            break closed;
        }
    };
    let at = started.elapsed();
    println!("zero window: peak RSS {peak:.1} MiB while stalled, closed: {closed} after {at:?}");
    assert_eq!(data, 0, "the server sent DATA past a zero window");
    assert!(peak <= baseline + 128.0, "RSS {peak:.1} MiB while stalled");
    assert!(closed, "a stalled connection answering PINGs stays open");
    assert!(
        at <= Duration::from_secs(4) + SLACK,
        "closed only after {at:?}"
    );
}

/// A client that stops reading (HTTP/1.1): 50 pipelined lists whose answers it never reads.
/// The server holds one answer, unsent, and closes the connection at the request timeout.
async fn stopped_reading(w: &Wardle) {
    let mut s = h1(w).await;
    let request = format!(
        "GET {FLUNDERS} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {}\r\n\r\n",
        w.token
    );
    s.write_all(request.repeat(50).as_bytes())
        .await
        .expect("send the requests");
    let started = Instant::now();
    // Nothing read: wait for the server to give up, then find the connection closed. The
    // measured subject: the server's request timeout (4 s), waited out on purpose.
    tokio::time::sleep(Duration::from_secs(4) + SLACK).await;
    let (bytes, closed) = read_until_closed(&mut s, Duration::from_secs(5)).await;
    println!(
        "stopped reading: {} bytes readable, closed: {closed}, {:?} after the requests",
        bytes.len(),
        started.elapsed()
    );
    assert!(
        closed,
        "a connection whose client stopped reading stays open"
    );
    assert!(
        statuses(&bytes).len() < 50,
        "every answer was sent to a client not reading"
    );
}

/// Too many streams: 300 watches opened at once on a connection allowing 100 concurrent
/// streams. The ones past 100 are refused (RST_STREAM REFUSED_STREAM, or the connection
/// refused), never served.
async fn too_many_streams(w: &Wardle) {
    let mut s = h2(w, &[]).await;
    // Wait for the server's SETTINGS, so that its stream limit is in force.
    let (first, _) = read_until_closed(&mut s, Duration::from_millis(500)).await;
    assert!(
        frames(&first)
            .iter()
            .any(|f| f.kind == SETTINGS && f.flags == 0),
        "no SETTINGS from the server"
    );
    s.write_all(&frame(SETTINGS, 0x1, 0, &[]))
        .await
        .expect("ack the settings");
    let block = get_block(w, &format!("{FISCHERS}?watch=true"));
    let mut chunk = Vec::new();
    for i in 0..300u32 {
        chunk.extend(frame(HEADERS, END_HEADERS | END_STREAM, 1 + 2 * i, &block));
    }
    s.write_all(&chunk).await.expect("open the streams");
    let (bytes, _) = read_until_closed(&mut s, Duration::from_secs(3)).await;
    let got = frames(&bytes);
    let answered = got.iter().filter(|f| f.kind == HEADERS).count();
    let refused = got
        .iter()
        .filter(|f| f.kind == RST_STREAM && f.payload == REFUSED_STREAM.to_be_bytes())
        .count();
    println!(
        "too many streams: {answered} answered, {refused} refused, GOAWAY {:?}",
        goaway(&got)
    );
    assert!(
        answered <= 100,
        "{answered} watches served on one connection"
    );
    assert!(
        refused >= 200 || goaway(&got).is_some(),
        "the streams past the limit were neither refused nor the connection closed"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http2_abuse() {
    let w = Wardle::start_with_args(SHORT_TIMEOUTS);
    warm_up(&w).await;
    // A list worth stalling: 40 Flunders of 20 kB each.
    let client = w.client();
    for i in 0..40 {
        let res = client
            .post(w.at(FLUNDERS))
            .json(&serde_json::json!({
                "apiVersion": "wardle.example.com/v1alpha1", "kind": "Flunder",
                "metadata": {"name": format!("big-{i}"), "annotations": {"note": "n".repeat(20_000)}},
                "spec": {}
            }))
            .send()
            .await
            .expect("a create");
        assert_eq!(res.status(), 201);
    }
    case!(w, "CONTINUATION flood", 32.0, |_b| continuation_flood(&w)
        .await);
    case!(w, "SETTINGS flood", 64.0, |b| control_frame_flood(
        &w,
        SETTINGS,
        &[],
        b
    )
    .await);
    case!(w, "PING flood", 64.0, |b| control_frame_flood(
        &w, PING, &[0; 8], b
    )
    .await);
    case!(w, "rapid reset", 64.0, |_b| rapid_reset(&w).await);
    case!(w, "zero window", 128.0, |b| zero_window(&w, b).await);
    case!(w, "stopped reading", 64.0, |_b| stopped_reading(&w).await);
    case!(w, "too many streams", 64.0, |_b| too_many_streams(&w).await);
}

// ---------------------------------------------------------------------------------------------
// TLS and connections

/// The first bytes of a TLS 1.2/1.3 ClientHello record: a handshake record header announcing
/// 512 bytes, and the start of the hello.
const PARTIAL_CLIENT_HELLO: &[u8] = &[0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03];

/// TLS handshake stalls: 300 connections that send the start of a ClientHello and then
/// nothing are all closed at the handshake timeout (2 s).
async fn handshake_stalls(w: &Wardle) {
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..300 {
        let mut tcp = TcpStream::connect(authority(w)).await.expect("connect");
        tasks.push(tokio::spawn(async move {
            tcp.write_all(PARTIAL_CLIENT_HELLO).await.ok();
            let (_, closed) = read_until_closed(&mut tcp, Duration::from_secs(2) + SLACK * 2).await;
            closed.then(|| started.elapsed())
        }));
    }
    for t in tasks {
        let at = t
            .await
            .expect("a stalled handshake")
            .expect("a stalled handshake stays open");
        assert!(
            at <= Duration::from_secs(2) + SLACK,
            "closed only after {at:?}"
        );
    }
}

/// Malformed TLS handshakes: plain HTTP on the TLS port, random bytes, a record header
/// announcing more than TLS allows, a ClientHello whose lengths disagree, an SSLv2 hello and a
/// ClientHello offering no cipher suite. Each is refused and closed at once (well before the
/// handshake timeout), 50 of each at the same time.
async fn malformed_handshakes(w: &Wardle) {
    let mut hello_lengths = vec![
        0x16, 0x03, 0x01, 0x00, 0x30, 0x01, 0x00, 0xff, 0xff, 0x03, 0x03,
    ];
    hello_lengths.extend([0u8; 0x2b]);
    // A ClientHello with session id, no cipher suites, null compression, no extensions.
    let mut no_suites = vec![0x03, 0x03];
    no_suites.extend([7u8; 32]);
    no_suites.extend([0x00, 0x00, 0x00, 0x01, 0x00]);
    let mut hs = vec![0x01, 0x00, 0x00, no_suites.len() as u8];
    hs.extend(no_suites);
    let mut record = vec![0x16, 0x03, 0x01, 0x00, hs.len() as u8];
    record.extend(hs);
    let cases: Vec<(&str, Vec<u8>)> = vec![
        (
            "plain HTTP",
            b"GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n".to_vec(),
        ),
        (
            "random bytes",
            (0..600u32)
                .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
                .collect(),
        ),
        (
            "an oversized record",
            vec![0x16, 0x03, 0x01, 0xff, 0xff, 0x01, 0x00, 0xff, 0xfb],
        ),
        ("lengths that disagree", hello_lengths),
        (
            "an SSLv2 hello",
            vec![
                0x80, 0x2e, 0x01, 0x00, 0x02, 0x00, 0x15, 0x00, 0x00, 0x00, 0x10,
            ],
        ),
        ("no cipher suites", record),
    ];
    for (name, bytes) in cases {
        let started = Instant::now();
        let mut tasks = Vec::new();
        for _ in 0..50 {
            let mut tcp = TcpStream::connect(authority(w)).await.expect("connect");
            let bytes = bytes.clone();
            tasks.push(tokio::spawn(async move {
                let _ = tcp.write_all(&bytes).await;
                let (answer, closed) = read_until_closed(&mut tcp, Duration::from_secs(10)).await;
                (closed, answer)
            }));
        }
        for t in tasks {
            let (closed, answer) = t.await.expect("a malformed handshake");
            assert!(closed, "{name}: the connection stays open");
            // Nothing but a TLS alert (content type 21) comes back, if anything.
            assert!(
                answer.is_empty() || answer[0] == 0x15,
                "{name}: answered {:?}",
                &answer[..answer.len().min(32)]
            );
        }
        let took = started.elapsed();
        println!("malformed handshake, {name}: 50 closed in {took:?}");
        assert!(
            took < Duration::from_secs(2),
            "{name}: waited for the handshake timeout ({took:?})"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_abuse() {
    let w = Wardle::start_with_args(SHORT_TIMEOUTS);
    warm_up(&w).await;
    let baseline = rss_mib(w.pid());
    handshake_stalls(&w).await;
    after_case(&w, "TLS handshake stalls", baseline, 32.0).await;
    let baseline = rss_mib(w.pid());
    malformed_handshakes(&w).await;
    after_case(&w, "malformed TLS handshakes", baseline, 32.0).await;
}

/// Idle TLS connections open at once: each costs a bounded amount of memory (measured and
/// printed), and the server keeps answering while they are open.
const IDLE_CONNECTIONS: usize = 10_000;

/// The most memory one idle TLS connection may hold, in KiB: a TLS session's state and
/// buffers plus a connection task, generously.
const KIB_PER_IDLE_CONNECTION: f64 = 64.0;

/// A connection flood: 10,000 idle TLS connections (handshake done, no request) on a server
/// without header or idle deadlines. Its memory grows by at most 64 KiB per connection (measured:
/// printed), `/readyz` answers while they are open, and closing them takes nothing more.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_idle_tls_connections() {
    // No header or handshake deadline, so that the first connections are still open when the
    // last one is.
    let w = Wardle::start_with_args(&[
        "--read-header-timeout",
        "0",
        "--idle-connection-timeout",
        "0",
    ]);
    warm_up(&w).await;
    let baseline = rss_mib(w.pid());
    let config = tls_config(&w, &[b"h2", b"http/1.1"]);
    let started = Instant::now();
    let mut open = Vec::with_capacity(IDLE_CONNECTIONS);
    let mut pending = futures::stream::FuturesUnordered::new();
    use futures::StreamExt;
    for _ in 0..IDLE_CONNECTIONS {
        let (w_url, config) = (authority(&w), config.clone());
        pending.push(async move {
            let tcp = TcpStream::connect(w_url).await.expect("connect");
            tokio_rustls::TlsConnector::from(config)
                .connect(ServerName::try_from("127.0.0.1").expect("a name"), tcp)
                .await
                .expect("a TLS handshake")
        });
        if pending.len() >= 64 {
            open.push(pending.next().await.expect("a connection"));
        }
    }
    while let Some(c) = pending.next().await {
        open.push(c);
    }
    let took = started.elapsed();
    // The measured subject is memory: the server settles a second before its RSS is read.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let rss = rss_mib(w.pid());
    let per_connection_kib = (rss - baseline) * 1024.0 / IDLE_CONNECTIONS as f64;
    println!(
        "{IDLE_CONNECTIONS} idle TLS connections opened in {took:?}: RSS {baseline:.1} -> {rss:.1} MiB, {per_connection_kib:.1} KiB each"
    );
    let res = w
        .client()
        .get(w.at("/readyz"))
        .send()
        .await
        .expect("/readyz");
    assert_eq!(
        res.status(),
        200,
        "/readyz with {IDLE_CONNECTIONS} connections open"
    );
    assert!(
        per_connection_kib <= KIB_PER_IDLE_CONNECTION,
        "{per_connection_kib:.1} KiB per idle connection"
    );
    drop(open);
    // The measured subject is memory: two seconds to free what the closed connections held.
    tokio::time::sleep(Duration::from_secs(2)).await;
    // Once they are closed nothing more is taken (what the allocator keeps for reuse may
    // stay), and the server answers.
    after_case(&w, "10,000 idle TLS connections, closed", rss, 8.0).await;
}
