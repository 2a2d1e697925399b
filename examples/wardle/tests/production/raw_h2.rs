//! A bare HTTP/2 client (the `h2` crate's) for attack tests: it can open streams and leave
//! their bodies unfinished, which no ordinary client does.

use std::net::SocketAddr;

use apiserver_framework::testing::tls;
use bytes::Bytes;

/// An HTTP/2 connection to `addr`, trusting the CA of `ca_pem`; the connection is driven by
/// a task of its own. Its flow-control windows are wide (16 MiB for the connection, 1 MiB a
/// stream): answers the attacker never reads do not stall the server behind them.
pub async fn connect(ca_pem: &str, addr: SocketAddr) -> h2::client::SendRequest<Bytes> {
    let config = tls::client_config(ca_pem, &[b"h2"]);
    let tls = tls::connect(addr, &addr.ip().to_string(), config)
        .await
        .expect("TLS");
    let (send, conn) = h2::client::Builder::new()
        .initial_connection_window_size(16 << 20)
        .initial_window_size(1 << 20)
        .handshake(tls)
        .await
        .expect("HTTP/2");
    tokio::spawn(async move {
        let _ = conn.await;
    });
    send
}
