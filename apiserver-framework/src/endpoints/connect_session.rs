//! Running a connect subresource's session on its upgraded connection: WebSocket messages in
//! and out, converted to and from the handler's [`Frame`]s, within bounds on what a session
//! holds.
//!
//! - One message from the client is at most [`MAX_MESSAGE_BYTES`]; a larger one ends the
//!   session with the close code RFC 6455 gives it, 1009 (`Message Too Big`), as
//!   gorilla/websocket (which Kubernetes vendors) does past its read limit. Its size is known
//!   from the frame header, so it is refused before its payload is read.
//! - Each direction holds at most [`SESSION_QUEUE`]'s bytes: the reader reserves room for a
//!   whole message before it reads one, and an outgoing frame counts until it is written.
//!   With the handler holding one frame, a session whose client sends without reading holds
//!   about three of the largest messages, whatever it sends; the rest waits in the kernel.
//! - Ending the session (the handler's Status, close frames) may take at most
//!   [`CLOSE_TIMEOUT`]: a client that has stopped reading cannot hold the end open. (Until
//!   then, such a client holds the session while its bytes are bounded as above;
//!   `--streaming-connection-idle-timeout` bounds that in time.)
//!
//! The connection layer below keeps counting the connection against `--max-open-connections`
//! while the session lives, and closes it once idle past `--streaming-connection-idle-timeout`.

use std::time::Duration;

use bytes::{Bytes, BytesMut};
use futures::stream::{SplitSink, SplitStream};
use futures::{SinkExt, StreamExt};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::sync::oneshot;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::error::CapacityError;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, Message, Role, WebSocketConfig};

use crate::error::{Status, StatusDetails};
use crate::registry::rest::connect::queue::{QueueBounds, QueueReceiver, QueueSender};
use crate::registry::rest::connect::{self, ConnectStream, Frame, Outgoing, StreamProtocol};
use crate::registry::rest::subresource::Session;

/// The largest WebSocket message a client may send to a connect subresource (1 MiB, the
/// channel byte included).
pub const MAX_MESSAGE_BYTES: usize = 1024 * 1024;

/// What each direction of a session may hold between the connection and the handler: 16
/// frames and one largest message's bytes.
pub const SESSION_QUEUE: QueueBounds = QueueBounds {
    messages: 16,
    bytes: MAX_MESSAGE_BYTES,
};

/// How long the end of a session (its final Status and close frame) may take to be written.
pub const CLOSE_TIMEOUT: Duration = Duration::from_secs(5);

/// After refusing a message, how much of it (and of what follows) is read and discarded
/// before the connection is closed, so that the client, still sending it, reads the close
/// frame rather than a reset connection.
const DISCARD_AFTER_REFUSAL: usize = 4 * MAX_MESSAGE_BYTES;

type Socket = WebSocketStream<TokioIo<hyper::upgrade::Upgraded>>;

/// Why the writing side stopped.
enum Ending {
    /// The handler finished, with its Status.
    Finished(Option<Box<Status>>),
    /// The client sent a message over the bound (the close frame's reason).
    TooBig(String),
    /// The connection failed, or the handler left without finishing.
    Gone,
}

/// Runs `session` on an upgraded connection until it finishes or the client leaves.
pub(crate) async fn run(
    upgraded: hyper::upgrade::Upgraded,
    protocol: StreamProtocol,
    session: Session,
) {
    let config = WebSocketConfig::default()
        .max_message_size(Some(MAX_MESSAGE_BYTES))
        .max_frame_size(Some(MAX_MESSAGE_BYTES));
    let ws =
        WebSocketStream::from_raw_socket(TokioIo::new(upgraded), Role::Server, Some(config)).await;
    let (mut sink, source) = ws.split();
    let (stream, to_handler, from_handler) = ConnectStream::pair(protocol, SESSION_QUEUE);
    let handler = tokio::spawn(session(stream));
    let (too_big_tx, too_big_rx) = oneshot::channel();
    let reader = tokio::spawn(read(source, protocol, to_handler, too_big_tx));
    // Biased: the reader reports a refused message before it lets the handler know the
    // client is done (which may finish the handler and so the writer).
    let (ending, refused) = tokio::select! {
        biased;
        Ok((reason, source)) = too_big_rx => (Ending::TooBig(reason), Some(source)),
        ending = write(&mut sink, protocol, from_handler) => (ending, None),
    };
    let closing = async {
        close(&mut sink, protocol, ending).await;
        // The refused message's sender is likely still sending it: say no more, and read
        // what it sends until it hangs up (within bounds) so that it gets to read the close
        // frame. The WebSocket framing is lost at the refused message: bytes are discarded.
        if let Some(source) = refused
            && let Ok(ws) = sink.reunite(source)
        {
            let mut io = ws.into_inner();
            if io.shutdown().await.is_ok() {
                discard(&mut io, DISCARD_AFTER_REFUSAL).await;
            }
        }
    };
    let _ = tokio::time::timeout(CLOSE_TIMEOUT, closing).await;
    reader.abort();
    handler.abort();
}

/// Reads and drops what `io` receives until its end, an error, or `max` bytes.
async fn discard(io: &mut (impl AsyncRead + Unpin), max: usize) {
    let mut buf = vec![0u8; 16 * 1024];
    let mut total = 0;
    while total < max {
        match io.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => total += n,
        }
    }
}

/// Hands the client's messages to the handler, each once there is room for the largest;
/// reports a message over the bound on `too_big`, with the connection's reading half.
async fn read(
    mut source: SplitStream<Socket>,
    protocol: StreamProtocol,
    to_handler: QueueSender<Frame>,
    too_big: oneshot::Sender<(String, SplitStream<Socket>)>,
) {
    loop {
        let Ok(room) = to_handler.reserve(MAX_MESSAGE_BYTES).await else {
            return;
        };
        let data = match source.next().await {
            Some(Ok(Message::Binary(b))) => b,
            Some(Ok(Message::Text(t))) => Bytes::from(t),
            Some(Ok(Message::Close(_))) | None => return,
            Some(Ok(_)) => continue,
            Some(Err(tokio_tungstenite::tungstenite::Error::Capacity(
                CapacityError::MessageTooLong { size, max_size },
            ))) => {
                let reason = format!("message too big: {size} bytes, at most {max_size}");
                let _ = too_big.send((reason, source));
                return;
            }
            Some(Err(e)) => {
                tracing::debug!(error = %e, "a connect session's client connection failed");
                return;
            }
        };
        let frame = match protocol {
            StreamProtocol::Raw => Frame {
                channel: connect::STDIN,
                data,
            },
            _ => {
                let Some((&channel, _)) = data.split_first() else {
                    continue;
                };
                Frame {
                    channel,
                    data: data.slice(1..),
                }
            }
        };
        let len = frame.data.len();
        room.send(frame, len);
    }
}

/// Writes the handler's frames to the client until the handler finishes; each frame counts
/// against the queue until written.
async fn write(
    sink: &mut SplitSink<Socket, Message>,
    protocol: StreamProtocol,
    mut from_handler: QueueReceiver<Outgoing>,
) -> Ending {
    while let Some(out) = from_handler.recv().await {
        let (out, charge) = out.into_parts();
        match out {
            Outgoing::Frame(frame) => {
                let message = match protocol {
                    StreamProtocol::Raw => {
                        if !matches!(frame.channel, connect::STDOUT | connect::STDERR) {
                            continue;
                        }
                        frame.data
                    }
                    // The channel byte first: a copy (the handler's bytes are freed here).
                    _ => {
                        let Frame { channel, data } = frame;
                        let mut b = BytesMut::with_capacity(data.len() + 1);
                        b.extend_from_slice(&[channel]);
                        b.extend_from_slice(&data);
                        b.freeze()
                    }
                };
                if sink.send(Message::Binary(message)).await.is_err() {
                    return Ending::Gone;
                }
                drop(charge);
            }
            Outgoing::Finish(status) => return Ending::Finished(status),
        }
    }
    Ending::Gone
}

/// Ends the session on the wire: the handler's Status on the error channel (channel
/// protocols), then a close frame.
async fn close(sink: &mut SplitSink<Socket, Message>, protocol: StreamProtocol, ending: Ending) {
    let frame = match ending {
        Ending::Finished(status) => {
            if protocol != StreamProtocol::Raw {
                let status =
                    status.map_or_else(|| Status::success(StatusDetails::default()), |s| *s);
                let mut b = vec![connect::ERROR];
                b.extend_from_slice(&serde_json::to_vec(&status).unwrap_or_default());
                let _ = sink.send(Message::Binary(Bytes::from(b))).await;
            }
            None
        }
        Ending::TooBig(reason) => Some(CloseFrame {
            code: CloseCode::Size,
            reason: reason.into(),
        }),
        Ending::Gone => None,
    };
    let _ = sink.send(Message::Close(frame)).await;
    let _ = sink.close().await;
}
