//! `--encryption-provider-config`: upstream's `EncryptionConfiguration` file
//! (`apiserver.config.k8s.io/v1`), checked as upstream checks it, into the storage's
//! [`EncryptionConfig`].
//!
//! Providers `identity`, `aescbc`, `aesgcm`, `secretbox` and `kms` (`apiVersion: v2`, with the
//! framework's `kms` feature) are served; a provider of several keys writes with its first and
//! reads with each. KMS v1, deprecated upstream and off by default there, is refused with an
//! error naming the field. Errors name the field as upstream's do
//! (`resources[0].providers[0].aesgcm.keys[0].secret: Invalid value: "REDACTED": secret is not
//! of the expected length, got 10, expected one of [16 24 32]`) and never show a secret. A
//! file others may read is logged as a warning: it holds the keys.

use std::path::Path;

use base64::Engine as _;
use serde::Deserialize;

use crate::storage::encryption::provider::{AES_KEY_SIZES, SECRETBOX_KEY_SIZE};
use crate::storage::encryption::{EncryptionConfig, KmsConfig, Provider, Providers, Rule};

const API_VERSION: &str = "apiserver.config.k8s.io/v1";
const KIND: &str = "EncryptionConfiguration";

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct File {
    api_version: String,
    kind: String,
    #[serde(default)]
    resources: Vec<ResourceConfiguration>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ResourceConfiguration {
    #[serde(default)]
    resources: Vec<String>,
    #[serde(default)]
    providers: Vec<ProviderConfiguration>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ProviderConfiguration {
    aescbc: Option<Keys>,
    aesgcm: Option<Keys>,
    secretbox: Option<Keys>,
    identity: Option<serde_json::Value>,
    kms: Option<Kms>,
}

/// Upstream's `KMSConfiguration`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Kms {
    #[serde(default)]
    api_version: String,
    #[serde(default)]
    name: String,
    #[serde(default)]
    endpoint: String,
    #[serde(default, rename = "cachesize")]
    cache_size: Option<i64>,
    #[serde(default)]
    timeout: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Keys {
    #[serde(default)]
    keys: Vec<Key>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Key {
    #[serde(default)]
    name: String,
    #[serde(default)]
    secret: String,
}

/// A configuration read from its file.
pub(crate) struct Loaded {
    /// The configuration.
    pub(crate) config: EncryptionConfig,
    /// The hash of the file's content, as upstream writes it: `sha256:<hex>`.
    pub(crate) hash: String,
}

/// The configuration in the file at `path`, or every error found in it.
pub(crate) fn load(path: &Path) -> Result<Loaded, String> {
    let text = read(path)?;
    Ok(Loaded {
        config: parse(&text)?,
        hash: content_hash(&text),
    })
}

/// The content of the file at `path` (a warning logged when others may read it).
pub(crate) fn read(path: &Path) -> Result<String, String> {
    warn_if_readable_by_others(path);
    std::fs::read_to_string(path).map_err(|e| format!("reading {}: {e}", path.display()))
}

/// The hash of a file's content, as upstream's `computeEncryptionConfigHash` writes it.
pub(crate) fn content_hash(text: &str) -> String {
    use sha2::Digest as _;
    let digest = sha2::Sha256::digest(text.as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

/// The configuration `text` describes, or every error found in it.
pub fn parse(text: &str) -> Result<EncryptionConfig, String> {
    let file: File = serde_yaml_ng::from_str(text).map_err(|e| e.to_string())?;
    if file.api_version != API_VERSION || file.kind != KIND {
        return Err(format!(
            "expected apiVersion {API_VERSION:?} and kind {KIND:?}, got {:?} and {:?}",
            file.api_version, file.kind
        ));
    }
    let mut errors = Vec::new();
    if file.resources.is_empty() {
        errors.push(required("resources", "at least one resources is required"));
    }
    let mut rules = Vec::new();
    let mut kms_names = std::collections::HashSet::new();
    for (i, conf) in file.resources.into_iter().enumerate() {
        let at = format!("resources[{i}]");
        if conf.resources.is_empty() {
            errors.push(required(
                &format!("{at}.resources"),
                &format!("at least one {at}.resources is required"),
            ));
        }
        if conf.providers.is_empty() {
            errors.push(required(
                &format!("{at}.providers"),
                &format!("at least one {at}.providers is required"),
            ));
        }
        let mut providers = Vec::new();
        for (j, provider) in conf.providers.iter().enumerate() {
            let path = format!("{at}.providers[{j}]");
            match providers_of(provider, &path, &mut kms_names) {
                Ok(found) => providers.extend(found),
                Err(found) => errors.extend(found),
            }
        }
        rules.push(Rule {
            resources: conf.resources,
            providers: Providers::new(providers),
        });
    }
    match errors.is_empty() {
        true => Ok(EncryptionConfig { rules }),
        false => Err(errors.join("; ")),
    }
}

/// The providers one element of `providers` stands for (one per key), or its errors.
fn providers_of(
    provider: &ProviderConfiguration,
    path: &str,
    kms_names: &mut std::collections::HashSet<String>,
) -> Result<Vec<Provider>, Vec<String>> {
    let named = [
        ("kms", provider.kms.is_some()),
        ("aesgcm", provider.aesgcm.is_some()),
        ("aescbc", provider.aescbc.is_some()),
        ("secretbox", provider.secretbox.is_some()),
        ("identity", provider.identity.is_some()),
    ];
    let found: Vec<&str> = named
        .iter()
        .filter(|(_, on)| *on)
        .map(|(n, _)| *n)
        .collect();
    match found.as_slice() {
        [] => Err(vec![invalid(
            path,
            "{}",
            "provider does not contain any of the expected providers: KMS, AESGCM, AESCBC, Secretbox, Identity",
        )]),
        [_] => match (&provider.aesgcm, &provider.aescbc, &provider.secretbox) {
            (Some(keys), _, _) => keyed(
                keys,
                &format!("{path}.aesgcm.keys"),
                &AES_KEY_SIZES,
                |name, key| Provider::AesGcm { name, key },
            ),
            (_, Some(keys), _) => keyed(
                keys,
                &format!("{path}.aescbc.keys"),
                &AES_KEY_SIZES,
                |name, key| Provider::AesCbc { name, key },
            ),
            (_, _, Some(keys)) => keyed(
                keys,
                &format!("{path}.secretbox.keys"),
                &[SECRETBOX_KEY_SIZE],
                |name, key| Provider::Secretbox { name, key },
            ),
            _ if provider.identity.is_some() => Ok(vec![Provider::Identity]),
            _ => match &provider.kms {
                Some(kms) => kms_provider(kms, &format!("{path}.kms"), kms_names).map(|p| vec![p]),
                None => Err(vec![format!("{path}: no provider")]),
            },
        },
        _ => Err(vec![invalid(
            path,
            &found.join(", "),
            "more than one provider specified in a single element, should split into different list elements",
        )]),
    }
}

/// One provider per key of `keys` (at `path`, each of one of `sizes` bytes), made by `make`,
/// or the keys' errors.
fn keyed(
    keys: &Keys,
    path: &str,
    sizes: &[usize],
    make: impl Fn(String, Vec<u8>) -> Provider,
) -> Result<Vec<Provider>, Vec<String>> {
    if keys.keys.is_empty() {
        return Err(vec![required(path, "at least one keys is required")]);
    }
    let mut providers = Vec::new();
    let mut errors = Vec::new();
    for (i, key) in keys.keys.iter().enumerate() {
        let at = format!("{path}[{i}]");
        if key.name.is_empty() {
            errors.push(required(
                &format!("{at}.name"),
                "name is a mandatory field for a key",
            ));
        }
        if key.secret.is_empty() {
            errors.push(required(
                &format!("{at}.secret"),
                "secret is a mandatory field for a key",
            ));
            continue;
        }
        let Ok(secret) = base64::engine::general_purpose::STANDARD.decode(&key.secret) else {
            errors.push(invalid(
                &format!("{at}.secret"),
                "REDACTED",
                "secrets must be base64 encoded",
            ));
            continue;
        };
        if !sizes.contains(&secret.len()) {
            // Go's %v of the sizes: `[16 24 32]`.
            let expected: Vec<String> = sizes.iter().map(usize::to_string).collect();
            errors.push(invalid(
                &format!("{at}.secret"),
                "REDACTED",
                &format!(
                    "secret is not of the expected length, got {}, expected one of [{}]",
                    secret.len(),
                    expected.join(" ")
                ),
            ));
            continue;
        }
        providers.push(make(key.name.clone(), secret));
    }
    match errors.is_empty() {
        true => Ok(providers),
        false => Err(errors),
    }
}

/// The KMS v2 provider `kms` (at `path`) configures, checked as upstream's validation checks
/// it, or its errors.
fn kms_provider(
    kms: &Kms,
    path: &str,
    names: &mut std::collections::HashSet<String>,
) -> Result<Provider, Vec<String>> {
    let mut errors = Vec::new();
    // Upstream's defaults: apiVersion v1, a 3 s timeout.
    let api_version = match kms.api_version.as_str() {
        "" => "v1",
        v => v,
    };
    if kms.name.is_empty() {
        errors.push(required(
            &format!("{path}.name"),
            "name is a mandatory field for a provider",
        ));
    }
    if api_version != "v1" && kms.name.contains(':') {
        errors.push(invalid(
            &format!("{path}.name"),
            &kms.name,
            &format!(
                "invalid KMS provider name {}, must not contain ':'",
                kms.name
            ),
        ));
    }
    if !names.insert(kms.name.clone()) {
        errors.push(invalid(
            &format!("{path}.name"),
            &kms.name,
            &format!(
                "duplicate KMS provider name {}, names must be unique",
                kms.name
            ),
        ));
    }
    let timeout = match kms.timeout.as_deref() {
        None => Ok(std::time::Duration::from_secs(3)),
        Some(text) => text.parse::<crate::duration::GoDuration>().map(|d| d.0),
    };
    let timeout = match timeout {
        Ok(t) if !t.is_zero() => Some(t),
        Ok(_) => {
            errors.push(invalid(
                &format!("{path}.timeout"),
                kms.timeout.as_deref().unwrap_or(""),
                "timeout should be a positive value",
            ));
            None
        }
        Err(e) => {
            errors.push(invalid(
                &format!("{path}.timeout"),
                kms.timeout.as_deref().unwrap_or(""),
                &e,
            ));
            None
        }
    };
    let socket = if kms.endpoint.is_empty() {
        errors.push(invalid(
            &format!("{path}.endpoint"),
            "",
            "endpoint is a mandatory field for a kms",
        ));
        None
    } else {
        match kms.endpoint.split_once("://") {
            Some(("unix", rest)) if !rest.is_empty() => Some(std::path::PathBuf::from(rest)),
            Some(("unix", _)) => {
                errors.push(invalid(
                    &format!("{path}.endpoint"),
                    &kms.endpoint,
                    "invalid endpoint for kms provider, error: the socket path is empty",
                ));
                None
            }
            other => {
                let scheme = other.map(|(scheme, _)| scheme).unwrap_or("");
                errors.push(invalid(
                    &format!("{path}.endpoint"),
                    &kms.endpoint,
                    &format!(
                        "unsupported scheme {scheme:?} for KMS provider, only unix is supported"
                    ),
                ));
                None
            }
        }
    };
    if api_version != "v1"
        && let Some(size) = kms.cache_size
    {
        errors.push(format!(
            "{path}.cachesize: Invalid value: {size}: cachesize is not supported in v2"
        ));
    }
    match api_version {
        "v2" => {}
        "v1" => errors.push(format!(
            "{path}.apiVersion: Unsupported value: \"v1\": KMSv1 is deprecated and will only receive security updates going forward. Use KMSv2 instead"
        )),
        other => errors.push(invalid(
            &format!("{path}.apiVersion"),
            other,
            "unsupported apiVersion apiVersion for KMS provider, only v1 and v2 are supported",
        )),
    }
    match (errors.is_empty(), socket, timeout) {
        (true, Some(socket), Some(timeout)) => kms_v2(KmsConfig {
            name: kms.name.clone(),
            socket,
            timeout,
        })
        .map_err(|e| vec![format!("{path}: {e}")]),
        _ => Err(errors),
    }
}

#[cfg(feature = "kms")]
fn kms_v2(config: KmsConfig) -> Result<Provider, String> {
    Ok(Provider::Kms(crate::storage::encryption::kms::KmsV2::new(
        config,
    )))
}

/// Without the `kms` feature, a configuration naming a KMS plugin is refused.
#[cfg(not(feature = "kms"))]
fn kms_v2(_: KmsConfig) -> Result<Provider, String> {
    Err("Unsupported value: this server was built without the framework's `kms` feature".into())
}

fn required(path: &str, detail: &str) -> String {
    format!("{path}: Required value: {detail}")
}

fn invalid(path: &str, value: &str, detail: &str) -> String {
    format!("{path}: Invalid value: {value:?}: {detail}")
}

#[cfg(unix)]
fn warn_if_readable_by_others(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    if let Ok(meta) = std::fs::metadata(path)
        && meta.permissions().mode() & 0o077 != 0
    {
        tracing::warn!(
            path = %path.display(),
            mode = format!("{:o}", meta.permissions().mode() & 0o777),
            "the encryption provider configuration holds keys and can be read by others: make it 0600"
        );
    }
}

#[cfg(not(unix))]
fn warn_if_readable_by_others(_path: &Path) {}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(providers: &str) -> String {
        format!(
            "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n\
             - resources: [flunders.wardle.example.com]\n  providers:\n{providers}"
        )
    }

    const KEY_32: &str = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
    const KEY_16: &str = "AAECAwQFBgcICQoLDA0ODw==";

    #[test]
    fn keys_and_providers_are_read_in_order() {
        let text = config(&format!(
            "  - aesgcm:\n      keys:\n      - name: new\n        secret: {KEY_32}\n      \
             - name: old\n        secret: {KEY_32}\n  - secretbox:\n      keys:\n      \
             - name: box\n        secret: {KEY_32}\n  - identity: {{}}\n"
        ));
        let parsed = parse(&text).unwrap();
        let rule = &parsed.rules[0];
        assert_eq!(rule.resources, ["flunders.wardle.example.com"]);
        assert_eq!(
            format!("{:?}", rule.providers),
            r#"Providers([aesgcm key "new", aesgcm key "old", secretbox key "box", identity])"#
        );
    }

    #[test]
    fn errors_name_the_field_and_hide_the_secret() {
        let err = parse(&config(
            "  - aescbc:\n      keys:\n      - name: k\n        secret: c2hvcnQ=\n",
        ))
        .unwrap_err();
        assert_eq!(
            err,
            "resources[0].providers[0].aescbc.keys[0].secret: Invalid value: \"REDACTED\": \
             secret is not of the expected length, got 5, expected one of [16 24 32]"
        );
        let err = parse(&config("  - rot13: {}\n")).unwrap_err();
        assert!(err.contains("unknown field `rot13`"), "{err}");
        let err = parse(&config(&format!(
            "  - secretbox:\n      keys:\n      - name: k\n        secret: {KEY_16}\n"
        )))
        .unwrap_err();
        assert_eq!(
            err,
            "resources[0].providers[0].secretbox.keys[0].secret: Invalid value: \"REDACTED\": \
             secret is not of the expected length, got 16, expected one of [32]"
        );
        let err = parse(&config("  - kms:\n      name: k\n")).unwrap_err();
        assert!(
            err.contains("resources[0].providers[0].kms.endpoint: Invalid value: \"\": endpoint is a mandatory field for a kms")
                && err.contains("resources[0].providers[0].kms.apiVersion: Unsupported value: \"v1\""),
            "{err}"
        );
        let err = parse(&config(
            "  - kms:\n      apiVersion: v2\n      name: a:b\n      endpoint: tcp://x\n      \
             cachesize: 10\n      timeout: 0s\n",
        ))
        .unwrap_err();
        for expected in [
            "resources[0].providers[0].kms.name: Invalid value: \"a:b\": invalid KMS provider name a:b, must not contain ':'",
            "resources[0].providers[0].kms.timeout: Invalid value: \"0s\": timeout should be a positive value",
            "resources[0].providers[0].kms.endpoint: Invalid value: \"tcp://x\": unsupported scheme \"tcp\" for KMS provider, only unix is supported",
            "resources[0].providers[0].kms.cachesize: Invalid value: 10: cachesize is not supported in v2",
        ] {
            assert!(err.contains(expected), "{expected}\nnot in\n{err}");
        }
        let err = parse(&config("  - {}\n")).unwrap_err();
        assert!(
            err.contains("provider does not contain any of the expected providers"),
            "{err}"
        );
        let err = parse(&config(&format!(
            "  - identity: {{}}\n    aesgcm:\n      keys:\n      - name: k\n        secret: {KEY_32}\n"
        )))
        .unwrap_err();
        assert!(err.contains("more than one provider specified"), "{err}");
        let err = parse(&config(
            "  - aesgcm:\n      keys:\n      - name: k\n        secret: '%%'\n",
        ))
        .unwrap_err();
        assert!(err.ends_with("secrets must be base64 encoded"), "{err}");
        assert!(!err.contains("%%"), "{err}");
    }
}
