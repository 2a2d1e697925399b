//! Name validation rules shared by every resource.

/// Longest DNS-1123 subdomain.
pub const DNS1123_SUBDOMAIN_MAX_LEN: usize = 253;

const SUBDOMAIN_FMT_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

/// Checks a name against DNS-1123 subdomain rules; returns upstream's messages when invalid.
pub fn dns1123_subdomain(name: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if name.len() > DNS1123_SUBDOMAIN_MAX_LEN {
        errs.push(format!(
            "must be no more than {DNS1123_SUBDOMAIN_MAX_LEN} characters"
        ));
    }
    let label_ok = |l: &str| {
        let b = l.as_bytes();
        !b.is_empty()
            && b[0].is_ascii_alphanumeric()
            && b[b.len() - 1].is_ascii_alphanumeric()
            && b.iter()
                .all(|c| c.is_ascii_digit() || c.is_ascii_lowercase() || *c == b'-')
            && !b.iter().any(|c| c.is_ascii_uppercase())
    };
    if name.is_empty() || !name.split('.').all(label_ok) {
        errs.push(SUBDOMAIN_FMT_MSG.to_string());
    }
    errs
}

/// Checks that a name can be used as a path segment (upstream's `IsValidPathSegmentName`).
pub fn path_segment_name(name: &str) -> Vec<String> {
    if name == "." || name == ".." {
        return vec![format!("may not be '{name}'")];
    }
    let mut errs = Vec::new();
    for bad in ["/", "%"] {
        if name.contains(bad) {
            errs.push(format!("may not contain '{bad}'"));
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subdomains() {
        assert!(dns1123_subdomain("my-flunder.v2").is_empty());
        assert!(dns1123_subdomain("a").is_empty());
        assert_eq!(dns1123_subdomain("Bad").len(), 1);
        assert_eq!(dns1123_subdomain("-a").len(), 1);
        assert_eq!(dns1123_subdomain("a..b").len(), 1);
        assert_eq!(dns1123_subdomain("a_b").len(), 1);
        assert_eq!(dns1123_subdomain(&"a".repeat(254)).len(), 1);
        assert!(path_segment_name("..").len() == 1);
    }
}
