//! The simple JSONPath dialect used by printer columns (`additionalPrinterColumns`).
//!
//! Supports what kubectl and CustomResourceDefinitions use in practice:
//!
//! * field access: `.spec.reference`, `.metadata.labels.app`, with `\.` escaping a dot
//!   inside a name (`.metadata.annotations.a\.b/c`);
//! * quoted keys: `.metadata.annotations['a.b/c']` and `["a.b"]`;
//! * array subscripts: `[0]`, `[-1]` (from the end), `[*]`, slices `[1:3]` and `[::2]`;
//! * wildcards over object values: `.*`;
//! * recursive descent to a named field: `..name`;
//! * an optional leading `$` and the `{...}` template form (`{.spec.reference}`).
//!
//! Missing keys and out-of-range subscripts are not errors: they simply produce no result, as
//! `AllowMissingKeys(true)` does for upstream printer columns.

use std::fmt;

use serde_json::Value;

/// An error in a JSONPath expression.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum JsonPathError {
    /// The expression is empty.
    #[error("empty JSONPath expression")]
    Empty,
    /// `{` and `}` do not pair up, or a template holds more than one expression.
    #[error("unbalanced braces in JSONPath expression {0:?}")]
    UnbalancedBraces(String),
    /// A character that cannot appear where it does.
    #[error("unexpected character {ch:?} at position {pos} in JSONPath expression {expr:?}")]
    UnexpectedChar {
        /// The offending character.
        ch: char,
        /// Its byte offset inside the expression (after stripping `{...}`).
        pos: usize,
        /// The expression.
        expr: String,
    },
    /// The expression stops in the middle of a step (e.g. `.spec.`).
    #[error("unexpected end of JSONPath expression {0:?}")]
    UnexpectedEnd(String),
    /// A quoted key is not closed.
    #[error("unterminated quoted key in JSONPath expression {0:?}")]
    UnterminatedQuote(String),
    /// A `[` has no matching `]`.
    #[error("unterminated subscript in JSONPath expression {0:?}")]
    UnterminatedBracket(String),
    /// A subscript that is neither a quoted key, `*`, an index nor a slice.
    #[error("invalid array subscript {0:?}")]
    InvalidSubscript(String),
    /// A slice step of zero or less.
    #[error("slice step must be > 0")]
    InvalidStep,
}

/// One step of a parsed path.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Step {
    /// The named member of an object.
    Field(String),
    /// Every element of an array or every value of an object.
    Wildcard,
    /// The element at an index; negative counts from the end.
    Index(i64),
    /// `[start:end:step]`.
    Slice {
        start: Option<i64>,
        end: Option<i64>,
        step: Option<i64>,
    },
    /// Every value below the current one (at any depth, the current one included) that is
    /// the member with this name of some object.
    Recursive(String),
}

/// A parsed, validated JSONPath expression. Obtain one with [`parse`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JsonPath {
    expr: String,
    steps: Vec<Step>,
}

impl fmt::Display for JsonPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.expr)
    }
}

impl JsonPath {
    /// The expression as written.
    #[cfg(any(test, feature = "testing"))]
    pub fn as_str(&self) -> &str {
        &self.expr
    }

    /// All values the path selects in `v`, in document order (object members in key order).
    pub fn evaluate<'a>(&self, v: &'a Value) -> Vec<&'a Value> {
        let mut current = vec![v];
        for step in &self.steps {
            let mut next = Vec::new();
            for value in current {
                apply(step, value, &mut next);
            }
            current = next;
            if current.is_empty() {
                break;
            }
        }
        current
    }

    /// The first value the path selects in `v`, if any.
    pub fn first<'a>(&self, v: &'a Value) -> Option<&'a Value> {
        self.evaluate(v).into_iter().next()
    }
}

fn apply<'a>(step: &Step, value: &'a Value, out: &mut Vec<&'a Value>) {
    match step {
        Step::Field(name) => {
            if let Some(found) = value.as_object().and_then(|m| m.get(name)) {
                out.push(found);
            }
        }
        Step::Wildcard => match value {
            Value::Array(items) => out.extend(items.iter()),
            Value::Object(map) => out.extend(map.values()),
            _ => {}
        },
        Step::Index(i) => {
            if let Value::Array(items) = value {
                let len = items.len() as i64;
                let idx = if *i < 0 { len + i } else { *i };
                if (0..len).contains(&idx) {
                    out.push(&items[idx as usize]);
                }
            }
        }
        Step::Slice { start, end, step } => {
            if let Value::Array(items) = value {
                let len = items.len() as i64;
                let norm = |x: i64| if x < 0 { (len + x).max(0) } else { x.min(len) };
                let from = start.map(norm).unwrap_or(0);
                let to = end.map(norm).unwrap_or(len);
                let by = step.unwrap_or(1).max(1) as usize;
                if from < to {
                    out.extend(items[from as usize..to as usize].iter().step_by(by));
                }
            }
        }
        Step::Recursive(name) => descend(name, value, out),
    }
}

fn descend<'a>(name: &str, value: &'a Value, out: &mut Vec<&'a Value>) {
    match value {
        Value::Object(map) => {
            if let Some(found) = map.get(name) {
                out.push(found);
            }
            for child in map.values() {
                descend(name, child, out);
            }
        }
        Value::Array(items) => {
            for child in items {
                descend(name, child, out);
            }
        }
        _ => {}
    }
}

/// Parse and validate a JSONPath expression (`.a.b[0]`, `{.a.b}`, `$.a`, ...).
pub fn parse(expr: &str) -> Result<JsonPath, JsonPathError> {
    let original = expr.to_string();
    let inner = strip_template(expr.trim())?;
    if inner.is_empty() {
        return Err(JsonPathError::Empty);
    }
    let steps = Parser { src: inner, pos: 0 }.steps()?;
    Ok(JsonPath {
        expr: original,
        steps,
    })
}

/// Evaluate `expr` against `v`: every selected value, in order. Only a malformed expression
/// is an error; a path that selects nothing gives an empty vector.
#[cfg(any(test, feature = "testing"))]
pub fn evaluate<'a>(expr: &str, v: &'a Value) -> Result<Vec<&'a Value>, JsonPathError> {
    Ok(parse(expr)?.evaluate(v))
}

/// Remove one pair of `{...}` around the expression, checking that braces are balanced.
fn strip_template(expr: &str) -> Result<&str, JsonPathError> {
    let unbalanced = || JsonPathError::UnbalancedBraces(expr.to_string());
    let inner = match (expr.strip_prefix('{'), expr.ends_with('}')) {
        (Some(rest), true) => rest[..rest.len() - 1].trim(),
        (None, false) => expr,
        _ => return Err(unbalanced()),
    };
    // Braces may still appear inside quoted keys; outside of them they are errors.
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for ch in inner.chars() {
        match quote {
            Some(q) => {
                if escaped {
                    escaped = false;
                } else if ch == '\\' {
                    escaped = true;
                } else if ch == q {
                    quote = None;
                }
            }
            None => match ch {
                '\'' | '"' => quote = Some(ch),
                '{' | '}' => return Err(unbalanced()),
                _ => {}
            },
        }
    }
    Ok(inner)
}

struct Parser<'s> {
    src: &'s str,
    pos: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<char> {
        self.src[self.pos..].chars().next()
    }

    fn peek2(&self) -> Option<char> {
        let mut it = self.src[self.pos..].chars();
        it.next();
        it.next()
    }

    fn bump(&mut self) -> Option<char> {
        let ch = self.peek()?;
        self.pos += ch.len_utf8();
        Some(ch)
    }

    fn unexpected(&self, ch: char) -> JsonPathError {
        JsonPathError::UnexpectedChar {
            ch,
            pos: self.pos,
            expr: self.src.to_string(),
        }
    }

    fn end(&self) -> JsonPathError {
        JsonPathError::UnexpectedEnd(self.src.to_string())
    }

    fn steps(mut self) -> Result<Vec<Step>, JsonPathError> {
        let mut steps = Vec::new();
        if self.peek() == Some('$') {
            self.bump();
        }
        // `.` alone (or `$`, `$.`) selects the root.
        if matches!(&self.src[self.pos..], "" | ".") {
            return Ok(steps);
        }
        while let Some(ch) = self.peek() {
            match ch {
                '.' => {
                    self.bump();
                    match self.peek() {
                        Some('.') => {
                            self.bump();
                            let name = self.identifier()?;
                            steps.push(Step::Recursive(name));
                        }
                        Some('*') => {
                            self.bump();
                            steps.push(Step::Wildcard);
                        }
                        Some('[') => {} // `.[0]` is the same as `[0]`.
                        Some(_) => steps.push(Step::Field(self.identifier()?)),
                        None => return Err(self.end()),
                    }
                }
                '[' => {
                    self.bump();
                    steps.push(self.subscript()?);
                }
                other => return Err(self.unexpected(other)),
            }
        }
        Ok(steps)
    }

    /// A bare field name, up to the next `.`, `[` or end; `\x` takes `x` literally.
    fn identifier(&mut self) -> Result<String, JsonPathError> {
        let mut name = String::new();
        while let Some(ch) = self.peek() {
            match ch {
                '.' | '[' => break,
                '\\' => {
                    self.bump();
                    match self.bump() {
                        Some(c) => name.push(c),
                        None => return Err(self.end()),
                    }
                }
                ']' | '{' | '}' | '(' | ')' | '\'' | '"' | ',' | '*' => {
                    return Err(self.unexpected(ch));
                }
                c if c.is_whitespace() => return Err(self.unexpected(c)),
                c => {
                    self.bump();
                    name.push(c);
                }
            }
        }
        if name.is_empty() {
            return match self.peek() {
                Some(ch) => Err(self.unexpected(ch)),
                None => Err(self.end()),
            };
        }
        Ok(name)
    }

    /// The inside of `[...]`, after the `[`, consuming the `]`.
    fn subscript(&mut self) -> Result<Step, JsonPathError> {
        self.skip_spaces();
        match self.peek() {
            Some(q @ ('\'' | '"')) => {
                self.bump();
                let key = self.quoted(q)?;
                self.skip_spaces();
                match self.bump() {
                    Some(']') => Ok(Step::Field(key)),
                    Some(ch) => {
                        self.pos -= ch.len_utf8();
                        Err(self.unexpected(ch))
                    }
                    None => Err(JsonPathError::UnterminatedBracket(self.src.to_string())),
                }
            }
            Some('*') if self.peek2().is_some_and(|c| c == ']' || c.is_whitespace()) => {
                self.bump();
                self.skip_spaces();
                match self.bump() {
                    Some(']') => Ok(Step::Wildcard),
                    Some(ch) => {
                        self.pos -= ch.len_utf8();
                        Err(self.unexpected(ch))
                    }
                    None => Err(JsonPathError::UnterminatedBracket(self.src.to_string())),
                }
            }
            _ => {
                let rest = &self.src[self.pos..];
                let Some(close) = rest.find(']') else {
                    return Err(JsonPathError::UnterminatedBracket(self.src.to_string()));
                };
                let body = rest[..close].trim();
                self.pos += close + 1;
                numeric_subscript(body)
            }
        }
    }

    fn skip_spaces(&mut self) {
        while self.peek().is_some_and(char::is_whitespace) {
            self.bump();
        }
    }

    /// A quoted key after its opening quote `q`, consuming the closing quote.
    fn quoted(&mut self, q: char) -> Result<String, JsonPathError> {
        let mut key = String::new();
        loop {
            match self.bump() {
                None => return Err(JsonPathError::UnterminatedQuote(self.src.to_string())),
                Some('\\') => match self.bump() {
                    Some(c) => key.push(c),
                    None => return Err(JsonPathError::UnterminatedQuote(self.src.to_string())),
                },
                Some(c) if c == q => return Ok(key),
                Some(c) => key.push(c),
            }
        }
    }
}

/// `n`, `a:b`, `a:b:c` (each part optional in a slice).
fn numeric_subscript(body: &str) -> Result<Step, JsonPathError> {
    let invalid = || JsonPathError::InvalidSubscript(body.to_string());
    let parts: Vec<&str> = body.split(':').map(str::trim).collect();
    let num = |s: &str| -> Result<Option<i64>, JsonPathError> {
        if s.is_empty() {
            Ok(None)
        } else {
            s.parse::<i64>().map(Some).map_err(|_| invalid())
        }
    };
    match parts.as_slice() {
        [single] => num(single)?.map(Step::Index).ok_or_else(invalid),
        [start, end] => Ok(Step::Slice {
            start: num(start)?,
            end: num(end)?,
            step: None,
        }),
        [start, end, step] => {
            let step = num(step)?;
            if step.is_some_and(|s| s <= 0) {
                return Err(JsonPathError::InvalidStep);
            }
            Ok(Step::Slice {
                start: num(start)?,
                end: num(end)?,
                step,
            })
        }
        _ => Err(invalid()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sample() -> Value {
        json!({
            "metadata": {
                "name": "one",
                "labels": {"app": "web", "tier": "front"},
                "annotations": {"a.b/c": "dotted", "plain": "p"}
            },
            "spec": {
                "reference": "ref",
                "replicas": 3,
                "items": [{"name": "x"}, {"name": "y"}, {"name": "z"}]
            },
            "status": {
                "conditions": [
                    {"type": "Ready", "status": "True"},
                    {"type": "Synced", "status": "False"}
                ]
            }
        })
    }

    fn eval(expr: &str) -> Vec<Value> {
        let v = sample();
        evaluate(expr, &v)
            .unwrap_or_else(|e| panic!("{expr}: {e}"))
            .into_iter()
            .cloned()
            .collect()
    }

    #[test]
    fn fields() {
        assert_eq!(eval(".spec.reference"), vec![json!("ref")]);
        assert_eq!(eval(".metadata.labels.app"), vec![json!("web")]);
        assert_eq!(eval(".spec.replicas"), vec![json!(3)]);
        assert_eq!(eval("{.spec.reference}"), vec![json!("ref")]);
        assert_eq!(eval("{ .spec.reference }"), vec![json!("ref")]);
        assert_eq!(eval("$.spec.reference"), vec![json!("ref")]);
        assert_eq!(eval("{$.spec.reference}"), vec![json!("ref")]);
    }

    #[test]
    fn root() {
        assert_eq!(eval("."), vec![sample()]);
        assert_eq!(eval("{.}"), vec![sample()]);
        assert_eq!(eval("$"), vec![sample()]);
    }

    #[test]
    fn indexes_and_wildcards() {
        assert_eq!(eval(".status.conditions[0].type"), vec![json!("Ready")]);
        assert_eq!(eval(".status.conditions[-1].type"), vec![json!("Synced")]);
        assert_eq!(eval(".status.conditions[5].type"), Vec::<Value>::new());
        assert_eq!(
            eval(".spec.items[*].name"),
            vec![json!("x"), json!("y"), json!("z")]
        );
        assert_eq!(eval(".spec.items[1:].name"), vec![json!("y"), json!("z")]);
        assert_eq!(
            eval(".spec.items[0:3:2].name"),
            vec![json!("x"), json!("z")]
        );
        assert_eq!(eval(".spec.items[-2:-1].name"), vec![json!("y")]);
        assert_eq!(
            eval(".metadata.labels.*"),
            vec![json!("web"), json!("front")]
        );
        assert_eq!(
            eval(".metadata.labels[*]"),
            vec![json!("web"), json!("front")]
        );
    }

    #[test]
    fn quoted_keys() {
        assert_eq!(
            eval(".metadata.annotations['a.b/c']"),
            vec![json!("dotted")]
        );
        assert_eq!(
            eval(".metadata.annotations[\"a.b/c\"]"),
            vec![json!("dotted")]
        );
        assert_eq!(eval(".metadata.annotations[ 'plain' ]"), vec![json!("p")]);
        assert_eq!(
            eval("{.metadata.annotations['a.b/c']}"),
            vec![json!("dotted")]
        );
        assert_eq!(eval(r".metadata.annotations.a\.b/c"), vec![json!("dotted")]);
        assert_eq!(eval("['spec']['reference']"), vec![json!("ref")]);
        let v = json!({"a": {"it's": 1, "x]y": 2, "{b}": 3}});
        assert_eq!(evaluate(r".a['it\'s']", &v).unwrap(), vec![&json!(1)]);
        assert_eq!(evaluate(".a[\"it's\"]", &v).unwrap(), vec![&json!(1)]);
        assert_eq!(evaluate(".a['x]y']", &v).unwrap(), vec![&json!(2)]);
        assert_eq!(evaluate("{.a['{b}']}", &v).unwrap(), vec![&json!(3)]);
    }

    #[test]
    fn recursive() {
        assert_eq!(eval("..type"), vec![json!("Ready"), json!("Synced")]);
        assert_eq!(
            eval(".spec..name"),
            vec![json!("x"), json!("y"), json!("z")]
        );
    }

    #[test]
    fn missing_is_empty() {
        assert!(eval(".spec.nope").is_empty());
        assert!(eval(".spec.reference.deeper").is_empty());
        assert!(eval(".spec.replicas[0]").is_empty());
        assert!(eval(".status.conditions.type").is_empty());
        let v = json!({"spec": {"items": []}});
        assert!(evaluate(".spec.items[*].name", &v).unwrap().is_empty());
        assert!(evaluate(".spec.items[0]", &v).unwrap().is_empty());
    }

    #[test]
    fn first_match() {
        let p = parse(".spec.items[*].name").unwrap();
        assert_eq!(p.first(&sample()), Some(&json!("x")));
        assert_eq!(p.to_string(), ".spec.items[*].name");
        assert_eq!(p.as_str(), ".spec.items[*].name");
    }

    #[test]
    fn errors() {
        assert_eq!(parse(""), Err(JsonPathError::Empty));
        assert_eq!(parse("{}"), Err(JsonPathError::Empty));
        assert!(matches!(
            parse("{.spec"),
            Err(JsonPathError::UnbalancedBraces(_))
        ));
        assert!(matches!(
            parse(".spec}"),
            Err(JsonPathError::UnbalancedBraces(_))
        ));
        assert!(matches!(
            parse("{.a}{.b}"),
            Err(JsonPathError::UnbalancedBraces(_))
        ));
        assert!(matches!(
            parse("spec"),
            Err(JsonPathError::UnexpectedChar { ch: 's', .. })
        ));
        assert!(matches!(
            parse(".spec."),
            Err(JsonPathError::UnexpectedEnd(_))
        ));
        assert!(matches!(
            parse(".spec[0"),
            Err(JsonPathError::UnterminatedBracket(_))
        ));
        assert!(matches!(
            parse(".spec['a]"),
            Err(JsonPathError::UnterminatedQuote(_))
        ));
        assert!(matches!(
            parse(".spec[a]"),
            Err(JsonPathError::InvalidSubscript(_))
        ));
        assert!(matches!(
            parse(".spec[1:2:3:4]"),
            Err(JsonPathError::InvalidSubscript(_))
        ));
        assert_eq!(parse(".spec[::0]"), Err(JsonPathError::InvalidStep));
        assert!(matches!(
            parse(".a b"),
            Err(JsonPathError::UnexpectedChar { ch: ' ', .. })
        ));
        assert!(matches!(
            parse(".spec['a' 'b']"),
            Err(JsonPathError::UnexpectedChar { .. })
        ));
        assert!(evaluate(".spec[", &sample()).is_err());
        let msg = parse("spec").unwrap_err().to_string();
        assert!(msg.contains("unexpected character 's'"), "{msg}");
    }
}
