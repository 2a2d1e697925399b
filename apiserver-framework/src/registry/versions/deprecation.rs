//! [`Deprecation`]: when a served version was deprecated and is removed.

/// When a version was deprecated (and is removed), as upstream's prerelease-lifecycle markers
/// say: requests to it answer with a `Warning` header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Deprecation {
    /// The Kubernetes minor release (`major`, `minor`) the version is deprecated in.
    pub deprecated_in: (u32, u32),
    /// The release it is no longer served in, if announced.
    pub removed_in: Option<(u32, u32)>,
    /// The `<group>/<version>` and kind to use instead, if any.
    pub replacement: Option<(String, String)>,
}

impl Deprecation {
    /// Deprecated in `major.minor`.
    pub fn since(major: u32, minor: u32) -> Self {
        Deprecation {
            deprecated_in: (major, minor),
            removed_in: None,
            replacement: None,
        }
    }

    /// Unavailable from `major.minor` on.
    pub fn removed_in(mut self, major: u32, minor: u32) -> Self {
        self.removed_in = Some((major, minor));
        self
    }

    /// Replaced by `kind` in `api_version` (`<group>/<version>`).
    pub fn replaced_by(mut self, api_version: impl Into<String>, kind: impl Into<String>) -> Self {
        self.replacement = Some((api_version.into(), kind.into()));
        self
    }

    /// Upstream's warning text: `<group>/<version> <Kind> is deprecated in v<X.Y>+`, then
    /// `, unavailable in v<X.Y>+` and `; use <group>/<version> <Kind>` when known.
    pub fn warning(&self, api_version: &str, kind: &str) -> String {
        let (major, minor) = self.deprecated_in;
        let mut text = format!("{api_version} {kind} is deprecated in v{major}.{minor}+");
        if let Some((major, minor)) = self.removed_in {
            text.push_str(&format!(", unavailable in v{major}.{minor}+"));
        }
        if let Some((gv, kind)) = &self.replacement {
            text.push_str(&format!("; use {gv} {kind}"));
        }
        text
    }
}
