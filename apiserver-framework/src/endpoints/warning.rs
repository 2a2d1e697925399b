//! `Warning` response headers, formatted and limited the way Kubernetes API servers send them.
//!
//! Every warning is one header value `299 - "<text>"` (RFC 7234 warn-code 299, no agent, the text
//! quoted with `"` and `\` escaped); kubectl prints each as `Warning: <text>`. A response carries
//! each distinct text once, in the order first added. Texts with control characters are dropped
//! (they cannot be sent), as are empty texts.
//!
//! Size limits: while the texts sent so far total at most `TRUNCATE_AT_TOTAL_RUNES` characters
//! they are sent whole. The first text that would cross that total switches the response to
//! truncating: every warning recorded so far (and that one) is sent again cut to
//! `TRUNCATE_ITEM_RUNES` characters, later texts are cut the same way, and once the cut texts
//! reach the total again further warnings are dropped.

use std::collections::HashSet;

use http::HeaderValue;

/// Total characters of warning text sent whole before warnings are truncated.
pub(crate) const TRUNCATE_AT_TOTAL_RUNES: usize = 4 * 1024;

/// Characters each warning text is cut to once truncation has started.
pub(crate) const TRUNCATE_ITEM_RUNES: usize = 256;

/// The header value for one warning: `299 - "<text>"`, with `"` and `\` in the text escaped by
/// a backslash.
///
/// `None` when the text holds a control character (the C0 and C1 ranges and DEL): such a warning
/// is not sent at all.
pub fn header_value(text: &str) -> Option<HeaderValue> {
    if text.chars().any(char::is_control) {
        return None;
    }
    let mut out = String::with_capacity(text.len() + 8);
    out.push_str("299 - \"");
    for c in text.chars() {
        if c == '"' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    HeaderValue::from_str(&out).ok()
}

/// The `Warning` header values for `texts` added in order to a fresh [`Warnings`]:
/// de-duplicated, control-character texts dropped, and truncated past the size limits.
pub(crate) fn header_values(texts: &[String]) -> Vec<HeaderValue> {
    let mut warnings = Warnings::new();
    for text in texts {
        warnings.add(text);
    }
    warnings.into_header_values()
}

/// The warnings of one response, collected as a request is served.
///
/// Add texts with [`Warnings::add`]; send [`Warnings::into_header_values`] as `Warning` headers.
#[derive(Clone, Debug, Default)]
pub struct Warnings {
    /// Every distinct text added, for de-duplication.
    recorded: HashSet<String>,
    /// Distinct texts in the order added, to send again cut once truncation starts.
    ordered: Vec<String>,
    /// The header values to send.
    headers: Vec<HeaderValue>,
    /// Characters of text in `headers`.
    written: usize,
    /// Whether the total was exceeded and texts are now cut to [`TRUNCATE_ITEM_RUNES`].
    truncating: bool,
}

impl Warnings {
    /// No warnings yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records one warning text, unless it is empty, was already added, or the size limits are
    /// used up.
    pub fn add(&mut self, text: &str) {
        if text.is_empty() || (self.truncating && self.written >= TRUNCATE_AT_TOTAL_RUNES) {
            return;
        }
        if !self.recorded.insert(text.to_owned()) {
            return;
        }
        self.ordered.push(text.to_owned());

        let (text, len) = if self.truncating {
            cut(text)
        } else {
            (text, text.chars().count())
        };
        let Some(header) = header_value(text) else {
            return;
        };
        if self.truncating || self.written + len <= TRUNCATE_AT_TOTAL_RUNES {
            self.written += len;
            self.headers.push(header);
            return;
        }

        // Over the total: start again with every recorded text cut short.
        self.truncating = true;
        self.written = 0;
        self.headers.clear();
        for text in &self.ordered {
            let (text, len) = cut(text);
            if let Some(header) = header_value(text) {
                self.written += len;
                self.headers.push(header);
            }
        }
    }

    /// Whether there is nothing to send.
    #[cfg(any(test, feature = "testing"))]
    pub fn is_empty(&self) -> bool {
        self.headers.is_empty()
    }

    /// The `Warning` header values to send, in order.
    #[cfg(any(test, feature = "testing"))]
    pub fn header_values(&self) -> &[HeaderValue] {
        &self.headers
    }

    /// The `Warning` header values to send, in order.
    pub fn into_header_values(self) -> Vec<HeaderValue> {
        self.headers
    }
}

/// `text` cut to at most [`TRUNCATE_ITEM_RUNES`] characters, and its length in characters.
fn cut(text: &str) -> (&str, usize) {
    match text.char_indices().nth(TRUNCATE_ITEM_RUNES) {
        Some((end, _)) => (&text[..end], TRUNCATE_ITEM_RUNES),
        None => (text, text.chars().count()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(values: &[HeaderValue]) -> Vec<String> {
        values
            .iter()
            .map(|v| String::from_utf8(v.as_bytes().to_vec()).unwrap())
            .collect()
    }

    #[test]
    fn formats_code_agent_and_quoted_text() {
        let v = header_value(r#"unknown field "spec.foo""#).unwrap();
        assert_eq!(v.as_bytes(), br#"299 - "unknown field \"spec.foo\"""#);
        let v = header_value(r"a\b").unwrap();
        assert_eq!(v.as_bytes(), br#"299 - "a\\b""#);
        let v = header_value("").unwrap();
        assert_eq!(v.as_bytes(), br#"299 - """#);
    }

    #[test]
    fn keeps_non_ascii_text() {
        let v = header_value("größe ✓").unwrap();
        assert_eq!(v.as_bytes(), "299 - \"größe ✓\"".as_bytes());
    }

    #[test]
    fn drops_text_with_control_characters() {
        assert!(header_value("line\nbreak").is_none());
        assert!(header_value("tab\there").is_none());
        assert!(header_value("del\u{7f}").is_none());
        assert!(header_value("c1\u{85}").is_none());
        let out = header_values(&["ok".into(), "bad\r\n".into(), "also ok".into()]);
        assert_eq!(strings(&out), [r#"299 - "ok""#, r#"299 - "also ok""#]);
    }

    #[test]
    fn deduplicates_and_keeps_first_order() {
        let texts: Vec<String> = ["b", "a", "b", "", "c", "a"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let out = header_values(&texts);
        assert_eq!(
            strings(&out),
            [r#"299 - "b""#, r#"299 - "a""#, r#"299 - "c""#]
        );
    }

    #[test]
    fn sends_texts_whole_up_to_the_total() {
        // 16 texts of 256 characters reach the total exactly.
        let texts: Vec<String> = (0..16)
            .map(|i| format!("{i:x}").repeat(TRUNCATE_ITEM_RUNES))
            .collect();
        let out = header_values(&texts);
        assert_eq!(out.len(), 16);
        assert!(
            strings(&out)
                .iter()
                .all(|h| h.len() == TRUNCATE_ITEM_RUNES + 8)
        );
    }

    #[test]
    fn truncates_everything_once_over_the_total() {
        let long = |c: char, n: usize| std::iter::repeat_n(c, n).collect::<String>();
        let mut w = Warnings::new();
        w.add(&long('a', 3000));
        assert_eq!(w.header_values().len(), 1);
        w.add(&long('b', 1000));
        assert_eq!(w.header_values().len(), 2);
        // Crosses 4096: both earlier texts and this one are sent again cut to 256.
        w.add(&long('c', 500));
        let out = strings(w.header_values());
        assert_eq!(out.len(), 3);
        assert_eq!(out[0], format!("299 - \"{}\"", long('a', 256)));
        assert_eq!(out[1], format!("299 - \"{}\"", long('b', 256)));
        assert_eq!(out[2], format!("299 - \"{}\"", long('c', 256)));
        // Cut texts keep being added until they total 4096 characters again.
        for (i, c) in ('d'..='z').enumerate() {
            w.add(&long(c, 300));
            let expected = (4 + i).min(16);
            assert_eq!(w.header_values().len(), expected, "after {c}");
        }
        assert_eq!(w.header_values().len(), 16);
        assert!(
            strings(w.header_values())
                .iter()
                .all(|h| h.chars().count() <= TRUNCATE_ITEM_RUNES + 8)
        );
    }

    #[test]
    fn truncation_cuts_on_character_boundaries() {
        let mut w = Warnings::new();
        w.add(&"é".repeat(TRUNCATE_AT_TOTAL_RUNES));
        assert_eq!(w.header_values().len(), 1);
        w.add("ü");
        let out = strings(w.header_values());
        assert_eq!(out.len(), 2);
        assert_eq!(
            out[0],
            format!("299 - \"{}\"", "é".repeat(TRUNCATE_ITEM_RUNES))
        );
        assert_eq!(out[1], r#"299 - "ü""#);
    }
}
