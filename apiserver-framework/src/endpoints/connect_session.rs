//! Running a connect subresource's session on its upgraded connection: WebSocket messages in
//! and out, converted to and from the handler's [`Frame`]s, within bounds on what a session
//! holds.
//!
//! - One message from the client is at most [`MAX_MESSAGE_BYTES`]; a larger one ends the
//!   session.
//! - Each direction holds at most [`SESSION_QUEUE`]'s bytes: the reader reserves room for a
//!   whole message before it reads one, and an outgoing frame counts until it is written.
//!   With the handler holding one frame, a session whose client sends without reading holds
//!   about three of the largest messages, whatever it sends; the rest waits in the kernel.
//! - Ending the session (the handler's Status, close frames) may take at most
//!   [`CLOSE_TIMEOUT`]: a client that has stopped reading cannot hold the end open.

use std::time::Duration;

use bytes::{Bytes, BytesMut};
use futures::stream::{SplitSink, SplitStream};
use futures::{SinkExt, StreamExt};
use hyper_util::rt::TokioIo;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::protocol::{Message, Role, WebSocketConfig};

use crate::error::{Status, StatusDetails};
use crate::registry::connect::queue::{QueueBounds, QueueReceiver, QueueSender};
use crate::registry::connect::{self, ConnectStream, Frame, Outgoing, StreamProtocol};
use crate::registry::subresource::Session;

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

type Socket = WebSocketStream<TokioIo<hyper::upgrade::Upgraded>>;

/// Why the writing side stopped.
enum Ending {
    /// The handler finished, with its Status.
    Finished(Option<Box<Status>>),
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
    let reader = tokio::spawn(read(source, protocol, to_handler));
    let ending = write(&mut sink, protocol, from_handler).await;
    let _ = tokio::time::timeout(CLOSE_TIMEOUT, close(&mut sink, protocol, ending)).await;
    reader.abort();
    handler.abort();
}

/// Hands the client's messages to the handler, each once there is room for the largest.
async fn read(
    mut source: SplitStream<Socket>,
    protocol: StreamProtocol,
    to_handler: QueueSender<Frame>,
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
        Ending::Gone => None,
    };
    let _ = sink.send(Message::Close(frame)).await;
    let _ = sink.close().await;
}
