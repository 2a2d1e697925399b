//! A connection's client certificate chain, verified once per trusted authority rather than at
//! every request.
//!
//! The chain a client presents is fixed for the life of its TLS connection, and whether it
//! verifies against a bundle of authorities depends only on the chain, the bundle and the
//! time. So a verification that succeeded holds, for the same bundle, until the earliest
//! `notAfter` of the chain's certificates (a certificate valid now stays past its `notBefore`).
//! The listener puts one [`VerifiedChains`] per connection into every request of it; the x509
//! and front-proxy authenticators verify through it. Nothing is weakened:
//!
//! - a bundle is matched by identity: a reloaded bundle (a new client CA, a new request-header
//!   CA from the authentication ConfigMap) is another bundle, against which the chain is
//!   verified again, on open connections as on new ones;
//! - past the earliest `notAfter` the chain is verified again, and fails as expired;
//! - failures are not remembered: a chain that did not verify is verified again at the next
//!   request, as before.

use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;
use rustls::pki_types::{CertificateDer, UnixTime};
use rustls::server::danger::ClientCertVerifier;
use x509_parser::prelude::{FromDer, X509Certificate};

use super::ca_bundle::{CaBundle, ChainError};
use super::cert_subject::CertSubject;

/// How many successful verifications a connection keeps: the client CA and the request-header
/// CA, and a reload of each.
const KEPT: usize = 4;

/// The verifications of one connection's client certificate chain, shared by its requests (put
/// into every request's extensions by the listener, beside [`PeerCertificates`]).
///
/// [`PeerCertificates`]: super::PeerCertificates
#[derive(Clone, Default)]
pub struct VerifiedChains(Arc<Memo>);

#[derive(Default)]
struct Memo {
    verified: Mutex<Vec<Verified>>,
    subject: OnceLock<Option<CertSubject>>,
}

/// A chain verified against an authority, valid until a time.
struct Verified {
    /// The bundle's verifier (held, so that no other bundle can take its address).
    authority: Arc<dyn ClientCertVerifier>,
    /// The earliest `notAfter` of the chain's certificates, in seconds since the epoch.
    until: u64,
}

impl std::fmt::Debug for VerifiedChains {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VerifiedChains")
            .field("verified", &self.0.verified.lock().len())
            .finish()
    }
}

fn same(a: &Arc<dyn ClientCertVerifier>, b: &Arc<dyn ClientCertVerifier>) -> bool {
    std::ptr::addr_eq(Arc::as_ptr(a), Arc::as_ptr(b))
}

impl VerifiedChains {
    /// Verifies `chain` (the connection's) against `bundle` now, as
    /// [`CaBundle::verify_client_chain`], unless it already verified against this very bundle
    /// and none of its certificates has expired since.
    pub fn verify(
        &self,
        bundle: &CaBundle,
        chain: &[CertificateDer<'_>],
    ) -> Result<(), ChainError> {
        self.verify_at(bundle, chain, UnixTime::now())
    }

    fn verify_at(
        &self,
        bundle: &CaBundle,
        chain: &[CertificateDer<'_>],
        now: UnixTime,
    ) -> Result<(), ChainError> {
        let Some(authority) = bundle.authority() else {
            return bundle.verify_client_chain_at(chain, now);
        };
        let secs = now.as_secs();
        if self
            .0
            .verified
            .lock()
            .iter()
            .any(|v| same(&v.authority, authority) && secs <= v.until)
        {
            return Ok(());
        }
        bundle.verify_client_chain_at(chain, now)?;
        if let Some(until) = earliest_not_after(chain) {
            let mut verified = self.0.verified.lock();
            verified.retain(|v| !same(&v.authority, authority));
            if verified.len() >= KEPT {
                verified.remove(0);
            }
            verified.push(Verified {
                authority: Arc::clone(authority),
                until,
            });
        }
        Ok(())
    }

    /// The subject of the chain's leaf `leaf` (the connection's), read once.
    pub fn subject(
        &self,
        leaf: &CertificateDer<'_>,
    ) -> Result<CertSubject, super::cert_subject::CertParseError> {
        match self
            .0
            .subject
            .get_or_init(|| CertSubject::from_der(leaf).ok())
        {
            Some(subject) => Ok(subject.clone()),
            None => CertSubject::from_der(leaf),
        }
    }
}

/// The earliest `notAfter` of `chain`'s certificates, in seconds since the epoch; `None` when
/// one cannot be read (then nothing is remembered).
fn earliest_not_after(chain: &[CertificateDer<'_>]) -> Option<u64> {
    chain
        .iter()
        .map(|der| {
            let (_, cert) = X509Certificate::from_der(der.as_ref()).ok()?;
            u64::try_from(cert.validity().not_after.timestamp()).ok()
        })
        .try_fold(u64::MAX, |min, t| t.map(|t| min.min(t)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rcgen::{BasicConstraints, CertificateParams, ExtendedKeyUsagePurpose, IsCa, KeyPair};

    /// The end of 2099-12-31, when the test certificates expire.
    const NOT_AFTER: u64 = 4_102_444_800;

    /// A CA's PEM, and a client certificate it issued valid until [`NOT_AFTER`] (DER).
    fn ca_and_client() -> (String, CertificateDer<'static>) {
        let ca_key = KeyPair::generate().unwrap();
        let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let ca_cert = ca.self_signed(&ca_key).unwrap();
        let issuer = rcgen::Issuer::new(ca, ca_key);
        let key = KeyPair::generate().unwrap();
        let mut leaf = CertificateParams::new(Vec::<String>::new()).unwrap();
        leaf.distinguished_name
            .push(rcgen::DnType::CommonName, "front-proxy-client");
        leaf.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        leaf.not_before = rcgen::date_time_ymd(2000, 1, 1);
        leaf.not_after = rcgen::date_time_ymd(2100, 1, 1);
        let cert = leaf.signed_by(&key, &issuer).unwrap();
        (ca_cert.pem(), cert.der().clone())
    }

    #[test]
    fn a_verified_chain_holds_for_the_same_bundle_only() {
        let (ca_pem, leaf) = ca_and_client();
        let (other_pem, _) = ca_and_client();
        let chain = [leaf];
        let bundle = CaBundle::from_pem(&ca_pem).unwrap();
        let memo = VerifiedChains::default();
        memo.verify(&bundle, &chain).unwrap();
        memo.verify(&bundle.clone(), &chain).unwrap();
        // Another authority (a reloaded request-header CA) is verified against, and refuses.
        let other = CaBundle::from_pem(&other_pem).unwrap();
        assert!(memo.verify(&other, &chain).is_err());
        assert!(
            memo.verify(&other, &chain).is_err(),
            "failures are not kept"
        );
        // A reload of the same PEM is verified again (and passes).
        memo.verify(&CaBundle::from_pem(&ca_pem).unwrap(), &chain)
            .unwrap();
        assert!(
            memo.verify(&CaBundle::empty(), &chain).is_err(),
            "an empty bundle trusts nothing"
        );
    }

    #[test]
    fn a_verified_chain_is_verified_again_once_a_certificate_expired() {
        let (ca_pem, leaf) = ca_and_client();
        let chain = [leaf];
        let bundle = CaBundle::from_pem(&ca_pem).unwrap();
        let memo = VerifiedChains::default();
        memo.verify_at(&bundle, &chain, UnixTime::now()).unwrap();
        let at = |secs| UnixTime::since_unix_epoch(std::time::Duration::from_secs(secs));
        memo.verify_at(&bundle, &chain, at(NOT_AFTER - 1)).unwrap();
        let later = at(NOT_AFTER + 1);
        let err = memo.verify_at(&bundle, &chain, later).unwrap_err();
        assert!(err.to_string().contains("expired"), "{err}");
    }
}
