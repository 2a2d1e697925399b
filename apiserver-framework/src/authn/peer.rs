//! What the TLS handshake learned about the caller, handed to authenticators.

use std::net::SocketAddr;
use std::sync::Arc;

use rustls::pki_types::CertificateDer;

/// The certificate chain a client presented in the TLS handshake (leaf first), put into every
/// request's extensions by the listener. Absent when the client sent no certificate.
///
/// The handshake does not verify the chain: like upstream, the server only *requests* a
/// client certificate, and the authenticators decide which chains they trust (the client CA
/// for x509 users, the request-header CA for the front proxy).
#[derive(Clone, Debug)]
pub struct PeerCertificates(pub Arc<Vec<CertificateDer<'static>>>);

/// The address of the client at the other end of the connection, put into every request's
/// extensions by the listener.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PeerAddr(pub SocketAddr);
