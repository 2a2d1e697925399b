//! The Prometheus text exposition format (0.0.4) read back: `/metrics` as samples by name
//! and labels.

use std::collections::BTreeMap;

/// One sample: the metric name and its labels, sorted.
pub type Series = (String, BTreeMap<String, String>);

/// Parses the text exposition format (0.0.4): comments, blank lines and samples
/// `name{label="value",…} value [timestamp]`, with `\\`, `\"` and `\n` escapes in values.
pub fn parse(text: &str) -> BTreeMap<Series, f64> {
    let mut samples = BTreeMap::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let name_end = line
            .find(['{', ' '])
            .unwrap_or_else(|| panic!("no value on line {line:?}"));
        let name = line[..name_end].to_string();
        let mut labels = BTreeMap::new();
        let mut rest = &line[name_end..];
        if let Some(after) = rest.strip_prefix('{') {
            let mut chars = after.char_indices().peekable();
            let end = loop {
                // Skip separators, then read `key="value"` or the closing brace.
                while let Some((_, c)) = chars.peek() {
                    if *c == ',' || *c == ' ' {
                        chars.next();
                    } else {
                        break;
                    }
                }
                let Some((i, c)) = chars.next() else {
                    panic!("unterminated labels on line {line:?}")
                };
                if c == '}' {
                    break i + 1;
                }
                let mut key = String::from(c);
                for (_, c) in chars.by_ref() {
                    if c == '=' {
                        break;
                    }
                    key.push(c);
                }
                assert_eq!(chars.next().map(|x| x.1), Some('"'), "line {line:?}");
                let mut value = String::new();
                loop {
                    match chars.next().map(|x| x.1) {
                        Some('"') => break,
                        Some('\\') => match chars.next().map(|x| x.1) {
                            Some('n') => value.push('\n'),
                            Some(c) => value.push(c),
                            None => panic!("bad escape on line {line:?}"),
                        },
                        Some(c) => value.push(c),
                        None => panic!("unterminated value on line {line:?}"),
                    }
                }
                labels.insert(key, value);
            };
            rest = &after[end..];
        }
        let value = rest
            .split_whitespace()
            .next()
            .unwrap_or_else(|| panic!("no value on line {line:?}"));
        let value: f64 = match value {
            "+Inf" => f64::INFINITY,
            "-Inf" => f64::NEG_INFINITY,
            v => v
                .parse()
                .unwrap_or_else(|_| panic!("bad value on line {line:?}")),
        };
        assert!(
            samples.insert((name, labels), value).is_none(),
            "duplicate series on line {line:?}"
        );
    }
    samples
}

/// The value of the series `name{labels}` (exactly these labels), 0 when absent.
pub fn value(samples: &BTreeMap<Series, f64>, name: &str, labels: &[(&str, &str)]) -> f64 {
    let labels = labels
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    samples
        .get(&(name.to_string(), labels))
        .copied()
        .unwrap_or(0.0)
}
