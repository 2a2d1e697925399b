//! Label and field selectors: parsing and matching.
//!
//! Written here because no maintained crate parses Kubernetes' selector grammar. The parser
//! follows upstream's lexer and recursive-descent parser step by step, so that accepted
//! inputs, values and error messages are the ones `kubectl` users know.
//!
//! Label selectors: requirements joined by `,`; each is `key`, `!key`, `key=v`, `key==v`,
//! `key!=v`, `key in (a,b)`, `key notin (a,b)`, `key>n` or `key<n`. Whitespace (space, tab,
//! CR, LF) separates tokens; `=`, `!`, `(`, `)`, `,`, `<` and `>` end an identifier. Keys are
//! validated as label keys (optional DNS-1123 subdomain prefix and `/`), values as label
//! values; set values are deduplicated and sorted, and `()` means the one empty value.
//!
//! Field selectors: terms joined by unescaped `,`; each is `field=v`, `field==v` or
//! `field!=v`, split at the first operator; values may escape `\\`, `\,` and `\=`. Terms are
//! sorted, nothing is trimmed.

use crate::quote::go_quote;
use crate::validation::{label_key_errors, label_value_errors};
use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

/// A selector operator.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Operator {
    /// `key=value` or `key==value`.
    Equals,
    /// `key!=value`.
    NotEquals,
    /// `key in (a,b)`.
    In,
    /// `key notin (a,b)`.
    NotIn,
    /// `key`.
    Exists,
    /// `!key`.
    DoesNotExist,
    /// `key>n`: the label exists and is an integer greater than `n`.
    GreaterThan,
    /// `key<n`: the label exists and is an integer less than `n`.
    LessThan,
}

/// One requirement of a label selector.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Requirement {
    /// The label key.
    pub key: String,
    /// The operator.
    pub op: Operator,
    /// The values (one for equality and comparisons, several for set operators, none for
    /// existence), sorted and without duplicates.
    pub values: Vec<String>,
}

impl Requirement {
    fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        let v = labels.get(&self.key);
        match self.op {
            Operator::Equals | Operator::In => v.is_some_and(|v| self.values.contains(v)),
            Operator::NotEquals | Operator::NotIn => !v.is_some_and(|v| self.values.contains(v)),
            Operator::Exists => v.is_some(),
            Operator::DoesNotExist => v.is_none(),
            Operator::GreaterThan | Operator::LessThan => {
                let (Some(have), [want]) = (v, self.values.as_slice()) else {
                    return false;
                };
                let (Ok(have), Ok(want)) = (have.parse::<i64>(), want.parse::<i64>()) else {
                    return false;
                };
                if self.op == Operator::GreaterThan {
                    have > want
                } else {
                    have < want
                }
            }
        }
    }
}

/// A parsed label selector; empty matches everything.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LabelSelector {
    /// All requirements (AND), sorted by key.
    pub requirements: Vec<Requirement>,
}

impl LabelSelector {
    /// Whether the selector selects everything.
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// Whether the labels satisfy every requirement.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.requirements.iter().all(|r| r.matches(labels))
    }

    /// Parses the selector grammar (see the module docs). The error is upstream's message,
    /// e.g. `unable to parse requirement: found '', expected: identifier` or
    /// `found ',', expected: !, identifier, or 'end of string'`; a list handler answers it
    /// as a 400 `BadRequest` as it is.
    pub fn parse(s: &str) -> Result<Self, String> {
        let mut p = Parser {
            items: Lexer::new(s).scan(),
            position: 0,
        };
        let mut requirements = p.parse()?;
        // Stable sort by key, as upstream, so equal selectors compare equal.
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(LabelSelector { requirements })
    }
}

/// A lexer token.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Token {
    EndOfString,
    ClosedPar,
    Comma,
    DoesNotExist,
    DoubleEquals,
    Equals,
    GreaterThan,
    Identifier,
    In,
    LessThan,
    NotEquals,
    NotIn,
    OpenPar,
}

/// The token a literal stands for, if it is one of the fixed literals.
fn literal_token(s: &[u8]) -> Option<Token> {
    Some(match s {
        b")" => Token::ClosedPar,
        b"," => Token::Comma,
        b"!" => Token::DoesNotExist,
        b"==" => Token::DoubleEquals,
        b"=" => Token::Equals,
        b">" => Token::GreaterThan,
        b"in" => Token::In,
        b"<" => Token::LessThan,
        b"!=" => Token::NotEquals,
        b"notin" => Token::NotIn,
        b"(" => Token::OpenPar,
        _ => return None,
    })
}

fn is_whitespace(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\r' | b'\n')
}

fn is_special(c: u8) -> bool {
    matches!(c, b'=' | b'!' | b'(' | b')' | b',' | b'>' | b'<')
}

struct Lexer<'a> {
    s: &'a [u8],
    pos: usize,
}

impl<'a> Lexer<'a> {
    fn new(s: &'a str) -> Self {
        Lexer {
            s: s.as_bytes(),
            pos: 0,
        }
    }

    /// The next byte, or 0 at the end (a NUL byte reads as the end too, as upstream's lexer).
    fn read(&mut self) -> u8 {
        match self.s.get(self.pos) {
            Some(&c) => {
                self.pos += 1;
                c
            }
            None => 0,
        }
    }

    fn unread(&mut self) {
        self.pos -= 1;
    }

    fn text(bytes: &[u8]) -> String {
        String::from_utf8_lossy(bytes).into_owned()
    }

    fn identifier_or_keyword(&mut self) -> (Token, String) {
        let start = self.pos;
        let mut end = self.pos;
        loop {
            let c = self.read();
            if c == 0 {
                break;
            }
            if is_special(c) || is_whitespace(c) {
                self.unread();
                break;
            }
            end = self.pos;
        }
        let word = &self.s[start..end];
        match literal_token(word) {
            Some(t) => (t, Self::text(word)),
            None => (Token::Identifier, Self::text(word)),
        }
    }

    /// The longest operator starting here (`!=` before `!`, `==` before `=`).
    fn special(&mut self) -> (Token, String) {
        let start = self.pos;
        let mut last: Option<(Token, usize)> = None;
        loop {
            let c = self.read();
            if c == 0 {
                break;
            }
            if !is_special(c) {
                self.unread();
                break;
            }
            match literal_token(&self.s[start..self.pos]) {
                Some(t) => last = Some((t, self.pos)),
                None if last.is_some() => {
                    self.unread();
                    break;
                }
                None => {}
            }
        }
        match last {
            Some((t, end)) => (t, Self::text(&self.s[start..end])),
            // Unreachable in practice: every special character is an operator on its own.
            None => (Token::Identifier, Self::text(&self.s[start..self.pos])),
        }
    }

    fn lex(&mut self) -> (Token, String) {
        let mut c = self.read();
        while is_whitespace(c) {
            c = self.read();
        }
        if c == 0 {
            return (Token::EndOfString, String::new());
        }
        self.unread();
        if is_special(c) {
            self.special()
        } else {
            self.identifier_or_keyword()
        }
    }

    fn scan(mut self) -> Vec<(Token, String)> {
        let mut items = Vec::new();
        loop {
            let item = self.lex();
            let end = item.0 == Token::EndOfString;
            items.push(item);
            if end {
                return items;
            }
        }
    }
}

/// Whether `in` and `notin` are keywords (after a key) or plain identifiers (anywhere a key
/// or value may stand).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Context {
    KeyAndOperator,
    Values,
}

struct Parser {
    items: Vec<(Token, String)>,
    position: usize,
}

impl Parser {
    fn item(&self, at: usize, ctx: Context) -> (Token, String) {
        // The last item is always the end of the string; reading past it stays there.
        let (tok, lit) = self.items[at.min(self.items.len() - 1)].clone();
        match tok {
            Token::In | Token::NotIn if ctx == Context::Values => (Token::Identifier, lit),
            _ => (tok, lit),
        }
    }

    fn lookahead(&self, ctx: Context) -> (Token, String) {
        self.item(self.position, ctx)
    }

    fn consume(&mut self, ctx: Context) -> (Token, String) {
        let item = self.item(self.position, ctx);
        self.position += 1;
        item
    }

    fn parse(&mut self) -> Result<Vec<Requirement>, String> {
        let mut requirements = Vec::new();
        loop {
            let (tok, lit) = self.lookahead(Context::Values);
            match tok {
                Token::Identifier | Token::DoesNotExist => {
                    let r = self
                        .requirement()
                        .map_err(|e| format!("unable to parse requirement: {e}"))?;
                    requirements.push(r);
                    let (t, l) = self.consume(Context::Values);
                    match t {
                        Token::EndOfString => return Ok(requirements),
                        Token::Comma => {
                            let (t2, l2) = self.lookahead(Context::Values);
                            if t2 != Token::Identifier && t2 != Token::DoesNotExist {
                                return Err(format!(
                                    "found '{l2}', expected: identifier after ','"
                                ));
                            }
                        }
                        _ => return Err(format!("found '{l}', expected: ',' or 'end of string'")),
                    }
                }
                Token::EndOfString => return Ok(requirements),
                _ => {
                    return Err(format!(
                        "found '{lit}', expected: !, identifier, or 'end of string'"
                    ));
                }
            }
        }
    }

    fn requirement(&mut self) -> Result<Requirement, String> {
        let (key, op) = self.key_and_inferred_operator()?;
        if let Some(op) = op {
            return new_requirement(key, op, Vec::new());
        }
        let op = self.operator()?;
        let values = match op {
            Operator::In | Operator::NotIn => self.set_values()?,
            _ => self.exact_value()?,
        };
        new_requirement(key, op, values.into_iter().collect())
    }

    /// The key, with `Exists`/`DoesNotExist` when no binary operator follows.
    fn key_and_inferred_operator(&mut self) -> Result<(String, Option<Operator>), String> {
        let (mut tok, mut lit) = self.consume(Context::Values);
        let negated = tok == Token::DoesNotExist;
        if negated {
            (tok, lit) = self.consume(Context::Values);
        }
        if tok != Token::Identifier {
            return Err(format!("found '{lit}', expected: identifier"));
        }
        let errs = label_key_errors(&lit);
        if !errs.is_empty() {
            // Upstream validates the key here without a field path: it prints as `<nil>`.
            return Err(format!(
                "<nil>: Invalid value: {}: {}",
                go_quote(&lit),
                errs.join("; ")
            ));
        }
        if negated {
            return Ok((lit, Some(Operator::DoesNotExist)));
        }
        let (next, _) = self.lookahead(Context::Values);
        if next == Token::EndOfString || next == Token::Comma {
            return Ok((lit, Some(Operator::Exists)));
        }
        Ok((lit, None))
    }

    fn operator(&mut self) -> Result<Operator, String> {
        let (tok, lit) = self.consume(Context::KeyAndOperator);
        Ok(match tok {
            Token::In => Operator::In,
            Token::Equals | Token::DoubleEquals => Operator::Equals,
            Token::GreaterThan => Operator::GreaterThan,
            Token::LessThan => Operator::LessThan,
            Token::NotIn => Operator::NotIn,
            Token::NotEquals => Operator::NotEquals,
            _ => {
                return Err(format!(
                    "found '{lit}', expected: in, notin, =, ==, !=, gt, lt"
                ));
            }
        })
    }

    fn set_values(&mut self) -> Result<BTreeSet<String>, String> {
        let (tok, lit) = self.consume(Context::Values);
        if tok != Token::OpenPar {
            // Upstream's message has no colon after the found literal here.
            return Err(format!("found '{lit}' expected: '('"));
        }
        let (tok, lit) = self.lookahead(Context::Values);
        match tok {
            Token::Identifier | Token::Comma => {
                let set = self.identifier_list()?;
                if self.consume(Context::Values).0 != Token::ClosedPar {
                    return Err(format!("found '{lit}', expected: ')'"));
                }
                Ok(set)
            }
            Token::ClosedPar => {
                self.consume(Context::Values);
                Ok(BTreeSet::from([String::new()]))
            }
            _ => Err(format!("found '{lit}', expected: ',', ')' or identifier")),
        }
    }

    /// A possibly empty, comma-separated list of possibly empty identifiers; stops before `)`.
    fn identifier_list(&mut self) -> Result<BTreeSet<String>, String> {
        let mut set = BTreeSet::new();
        loop {
            let (tok, lit) = self.consume(Context::Values);
            match tok {
                Token::Identifier => {
                    set.insert(lit);
                    let (t2, l2) = self.lookahead(Context::Values);
                    match t2 {
                        Token::Comma => continue,
                        Token::ClosedPar => return Ok(set),
                        _ => return Err(format!("found '{l2}', expected: ',' or ')'")),
                    }
                }
                Token::Comma => {
                    if set.is_empty() {
                        set.insert(String::new());
                    }
                    match self.lookahead(Context::Values).0 {
                        Token::ClosedPar => {
                            set.insert(String::new());
                            return Ok(set);
                        }
                        Token::Comma => {
                            set.insert(String::new());
                        }
                        _ => {}
                    }
                }
                _ => return Err(format!("found '{lit}', expected: ',', or identifier")),
            }
        }
    }

    fn exact_value(&mut self) -> Result<BTreeSet<String>, String> {
        let (tok, _) = self.lookahead(Context::Values);
        if tok == Token::EndOfString || tok == Token::Comma {
            return Ok(BTreeSet::from([String::new()]));
        }
        let (tok, lit) = self.consume(Context::Values);
        if tok == Token::Identifier {
            Ok(BTreeSet::from([lit]))
        } else {
            Err(format!("found '{lit}', expected: identifier"))
        }
    }
}

/// Builds a requirement, checking its values as upstream's requirement constructor does
/// (the key was checked while parsing); several errors aggregate as `[e1, e2]`.
fn new_requirement(key: String, op: Operator, values: Vec<String>) -> Result<Requirement, String> {
    let mut errs: Vec<String> = Vec::new();
    if matches!(op, Operator::GreaterThan | Operator::LessThan) {
        for (i, v) in values.iter().enumerate() {
            if v.parse::<i64>().is_err() {
                errs.push(format!(
                    "values[{i}]: Invalid value: {}: for 'Gt', 'Lt' operators, the value must be an integer",
                    go_quote(v)
                ));
            }
        }
    }
    for (i, v) in values.iter().enumerate() {
        let msgs = label_value_errors(v);
        if !msgs.is_empty() {
            errs.push(format!(
                "values[{i}][{key}]: Invalid value: {}: {}",
                go_quote(v),
                msgs.join("; ")
            ));
        }
    }
    let mut distinct: Vec<String> = Vec::new();
    for e in errs {
        if !distinct.contains(&e) {
            distinct.push(e);
        }
    }
    match distinct.len() {
        0 => Ok(Requirement { key, op, values }),
        1 => Err(distinct.remove(0)),
        _ => Err(format!("[{}]", distinct.join(", "))),
    }
}

/// One field selector requirement: `field=value`, `field==value` or `field!=value`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldRequirement {
    /// The field, e.g. `metadata.name`.
    pub field: String,
    /// `true` for `!=`.
    pub negated: bool,
    /// The value, unescaped.
    pub value: String,
}

/// A parsed field selector; empty matches everything.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldSelector {
    /// All requirements (AND), in the sorted order of their terms.
    pub requirements: Vec<FieldRequirement>,
}

/// Splits at commas not escaped by a backslash; the backslashes stay.
fn split_terms(s: &str) -> Vec<&str> {
    if s.is_empty() {
        return Vec::new();
    }
    let mut terms = Vec::new();
    let mut start = 0;
    let mut escaped = false;
    for (i, c) in s.char_indices() {
        if escaped {
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == ',' {
            terms.push(&s[start..i]);
            start = i + 1;
        }
    }
    terms.push(&s[start..]);
    terms
}

/// Splits a term at the first operator (`!=` and `==` win over `=` at the same place).
fn split_term(term: &str) -> Option<(&str, &str, &str)> {
    for (i, _) in term.char_indices() {
        let rest = &term[i..];
        for op in ["!=", "==", "="] {
            if rest.starts_with(op) {
                return Some((&term[..i], op, &term[i + op.len()..]));
            }
        }
    }
    None
}

/// Undoes `\\`, `\,` and `\=`; any other escape, or a bare `,` or `=`, is an error.
fn unescape_value(s: &str) -> Result<String, String> {
    let mut out = String::with_capacity(s.len());
    let mut escaped = false;
    for c in s.chars() {
        if escaped {
            match c {
                '\\' | ',' | '=' => out.push(c),
                other => {
                    return Err(format!(
                        "invalid field selector: invalid escape sequence: \\{other}"
                    ));
                }
            }
            escaped = false;
            continue;
        }
        match c {
            '\\' => escaped = true,
            // Upstream prints the rune as its code point.
            ',' | '=' => {
                return Err(format!(
                    "invalid field selector: unescaped character in value: {}",
                    c as u32
                ));
            }
            c => out.push(c),
        }
    }
    if escaped {
        return Err("invalid field selector: invalid escape sequence: \\".into());
    }
    Ok(out)
}

impl FieldSelector {
    /// Parses `a=b,c!=d` (see the module docs); the error is upstream's message.
    pub fn parse(s: &str) -> Result<Self, String> {
        let mut terms = split_terms(s);
        terms.sort_unstable();
        let mut requirements = Vec::new();
        for term in terms {
            if term.is_empty() {
                continue;
            }
            let Some((field, op, value)) = split_term(term) else {
                return Err(format!(
                    "invalid selector: '{s}'; can't understand '{term}'"
                ));
            };
            requirements.push(FieldRequirement {
                field: field.to_string(),
                negated: op == "!=",
                value: unescape_value(value)?,
            });
        }
        Ok(FieldSelector { requirements })
    }

    /// Whether the selector selects everything.
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// The value required for `field` by an `=` requirement, if any.
    pub fn exact(&self, field: &str) -> Option<&str> {
        self.requirements
            .iter()
            .find(|r| r.field == field && !r.negated)
            .map(|r| r.value.as_str())
    }

    /// Checks every field against `supported`, in order; the first other field answers the
    /// message upstream gives for a custom resource (whose selectable fields are declared, as
    /// ours are): `field label not supported: spec.x`.
    pub fn check_supported(&self, supported: &[&str]) -> Result<(), String> {
        for r in &self.requirements {
            if !supported.contains(&r.field.as_str()) {
                return Err(format!("field label not supported: {}", r.field));
            }
        }
        Ok(())
    }

    /// Whether an object (as JSON) satisfies every requirement; fields are dotted paths and a
    /// missing field reads as the empty string.
    pub fn matches(&self, object: &Value) -> bool {
        self.requirements.iter().all(|r| {
            let mut cur = object;
            for part in r.field.split('.') {
                cur = cur.get(part).unwrap_or(&Value::Null);
            }
            let actual = match cur {
                Value::String(s) => s.clone(),
                Value::Null => String::new(),
                other => other.to_string(),
            };
            (actual == r.value) != r.negated
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn label_selector_grammar() {
        let l = labels(&[("app", "web"), ("tier", "front"), ("n", "3")]);
        for (sel, want) in [
            ("", true),
            ("app=web", true),
            ("app==web", true),
            ("app!=web", false),
            ("app", true),
            ("!app", false),
            ("!missing", true),
            ("app in (web, db)", true),
            ("app notin (web)", false),
            ("app=web,tier=front", true),
            ("app=web,tier=back", false),
            ("x!=y", true),
            ("n>2,n<4", true),
            ("n>3", false),
            ("app in ()", false),
        ] {
            let s = LabelSelector::parse(sel).unwrap_or_else(|e| panic!("{sel}: {e}"));
            assert_eq!(s.matches(&l), want, "{sel}");
        }
        for (bad, msg) in [
            ("x==a==b", "found '==', expected: ',' or 'end of string'"),
            (
                "a in (b",
                "unable to parse requirement: found '', expected: ',' or ')'",
            ),
            (
                "=x",
                "found '=', expected: !, identifier, or 'end of string'",
            ),
            (
                "a b",
                "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt",
            ),
            ("a,", "found '', expected: identifier after ','"),
        ] {
            assert_eq!(LabelSelector::parse(bad).unwrap_err(), msg, "{bad}");
        }
    }

    #[test]
    fn field_selector() {
        let f = FieldSelector::parse("metadata.name=x,metadata.namespace!=kube-system").unwrap();
        assert_eq!(f.exact("metadata.name"), Some("x"));
        let obj = serde_json::json!({"metadata": {"name": "x", "namespace": "default"}});
        assert!(f.matches(&obj));
        assert!(f.check_supported(&["metadata.name"]).is_err());
        assert_eq!(
            FieldSelector::parse("spec.x=1")
                .unwrap()
                .check_supported(&["metadata.name", "metadata.namespace"])
                .unwrap_err(),
            "field label not supported: spec.x"
        );
        assert_eq!(
            FieldSelector::parse(r"a=b\,c").unwrap().requirements[0].value,
            "b,c"
        );
        assert_eq!(
            FieldSelector::parse("a=b=c").unwrap_err(),
            "invalid field selector: unescaped character in value: 61"
        );
    }
}
