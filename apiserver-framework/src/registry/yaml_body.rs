//! YAML request bodies: their nesting is bounded before they are parsed.
//!
//! The YAML parser (libyaml, through `serde_yaml_ng`) reads a whole document into events before
//! anything looks at its depth, and its scanner does work proportional to the flow nesting
//! (`[`, `{`) for every token: a body nested tens of thousands of levels deep takes seconds of
//! CPU before `serde_yaml_ng`'s own depth limit (128 levels) refuses it. [`check_depth`] finds
//! such a body in one linear pass and refuses it, before the parser runs, in the words
//! upstream's YAML decoder uses (`exceeded max depth of`), at the bound of JSON bodies
//! ([`MAX_DEPTH`], 127 levels: what `serde_json` decodes, since the object is stored as JSON).
//!
//! No YAML crate reports its nesting as it scans, so the pass is written here: it follows
//! libyaml's scanner (`scanner.c` of libyaml 0.2.5, which `serde_yaml_ng` runs) token by token —
//! indentation, simple keys, plain, quoted and block scalars, comments, tags and anchors — and
//! counts flow levels plus block indentation levels. Its count is never below the parser's
//! flow level wherever the parser gets to (input past a syntax error is never parsed, so there
//! it may count anything), and never above the document's real depth for a document the parser
//! accepts, so it refuses exactly what would be refused later anyway (by the parser, or by the
//! JSON decoding of the stored object), only sooner.

use serde::de::DeserializeOwned;

/// The deepest nesting of collections accepted in a body: the deepest `serde_json` decodes (its
/// recursion limit of 128 counts the level it refuses). `serde_yaml_ng` would accept one level
/// more, but a YAML body becomes JSON, which is stored and read back with `serde_json`: a level
/// more would store an object no read could decode.
pub const MAX_DEPTH: usize = 127;

/// A body nested deeper than [`MAX_DEPTH`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("exceeded max depth of {MAX_DEPTH} at line {line} column {column}")]
pub struct TooDeep {
    /// The 1-based line where the limit was passed.
    pub line: u64,
    /// The 1-based column where the limit was passed.
    pub column: u64,
}

/// Why a YAML body could not be decoded.
#[derive(Debug, thiserror::Error)]
pub enum YamlBodyError {
    /// Nested too deeply (found before parsing).
    #[error(transparent)]
    TooDeep(#[from] TooDeep),
    /// Not valid YAML, or not of the expected shape.
    #[error(transparent)]
    Syntax(#[from] serde_yaml_ng::Error),
}

/// Decodes a YAML (or JSON) body, refusing one nested deeper than [`MAX_DEPTH`] before it is
/// parsed.
pub fn from_slice<T: DeserializeOwned>(body: &[u8]) -> Result<T, YamlBodyError> {
    check_depth(body)?;
    Ok(serde_yaml_ng::from_slice(body)?)
}

/// Refuses a YAML stream whose collections nest deeper than [`MAX_DEPTH`]; linear in its
/// length. Documents of any other shape (valid or not) pass, for the parser to judge.
pub fn check_depth(body: &[u8]) -> Result<(), TooDeep> {
    Scanner::new(body, MAX_DEPTH).run()
}

/// A position as libyaml counts it: characters, lines and columns from 0.
#[derive(Clone, Copy)]
struct Mark {
    index: u64,
    line: u64,
}

/// libyaml's scanner state, as far as nesting depends on it.
struct Scanner<'a> {
    s: &'a [u8],
    /// The deepest nesting accepted.
    limit: usize,
    pos: usize,
    index: u64,
    line: u64,
    column: i64,
    /// Open flow collections.
    flow: usize,
    /// The current block indentation (-1 outside any block collection) and the enclosing ones.
    indent: i64,
    indents: Vec<i64>,
    /// Whether a simple key may start here.
    allowed: bool,
    /// The possible simple key of the block context (outside flow collections): where the
    /// key that a `:` would complete started.
    key: Option<(Mark, i64)>,
}

/// The byte-order mark, skipped at the start of a line.
const BOM: &[u8] = b"\xEF\xBB\xBF";

impl<'a> Scanner<'a> {
    fn new(s: &'a [u8], limit: usize) -> Self {
        Scanner {
            s,
            limit,
            pos: 0,
            index: 0,
            line: 0,
            column: 0,
            flow: 0,
            indent: -1,
            indents: Vec::new(),
            allowed: true,
            key: None,
        }
    }

    fn at(&self, off: usize) -> Option<u8> {
        self.s.get(self.pos + off).copied()
    }

    fn is(&self, off: usize, c: u8) -> bool {
        self.at(off) == Some(c)
    }

    fn is_end(&self, off: usize) -> bool {
        self.pos + off >= self.s.len()
    }

    fn is_blank(&self, off: usize) -> bool {
        matches!(self.at(off), Some(b' ' | b'\t'))
    }

    /// libyaml's line breaks: CR, LF, NEL, LS and PS.
    fn is_break(&self, off: usize) -> bool {
        let rest = &self.s[(self.pos + off).min(self.s.len())..];
        matches!(rest, [b'\r' | b'\n', ..])
            || rest.starts_with(b"\xC2\x85")
            || rest.starts_with(b"\xE2\x80\xA8")
            || rest.starts_with(b"\xE2\x80\xA9")
    }

    fn is_breakz(&self, off: usize) -> bool {
        self.is_break(off) || self.is_end(off)
    }

    fn is_blankz(&self, off: usize) -> bool {
        self.is_blank(off) || self.is_breakz(off)
    }

    fn starts_with(&self, text: &[u8]) -> bool {
        self.s[self.pos..].starts_with(text)
    }

    /// Moves past one character.
    fn skip(&mut self) {
        let width = match self.at(0) {
            Some(b) if b & 0xE0 == 0xC0 => 2,
            Some(b) if b & 0xF0 == 0xE0 => 3,
            Some(b) if b & 0xF8 == 0xF0 => 4,
            _ => 1,
        };
        self.pos = (self.pos + width).min(self.s.len());
        self.index += 1;
        self.column += 1;
    }

    /// Moves past one line break (CR LF counts as one).
    fn skip_line(&mut self) {
        if self.is(0, b'\r') && self.is(1, b'\n') {
            self.pos += 2;
            self.index += 2;
        } else if self.is_break(0) {
            self.skip();
        } else {
            return;
        }
        self.column = 0;
        self.line += 1;
    }

    fn mark(&self) -> Mark {
        Mark {
            index: self.index,
            line: self.line,
        }
    }

    fn too_deep(&self) -> Result<(), TooDeep> {
        if self.flow + self.indents.len() > self.limit {
            return Err(TooDeep {
                line: self.line + 1,
                column: u64::try_from(self.column).unwrap_or(0) + 1,
            });
        }
        Ok(())
    }

    /// A block collection starts at `column` if it is deeper than the current one.
    fn roll(&mut self, column: i64) -> Result<(), TooDeep> {
        if self.flow == 0 && self.indent < column {
            self.indents.push(self.indent);
            self.indent = column;
            self.too_deep()?;
        }
        Ok(())
    }

    /// Block collections deeper than `column` end.
    fn unroll(&mut self, column: i64) {
        if self.flow == 0 {
            while self.indent > column {
                self.indent = self.indents.pop().unwrap_or(-1);
            }
        }
    }

    fn save_key(&mut self) {
        if self.flow == 0 && self.allowed {
            self.key = Some((self.mark(), self.column));
        }
    }

    fn remove_key(&mut self) {
        if self.flow == 0 {
            self.key = None;
        }
    }

    fn run(mut self) -> Result<(), TooDeep> {
        loop {
            self.skip_to_next_token();
            self.unroll(self.column);
            let Some(c) = self.at(0) else {
                return Ok(());
            };
            let document_marker =
                (self.starts_with(b"---") || self.starts_with(b"...")) && self.is_blankz(3);
            if self.column == 0 && c == b'%' {
                // A directive: the rest of the line.
                self.unroll(-1);
                self.remove_key();
                self.allowed = false;
                while !self.is_breakz(0) {
                    self.skip();
                }
            } else if self.column == 0 && document_marker {
                self.unroll(-1);
                self.remove_key();
                self.allowed = false;
                for _ in 0..3 {
                    self.skip();
                }
            } else {
                self.token(c)?;
            }
        }
    }

    fn token(&mut self, c: u8) -> Result<(), TooDeep> {
        match c {
            b'[' | b'{' => {
                self.save_key();
                self.flow += 1;
                self.allowed = true;
                self.too_deep()?;
                self.skip();
            }
            b']' | b'}' => {
                self.remove_key();
                self.flow = self.flow.saturating_sub(1);
                self.allowed = false;
                self.skip();
            }
            b',' => {
                self.remove_key();
                self.allowed = true;
                self.skip();
            }
            b'-' if self.is_blankz(1) => {
                self.roll(self.column)?;
                self.remove_key();
                self.allowed = true;
                self.skip();
            }
            b'?' if self.flow > 0 || self.is_blankz(1) => {
                self.roll(self.column)?;
                self.remove_key();
                self.allowed = self.flow == 0;
                self.skip();
            }
            b':' if self.flow > 0 || self.is_blankz(1) => {
                self.value()?;
                self.skip();
            }
            b'*' | b'&' => {
                self.save_key();
                self.allowed = false;
                self.skip();
                while self.at(0).is_some_and(is_anchor_char) {
                    self.skip();
                }
            }
            b'!' => {
                self.save_key();
                self.allowed = false;
                self.tag();
            }
            b'|' | b'>' if self.flow == 0 => {
                self.remove_key();
                self.allowed = true;
                self.block_scalar();
            }
            b'\'' | b'"' => {
                self.save_key();
                self.allowed = false;
                self.quoted(c == b'\'');
            }
            _ if self.plain_starts(c) => {
                self.save_key();
                self.allowed = false;
                self.plain();
            }
            // libyaml stops here ("found character that cannot start any token").
            _ => self.skip(),
        }
        Ok(())
    }

    /// Whitespace, comments and line breaks up to the next token.
    fn skip_to_next_token(&mut self) {
        loop {
            if self.column == 0 && self.starts_with(BOM) {
                self.skip();
            }
            while self.is(0, b' ') || ((self.flow > 0 || !self.allowed) && self.is(0, b'\t')) {
                self.skip();
            }
            if self.is(0, b'#') {
                while !self.is_breakz(0) {
                    self.skip();
                }
            }
            if !self.is_break(0) {
                return;
            }
            self.skip_line();
            if self.flow == 0 {
                self.allowed = true;
            }
        }
    }

    /// A `:` value indicator: in the block context it completes the simple key (whose column
    /// starts a block mapping) or starts a mapping with an empty key.
    fn value(&mut self) -> Result<(), TooDeep> {
        if self.flow > 0 {
            self.allowed = false;
            return Ok(());
        }
        let here = self.mark();
        let key = self
            .key
            .take()
            .filter(|(k, _)| k.line == here.line && here.index <= k.index + 1024);
        match key {
            Some((_, column)) => {
                self.roll(column)?;
                self.allowed = false;
            }
            None => {
                self.roll(self.column)?;
                self.allowed = true;
            }
        }
        Ok(())
    }

    fn plain_starts(&self, c: u8) -> bool {
        !(self.is_blankz(0) || b"-?:,[]{}#&*!|>'\"%@`".contains(&c))
            || (c == b'-' && !self.is_blank(1))
            || (self.flow == 0 && (c == b'?' || c == b':') && !self.is_blankz(1))
    }

    fn plain(&mut self) {
        let indent = self.indent + 1;
        let mut leading_blanks = false;
        loop {
            let marker =
                (self.starts_with(b"---") || self.starts_with(b"...")) && self.is_blankz(3);
            if (self.column == 0 && marker) || self.is(0, b'#') {
                break;
            }
            while !self.is_blankz(0) {
                let c = self.at(0).unwrap_or(0);
                if self.flow > 0 && c == b':' && self.at(1).is_some_and(|n| b",?[]{}".contains(&n))
                {
                    // libyaml stops here ("found unexpected ':'").
                    return;
                }
                if (c == b':' && self.is_blankz(1)) || (self.flow > 0 && b",[]{}".contains(&c)) {
                    break;
                }
                self.skip();
            }
            if !(self.is_blank(0) || self.is_break(0)) {
                break;
            }
            while self.is_blank(0) || self.is_break(0) {
                if self.is_blank(0) {
                    self.skip();
                } else {
                    self.skip_line();
                    leading_blanks = true;
                }
            }
            if self.flow == 0 && self.column < indent {
                break;
            }
        }
        if leading_blanks {
            self.allowed = true;
        }
    }

    fn quoted(&mut self, single: bool) {
        self.skip();
        while let Some(c) = self.at(0) {
            if single && c == b'\'' {
                self.skip();
                if !self.is(0, b'\'') {
                    return;
                }
                self.skip();
            } else if !single && c == b'"' {
                self.skip();
                return;
            } else if !single && c == b'\\' {
                self.skip();
                if self.is_break(0) {
                    self.skip_line();
                } else if !self.is_end(0) {
                    self.skip();
                }
            } else if self.is_break(0) {
                self.skip_line();
            } else {
                self.skip();
            }
        }
    }

    fn block_scalar(&mut self) {
        self.skip();
        let mut increment = 0;
        let digit = |c: Option<u8>| c.filter(u8::is_ascii_digit).map(|d| i64::from(d - b'0'));
        if matches!(self.at(0), Some(b'+' | b'-')) {
            self.skip();
            if let Some(d) = digit(self.at(0)) {
                increment = d;
                self.skip();
            }
        } else if let Some(d) = digit(self.at(0)) {
            increment = d;
            self.skip();
            if matches!(self.at(0), Some(b'+' | b'-')) {
                self.skip();
            }
        }
        while self.is_blank(0) {
            self.skip();
        }
        if self.is(0, b'#') {
            while !self.is_breakz(0) {
                self.skip();
            }
        }
        if !self.is_breakz(0) {
            // libyaml stops here ("did not find expected comment or line break").
            return;
        }
        self.skip_line();
        let mut indent = match increment {
            0 => 0,
            _ if self.indent >= 0 => self.indent + increment,
            _ => increment,
        };
        self.block_breaks(&mut indent);
        while self.column == indent && !self.is_end(0) {
            while !self.is_breakz(0) {
                self.skip();
            }
            self.skip_line();
            self.block_breaks(&mut indent);
        }
    }

    /// The empty lines and the indentation before a block scalar's next line; decides the
    /// indentation when the header did not.
    fn block_breaks(&mut self, indent: &mut i64) {
        let mut max_indent = 0;
        loop {
            while (*indent == 0 || self.column < *indent) && self.is(0, b' ') {
                self.skip();
            }
            max_indent = max_indent.max(self.column);
            if (*indent == 0 || self.column < *indent) && self.is(0, b'\t') {
                // libyaml stops here (a tab where indentation is expected).
                break;
            }
            if !self.is_break(0) {
                break;
            }
            self.skip_line();
        }
        if *indent == 0 {
            *indent = max_indent.max(self.indent + 1).max(1);
        }
    }

    /// A tag: `!<uri>` or `!handle!suffix` / `!suffix`.
    fn tag(&mut self) {
        if self.is(1, b'<') {
            self.skip();
            self.skip();
            while self.at(0).is_some_and(|c| is_tag_char(c, true)) {
                self.skip();
            }
            if self.is(0, b'>') {
                self.skip();
            }
        } else {
            self.skip();
            while self.at(0).is_some_and(|c| is_tag_char(c, false)) {
                self.skip();
            }
        }
    }
}

/// libyaml's anchor characters.
fn is_anchor_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b'-'
}

/// libyaml's tag URI characters; `verbatim` (`!<...>`) also takes `,`, `[` and `]`.
fn is_tag_char(c: u8, verbatim: bool) -> bool {
    is_anchor_char(c) || b";/?:@&=+$.%!~*'()".contains(&c) || (verbatim && b",[]".contains(&c))
}

#[cfg(test)]
mod tests {
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
}
