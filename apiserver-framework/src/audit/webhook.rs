//! The audit webhook's client (`--audit-webhook-config-file`, upstream's
//! `plugin/pkg/audit/webhook`): a kubeconfig names the receiver (its server URL, its CA, and a
//! client certificate or a bearer token); a batch of events goes to it as one `audit.k8s.io/v1`
//! `EventList` POSTed to that URL, and any failure is retried with upstream's exponential
//! backoff (the initial delay, times 1.5 at each step with 20 % jitter, five tries).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use bytes::Bytes;
use http::{Request, Uri};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use kube::config::{AuthInfo, Cluster, Kubeconfig};
use secrecy::ExposeSecret;

use super::encoded::{Encoded, event_list};
use rustls::pki_types::PrivateKeyDer;
use rustls::pki_types::pem::PemObject;

use crate::tls::parse_certs;

/// How the webhook is retried: upstream's `DefaultRetryBackoffWithInitialDelay`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Backoff {
    /// The delay before the second try.
    pub initial: Duration,
    /// How many tries in all.
    pub steps: u32,
}

impl Backoff {
    /// Upstream's backoff from `initial` (`--audit-webhook-initial-backoff`): five tries.
    pub(crate) fn from_initial(initial: Duration) -> Backoff {
        Backoff { initial, steps: 5 }
    }

    /// The delay after failed try `n` (0-based): `initial × 1.5ⁿ`, plus up to 20 % jitter.
    fn delay(&self, n: u32) -> Duration {
        let base = self.initial.as_secs_f64() * 1.5f64.powi(n as i32);
        Duration::from_secs_f64(base * (1.0 + 0.2 * rand::random::<f64>()))
    }
}

/// A POST to the webhook failed; the message says why, as upstream's client error would.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct SendError(pub String);

/// Sends batches of events to the receiver a kubeconfig names.
pub(crate) struct WebhookClient {
    url: Uri,
    token: Option<String>,
    client: Client<hyper_rustls::HttpsConnector<HttpConnector>, Full<Bytes>>,
    backoff: Backoff,
}

impl WebhookClient {
    /// The client of the receiver that `path`'s current context names, retried with
    /// `backoff`.
    pub(crate) fn from_kubeconfig(path: &Path, backoff: Backoff) -> Result<WebhookClient, String> {
        let kubeconfig = Kubeconfig::read_from(path).map_err(|e| e.to_string())?;
        let (cluster, user) = current(&kubeconfig)?;
        let server = cluster
            .server
            .as_deref()
            .ok_or("the cluster of the current context has no server")?;
        let url: Uri = server
            .parse()
            .map_err(|e| format!("server {server:?}: {e}"))?;
        if url.scheme_str() != Some("https") {
            return Err(format!("server {server:?} must use https"));
        }
        let tls = tls_config(cluster, user.as_ref())?;
        let mut http = HttpConnector::new();
        http.enforce_http(false);
        http.set_connect_timeout(Some(Duration::from_secs(10)));
        let connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_only()
            .enable_http1()
            .enable_http2()
            .wrap_connector(http);
        let token = match user.as_ref() {
            Some(user) => bearer_token(user)?,
            None => None,
        };
        Ok(WebhookClient {
            url,
            token,
            client: Client::builder(TokioExecutor::new()).build(connector),
            backoff,
        })
    }

    /// Sends `events` as one `EventList`, trying again after each failure as upstream does
    /// (any failure is retried); the last failure once the tries run out.
    pub(crate) async fn send(&self, events: &[Encoded]) -> Result<(), SendError> {
        let body = Bytes::from(event_list(events));
        let mut n = 0;
        loop {
            match self.post(body.clone()).await {
                Ok(()) => return Ok(()),
                Err(e) if n + 1 >= self.backoff.steps => return Err(e),
                Err(e) => {
                    tracing::warn!(error = %e, try = n + 1, events = events.len(), "the audit webhook failed; retrying");
                    tokio::time::sleep(self.backoff.delay(n)).await;
                    n += 1;
                }
            }
        }
    }

    /// One POST of `body`, answered within 30 s (upstream's webhook client timeout).
    async fn post(&self, body: Bytes) -> Result<(), SendError> {
        let fail = |e: &dyn std::fmt::Display| SendError(format!("Post {:?}: {e}", self.url));
        let mut request = Request::post(self.url.clone())
            .header(http::header::CONTENT_TYPE, "application/json")
            .header(http::header::ACCEPT, "application/json");
        if let Some(token) = &self.token {
            request = request.header(http::header::AUTHORIZATION, format!("Bearer {token}"));
        }
        let request = request.body(Full::new(body)).map_err(|e| fail(&e))?;
        let call = async {
            let response = self.client.request(request).await.map_err(|e| fail(&e))?;
            let status = response.status();
            // The body is read (and bounded) only to free the connection for the next batch.
            let _ = http_body_util::Limited::new(response.into_body(), 64 * 1024)
                .collect()
                .await;
            if status.is_success() {
                Ok(())
            } else {
                Err(fail(&format!("the server answered {status}")))
            }
        };
        tokio::time::timeout(Duration::from_secs(30), call)
            .await
            .map_err(|_| fail(&"timed out after 30s"))?
    }
}

/// The cluster and user of `kubeconfig`'s current context (the first context without one).
fn current(kubeconfig: &Kubeconfig) -> Result<(&Cluster, Option<AuthInfo>), String> {
    let context = match &kubeconfig.current_context {
        Some(name) => kubeconfig.contexts.iter().find(|c| &c.name == name),
        None => kubeconfig.contexts.first(),
    }
    .and_then(|c| c.context.as_ref())
    .ok_or("the kubeconfig has no current context")?;
    let cluster = kubeconfig
        .clusters
        .iter()
        .find(|c| c.name == context.cluster)
        .and_then(|c| c.cluster.as_ref())
        .ok_or_else(|| format!("the kubeconfig has no cluster {:?}", context.cluster))?;
    let user = match &context.user {
        Some(name) => Some(
            kubeconfig
                .auth_infos
                .iter()
                .find(|u| &u.name == name)
                .and_then(|u| u.auth_info.clone())
                .ok_or_else(|| format!("the kubeconfig has no user {name:?}"))?,
        ),
        None => None,
    };
    Ok((cluster, user))
}

/// Data given inline (base64) or as a file.
fn data_or_file(
    data: Option<&str>,
    file: Option<&str>,
    what: &str,
) -> Result<Option<Vec<u8>>, String> {
    if let Some(data) = data {
        return base64::engine::general_purpose::STANDARD
            .decode(data.trim())
            .map(Some)
            .map_err(|e| format!("{what}-data: {e}"));
    }
    match file {
        Some(path) => std::fs::read(path)
            .map(Some)
            .map_err(|e| format!("{what} {path}: {e}")),
        None => Ok(None),
    }
}

/// TLS to the receiver: its CA from the cluster (the system's roots are not trusted, as a
/// kubeconfig with a CA trusts only that), and the user's client certificate if any.
fn tls_config(cluster: &Cluster, user: Option<&AuthInfo>) -> Result<rustls::ClientConfig, String> {
    if cluster.insecure_skip_tls_verify == Some(true) {
        return Err("insecure-skip-tls-verify is not supported for the audit webhook".into());
    }
    let ca = data_or_file(
        cluster.certificate_authority_data.as_deref(),
        cluster.certificate_authority.as_deref(),
        "certificate-authority",
    )?
    .ok_or("the cluster names no certificate-authority")?;
    let mut roots = rustls::RootCertStore::empty();
    for cert in parse_certs(&String::from_utf8_lossy(&ca)).map_err(|e| e.to_string())? {
        roots.add(cert).map_err(|e| e.to_string())?;
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots);
    let cert = user
        .map(|u| {
            data_or_file(
                u.client_certificate_data.as_deref(),
                u.client_certificate.as_deref(),
                "client-certificate",
            )
        })
        .transpose()?
        .flatten();
    let key = user
        .map(|u| {
            let data = u
                .client_key_data
                .as_ref()
                .map(|k| k.expose_secret().to_string());
            data_or_file(data.as_deref(), u.client_key.as_deref(), "client-key")
        })
        .transpose()?
        .flatten();
    match (cert, key) {
        (Some(cert), Some(key)) => {
            let chain = parse_certs(&String::from_utf8_lossy(&cert)).map_err(|e| e.to_string())?;
            let key =
                PrivateKeyDer::from_pem_slice(&key).map_err(|e| format!("client-key: {e}"))?;
            builder
                .with_client_auth_cert(chain, key)
                .map_err(|e| format!("client certificate: {e}"))
        }
        (None, None) => Ok(builder.with_no_client_auth()),
        _ => Err(
            "the user names a client certificate without its key, or a key without its certificate"
                .into(),
        ),
    }
}

/// The user's bearer token, inline or from its token file.
fn bearer_token(user: &AuthInfo) -> Result<Option<String>, String> {
    if let Some(token) = &user.token {
        return Ok(Some(token.expose_secret().to_string()));
    }
    match &user.token_file {
        Some(path) => std::fs::read_to_string(path)
            .map(|t| Some(t.trim().to_string()))
            .map_err(|e| format!("token-file {path}: {e}")),
        None => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_by_half_with_at_most_a_fifth_of_jitter() {
        let b = Backoff::from_initial(Duration::from_secs(10));
        for (n, base) in [(0, 10.0), (1, 15.0), (2, 22.5), (3, 33.75)] {
            let d = b.delay(n).as_secs_f64();
            assert!(d >= base && d <= base * 1.2, "try {n}: {d}");
        }
        assert_eq!(b.steps, 5);
    }
}
