//! Calling a webhook: `clientConfig` (`url`, or a `service` resolved to an address and checked
//! as `<name>.<namespace>.svc`), verified with its `caBundle`, within `timeoutSeconds`.

use std::sync::Arc;
use std::time::Duration;

use http::{Request, Uri};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use k8s_openapi::api::admissionregistration::v1::WebhookClientConfig;
use rustls::pki_types::ServerName;

use crate::host_cluster::resolver::{Endpoint, ResolveError, ServiceResolver};
use crate::tls::parse_certs;

/// Resolves a webhook's service to `<name>.<namespace>.svc:<port>` through DNS, as upstream's
/// default service resolver does.
pub struct DnsServiceResolver;

impl ServiceResolver for DnsServiceResolver {
    fn resolve(&self, namespace: &str, name: &str, port: u16) -> Result<Endpoint, ResolveError> {
        let host = format!("{name}.{namespace}.svc");
        Ok(Endpoint {
            authority: format!("{host}:{port}"),
            server_name: host,
        })
    }
}

/// Where a webhook is reached: the URL shown in errors, the address connected to and the name
/// its certificate must carry.
struct Target {
    url: String,
    connect: Uri,
    server_name: String,
}

fn target(config: &WebhookClientConfig, resolver: &dyn ServiceResolver) -> Result<Target, String> {
    if let Some(url) = &config.url {
        let uri: Uri = url
            .parse()
            .map_err(|e| format!("invalid url {url:?}: {e}"))?;
        if uri.scheme_str() != Some("https") {
            return Err(format!("webhook url {url:?} must use https"));
        }
        let host = uri.host().unwrap_or_default();
        let host = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        return Ok(Target {
            url: url.clone(),
            connect: uri,
            server_name: host,
        });
    }
    let Some(svc) = &config.service else {
        return Err("there is no service or url in the webhook's clientConfig".into());
    };
    let port = u16::try_from(svc.port.unwrap_or(443)).map_err(|e| e.to_string())?;
    let endpoint = resolver
        .resolve(&svc.namespace, &svc.name, port)
        .map_err(|e| e.to_string())?;
    let path = svc.path.as_deref().unwrap_or("/");
    let connect: Uri = format!("https://{}{path}", endpoint.authority)
        .parse()
        .map_err(|e| format!("invalid service path {path:?}: {e}"))?;
    Ok(Target {
        url: format!("https://{}.{}.svc:{port}{path}", svc.name, svc.namespace),
        connect,
        server_name: endpoint.server_name,
    })
}

fn tls(config: &WebhookClientConfig) -> Result<rustls::ClientConfig, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = rustls::RootCertStore::empty();
    if let Some(bundle) = &config.ca_bundle {
        let certs = parse_certs(&String::from_utf8_lossy(&bundle.0)).map_err(|e| e.to_string())?;
        for cert in certs {
            roots.add(cert).map_err(|e| e.to_string())?;
        }
    }
    Ok(rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth())
}

/// POSTs `body` to the webhook and returns the response body; `Err` says why the call failed
/// (upstream's `failed to call webhook: ...`).
pub async fn post(
    config: &WebhookClientConfig,
    resolver: &dyn ServiceResolver,
    timeout: Duration,
    body: Vec<u8>,
) -> Result<Vec<u8>, String> {
    let target = target(config, resolver)?;
    let fail =
        |e: &dyn std::fmt::Display| format!("failed to call webhook: Post {:?}: {e}", target.url);
    let server_name = ServerName::try_from(target.server_name.clone()).map_err(|e| fail(&e))?;
    let mut http = HttpConnector::new();
    http.enforce_http(false);
    let connector = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls(config).map_err(|e| fail(&e))?)
        .https_only()
        .with_server_name_resolver(hyper_rustls::FixedServerNameResolver::new(server_name))
        .enable_http1()
        .enable_http2()
        .wrap_connector(http);
    let client: Client<_, Full<bytes::Bytes>> =
        Client::builder(TokioExecutor::new()).build(connector);
    let mut request = Request::post(target.connect.clone())
        .header(http::header::CONTENT_TYPE, "application/json")
        .header(http::header::ACCEPT, "application/json")
        .body(Full::new(bytes::Bytes::from(body)))
        .map_err(|e| fail(&e))?;
    // The call's span (when tracing is on) goes to the webhook as its parent, as upstream's
    // webhook client sends it.
    crate::trace_context::inject(&tracing::Span::current(), request.headers_mut());
    let call = async {
        let response = client.request(request).await.map_err(|e| fail(&e))?;
        let status = response.status();
        let body = response
            .into_body()
            .collect()
            .await
            .map_err(|e| fail(&e))?
            .to_bytes();
        if !status.is_success() {
            return Err(fail(&format!(
                "the server responded with the status code {}",
                status.as_u16()
            )));
        }
        Ok(body.to_vec())
    };
    match tokio::time::timeout(timeout, call).await {
        Ok(result) => result,
        Err(_) => Err(fail(&"context deadline exceeded")),
    }
}
