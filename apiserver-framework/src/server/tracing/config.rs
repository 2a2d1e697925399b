//! The file `--tracing-config-file` names: upstream's `TracingConfiguration`
//! (`apiserver.config.k8s.io/v1`, also `v1beta1` and `v1alpha1` as upstream decodes them), read
//! strictly (an unknown field is an error, as upstream's strict decoder) and validated as
//! upstream's `ValidateTracingConfiguration`.
//!
//! ```yaml
//! apiVersion: apiserver.config.k8s.io/v1
//! kind: TracingConfiguration
//! endpoint: localhost:4317        # the OTLP gRPC collector; this is the default
//! samplingRatePerMillion: 100     # unset or 0: only requests whose caller sampled them
//! ```

use std::path::Path;

use serde::Deserialize;

/// The endpoint when the file names none: OTLP over gRPC's default.
pub const DEFAULT_ENDPOINT: &str = "localhost:4317";

/// The most `samplingRatePerMillion` may be: every trace.
pub const MAX_SAMPLING_RATE_PER_MILLION: i64 = 1_000_000;

/// The `apiVersion`s the file may declare, as upstream's scheme registers the kind.
const API_VERSIONS: &[&str] = &[
    "apiserver.config.k8s.io/v1",
    "apiserver.config.k8s.io/v1beta1",
    "apiserver.config.k8s.io/v1alpha1",
];

/// Why a tracing configuration was refused.
#[derive(Debug, thiserror::Error)]
pub enum TracingError {
    /// The file could not be read.
    #[error("unable to read tracing configuration from {path:?}: {source}")]
    Read {
        /// The file.
        path: String,
        /// What reading it said.
        source: std::io::Error,
    },
    /// The file is not a `TracingConfiguration`.
    #[error("unable to decode tracing configuration data: {0}")]
    Decode(String),
    /// A field holds a value upstream refuses too.
    #[error("failed to validate tracing configuration: {field}: Invalid value: {value}: {message}")]
    Invalid {
        /// The field, as the file spells it (`endpoint`, `samplingRatePerMillion`).
        field: &'static str,
        /// Its value.
        value: String,
        /// What is wrong with it.
        message: String,
    },
    /// The OTLP exporter could not be built.
    #[error("failed to start the OTLP trace exporter: {0}")]
    Exporter(String),
}

/// The file as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct File {
    api_version: Option<String>,
    kind: Option<String>,
    endpoint: Option<String>,
    sampling_rate_per_million: Option<i64>,
}

/// A validated tracing configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TracingConfiguration {
    /// `host:port` of the OTLP gRPC collector (default [`DEFAULT_ENDPOINT`]).
    pub endpoint: String,
    /// Of a million traces started here (requests without a sampled caller), how many are
    /// recorded; a caller's sampled trace is always recorded, whatever this says.
    pub sampling_rate_per_million: u32,
}

impl TracingConfiguration {
    /// Reads and validates the file at `path`.
    pub fn read(path: &Path) -> Result<Self, TracingError> {
        let data = std::fs::read_to_string(path).map_err(|source| TracingError::Read {
            path: path.display().to_string(),
            source,
        })?;
        Self::parse(&data)
    }

    /// Decodes and validates a file's content (YAML or JSON).
    pub fn parse(data: &str) -> Result<Self, TracingError> {
        let file: File =
            serde_yaml_ng::from_str(data).map_err(|e| TracingError::Decode(e.to_string()))?;
        match (file.api_version.as_deref(), file.kind.as_deref()) {
            (Some(v), Some("TracingConfiguration")) if API_VERSIONS.contains(&v) => {}
            (Some(v), Some(k)) => {
                return Err(TracingError::Decode(format!(
                    "no kind {k:?} is registered for version {v:?}: expected kind \
                     TracingConfiguration of {}",
                    API_VERSIONS.join(", ")
                )));
            }
            _ => {
                return Err(TracingError::Decode(
                    "Object 'Kind' or 'apiVersion' is missing: expected apiVersion \
                     apiserver.config.k8s.io/v1 and kind TracingConfiguration"
                        .into(),
                ));
            }
        }
        let rate = file.sampling_rate_per_million.unwrap_or(0);
        if rate < 0 {
            return Err(invalid(
                "samplingRatePerMillion",
                rate,
                "sampling rate must be positive",
            ));
        }
        if rate > MAX_SAMPLING_RATE_PER_MILLION {
            return Err(invalid(
                "samplingRatePerMillion",
                rate,
                "sampling rate per million must be less than or equal to one million",
            ));
        }
        let endpoint = match file.endpoint {
            Some(e) => target_of(&e)?,
            None => DEFAULT_ENDPOINT.to_owned(),
        };
        Ok(TracingConfiguration {
            endpoint,
            sampling_rate_per_million: rate as u32,
        })
    }

    /// The ratio of traces started here that are recorded, 0 to 1.
    pub fn ratio(&self) -> f64 {
        f64::from(self.sampling_rate_per_million) / MAX_SAMPLING_RATE_PER_MILLION as f64
    }
}

fn invalid(field: &'static str, value: impl ToString, message: &str) -> TracingError {
    TracingError::Invalid {
        field,
        value: value.to_string(),
        message: message.to_owned(),
    }
}

/// The `host:port` of a gRPC target as upstream's endpoint is written: `host:port`, or
/// `dns:[//authority]/host:port`. Upstream also takes `unix:` and `unix-abstract:` sockets,
/// which this exporter does not reach (refused, saying so).
fn target_of(endpoint: &str) -> Result<String, TracingError> {
    let bad = |message: String| invalid("endpoint", format!("{endpoint:?}"), &message);
    let target = if let Some((scheme, rest)) = endpoint.split_once("://") {
        match scheme {
            "dns" => rest.split_once('/').map(|(_, t)| t).unwrap_or(rest),
            "unix" | "unix-abstract" => {
                return Err(bad(format!(
                    "{scheme} sockets are not supported by this server's exporter; use host:port"
                )));
            }
            other => {
                return Err(bad(format!(
                    "unsupported scheme: {other}.  Options are none, dns, unix, or unix-abstract.  \
                     See https://github.com/grpc/grpc/blob/master/doc/naming.md"
                )));
            }
        }
    } else if endpoint.starts_with("unix:") || endpoint.starts_with("unix-abstract:") {
        return Err(bad(
            "unix sockets are not supported by this server's exporter; use host:port".into(),
        ));
    } else {
        endpoint
    };
    let Some((host, port)) = target.rsplit_once(':') else {
        return Err(bad("must be host:port".into()));
    };
    let host_ok = !host.is_empty()
        && if let Some(inner) = host.strip_prefix('[') {
            inner
                .strip_suffix(']')
                .is_some_and(|ip| ip.parse::<std::net::Ipv6Addr>().is_ok())
        } else {
            host.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-' || c == '_')
        };
    if !host_ok {
        return Err(bad(format!("invalid host {host:?}: must be host:port")));
    }
    if port.parse::<u16>().map_or(true, |p| p == 0) {
        return Err(bad(format!("invalid port {port:?}: must be host:port")));
    }
    Ok(target.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(rest: &str) -> String {
        format!("apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\n{rest}")
    }

    #[test]
    fn defaults_are_upstreams() {
        let c = TracingConfiguration::parse(&file("")).unwrap();
        assert_eq!(c.endpoint, "localhost:4317");
        assert_eq!(c.sampling_rate_per_million, 0);
    }

    #[test]
    fn every_version_upstream_registers_is_read() {
        for v in ["v1", "v1beta1", "v1alpha1"] {
            let c = TracingConfiguration::parse(&format!(
                "apiVersion: apiserver.config.k8s.io/{v}\nkind: TracingConfiguration\n\
                 endpoint: 127.0.0.1:4317\nsamplingRatePerMillion: 1000000\n"
            ))
            .unwrap();
            assert_eq!(c.sampling_rate_per_million, 1_000_000);
            assert_eq!(c.ratio(), 1.0);
        }
        let json = r#"{"apiVersion":"apiserver.config.k8s.io/v1","kind":"TracingConfiguration","endpoint":"otel:4317"}"#;
        assert_eq!(
            TracingConfiguration::parse(json).unwrap().endpoint,
            "otel:4317"
        );
    }

    #[test]
    fn a_rate_out_of_range_names_the_field() {
        for (rate, says) in [
            ("1000001", "less than or equal to one million"),
            ("-1", "must be positive"),
        ] {
            let err =
                TracingConfiguration::parse(&file(&format!("samplingRatePerMillion: {rate}\n")))
                    .unwrap_err()
                    .to_string();
            assert!(
                err.contains("samplingRatePerMillion: Invalid value"),
                "{err}"
            );
            assert!(err.contains(says), "{err}");
        }
    }

    #[test]
    fn endpoints_are_grpc_targets() {
        let target = |e: &str| {
            TracingConfiguration::parse(&file(&format!("endpoint: {e:?}\n"))).map(|c| c.endpoint)
        };
        assert_eq!(target("dns:///collector:4317").unwrap(), "collector:4317");
        assert_eq!(target("[::1]:4317").unwrap(), "[::1]:4317");
        for bad in [
            "nohost",
            "host:port",
            "http://x:1",
            "unix:///tmp/s",
            "a b:1",
            ":4317",
        ] {
            let err = target(bad).unwrap_err().to_string();
            assert!(err.contains("endpoint: Invalid value"), "{bad}: {err}");
        }
    }

    #[test]
    fn unknown_fields_and_kinds_are_refused() {
        let err = TracingConfiguration::parse(&file("samplingRate: 5\n"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("samplingRate"), "{err}");
        let err = TracingConfiguration::parse("apiVersion: v1\nkind: ConfigMap\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("TracingConfiguration"), "{err}");
    }
}
