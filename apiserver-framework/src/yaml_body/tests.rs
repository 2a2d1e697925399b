//! The pre-scanner against YAML that nests too deep, and what it must let through.

use super::*;
use serde_json::Value;

fn nested(open: &str, close: &str, depth: usize) -> String {
    format!("{}x{}", open.repeat(depth), close.repeat(depth))
}

/// What `serde_yaml_ng` says of a document: `Ok` or its error text.
fn parsed(doc: &str) -> Result<Value, String> {
    serde_yaml_ng::from_str::<Value>(doc).map_err(|e| e.to_string())
}

#[test]
fn the_bound_is_the_parsers() {
    for (open, close) in [("[", "]"), ("{a: ", "}"), ("- ", ""), ("? ", "")] {
        let ok = nested(open, close, MAX_DEPTH);
        assert_eq!(check_depth(ok.as_bytes()), Ok(()), "{open}");
        assert!(
            parsed(&ok).is_ok() || open == "? ",
            "{open}: {:?}",
            parsed(&ok)
        );
        let deep = nested(open, close, MAX_DEPTH + 1);
        assert!(check_depth(deep.as_bytes()).is_err(), "{open}");
        // The YAML parser takes one level more; the stored JSON could not be read back.
        let deeper = nested(open, close, MAX_DEPTH + 2);
        assert!(parsed(&deeper).is_err(), "{open}");
    }
    let json = |depth: usize| format!("{}{}", "[".repeat(depth), "]".repeat(depth));
    assert!(serde_json::from_str::<serde_json::Value>(&json(MAX_DEPTH)).is_ok());
    assert!(serde_json::from_str::<serde_json::Value>(&json(MAX_DEPTH + 1)).is_err());
    let err = check_depth(nested("[", "]", 200).as_bytes()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "exceeded max depth of 127 at line 1 column 128"
    );
}

#[test]
fn block_indentation_counts() {
    let mut doc = String::new();
    for i in 0..MAX_DEPTH + 5 {
        doc.push_str(&" ".repeat(i));
        doc.push_str("a:\n");
    }
    let err = check_depth(doc.as_bytes()).unwrap_err();
    assert_eq!(err.line, 128);
    let doc: String = (0..MAX_DEPTH)
        .map(|i| format!("{}a:\n", " ".repeat(i)))
        .collect();
    assert_eq!(check_depth(doc.as_bytes()), Ok(()));
    assert!(parsed(&doc).is_ok());
}

#[test]
fn brackets_in_scalars_and_comments_do_not_count() {
    let brackets = "[{".repeat(300);
    for doc in [
        format!("a: \"{brackets}\"\n"),
        format!("a: '{brackets}'\n"),
        format!("a: x{brackets}\n"),
        format!("a: x\n  {brackets}\n"),
        format!("a: |\n  {brackets}\n  {brackets}\nb: 1\n"),
        format!("a: >-\n\n   {brackets}\nb: 1\n"),
        format!("# {brackets}\na: 1 # {brackets}\n"),
        format!("[\"{brackets}\", '{brackets}', x # {brackets}\n]\n"),
        format!("{{a: \"\\\"{brackets}\"}}\n"),
    ] {
        assert_eq!(check_depth(doc.as_bytes()), Ok(()), "{doc}");
        let value = parsed(&doc).unwrap_or_else(|e| panic!("{e}: {doc}"));
        let in_value = value.to_string().contains(&brackets);
        assert_eq!(in_value, !doc.starts_with('#'), "{doc}");
    }
}

#[test]
fn closing_brackets_in_scalars_do_not_hide_depth() {
    // Each level holds a string full of closing brackets, a verbatim tag with some, or a
    // block scalar line; the real depth still grows by one per level.
    for level in [
        "[ \"]]]]]]]]\", ",
        "[ ']]]]]]]]', ",
        "[ !<tag:x]]]]]]]]> a, ",
        "{ a: \"}}}}}}}\", b: ",
    ] {
        let doc = level.repeat(MAX_DEPTH + 1);
        assert!(check_depth(doc.as_bytes()).is_err(), "{level}");
    }
    let mut doc = String::new();
    for i in 0..MAX_DEPTH + 2 {
        doc.push_str(&" ".repeat(i));
        doc.push_str("a: |\n");
        doc.push_str(&" ".repeat(i + 2));
        doc.push_str("]]]]\n");
        doc.push_str(&" ".repeat(i));
        doc.push_str("b:\n");
    }
    assert!(check_depth(doc.as_bytes()).is_err());
    assert!(parsed(&doc).is_err());
}

#[test]
fn line_breaks_of_every_kind_end_comments() {
    for nl in ["\n", "\r\n", "\r", "\u{85}", "\u{2028}", "\u{2029}"] {
        let doc = format!("# x{nl}{}", nested("[", "]", MAX_DEPTH + 1));
        assert!(check_depth(doc.as_bytes()).is_err(), "{nl:?}");
    }
}

#[test]
fn documents_the_parser_accepts_pass() {
    for doc in [
        "",
        "a: 1\nb:\n- c: [1, {d: e}]\n  f: |\n    text [\n- g\n",
        "---\na: !!str 1\n...\n",
        "%YAML 1.1\n---\n&anchor a: *anchor\n",
        "\u{feff}a: {b: [c, 'd''e', \"f\\\"g\"]}\n",
        "{\"apiVersion\": \"v1\", \"items\": [{\"a\": [[1], [2]]}]}",
        "a:\n  - b\n  -   - c\n      - d\n",
        "a: >2\n   x\n  y\nb: 1\n",
    ] {
        assert_eq!(check_depth(doc.as_bytes()), Ok(()), "{doc}");
        assert!(parsed(doc).is_ok(), "{doc}: {:?}", parsed(doc));
    }
    // Complex keys (which the decoder then refuses as keys) are scanned too.
    assert_eq!(check_depth(b"? [a, b]\n: c\n[d]: e\n"), Ok(()));
}

#[test]
fn a_deep_body_is_refused_in_linear_time() {
    let doc = "[".repeat(3 << 20);
    let started = std::time::Instant::now();
    assert!(check_depth(doc.as_bytes()).is_err());
    let doc = "- ".repeat(3 << 19) + "x";
    assert!(check_depth(doc.as_bytes()).is_err());
    // Shallow but long: one pass over 3 MiB.
    let doc = "[a, [b], {c: d}], ".repeat(3 << 16);
    assert_eq!(check_depth(doc.as_bytes()), Ok(()));
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
}

/// The nesting depth of a decoded value (a scalar is 0).
fn depth(v: &Value) -> usize {
    match v {
        Value::Array(items) => 1 + items.iter().map(depth).max().unwrap_or(0),
        Value::Object(map) => 1 + map.values().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

/// A small random number generator (xorshift), so the random tests repeat.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }

    fn pick<'p>(&mut self, from: &[&'p str]) -> &'p str {
        from[self.below(from.len())]
    }
}

/// Scalars that hold brackets, quotes and indicators in every style.
const SCALARS: &[&str] = &[
    "a",
    "b c",
    "x:y",
    "\"]}[{\"",
    "']]}}'",
    "'it''s ]'",
    "\"q\\\"]\"",
    "!t z",
    "!<tag:u]]>  w",
    "&n v",
    "\"#]\"",
    "a#]",
    "1",
    "null",
    "\"\\n]\"",
];

/// A random flow collection nested up to `depth` levels.
fn flow_value(rng: &mut Rng, depth: usize, out: &mut String) {
    if depth == 0 || rng.below(3) == 0 {
        out.push_str(rng.pick(SCALARS));
        return;
    }
    let map = rng.below(2) == 0;
    out.push_str(if map { "{" } else { "[" });
    for i in 0..rng.below(4) {
        if i > 0 {
            out.push_str(rng.pick(&[", ", ",", " ,\n  ", ", # c]]\n"]));
        }
        if map {
            out.push_str(rng.pick(&["k", "\"k]\"", "'k}'"]));
            out.push_str(&i.to_string());
            out.push_str(rng.pick(&[": ", " : ", ":\n  "]));
        }
        flow_value(rng, depth - 1, out);
    }
    out.push_str(if map { "}" } else { "]" });
}

/// A random block document: mappings and sequences nested by indentation, with flow
/// values and block scalars inside.
fn block_value(rng: &mut Rng, depth: usize, indent: usize, out: &mut String) {
    let pad = " ".repeat(indent);
    match rng.below(if depth == 0 { 2 } else { 5 }) {
        0 => {
            out.push(' ');
            flow_value(rng, 3, out);
            out.push('\n');
        }
        1 => {
            out.push_str(rng.pick(&[" |\n", " >-\n", " |2\n"]));
            out.push_str(&format!("{pad}  ]]}}}} text [[\n{pad}   more }}}}\n"));
        }
        2 | 3 => {
            out.push('\n');
            for i in 0..1 + rng.below(3) {
                out.push_str(&format!("{pad}k{i}:"));
                block_value(rng, depth - 1, indent + 2, out);
            }
        }
        _ => {
            out.push('\n');
            for _ in 0..1 + rng.below(3) {
                out.push_str(&format!("{pad}-"));
                block_value(rng, depth - 1, indent + 2, out);
            }
        }
    }
}

/// Random documents, most of them valid, some with a random piece inserted, compared with
/// what the parser makes of them under a small bound: flow documents are refused exactly
/// when deeper than the bound, and no document the parser accepts within it is refused.
#[test]
fn agrees_with_the_parser_on_random_documents() {
    const NOISE: &[&str] = &[
        "[", "]", "{", "}", ",", "\"", "'", "#", "\n", ": ", "- ", "|",
    ];
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let limit = 3;
    let (mut flow_checked, mut block_checked, mut refused_count) = (0, 0, 0);
    for round in 0..20_000 {
        let block = round % 2 == 1;
        let mut doc = String::new();
        if block {
            doc.push_str("top:");
            block_value(&mut rng, 5, 2, &mut doc);
        } else {
            flow_value(&mut rng, 6, &mut doc);
        }
        if rng.below(4) == 0 {
            let mut at = rng.below(doc.len() + 1);
            while !doc.is_char_boundary(at) {
                at -= 1;
            }
            doc.insert_str(at, rng.pick(NOISE));
        }
        let Ok(value) = parsed(&doc) else {
            continue;
        };
        let refused = Scanner::new(doc.as_bytes(), limit).run().is_err();
        refused_count += usize::from(refused);
        let d = depth(&value);
        if block {
            block_checked += 1;
            assert!(!refused || d > limit, "refused at depth {d}: {doc:?}");
        } else {
            flow_checked += 1;
            assert_eq!(refused, d > limit, "depth {d}: {doc:?}");
        }
    }
    assert!(
        flow_checked > 4000 && block_checked > 4000 && refused_count > 500,
        "{flow_checked} {block_checked} {refused_count}"
    );
}

#[test]
fn from_slice_reports_both_kinds_of_error() {
    let deep = nested("[", "]", 300);
    let err = from_slice::<Value>(deep.as_bytes()).unwrap_err();
    assert!(matches!(err, YamlBodyError::TooDeep(_)), "{err}");
    let err = from_slice::<Value>(b"a: [").unwrap_err();
    assert!(matches!(err, YamlBodyError::Syntax(_)), "{err}");
    assert_eq!(
        from_slice::<Value>(b"a: [1]").unwrap(),
        serde_json::json!({"a": [1]})
    );
}
