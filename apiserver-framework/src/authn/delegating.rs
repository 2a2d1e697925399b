//! The delegated authenticator chain of an extension API server (upstream's
//! `DelegatingAuthenticatorConfig`): front proxy, then client certificate, then bearer token
//! reviewed by the host, then anonymous.

use std::sync::Arc;
use std::time::Duration;

use http::request::Parts;

use super::anonymous::AnonymousAuthenticator;
use super::client_cert::RequestClientCertVerifier;
use super::delegated::DelegatedAuthConfig;
use super::group_adder::AuthenticatedGroupAdder;
use super::options::AuthenticationOptions;
use super::request_header::RequestHeaderAuthenticator;
use super::token_review::{TokenReviewAuthenticator, TokenReviewOptions, TokenReviewer};
use super::union::UnionAuthenticator;
use super::x509::X509Authenticator;
use super::{Authenticated, Authenticator};

/// How the delegated chain behaves.
#[derive(Clone, Debug)]
pub struct DelegatingOptions {
    /// How long token review answers are cached (10 s by default).
    pub cache_ttl: Duration,
    /// Whether requests without credentials are `system:anonymous` (true by default, as
    /// upstream); without, they are unauthenticated (401).
    pub anonymous: bool,
    /// The audiences bearer tokens must be for (empty: the host's default).
    pub audiences: Vec<String>,
    /// How long one token review may take (10 s by default).
    pub token_review_timeout: Duration,
}

impl Default for DelegatingOptions {
    fn default() -> Self {
        DelegatingOptions {
            cache_ttl: Duration::from_secs(10),
            anonymous: true,
            audiences: Vec::new(),
            token_review_timeout: Duration::from_secs(10),
        }
    }
}

impl From<&AuthenticationOptions> for DelegatingOptions {
    /// The cache TTL from `--authentication-token-webhook-cache-ttl`, the rest by default.
    fn from(options: &AuthenticationOptions) -> Self {
        DelegatingOptions {
            cache_ttl: options.authentication_token_webhook_cache_ttl.0,
            ..DelegatingOptions::default()
        }
    }
}

/// Authenticates requests as upstream's delegating authenticator: the first of
/// front-proxy headers (from a trusted proxy certificate), the client certificate, and the
/// bearer token (when a reviewer is given) that finds a user wins, and the user gets
/// `system:authenticated`. When none finds a user: invalid credentials anywhere give
/// [`Authenticated::Invalid`] (401); otherwise the caller is anonymous when enabled.
///
/// The configuration is read at every request, so swapping it (CA rotation, new header
/// names) takes effect on the next request.
pub struct DelegatingAuthenticator {
    chain: Arc<dyn Authenticator>,
}

impl DelegatingAuthenticator {
    /// The chain over `config`, reviewing bearer tokens with `token_reviewer`.
    pub fn new(
        config: Arc<DelegatedAuthConfig>,
        token_reviewer: Option<Arc<dyn TokenReviewer>>,
        options: DelegatingOptions,
    ) -> Self {
        let mut authenticators: Vec<Arc<dyn Authenticator>> = vec![
            Arc::new(RequestHeaderAuthenticator::new(config.clone())),
            Arc::new(X509Authenticator::new(config)),
        ];
        if let Some(reviewer) = token_reviewer {
            authenticators.push(Arc::new(TokenReviewAuthenticator::new(
                reviewer,
                TokenReviewOptions {
                    cache_ttl: options.cache_ttl,
                    audiences: options.audiences.clone(),
                    timeout: options.token_review_timeout,
                },
            )));
        }
        let mut chain: Arc<dyn Authenticator> = Arc::new(AuthenticatedGroupAdder::new(Arc::new(
            UnionAuthenticator::new(authenticators),
        )));
        if options.anonymous {
            chain = Arc::new(UnionAuthenticator::fail_on_error(vec![
                chain,
                Arc::new(AnonymousAuthenticator),
            ]));
        }
        DelegatingAuthenticator { chain }
    }
}

#[async_trait::async_trait]
impl Authenticator for DelegatingAuthenticator {
    async fn authenticate(&self, parts: &Parts) -> Authenticated {
        self.chain.authenticate(parts).await
    }
}

/// The TLS client-certificate verifier to serve with next to a [`DelegatingAuthenticator`]
/// over the same `config`: it asks clients for certificates issued by the currently trusted
/// authorities without requiring one.
pub fn client_cert_verifier(
    config: Arc<DelegatedAuthConfig>,
) -> Arc<dyn rustls::server::danger::ClientCertVerifier> {
    Arc::new(RequestClientCertVerifier::new(config))
}
