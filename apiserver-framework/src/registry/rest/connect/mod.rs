//! The stream a connect subresource serves: frames on numbered channels, as Kubernetes'
//! WebSocket channel protocols (`v5.channel.k8s.io`, `v4.channel.k8s.io`) carry them, or plain
//! bytes when the client asked for no channel protocol.
//!
//! The HTTP layer upgrades the connection, speaks the protocol and hands the handler a
//! [`ConnectStream`]; the handler only sees frames. The frames wait between the two in queues
//! bounded in bytes as well as in messages (`queue`).

pub(crate) mod queue;

use bytes::Bytes;

use self::queue::{QueueBounds, QueueReceiver, QueueSender};
use crate::error::Status;

/// Channel 0: what the client sends (a process's standard input).
pub const STDIN: u8 = 0;
/// Channel 1: the main output.
pub const STDOUT: u8 = 1;
/// Channel 2: the error output.
pub(crate) const STDERR: u8 = 2;
/// Channel 3: the final `Status` of the session (v4 and v5), sent by [`ConnectStream::finish`].
pub const ERROR: u8 = 3;
/// Channel 4: terminal size changes (JSON `{"Width":…,"Height":…}`).
pub const RESIZE: u8 = 4;
/// Channel 255 (v5 only): the client closed the channel named by the frame's first data byte.
pub const CLOSE: u8 = 255;

/// The protocol the connection speaks, as negotiated by `Sec-WebSocket-Protocol`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StreamProtocol {
    /// `v5.channel.k8s.io`: channel byte first; channel 255 closes a channel.
    V5Channel,
    /// `v4.channel.k8s.io`: channel byte first; the final Status goes on channel 3.
    V4Channel,
    /// No subprotocol: every binary or text message is data, in both directions, without a
    /// channel byte (reported as [`STDIN`] coming in; only [`STDOUT`] and `STDERR` go out).
    Raw,
}

impl StreamProtocol {
    /// The `Sec-WebSocket-Protocol` names, in the server's order of preference.
    pub const CHANNEL_PROTOCOLS: [&'static str; 2] = ["v5.channel.k8s.io", "v4.channel.k8s.io"];

    /// The protocol named `name`, if served.
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "v5.channel.k8s.io" => Some(StreamProtocol::V5Channel),
            "v4.channel.k8s.io" => Some(StreamProtocol::V4Channel),
            _ => None,
        }
    }

    /// The subprotocol name (`None` for [`StreamProtocol::Raw`]).
    pub fn name(self) -> Option<&'static str> {
        match self {
            StreamProtocol::V5Channel => Some("v5.channel.k8s.io"),
            StreamProtocol::V4Channel => Some("v4.channel.k8s.io"),
            StreamProtocol::Raw => None,
        }
    }
}

/// One message of a session: data on a channel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frame {
    /// The channel ([`STDIN`], [`RESIZE`], [`CLOSE`], …).
    pub channel: u8,
    /// The data (for [`CLOSE`], the closed channel's number).
    pub data: Bytes,
}

/// What a handler sends to the HTTP layer.
#[derive(Debug)]
pub enum Outgoing {
    /// Data on a channel.
    Frame(Frame),
    /// The session's end, with its Status for channel-protocol clients.
    Finish(Option<Box<Status>>),
}

/// The handler's side of an upgraded connection.
///
/// Dropping it (or calling [`ConnectStream::finish`]) ends the session: the connection is
/// closed with a WebSocket close frame.
pub struct ConnectStream {
    protocol: StreamProtocol,
    incoming: QueueReceiver<Frame>,
    outgoing: QueueSender<Outgoing>,
}

/// The connection is gone: the client left or the server is shutting it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the connection is closed")]
pub struct Closed;

impl ConnectStream {
    /// A stream and the HTTP layer's ends of its two queues (`incoming` frames go to the
    /// handler, [`Outgoing`] messages to the client), each within `bounds`: a slow reader
    /// slows the writer rather than filling memory. An incoming frame stops counting against
    /// its queue once the handler has received it; an outgoing one once the HTTP layer has
    /// let go of its `queue::Charge` (when it has written the frame).
    pub(crate) fn pair(
        protocol: StreamProtocol,
        bounds: QueueBounds,
    ) -> (Self, QueueSender<Frame>, QueueReceiver<Outgoing>) {
        let (in_tx, in_rx) = queue::queue(bounds);
        let (out_tx, out_rx) = queue::queue(bounds);
        (
            ConnectStream {
                protocol,
                incoming: in_rx,
                outgoing: out_tx,
            },
            in_tx,
            out_rx,
        )
    }

    /// The negotiated protocol.
    pub fn protocol(&self) -> StreamProtocol {
        self.protocol
    }

    /// The next frame from the client; `None` once the client closed the connection.
    pub async fn recv(&mut self) -> Option<Frame> {
        self.incoming.recv().await.map(queue::Charged::into_inner)
    }

    /// Sends `data` on `channel` to the client, once the frames queued before it leave room
    /// for its bytes.
    pub async fn send(&self, channel: u8, data: impl Into<Bytes>) -> Result<(), Closed> {
        let frame = Frame {
            channel,
            data: data.into(),
        };
        let len = frame.data.len();
        self.outgoing.send(Outgoing::Frame(frame), len).await
    }

    /// Ends the session: channel-protocol clients get `status` (a `Success` Status when
    /// `None`) on the [`ERROR`] channel, then the connection closes.
    pub async fn finish(self, status: Option<Status>) {
        let _ = self
            .outgoing
            .send(Outgoing::Finish(status.map(Box::new)), 0)
            .await;
    }
}
