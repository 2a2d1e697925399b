//! HTTP/2 at the level of frames (RFC 9113, with literal HPACK fields of RFC 7541), for tests
//! of clients that misbehave: the frames and header fields to write, and [`flood`], an
//! attacker that writes every stream's HEADERS up front, one `write` for a whole batch, and
//! times each answer and reset as its frame is read, in one task per connection. Every
//! [`CHUNK`] streams it sends a `PING`: the server answers a `PING` once it has read every
//! frame before it, so its answer tells when the server read those streams (until then they
//! wait in the socket, costing it nothing). A client of the `h2` crate keeps a task and the
//! state of a full client per stream, and on a two-core machine it spent three times the CPU
//! of the server it attacked, so its timings measured mostly itself.
//!
//! [`flood`]'s header block is encoded without HPACK's dynamic table (each field indexed from
//! the static table or sent as a literal not indexed), so one block serves every stream. Of
//! the answers only what the attack tests need is read: the frame's type, stream and timing, a
//! reset's error code, and the `code` of the `Status` a DATA frame carries; the server's
//! header blocks are not decoded.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use apiserver_framework::testing::tls;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The client's connection preface.
pub const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
/// Frame types.
pub const DATA: u8 = 0x0;
pub const HEADERS: u8 = 0x1;
pub const RST_STREAM: u8 = 0x3;
pub const SETTINGS: u8 = 0x4;
pub const PING: u8 = 0x6;
pub const GOAWAY: u8 = 0x7;
pub const WINDOW_UPDATE: u8 = 0x8;
pub const CONTINUATION: u8 = 0x9;
/// Frame flags.
pub const END_STREAM: u8 = 0x1;
pub const ACK: u8 = 0x1;
pub const END_HEADERS: u8 = 0x4;
/// The most of an answer's body kept to read its `Status` code.
const MAX_BODY: usize = 4096;
/// The whole body of a 429 from the in-flight limit, as upstream's `MaxInFlightLimit` writes it.
const TOO_MANY_REQUESTS: &str = "Too many requests, please try again later.\n";
/// The streams between two `PING`s of [`flood`].
pub const CHUNK: usize = 20;
/// The attacker's flow-control windows: answers it never reads do not stall the server.
const STREAM_WINDOW: u32 = 1 << 20;
const CONNECTION_WINDOW: u32 = 16 << 20;

/// What became of one stream, timed from the moment its HEADERS were written.
#[derive(Debug, Default, Clone, Copy)]
pub struct Outcome {
    /// When the answer to the `PING` after its HEADERS arrived: the server had read them.
    pub read: Option<Duration>,
    /// The answer's code, read from its body (0: none read; see `status_code`).
    pub status: u16,
    /// The bytes of the answer's body.
    pub body_bytes: usize,
    /// When the answer's HEADERS arrived.
    pub answered: Option<Duration>,
    /// When the stream's `RST_STREAM` arrived, and its error code.
    pub reset: Option<(Duration, u32)>,
}

impl Outcome {
    /// How long the server held the stream: from reading its HEADERS to its reset.
    pub fn held(&self) -> Option<Duration> {
        let (reset, _) = self.reset?;
        Some(reset.saturating_sub(self.read?))
    }
}

/// How one attacking connection ended.
#[derive(Debug)]
pub struct Connection {
    /// Each stream's outcome, in the order opened.
    pub streams: Vec<Outcome>,
    /// The error code of a `GOAWAY` the server sent, if it sent one.
    pub goaway: Option<u32>,
}

/// The HPACK header block of a `method` request for `path` announcing `content_length` bytes of
/// JSON, encoded without the dynamic table.
pub fn header_block(method: &str, path: &str, authority: &str, content_length: usize) -> Vec<u8> {
    let mut block = Vec::new();
    match method {
        "GET" => block.push(0x82),
        "POST" => block.push(0x83),
        other => literal(&mut block, 2, other),
    }
    block.push(0x87); // :scheme https
    literal(&mut block, 4, path);
    literal(&mut block, 1, authority);
    literal(&mut block, 31, "application/json");
    literal(&mut block, 28, &content_length.to_string());
    block
}

/// A literal header field without indexing, its name the static table's `name_index`, no
/// Huffman coding.
fn literal(block: &mut Vec<u8>, name_index: usize, value: &str) {
    hpack_int(block, 0x00, 4, name_index);
    hpack_int(block, 0x00, 7, value.len());
    block.extend_from_slice(value.as_bytes());
}

/// A literal header field without indexing, new name, no Huffman coding.
pub fn hpack_field(block: &mut Vec<u8>, name: &str, value: &str) {
    block.push(0);
    hpack_int(block, 0, 7, name.len());
    block.extend_from_slice(name.as_bytes());
    hpack_int(block, 0, 7, value.len());
    block.extend_from_slice(value.as_bytes());
}

/// An HPACK integer with an `prefix_bits`-bit prefix (RFC 7541 §5.1), the first byte's other
/// bits `flags`.
pub fn hpack_int(block: &mut Vec<u8>, flags: u8, prefix_bits: u32, mut value: usize) {
    let max = (1usize << prefix_bits) - 1;
    if value < max {
        block.push(flags | value as u8);
        return;
    }
    block.push(flags | max as u8);
    value -= max;
    while value >= 128 {
        block.push((value % 128) as u8 | 0x80);
        value /= 128;
    }
    block.push(value as u8);
}

/// One frame.
pub fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(9 + payload.len());
    push_frame(&mut out, kind, flags, stream, payload);
    out
}

/// Appends one frame to `out`.
fn push_frame(out: &mut Vec<u8>, kind: u8, flags: u8, stream: u32, payload: &[u8]) {
    let len = payload.len() as u32;
    out.extend_from_slice(&len.to_be_bytes()[1..]);
    out.push(kind);
    out.push(flags);
    out.extend_from_slice(&stream.to_be_bytes());
    out.extend_from_slice(payload);
}

/// Opens a connection to `addr` (trusting `ca_pem`), writes `count` streams, each the HEADERS
/// `block` and nothing else, in one batch, and reads until every stream is reset, the server
/// sends `GOAWAY` or closes, or `patience` passes without a frame.
pub async fn flood(
    ca_pem: &str,
    addr: SocketAddr,
    block: &[u8],
    count: usize,
    patience: Duration,
) -> Connection {
    let config = tls::client_config(ca_pem, &[b"h2"]);
    let mut tls = tls::connect(addr, &addr.ip().to_string(), config)
        .await
        .expect("TLS");
    let mut start = PREFACE.to_vec();
    let mut settings = Vec::new();
    settings.extend_from_slice(&0x2u16.to_be_bytes()); // ENABLE_PUSH 0
    settings.extend_from_slice(&0u32.to_be_bytes());
    settings.extend_from_slice(&0x4u16.to_be_bytes()); // INITIAL_WINDOW_SIZE
    settings.extend_from_slice(&STREAM_WINDOW.to_be_bytes());
    push_frame(&mut start, SETTINGS, 0, 0, &settings);
    push_frame(
        &mut start,
        WINDOW_UPDATE,
        0,
        0,
        &(CONNECTION_WINDOW - 65_535).to_be_bytes(),
    );
    tls.write_all(&start).await.expect("the preface");
    // The server's SETTINGS come first: acknowledged before the flood.
    let mut payload = Vec::new();
    loop {
        let (kind, flags, _) = read_frame(&mut tls, &mut payload)
            .await
            .expect("the server's SETTINGS");
        if kind == SETTINGS && flags & ACK == 0 {
            let mut ack = Vec::new();
            push_frame(&mut ack, SETTINGS, ACK, 0, &[]);
            tls.write_all(&ack).await.expect("a SETTINGS ACK");
            break;
        }
    }

    let mut batch = Vec::with_capacity(count * (block.len() + 9) + count / CHUNK * 17 + 17);
    for i in 0..count {
        push_frame(&mut batch, HEADERS, END_HEADERS, 1 + 2 * i as u32, block);
        if (i + 1) % CHUNK == 0 || i + 1 == count {
            push_frame(&mut batch, PING, 0, 0, &((i / CHUNK) as u64).to_be_bytes());
        }
    }
    let (mut read, mut write) = tokio::io::split(tls);
    let sent = Instant::now();
    let writing = async {
        write.write_all(&batch).await.expect("the HEADERS");
        write.flush().await.expect("the HEADERS");
        write
    };
    let mut streams = vec![Outcome::default(); count];
    let mut goaway = None;
    let mut open = count;
    let mut bodies: HashMap<u32, Vec<u8>> = HashMap::new();
    let mut unanswered_pings = count.div_ceil(CHUNK);
    let mut acks = Vec::new();
    let reading = async {
        while open > 0 || unanswered_pings > 0 {
            let next = tokio::time::timeout(patience, read_frame(&mut read, &mut payload));
            let Ok(Some((kind, flags, id))) = next.await else {
                break;
            };
            let at = sent.elapsed();
            let stream = (id > 0 && id % 2 == 1)
                .then(|| streams.get_mut((id as usize - 1) / 2))
                .flatten();
            match (kind, stream) {
                (HEADERS, Some(s)) => s.answered = s.answered.or(Some(at)),
                // The body may come in several DATA frames: kept until its code is read.
                (DATA, Some(s)) if s.status != 0 => s.body_bytes += payload.len(),
                (DATA, Some(s)) => {
                    s.body_bytes += payload.len();
                    let body = bodies.entry(id).or_default();
                    body.extend_from_slice(&payload[..payload.len().min(MAX_BODY)]);
                    s.status = status_code(body);
                    if s.status != 0 || body.len() >= MAX_BODY {
                        bodies.remove(&id);
                    }
                }
                (RST_STREAM, Some(s)) if s.reset.is_none() => {
                    let code = u32::from_be_bytes(payload[..4].try_into().expect("4 bytes"));
                    s.reset = Some((at, code));
                    open -= 1;
                }
                (SETTINGS, _) if flags & ACK == 0 => push_frame(&mut acks, SETTINGS, ACK, 0, &[]),
                (PING, _) if flags & ACK == 0 => push_frame(&mut acks, PING, ACK, 0, &payload),
                (PING, _) if payload.len() == 8 => {
                    let chunk = u64::from_be_bytes(payload[..8].try_into().expect("8")) as usize;
                    let first = chunk * CHUNK;
                    unanswered_pings = unanswered_pings.saturating_sub(1);
                    for s in streams.iter_mut().skip(first).take(CHUNK) {
                        s.read = s.read.or(Some(at));
                    }
                }
                (GOAWAY, _) => {
                    goaway = Some(u32::from_be_bytes(payload[4..8].try_into().expect("8")));
                    break;
                }
                _ => {}
            }
        }
    };
    let (mut write, ()) = tokio::join!(writing, reading);
    if !acks.is_empty() {
        let _ = write.write_all(&acks).await;
    }
    Connection { streams, goaway }
}

/// Reads one frame into `payload`: its type, flags and stream (`None` at the end or on an
/// error).
async fn read_frame(
    read: &mut (impl tokio::io::AsyncRead + Unpin),
    payload: &mut Vec<u8>,
) -> Option<(u8, u8, u32)> {
    let mut head = [0u8; 9];
    read.read_exact(&mut head).await.ok()?;
    let len = u32::from_be_bytes([0, head[0], head[1], head[2]]) as usize;
    payload.resize(len, 0);
    read.read_exact(payload).await.ok()?;
    let id = u32::from_be_bytes([head[5], head[6], head[7], head[8]]) & 0x7fff_ffff;
    Some((head[3], head[4], id))
}

/// The answer's code read from its body: the `code` of the `Status` it begins, or 429 for the
/// plain text of a request refused by the in-flight limit (upstream's `http.Error` body, which
/// carries no `Status`); 0 when there is neither.
fn status_code(payload: &[u8]) -> u16 {
    let text = String::from_utf8_lossy(payload);
    if text.starts_with(TOO_MANY_REQUESTS) {
        return 429;
    }
    text.split_once("\"code\":")
        .and_then(|(_, rest)| rest.get(..3))
        .and_then(|code| code.parse().ok())
        .unwrap_or(0)
}

/// Counts of `values`, by value.
pub fn tally<T: std::hash::Hash + Eq + Ord + Copy>(
    values: impl IntoIterator<Item = T>,
) -> std::collections::BTreeMap<T, usize> {
    let mut counts = HashMap::new();
    for v in values {
        *counts.entry(v).or_insert(0) += 1;
    }
    counts.into_iter().collect()
}
