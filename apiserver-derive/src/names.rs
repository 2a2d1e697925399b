//! Kubernetes naming rules: plurals, and what groups, versions, kinds and labels may look like.

/// English plural of a lower-case kind, the way kubectl users expect resource names to look:
/// `policy` → `policies`, `box` → `boxes`, `flunder` → `flunders`.
pub fn pluralize(lower: &str) -> String {
    if let Some(stem) = lower.strip_suffix('y') {
        let after_consonant = stem
            .chars()
            .last()
            .is_some_and(|c| c.is_ascii_alphabetic() && !"aeiou".contains(c));
        if after_consonant {
            return format!("{stem}ies");
        }
    }
    let sibilant = ["s", "x", "z", "ch", "sh"]
        .iter()
        .any(|suffix| lower.ends_with(suffix));
    if sibilant {
        format!("{lower}es")
    } else {
        format!("{lower}s")
    }
}

/// Whether `s` is a lower-case RFC 1123 DNS label: 1 to 63 of `[a-z0-9-]`, starting and ending
/// with a letter or digit.
pub fn is_dns_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

/// Checks that `group` is a lower-case RFC 1123 DNS subdomain, or empty (the core group, served
/// under `/api`); the error says why not.
pub fn check_group(group: &str) -> Result<(), String> {
    const HINT: &str = "an API group is a lower-case DNS subdomain such as `wardle.example.com`";
    if group.is_empty() {
        return Ok(());
    }
    if group.len() > 253 {
        return Err(format!(
            "invalid group `{group}`: longer than 253 characters; {HINT}"
        ));
    }
    if group.bytes().any(|b| b.is_ascii_uppercase()) {
        return Err(format!(
            "invalid group `{group}`: upper-case letters are not allowed; {HINT}"
        ));
    }
    if !group.split('.').all(is_dns_label) {
        return Err(format!(
            "invalid group `{group}`: every dot-separated part must be 1 to 63 lower-case letters, \
             digits or `-`, starting and ending with a letter or digit; {HINT}"
        ));
    }
    Ok(())
}

/// Whether `v` is a Kubernetes API version: `v<N>`, `v<N>alpha<M>` or `v<N>beta<M>`, with
/// positive numbers without leading zeros.
pub fn is_version(v: &str) -> bool {
    let Some(rest) = v.strip_prefix('v') else {
        return false;
    };
    let (major, rest) = split_number(rest);
    if !major {
        return false;
    }
    if rest.is_empty() {
        return true;
    }
    let Some(rest) = rest
        .strip_prefix("alpha")
        .or_else(|| rest.strip_prefix("beta"))
    else {
        return false;
    };
    let (minor, rest) = split_number(rest);
    minor && rest.is_empty()
}

/// Splits a leading positive decimal number without leading zeros off `s`; the flag says
/// whether there was one.
fn split_number(s: &str) -> (bool, &str) {
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    let ok = digits > 0 && !s.starts_with('0');
    (ok, &s[digits..])
}

/// Whether `kind` is CamelCase: an upper-case ASCII letter, then ASCII letters and digits.
pub fn is_kind(kind: &str) -> bool {
    let mut chars = kind.chars();
    chars.next().is_some_and(|c| c.is_ascii_uppercase()) && chars.all(|c| c.is_ascii_alphanumeric())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plurals() {
        assert_eq!(pluralize("flunder"), "flunders");
        assert_eq!(pluralize("policy"), "policies");
        assert_eq!(pluralize("key"), "keys");
        assert_eq!(pluralize("box"), "boxes");
        assert_eq!(pluralize("class"), "classes");
        assert_eq!(pluralize("batch"), "batches");
        assert_eq!(pluralize("mesh"), "meshes");
        assert_eq!(pluralize("y"), "ys");
    }

    #[test]
    fn versions() {
        for ok in ["v1", "v12", "v1alpha1", "v2beta3", "v10beta10"] {
            assert!(is_version(ok), "{ok}");
        }
        for bad in [
            "",
            "v",
            "1",
            "V1",
            "v0",
            "v01",
            "v1alpha",
            "v1beta0",
            "v1gamma1",
            "v1alpha1x",
            "v1.0",
        ] {
            assert!(!is_version(bad), "{bad}");
        }
    }

    #[test]
    fn kinds() {
        assert!(is_kind("Flunder"));
        assert!(is_kind("APIService2"));
        assert!(!is_kind("flunder"));
        assert!(!is_kind("Flun_der"));
        assert!(!is_kind(""));
        assert!(!is_kind("Ünder"));
    }

    #[test]
    fn groups_and_labels() {
        assert!(check_group("wardle.example.com").is_ok());
        assert!(check_group("metrics.k8s.io").is_ok());
        assert!(check_group("local").is_ok());
        assert!(check_group("").is_ok());
        assert!(check_group("Wardle.example.com").is_err());
        assert!(check_group("wardle..com").is_err());
        assert!(check_group("-wardle.com").is_err());
        assert!(check_group("wardle_x.com").is_err());
        assert!(is_dns_label("fl"));
        assert!(!is_dns_label("Fl"));
        assert!(!is_dns_label("a-"));
    }
}
