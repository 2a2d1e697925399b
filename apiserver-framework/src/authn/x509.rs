//! The client certificate authenticator: a chain verified against the client CA names the
//! user (common name) and its groups (organizations).

use std::sync::Arc;

use http::request::Parts;

use super::cert_subject::CertSubject;
use super::delegated::DelegatedAuthConfig;
use super::{Authenticated, Authenticator, PeerCertificates, VerifiedChains};
use crate::user::UserInfo;

/// Authenticates requests by their client certificate, as upstream's x509 authenticator
/// with `CommonNameUserConversion`.
///
/// No certificate or no client CA configured: no credentials. A chain that does not verify
/// (unknown authority, expired, not for client authentication): invalid. A verified
/// certificate without a common name: no credentials.
pub struct X509Authenticator {
    config: Arc<DelegatedAuthConfig>,
}

impl X509Authenticator {
    /// Reads the current client CA of `config` at every request.
    pub fn new(config: Arc<DelegatedAuthConfig>) -> Self {
        X509Authenticator { config }
    }
}

#[async_trait::async_trait]
impl Authenticator for X509Authenticator {
    async fn authenticate(&self, parts: &Parts) -> Authenticated {
        let Some(PeerCertificates(chain)) = parts.extensions.get::<PeerCertificates>() else {
            return Authenticated::NoCredentials;
        };
        let current = self.config.current();
        let Some(leaf) = chain.first() else {
            return Authenticated::NoCredentials;
        };
        if current.client_ca.is_empty() {
            return Authenticated::NoCredentials;
        }
        let verified = parts.extensions.get::<VerifiedChains>();
        let result = match verified {
            Some(memo) => memo.verify(&current.client_ca, chain),
            None => current.client_ca.verify_client_chain(chain),
        };
        if let Err(err) = result {
            tracing::debug!("client certificate not trusted: {err}");
            return Authenticated::Invalid;
        }
        let subject = match verified {
            Some(memo) => memo.subject(leaf),
            None => CertSubject::from_der(leaf),
        };
        match subject {
            Ok(subject) if subject.common_name.is_empty() => Authenticated::NoCredentials,
            Ok(subject) => Authenticated::User(UserInfo {
                username: subject.common_name,
                groups: subject.organizations,
                ..UserInfo::default()
            }),
            Err(err) => {
                tracing::debug!("{err}");
                Authenticated::Invalid
            }
        }
    }
}
