//! The HTTP/2 connections to etcd's members: one per server URL, made on first use and made
//! again after a member comes back, with TLS for `https://` URLs and keep-alive pings; requests
//! are balanced over the members (tonic's balanced channel, as etcd's Go client balances over
//! its endpoints).

use std::path::Path;

use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint, Identity};

use super::client::ConnectError;
use super::options::EtcdOptions;

/// A channel to every member in `opts.servers`; fails for no server, a URL that does not parse
/// or whose scheme does not match the TLS settings, and unreadable or invalid TLS files.
pub(super) fn balanced(opts: &EtcdOptions) -> Result<Channel, ConnectError> {
    if opts.servers.is_empty() {
        return Err(ConnectError::NoServers);
    }
    let tls = tls_config(opts)?;
    let endpoints = opts
        .servers
        .iter()
        .map(|url| endpoint(url, tls.as_ref(), opts))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Channel::balance_list(endpoints.into_iter()))
}

/// The endpoint of one member. A URL without a scheme is `https://` when TLS files are given,
/// `http://` otherwise.
fn endpoint(
    url: &str,
    tls: Option<&ClientTlsConfig>,
    opts: &EtcdOptions,
) -> Result<Endpoint, ConnectError> {
    let bad = |reason: &str| ConnectError::BadServer {
        url: url.to_string(),
        reason: reason.to_string(),
    };
    let full = match url.split_once("://") {
        Some(("http", _)) if tls.is_some() => {
            return Err(bad("TLS files are given, so the URL must be https://"));
        }
        Some(("https", _)) if opts.ca_file.is_none() => {
            return Err(bad("an https:// server needs a CA file (--etcd-cafile)"));
        }
        Some(("http" | "https", _)) => url.to_string(),
        Some(_) => return Err(bad("the scheme must be http:// or https://")),
        None if tls.is_some() => format!("https://{url}"),
        None => format!("http://{url}"),
    };
    let endpoint = Endpoint::from_shared(full).map_err(|e| bad(&e.to_string()))?;
    let endpoint = match tls {
        Some(tls) if endpoint.uri().scheme_str() == Some("https") => endpoint
            .tls_config(tls.clone())
            .map_err(|e| ConnectError::Tls(error_chain(&e)))?,
        _ => endpoint,
    };
    Ok(endpoint
        .connect_timeout(opts.dial_timeout)
        .http2_keep_alive_interval(opts.keep_alive_interval)
        .keep_alive_timeout(opts.keep_alive_timeout)
        .keep_alive_while_idle(true))
}

/// The TLS settings from the CA, certificate and key files; `None` when none is given.
fn tls_config(opts: &EtcdOptions) -> Result<Option<ClientTlsConfig>, ConnectError> {
    let mut tls = ClientTlsConfig::new();
    let mut any = false;
    if let Some(ca) = &opts.ca_file {
        tls = tls.ca_certificate(Certificate::from_pem(read(ca, "CA")?));
        any = true;
    }
    match (&opts.cert_file, &opts.key_file) {
        (Some(cert), Some(key)) => {
            tls = tls.identity(Identity::from_pem(
                read(cert, "certificate")?,
                read(key, "key")?,
            ));
            any = true;
        }
        (None, None) => {}
        _ => return Err(ConnectError::HalfIdentity),
    }
    Ok(any.then_some(tls))
}

fn read(path: &Path, what: &'static str) -> Result<Vec<u8>, ConnectError> {
    std::fs::read(path).map_err(|source| ConnectError::Read {
        what,
        path: path.to_path_buf(),
        source,
    })
}

/// An error with its sources, `a: b: c`.
pub(super) fn error_chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(e) = source {
        let next = e.to_string();
        if !text.contains(&next) {
            text.push_str(": ");
            text.push_str(&next);
        }
        source = e.source();
    }
    text
}
