//! Label and field selectors: parsing and matching.
//!
//! Written here because no maintained crate parses Kubernetes' selector grammar.

use std::collections::BTreeMap;

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
}

/// One requirement of a label selector.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Requirement {
    /// The label key.
    pub key: String,
    /// The operator.
    pub op: Operator,
    /// The values (one for equality, several for set operators, none for existence).
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
        }
    }
}

/// A parsed label selector; empty matches everything.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LabelSelector {
    /// All requirements (AND).
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

    /// Parses the selector grammar: `a=b`, `a==b`, `a!=b`, `a in (x,y)`, `a notin (x)`, `a`,
    /// `!a`, joined by commas.
    pub fn parse(s: &str) -> Result<Self, String> {
        let mut p = Parser {
            s: s.as_bytes(),
            pos: 0,
            src: s,
        };
        let mut requirements = Vec::new();
        p.skip_ws();
        if p.done() {
            return Ok(LabelSelector::default());
        }
        loop {
            requirements.push(p.requirement()?);
            p.skip_ws();
            if p.done() {
                break;
            }
            if p.peek() == Some(b',') {
                p.pos += 1;
                continue;
            }
            return Err(format!(
                "found '{}', expected: ',' or 'end of string'",
                p.rest_token()
            ));
        }
        Ok(LabelSelector { requirements })
    }
}

struct Parser<'a> {
    s: &'a [u8],
    pos: usize,
    src: &'a str,
}

impl Parser<'_> {
    fn done(&self) -> bool {
        self.pos >= self.s.len()
    }
    fn peek(&self) -> Option<u8> {
        self.s.get(self.pos).copied()
    }
    fn skip_ws(&mut self) {
        while self.peek().is_some_and(|c| c.is_ascii_whitespace()) {
            self.pos += 1;
        }
    }
    fn rest_token(&self) -> String {
        self.src[self.pos..]
            .split([',', ' '])
            .next()
            .unwrap_or("")
            .to_string()
    }
    fn word(&mut self) -> String {
        self.skip_ws();
        let start = self.pos;
        while let Some(c) = self.peek() {
            if c.is_ascii_whitespace() || matches!(c, b',' | b'=' | b'!' | b'(' | b')') {
                break;
            }
            self.pos += 1;
        }
        self.src[start..self.pos].to_string()
    }
    fn requirement(&mut self) -> Result<Requirement, String> {
        self.skip_ws();
        if self.peek() == Some(b'!') {
            self.pos += 1;
            let key = self.word();
            validate_key(&key)?;
            return Ok(Requirement {
                key,
                op: Operator::DoesNotExist,
                values: vec![],
            });
        }
        let key = self.word();
        if key.is_empty() {
            return Err(format!(
                "found '{}', expected: identifier",
                self.rest_token()
            ));
        }
        validate_key(&key)?;
        self.skip_ws();
        let op = match (self.peek(), self.s.get(self.pos + 1).copied()) {
            (None, _) | (Some(b','), _) => {
                return Ok(Requirement {
                    key,
                    op: Operator::Exists,
                    values: vec![],
                });
            }
            (Some(b'='), Some(b'=')) => {
                self.pos += 2;
                Operator::Equals
            }
            (Some(b'='), _) => {
                self.pos += 1;
                Operator::Equals
            }
            (Some(b'!'), Some(b'=')) => {
                self.pos += 2;
                Operator::NotEquals
            }
            _ => {
                let w = self.word();
                match w.as_str() {
                    "in" => Operator::In,
                    "notin" => Operator::NotIn,
                    other => {
                        return Err(format!(
                            "found '{other}', expected: in, notin, =, ==, !=, gt, lt"
                        ));
                    }
                }
            }
        };
        let values = match op {
            Operator::In | Operator::NotIn => {
                self.skip_ws();
                if self.peek() != Some(b'(') {
                    return Err(format!("found '{}', expected: '('", self.rest_token()));
                }
                self.pos += 1;
                let mut vals = Vec::new();
                loop {
                    let v = self.word();
                    self.skip_ws();
                    match self.peek() {
                        Some(b',') => {
                            validate_value(&v)?;
                            vals.push(v);
                            self.pos += 1;
                        }
                        Some(b')') => {
                            validate_value(&v)?;
                            if !v.is_empty() || !vals.is_empty() {
                                vals.push(v);
                            }
                            self.pos += 1;
                            break;
                        }
                        _ => return Err("unexpected end of set, expected ',' or ')'".into()),
                    }
                }
                if vals.is_empty() {
                    return Err("for 'in', 'notin' operators, values set can't be empty".into());
                }
                vals
            }
            _ => {
                let v = self.word();
                validate_value(&v)?;
                vec![v]
            }
        };
        Ok(Requirement { key, op, values })
    }
}

fn validate_key(key: &str) -> Result<(), String> {
    let (prefix, name) = match key.rsplit_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, key),
    };
    if let Some(p) = prefix
        && (p.is_empty() || !crate::registry::validation::dns1123_subdomain(p).is_empty())
    {
        return Err(format!(
            "invalid label key {key:?}: prefix part must be a DNS-1123 subdomain"
        ));
    }
    if !is_qualified_name_part(name) {
        return Err(format!(
            "invalid label key {key:?}: name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
        ));
    }
    Ok(())
}

fn is_qualified_name_part(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

fn validate_value(v: &str) -> Result<(), String> {
    if v.is_empty() || is_qualified_name_part(v) {
        Ok(())
    } else {
        Err(format!(
            "invalid label value: {v:?}: a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
        ))
    }
}

/// One field selector requirement: `field=value`, `field==value` or `field!=value`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldRequirement {
    /// The field, e.g. `metadata.name`.
    pub field: String,
    /// `true` for `!=`.
    pub negated: bool,
    /// The value.
    pub value: String,
}

/// A parsed field selector; empty matches everything.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldSelector {
    /// All requirements (AND).
    pub requirements: Vec<FieldRequirement>,
}

impl FieldSelector {
    /// Parses `a=b,c!=d`.
    pub fn parse(s: &str) -> Result<Self, String> {
        let mut requirements = Vec::new();
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (field, negated, value) = if let Some((f, v)) = part.split_once("!=") {
                (f, true, v)
            } else if let Some((f, v)) = part.split_once("==") {
                (f, false, v)
            } else if let Some((f, v)) = part.split_once('=') {
                (f, false, v)
            } else {
                return Err(format!(
                    "invalid selector: '{s}'; can't understand '{part}'"
                ));
            };
            requirements.push(FieldRequirement {
                field: field.trim().to_string(),
                negated,
                value: value.trim().to_string(),
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

    /// Checks every field against `supported`; answers upstream's message for others.
    pub fn check_supported(&self, supported: &[&str]) -> Result<(), String> {
        for r in &self.requirements {
            if !supported.contains(&r.field.as_str()) {
                return Err(format!("field label not supported: {}", r.field));
            }
        }
        Ok(())
    }

    /// Whether an object (as JSON) satisfies every requirement; fields are dotted paths.
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
        let l = labels(&[("app", "web"), ("tier", "front")]);
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
        ] {
            let s = LabelSelector::parse(sel).unwrap_or_else(|e| panic!("{sel}: {e}"));
            assert_eq!(s.matches(&l), want, "{sel}");
        }
        for bad in [
            "app=web=x",
            "in (x",
            "a in ()",
            "a in (b",
            "a=-b",
            "=x",
            "a b",
        ] {
            assert!(LabelSelector::parse(bad).is_err(), "{bad} should fail");
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
                .check_supported(&["metadata.name"])
                .unwrap_err(),
            "field label not supported: spec.x"
        );
    }
}
