//! What a storage key names: the group and resource of `/<group>/<resource>/…` (the first
//! segment holds a dot: API groups served through aggregation are DNS subdomains), or of the
//! core group's `/<resource>/…`.

/// The group and resource of `key` (empty strings for what it does not name).
pub fn group_resource(key: &str) -> (&str, &str) {
    let mut parts = key.split('/').filter(|p| !p.is_empty());
    match (parts.next(), parts.next()) {
        (Some(first), Some(second)) if first.contains('.') => (first, second),
        (Some(first), _) if first.contains('.') => (first, ""),
        (Some(first), _) => ("", first),
        (None, _) => ("", ""),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_name_their_group_and_resource() {
        assert_eq!(
            group_resource("/wardle.example.com/flunders/ns/a"),
            ("wardle.example.com", "flunders")
        );
        assert_eq!(group_resource("/namespaces/a"), ("", "namespaces"));
        assert_eq!(
            group_resource("/wardle.example.com/"),
            ("wardle.example.com", "")
        );
        assert_eq!(group_resource(""), ("", ""));
    }
}
