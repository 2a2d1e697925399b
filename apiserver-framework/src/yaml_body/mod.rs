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
mod tests;
