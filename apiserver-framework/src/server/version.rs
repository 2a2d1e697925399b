//! `/version`: the server's version information, shaped like `k8s.io/apimachinery`'s
//! `version.Info`.

use axum::body::Body;
use http::{HeaderValue, Response, StatusCode, header};
use serde::{Deserialize, Serialize};

/// The body of `/version`.
///
/// Serialized with upstream's keys and order (`major`, `minor`, `gitVersion`, `gitCommit`,
/// `gitTreeState`, `buildDate`, `goVersion`, `compiler`, `platform`); the emulation and
/// min-compatibility fields are not emitted.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VersionInfo {
    /// Major version, e.g. `1`.
    pub major: String,
    /// Minor version, e.g. `33`.
    pub minor: String,
    /// Full version, e.g. `v1.33.0`.
    pub git_version: String,
    /// Commit the binary was built from.
    pub git_commit: String,
    /// `clean` or `dirty` (empty when unknown).
    pub git_tree_state: String,
    /// Build time in RFC 3339 form.
    pub build_date: String,
    /// Toolchain version; upstream's field name, holding the Rust compiler's version here
    /// when known.
    pub go_version: String,
    /// Compiler: `rustc`.
    pub compiler: String,
    /// `<os>/<arch>` in Go's spelling, e.g. `linux/amd64`.
    pub platform: String,
}

impl VersionInfo {
    /// Version information claiming Kubernetes `<major>.<minor>`: `gitVersion`
    /// `v<major>.<minor>.0`, compiler `rustc`, the platform this binary runs on, the
    /// toolchain version if it was given at build time through the `RUSTC_VERSION`
    /// environment variable (empty otherwise), an empty commit and tree state, and
    /// upstream's placeholder build date `1970-01-01T00:00:00Z`.
    pub fn for_kubernetes(major: &str, minor: &str) -> Self {
        VersionInfo {
            major: major.to_string(),
            minor: minor.to_string(),
            git_version: format!("v{major}.{minor}.0"),
            git_commit: String::new(),
            git_tree_state: String::new(),
            build_date: "1970-01-01T00:00:00Z".to_string(),
            go_version: option_env!("RUSTC_VERSION").unwrap_or("").to_string(),
            compiler: "rustc".to_string(),
            platform: platform(),
        }
    }
}

/// The Kubernetes version [`VersionInfo::default`] claims: the oldest one the `k8s-openapi`
/// release in use supports.
pub const DEFAULT_KUBERNETES_VERSION: (&str, &str) = ("1", "33");

impl Default for VersionInfo {
    /// [`VersionInfo::for_kubernetes`] with [`DEFAULT_KUBERNETES_VERSION`] (`v1.33.0`).
    fn default() -> Self {
        let (major, minor) = DEFAULT_KUBERNETES_VERSION;
        VersionInfo::for_kubernetes(major, minor)
    }
}

/// `<os>/<arch>` of the running binary, in Go's names (`linux/amd64`, `darwin/arm64`, ...).
pub fn platform() -> String {
    format!("{}/{}", go_os(std::env::consts::OS), go_arch())
}

fn go_os(os: &str) -> &str {
    match os {
        "macos" => "darwin",
        other => other,
    }
}

fn go_arch() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "x86" => "386",
        "aarch64" => "arm64",
        "arm" => "arm",
        "powerpc64" if cfg!(target_endian = "little") => "ppc64le",
        "powerpc64" => "ppc64",
        "s390x" => "s390x",
        "riscv64" => "riscv64",
        "loongarch64" => "loong64",
        "mips64" if cfg!(target_endian = "little") => "mips64le",
        "mips" if cfg!(target_endian = "little") => "mipsle",
        "wasm32" => "wasm",
        other => other,
    }
}

/// The `/version` response: `200`, `Content-Type: application/json`, the info as JSON
/// indented by two spaces (no trailing newline).
pub fn respond(info: &VersionInfo) -> Response<Body> {
    let (status, body) = match serde_json::to_vec_pretty(info) {
        Ok(body) => (StatusCode::OK, body),
        Err(err) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            err.to_string().into_bytes(),
        ),
    };
    let mut res = Response::new(Body::from(body));
    *res.status_mut() = status;
    res.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    res
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    #[test]
    fn defaults() {
        let info = VersionInfo::for_kubernetes("1", "33");
        assert_eq!(info.major, "1");
        assert_eq!(info.minor, "33");
        assert_eq!(info.git_version, "v1.33.0");
        assert_eq!(info.compiler, "rustc");
        let (os, arch) = info.platform.split_once('/').unwrap();
        assert!(!os.is_empty() && !arch.is_empty());
        if cfg!(all(target_os = "linux", target_arch = "x86_64")) {
            assert_eq!(info.platform, "linux/amd64");
        }
        if cfg!(all(target_os = "linux", target_arch = "aarch64")) {
            assert_eq!(info.platform, "linux/arm64");
        }
        assert_eq!(go_os("macos"), "darwin");
        assert_eq!(VersionInfo::default().git_version, "v1.33.0");
    }

    #[tokio::test]
    async fn response_shape() {
        let mut info = VersionInfo::for_kubernetes("1", "33");
        info.go_version = "rustc 1.88.0".into();
        info.platform = "linux/amd64".into();
        let res = respond(&info);
        assert_eq!(res.status(), StatusCode::OK);
        assert_eq!(res.headers()[header::CONTENT_TYPE], "application/json");
        let body = res.into_body().collect().await.unwrap().to_bytes();
        let text = String::from_utf8(body.to_vec()).unwrap();
        assert_eq!(
            text,
            "{\n  \"major\": \"1\",\n  \"minor\": \"33\",\n  \"gitVersion\": \"v1.33.0\",\n  \
             \"gitCommit\": \"\",\n  \"gitTreeState\": \"\",\n  \
             \"buildDate\": \"1970-01-01T00:00:00Z\",\n  \"goVersion\": \"rustc 1.88.0\",\n  \
             \"compiler\": \"rustc\",\n  \"platform\": \"linux/amd64\"\n}"
        );
        let back: VersionInfo = serde_json::from_str(&text).unwrap();
        assert_eq!(back, info);
    }
}
