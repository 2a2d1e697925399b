//! Connection timeouts and the bound on open connections, over real TCP and TLS on loopback
//! with short limits: a TCP connection without a TLS handshake, a TLS connection without a
//! request and a request whose headers drip in are closed after their timeouts; a keep-alive
//! connection is closed once idle too long (HTTP/1.1 and HTTP/2), but never while a request
//! (a watch) is in flight; at the bound, the longest-idle connection makes room for a new one;
//! `--disable-http2-serving` leaves HTTP/1.1 alone in ALPN.

mod support_chain;
mod support_serving;

use std::time::{Duration, Instant};

use apiserver_framework::server::connections::ConnectionLimits;
use apiserver_framework::server::filters::RequestLimits;
use apiserver_framework::testing::wait;
use bytes::Bytes;
use http_body_util::BodyExt;
use support_serving::{SNAILS, Served, serve};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const HANDSHAKE: Duration = Duration::from_secs(1);
const HEADERS: Duration = Duration::from_secs(1);
const IDLE: Duration = Duration::from_secs(3);

/// Closing is noticed within this long after the timeout (a noisy 2-core machine).
const SLACK: Duration = Duration::from_secs(5);

fn short() -> RequestLimits {
    RequestLimits {
        connections: ConnectionLimits {
            tls_handshake_timeout: HANDSHAKE,
            read_header_timeout: HEADERS,
            idle_timeout: IDLE,
            ..Default::default()
        },
        ..Default::default()
    }
}

/// Default timeouts, at most `max_open` connections.
fn bounded(max_open: usize) -> RequestLimits {
    RequestLimits {
        connections: ConnectionLimits {
            max_open_connections: Some(max_open),
            ..Default::default()
        },
        ..Default::default()
    }
}

/// Reads until the peer closes; how long that took (`None`: still open after `within`).
async fn closed_within<R: AsyncReadExt + Unpin>(io: &mut R, within: Duration) -> Option<Duration> {
    let started = Instant::now();
    let mut buf = vec![0u8; 4096];
    tokio::time::timeout(within, async {
        loop {
            match io.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
        }
    })
    .await
    .ok()
    .map(|_| started.elapsed())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tcp_without_tls_handshake_is_closed() {
    let s = serve(short(), Duration::ZERO).await;
    let mut tcp = tokio::net::TcpStream::connect(s.addr).await.unwrap();
    let took = closed_within(&mut tcp, HANDSHAKE + SLACK).await;
    let took = took.expect("a TCP connection without a TLS handshake stays open");
    assert!(took >= HANDSHAKE - Duration::from_millis(200), "{took:?}");

    // A handshake begun and left unfinished too.
    let mut tcp = tokio::net::TcpStream::connect(s.addr).await.unwrap();
    tcp.write_all(&[0x16, 0x03, 0x01, 0x02, 0x00, 0x01])
        .await
        .unwrap();
    assert!(closed_within(&mut tcp, HANDSHAKE + SLACK).await.is_some());
    s.running.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_connection_without_a_request_is_closed() {
    let s = serve(short(), Duration::ZERO).await;
    for alpn in [&b"http/1.1"[..], b"h2"] {
        let mut tls = s.tls(&[alpn]).await;
        let took = closed_within(&mut tls, HEADERS + SLACK).await;
        let took = took.expect("an idle TLS connection stays open");
        assert!(took >= HEADERS - Duration::from_millis(200), "{took:?}");
    }
    s.running.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn headers_dripping_in_are_cut_at_the_header_timeout() {
    let s = serve(short(), Duration::ZERO).await;
    let tls = s.tls(&[b"http/1.1"]).await;
    let (mut read, mut write) = tokio::io::split(tls);
    write
        .write_all(b"GET /readyz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        .await
        .unwrap();
    // One header byte every 100 ms, for longer than any timeout.
    let drip = tokio::spawn(async move {
        let mut sent = 0;
        for _ in 0..100 {
            if write.write_all(b"X").await.is_err() || write.flush().await.is_err() {
                break;
            }
            sent += 1;
            // A slow client, on purpose: the drip's pace.
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        sent
    });
    let took = closed_within(&mut read, HEADERS + SLACK).await;
    let took = took.expect("a request whose headers drip in stays open");
    assert!(took < IDLE + Duration::from_millis(500), "{took:?}");
    // The client was still sending when it was cut off.
    let sent = drip.await.unwrap();
    assert!(sent < 100, "{sent}");
    s.running.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_keep_alive_connections_are_closed() {
    let s = serve(short(), Duration::ZERO).await;
    let get = |s: &Served| s.request("GET", "/readyz", Bytes::new());

    // HTTP/1.1: waiting longer than the header timeout between requests is fine…
    let (mut h1, h1_conn) = s.h1().await;
    assert_eq!(h1.send_request(get(&s)).await.unwrap().status(), 200);
    // The measured subject: a pause past the header timeout, on purpose.
    tokio::time::sleep(HEADERS + Duration::from_secs(1)).await;
    let res = h1.send_request(get(&s)).await.unwrap();
    assert_eq!(res.status(), 200);
    res.into_body().collect().await.unwrap();
    // …then the idle timeout closes it.
    let started = Instant::now();
    tokio::time::timeout(IDLE + SLACK, h1_conn)
        .await
        .expect("an idle HTTP/1.1 connection stays open")
        .unwrap();
    let took = started.elapsed();
    assert!(took >= IDLE - Duration::from_millis(500), "{took:?}");

    // HTTP/2: the same, with a GOAWAY.
    let (mut h2, h2_conn) = s.h2().await;
    let res = h2.send_request(get(&s)).await.unwrap();
    assert_eq!(res.status(), 200);
    res.into_body().collect().await.unwrap();
    let started = Instant::now();
    tokio::time::timeout(IDLE + SLACK, h2_conn)
        .await
        .expect("an idle HTTP/2 connection stays open")
        .unwrap();
    let took = started.elapsed();
    assert!(took >= IDLE - Duration::from_millis(500), "{took:?}");
    s.running.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_outlives_every_connection_timeout() {
    let s = serve(short(), Duration::ZERO).await;
    let watch = format!("{SNAILS}?watch=true&timeoutSeconds=5");
    let (mut h1, _h1_conn) = s.h1().await;
    let (mut h2, _h2_conn) = s.h2().await;
    let started = Instant::now();
    let r1 = h1
        .send_request(s.request("GET", &watch, Bytes::new()))
        .await
        .unwrap();
    let r2 = h2
        .send_request(s.request("GET", &watch, Bytes::new()))
        .await
        .unwrap();
    assert_eq!((r1.status().as_u16(), r2.status().as_u16()), (200, 200));
    let (b1, b2) = tokio::join!(r1.into_body().collect(), r2.into_body().collect());
    // Both ended cleanly when the watch timed out, after every connection timeout.
    b1.unwrap();
    b2.unwrap();
    let lasted = started.elapsed();
    assert!(lasted >= Duration::from_millis(4500), "{lasted:?}");
    // The connections are still usable.
    let res = h2
        .send_request(s.request("GET", "/readyz", Bytes::new()))
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    s.running.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_the_bound_the_longest_idle_connection_makes_room() {
    let s = serve(bounded(4), Duration::ZERO).await;
    let mut idle = Vec::new();
    for _ in 0..4 {
        idle.push(tokio::net::TcpStream::connect(s.addr).await.unwrap());
        // Spaced on purpose: each connection has idled longer than the next.
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Spaced on purpose: the youngest idles a while too before the fifth comes.
    tokio::time::sleep(Duration::from_millis(200)).await;
    // A fifth connection is served; the oldest idle one was closed for it, the others not.
    let res = s.readyz().await;
    assert_eq!(res.status(), 200);
    assert!(
        closed_within(&mut idle[0], Duration::from_secs(2))
            .await
            .is_some()
    );
    assert!(
        closed_within(&mut idle[3], Duration::from_millis(300))
            .await
            .is_none()
    );
    s.running.shutdown().await;

    // When every connection has a request in flight, a new one is closed at once.
    let s = serve(bounded(2), Duration::ZERO).await;
    let watch = format!("{SNAILS}?watch=true&timeoutSeconds=30");
    let mut watches = Vec::new();
    for _ in 0..2 {
        let (mut h1, conn) = s.h1().await;
        let res = h1
            .send_request(s.request("GET", &watch, Bytes::new()))
            .await
            .unwrap();
        assert_eq!(res.status(), 200);
        watches.push((h1, conn, res));
    }
    let mut refused = tokio::net::TcpStream::connect(s.addr).await.unwrap();
    assert!(
        closed_within(&mut refused, Duration::from_secs(2))
            .await
            .is_some()
    );
    // Once a watch ends, there is room again.
    let (_, conn, _) = watches.pop().unwrap();
    conn.abort();
    let res = wait::poll("room for a connection", Duration::from_secs(5), || {
        s.http.get(format!("{}/readyz", s.url)).send()
    })
    .await
    .unwrap();
    assert_eq!(res.status(), 200);
    drop(watches);
    s.running.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http2_can_be_turned_off() {
    let limits = RequestLimits {
        connections: ConnectionLimits {
            disable_http2: true,
            ..Default::default()
        },
        ..Default::default()
    };
    let s = serve(limits, Duration::ZERO).await;
    let tls = s.tls(&[b"h2", b"http/1.1"]).await;
    assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"http/1.1"[..]));
    s.running.shutdown().await;

    let s = serve(RequestLimits::default(), Duration::ZERO).await;
    let tls = s.tls(&[b"h2", b"http/1.1"]).await;
    assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));
    s.running.shutdown().await;
}
