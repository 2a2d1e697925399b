//! The accept loop: admits connections within the bound on open connections, backs off when
//! `accept` fails, and on stop waits for the connections to finish.

use std::sync::Arc;
use std::time::Instant;

use tokio::net::TcpListener;
use tokio::sync::watch;

use super::accept::{AcceptBackoff, out_of_descriptors};
use super::activity::OpenConnections;
use super::connection::{ConnectionServer, FIRST_REQUEST_GRACE, ServeRequest, stopped};

/// Accepts connections on `listener` and serves each with `server` until `stop` turns true;
/// then stops accepting and waits (at most the drain timeout and a moment) for the open
/// connections to finish.
pub async fn run<H: ServeRequest>(
    listener: TcpListener,
    server: Arc<ConnectionServer<H>>,
    open: Arc<OpenConnections>,
    mut stop: watch::Receiver<bool>,
) {
    let mut connections = tokio::task::JoinSet::new();
    let mut backoff = AcceptBackoff::default();
    let mut retry_at: Option<Instant> = None;
    loop {
        let wait = async {
            match retry_at {
                Some(at) => tokio::time::sleep_until(at.into()).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = stopped(&mut stop) => break,
            _ = wait => retry_at = None,
            accepted = listener.accept(), if retry_at.is_none() => match accepted {
                Ok((tcp, peer)) => {
                    backoff.succeeded();
                    let Some(place) = open.admit() else {
                        tracing::warn!(%peer, open = open.len(), "refusing a connection: every open connection has a request in flight");
                        continue;
                    };
                    let _ = tcp.set_nodelay(true);
                    connections.spawn(server.clone().serve(tcp, peer, place, stop.clone()));
                }
                Err(e) => {
                    // Out of descriptors: close the connection idle longest, so that the
                    // next accept (perhaps a health check) gets one.
                    if out_of_descriptors(&e) {
                        open.evict_idlest();
                    }
                    let delay = backoff.failed();
                    tracing::warn!(error = %e, retry_in = ?delay, open = open.len(), "accept failed");
                    retry_at = Some(Instant::now() + delay);
                }
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
    drop(listener);
    let _ = tokio::time::timeout(server.drain_timeout() + FIRST_REQUEST_GRACE, async {
        while connections.join_next().await.is_some() {}
    })
    .await;
}
