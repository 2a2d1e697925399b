//! Name and label validation shared by every resource, with upstream's messages
//! (`k8s.io/apimachinery/pkg/util/validation` and the object metadata checks of
//! `pkg/api/validation`).

/// Longest DNS-1123 subdomain.
pub(crate) const DNS1123_SUBDOMAIN_MAX_LEN: usize = 253;

const SUBDOMAIN_FMT_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

/// Checks a name against DNS-1123 subdomain rules; returns upstream's messages when invalid.
pub(crate) fn dns1123_subdomain(name: &str) -> Vec<String> {
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

const LABEL_KEY_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const LABEL_KEY_MSG: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_VALUE_FMT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
const LABEL_VALUE_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_FMT: &str =
    "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS1123_SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
/// Longest label name part and label value.
const LABEL_MAX_LEN: usize = 63;

/// Upstream's explanation of a pattern mismatch: the rule, examples, and the pattern.
fn regex_error(msg: &str, re: &str, examples: &[&str]) -> String {
    let mut out = format!("{msg} (e.g. ");
    for (i, e) in examples.iter().enumerate() {
        if i > 0 {
            out.push_str(" or ");
        }
        out.push_str(&format!("'{e}', "));
    }
    out.push_str(&format!("regex used for validation is '{re}')"));
    out
}

fn max_len_error(n: usize) -> String {
    format!("must be no more than {n} bytes")
}

/// `[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?`: a label name part or non-empty label value.
fn is_label_name(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

/// Lowercase RFC 1123 subdomain: dot-separated labels of `[a-z0-9]([-a-z0-9]*[a-z0-9])?`.
fn is_dns1123_subdomain(s: &str) -> bool {
    s.split('.').all(|label| {
        let b = label.as_bytes();
        !b.is_empty()
            && b[0].is_ascii_alphanumeric()
            && b[b.len() - 1].is_ascii_alphanumeric()
            && b.iter()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
    })
}

/// Upstream's messages for an invalid label key (empty when valid).
pub fn label_key_errors(key: &str) -> Vec<String> {
    let examples = ["MyName", "my.name", "123-abc"];
    let mut errs = Vec::new();
    let parts: Vec<&str> = key.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_string());
            } else {
                if prefix.len() > DNS1123_SUBDOMAIN_MAX_LEN {
                    errs.push(format!(
                        "prefix part {}",
                        max_len_error(DNS1123_SUBDOMAIN_MAX_LEN)
                    ));
                }
                if !is_dns1123_subdomain(prefix) {
                    errs.push(format!(
                        "prefix part {}",
                        regex_error(
                            DNS1123_SUBDOMAIN_MSG,
                            DNS1123_SUBDOMAIN_FMT,
                            &["example.com"]
                        )
                    ));
                }
            }
            *name
        }
        _ => {
            errs.push(format!(
                "a valid label key {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(LABEL_KEY_MSG, LABEL_KEY_FMT, &examples)
            ));
            return errs;
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".to_string());
    } else if name.len() > LABEL_MAX_LEN {
        errs.push(format!("name part {}", max_len_error(LABEL_MAX_LEN)));
    }
    if !is_label_name(name) {
        errs.push(format!(
            "name part {}",
            regex_error(LABEL_KEY_MSG, LABEL_KEY_FMT, &examples)
        ));
    }
    errs
}

/// Upstream's messages for an invalid label value (empty when valid).
pub fn label_value_errors(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > LABEL_MAX_LEN {
        errs.push(max_len_error(LABEL_MAX_LEN));
    }
    if !value.is_empty() && !is_label_name(value) {
        errs.push(regex_error(
            LABEL_VALUE_MSG,
            LABEL_VALUE_FMT,
            &["MyValue", "my_value", "12345"],
        ));
    }
    errs
}

/// Largest total size of an object's annotations (keys and values), as upstream.
pub(crate) const TOTAL_ANNOTATION_SIZE_LIMIT: usize = 256 * 1024;

/// Upstream's checks of the metadata every object has: label keys and values, annotation keys
/// and total size, finalizer names.
pub(crate) fn object_meta(
    meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
) -> Vec<crate::error::FieldError> {
    use crate::error::FieldError;
    let mut errs = Vec::new();
    for (k, v) in meta.labels.iter().flatten() {
        for msg in label_key_errors(k) {
            errs.push(FieldError::invalid("metadata.labels", k.as_str(), msg));
        }
        for msg in label_value_errors(v) {
            errs.push(FieldError::invalid("metadata.labels", v.as_str(), msg));
        }
    }
    let mut total = 0;
    for (k, v) in meta.annotations.iter().flatten() {
        for msg in label_key_errors(&k.to_ascii_lowercase()) {
            errs.push(FieldError::invalid("metadata.annotations", k.as_str(), msg));
        }
        total += k.len() + v.len();
    }
    if total > TOTAL_ANNOTATION_SIZE_LIMIT {
        errs.push(FieldError::too_long(
            "metadata.annotations",
            TOTAL_ANNOTATION_SIZE_LIMIT,
        ));
    }
    for (i, f) in meta.finalizers.iter().flatten().enumerate() {
        for msg in label_key_errors(f) {
            errs.push(FieldError::invalid(
                format!("metadata.finalizers[{i}]"),
                f.as_str(),
                msg,
            ));
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

    #[test]
    fn metadata() {
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
        let ok = ObjectMeta {
            labels: Some([("app.example.com/x".into(), "v-1".into())].into()),
            annotations: Some([("Any.Case/x".into(), "whatever: text".into())].into()),
            finalizers: Some(vec!["example.com/hold".into()]),
            ..Default::default()
        };
        assert!(object_meta(&ok).is_empty());
        let bad = ObjectMeta {
            labels: Some([("a".into(), "-5".into())].into()),
            annotations: Some([("a b".into(), "x".repeat(300_000))].into()),
            finalizers: Some(vec!["not a name".into()]),
            ..Default::default()
        };
        let texts: Vec<String> = object_meta(&bad).iter().map(|e| e.to_string()).collect();
        assert_eq!(texts.len(), 4, "{texts:?}");
        assert!(
            texts[0].starts_with("metadata.labels: Invalid value: \"-5\": a valid label must be"),
            "{texts:?}"
        );
        assert!(
            texts
                .iter()
                .any(|t| t == "metadata.annotations: Too long: may not be more than 262144 bytes"),
            "{texts:?}"
        );
        assert!(
            texts
                .iter()
                .any(|t| t.starts_with("metadata.finalizers[0]: Invalid value: \"not a name\"")),
            "{texts:?}"
        );
    }
}
