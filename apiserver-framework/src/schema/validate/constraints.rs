//! The value constraints of one schema node (`minimum`, `maxLength`, `pattern`, `enum`,
//! `maxItems`, `required`, `nullable`, `format`, …), checked with the messages of upstream's
//! `k8s.io/kube-openapi/pkg/validation/validate` as `apiextensions-apiserver` turns them into
//! field errors (`kubeOpenAPIResultToFieldErrors`): e.g. `spec.replicas: Invalid value: 0:
//! spec.replicas in body should be greater than or equal to 1`.

use regex::Regex;
use serde_json::Value;

use crate::error::{FieldError, FieldErrorKind};

/// The constraints of one node; `None` where the schema sets none.
#[derive(Debug, Default)]
pub(super) struct Constraints {
    minimum: Option<f64>,
    maximum: Option<f64>,
    exclusive_minimum: bool,
    exclusive_maximum: bool,
    multiple_of: Option<f64>,
    min_length: Option<u64>,
    max_length: Option<u64>,
    /// The pattern as written, and compiled (`None` when it does not compile).
    pattern: Option<(String, Option<Regex>)>,
    enumeration: Option<Vec<Value>>,
    min_items: Option<u64>,
    max_items: Option<u64>,
    unique_items: bool,
    min_properties: Option<u64>,
    max_properties: Option<u64>,
    /// The object's required fields (checked by the node, which knows which nulls are pruned).
    pub(super) required: Vec<String>,
    /// `nullable: false` with a declared type: `null` is refused (a field's is pruned first).
    pub(super) refuses_null: bool,
    format: Option<String>,
}

impl Constraints {
    pub(super) fn from_schema(schema: &Value) -> Self {
        let f = |key: &str| schema.get(key).and_then(Value::as_f64);
        let u = |key: &str| schema.get(key).and_then(Value::as_u64);
        let mut c = Constraints {
            minimum: f("minimum"),
            maximum: f("maximum"),
            multiple_of: f("multipleOf"),
            min_length: u("minLength"),
            max_length: u("maxLength"),
            min_items: u("minItems"),
            max_items: u("maxItems"),
            min_properties: u("minProperties"),
            max_properties: u("maxProperties"),
            unique_items: schema.get("uniqueItems") == Some(&Value::Bool(true)),
            enumeration: schema.get("enum").and_then(Value::as_array).cloned(),
            required: schema
                .get("required")
                .and_then(Value::as_array)
                .map(|r| {
                    r.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default(),
            refuses_null: schema.get("type").and_then(Value::as_str).is_some()
                && schema.get("nullable") != Some(&Value::Bool(true)),
            format: schema
                .get("format")
                .and_then(Value::as_str)
                .filter(|f| CHECKED_FORMATS.contains(f))
                .map(str::to_string),
            pattern: schema.get("pattern").and_then(Value::as_str).map(|p| {
                let re = Regex::new(p).ok();
                (p.to_string(), re)
            }),
            ..Constraints::default()
        };
        // OpenAPI 3.0 writes exclusiveness as a flag; JSON Schema 2020-12 as the bound itself.
        match schema.get("exclusiveMinimum") {
            Some(Value::Bool(b)) => c.exclusive_minimum = *b,
            Some(v @ Value::Number(_)) => {
                c.minimum = v.as_f64();
                c.exclusive_minimum = true;
            }
            _ => {}
        }
        match schema.get("exclusiveMaximum") {
            Some(Value::Bool(b)) => c.exclusive_maximum = *b,
            Some(v @ Value::Number(_)) => {
                c.maximum = v.as_f64();
                c.exclusive_maximum = true;
            }
            _ => {}
        }
        c
    }

    /// Whether nothing is constrained but the type (which decoding already enforces).
    pub(super) fn is_empty(&self) -> bool {
        self.minimum.is_none()
            && self.maximum.is_none()
            && self.multiple_of.is_none()
            && self.min_length.is_none()
            && self.max_length.is_none()
            && self.pattern.is_none()
            && self.enumeration.is_none()
            && self.min_items.is_none()
            && self.max_items.is_none()
            && !self.unique_items
            && self.min_properties.is_none()
            && self.max_properties.is_none()
            && self.required.is_empty()
            && self.format.is_none()
    }

    /// Checks `value` at `path` (a node of type `type_name`); errors go to `errs`.
    pub(super) fn check(
        &self,
        value: &Value,
        path: &str,
        type_name: &str,
        errs: &mut Vec<FieldError>,
    ) {
        let name = if path.is_empty() { "." } else { path };
        match value {
            Value::Null => {
                if self.refuses_null {
                    errs.push(FieldError::new(
                        path,
                        FieldErrorKind::TypeInvalid(Value::String("null".into())),
                        format!("{name} in body must be of type {type_name}: \"null\""),
                    ));
                }
                return;
            }
            Value::Number(n) => self.check_number(n, value, path, name, errs),
            Value::String(s) => self.check_string(s, value, path, name, errs),
            Value::Array(items) => self.check_array(items, path, name, errs),
            Value::Object(map) => {
                let size = map.len() as u64;
                if let Some(max) = self.max_properties
                    && size > max
                {
                    errs.push(too_many(path, size, max));
                }
                if let Some(min) = self.min_properties
                    && size < min
                {
                    errs.push(FieldError::invalid(
                        path,
                        size,
                        format!("{name} in body should have at least {min} properties"),
                    ));
                }
            }
            Value::Bool(_) => {}
        }
        if let Some(allowed) = &self.enumeration
            && !allowed.contains(value)
        {
            let supported = allowed
                .iter()
                .map(|v| match v {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
                .collect();
            errs.push(FieldError::new(
                path,
                FieldErrorKind::NotSupported(value.clone(), supported),
                "",
            ));
        }
    }

    fn check_number(
        &self,
        n: &serde_json::Number,
        value: &Value,
        path: &str,
        name: &str,
        errs: &mut Vec<FieldError>,
    ) {
        let data = n.as_f64().unwrap_or_default();
        // An integer is compared with integer bounds and they print as integers, as the
        // validator's native-type checks do; a float with Go's `%v` of a float64.
        let bound = |b: f64| {
            if n.is_f64() {
                go_float(b)
            } else {
                (b as i64).to_string()
            }
        };
        if let Some(factor) = self.multiple_of
            && factor > 0.0
            && (data / factor).fract() != 0.0
        {
            errs.push(FieldError::invalid(
                path,
                value.clone(),
                format!(
                    "{name} in body should be a multiple of {}",
                    go_float(factor)
                ),
            ));
        }
        if let Some(max) = self.maximum {
            let fails = if self.exclusive_maximum {
                data >= max
            } else {
                data > max
            };
            if fails {
                let how = if self.exclusive_maximum {
                    "less than"
                } else {
                    "less than or equal to"
                };
                errs.push(FieldError::invalid(
                    path,
                    value.clone(),
                    format!("{name} in body should be {how} {}", bound(max)),
                ));
            }
        }
        if let Some(min) = self.minimum {
            let fails = if self.exclusive_minimum {
                data <= min
            } else {
                data < min
            };
            if fails {
                let how = if self.exclusive_minimum {
                    "greater than"
                } else {
                    "greater than or equal to"
                };
                errs.push(FieldError::invalid(
                    path,
                    value.clone(),
                    format!("{name} in body should be {how} {}", bound(min)),
                ));
            }
        }
    }

    fn check_string(
        &self,
        s: &str,
        value: &Value,
        path: &str,
        name: &str,
        errs: &mut Vec<FieldError>,
    ) {
        // As upstream's string validator, only the first of maxLength, minLength and pattern
        // that fails is reported.
        let chars = s.chars().count() as u64;
        if let Some(max) = self.max_length
            && chars > max
        {
            errs.push(FieldError::too_long(path, max as usize));
        } else if let Some(min) = self.min_length
            && chars < min
        {
            errs.push(FieldError::invalid(
                path,
                value.clone(),
                format!("{name} in body should be at least {min} chars long"),
            ));
        } else if let Some((pattern, re)) = &self.pattern
            && !re.as_ref().is_some_and(|re| re.is_match(s))
        {
            errs.push(FieldError::invalid(
                path,
                value.clone(),
                format!("{name} in body should match '{pattern}'"),
            ));
        }
        if let Some(format) = &self.format
            && !format_holds(format, s)
        {
            errs.push(FieldError::new(
                path,
                FieldErrorKind::TypeInvalid(value.clone()),
                format!("{name} in body must be of type {format}: {s:?}"),
            ));
        }
    }

    fn check_array(&self, items: &[Value], path: &str, name: &str, errs: &mut Vec<FieldError>) {
        let size = items.len() as u64;
        if let Some(max) = self.max_items
            && size > max
        {
            errs.push(too_many(path, size, max));
        }
        if let Some(min) = self.min_items
            && size < min
        {
            errs.push(FieldError::invalid(
                path,
                size,
                format!("{name} in body should have at least {min} items"),
            ));
        }
        let mut seen = std::collections::HashSet::new();
        if self.unique_items
            && !items
                .iter()
                .all(|v| seen.insert(serde_json::to_string(v).unwrap_or_default()))
        {
            errs.push(FieldError::invalid(
                path,
                "",
                format!("{name} in body shouldn't contain duplicates"),
            ));
        }
    }
}

/// `Too many: <size>: must have at most <max> items` (upstream's `field.TooMany`).
fn too_many(path: &str, size: u64, max: u64) -> FieldError {
    let unit = if max == 1 { "item" } else { "items" };
    FieldError::new(
        path,
        FieldErrorKind::TooMany(Value::from(size)),
        format!("must have at most {max} {unit}"),
    )
}

/// Go's `%v` of a float64 (`strconv.FormatFloat(f, 'g', -1, 64)`): the shortest digits, in
/// exponent form when the decimal exponent is below -4 or from 6 up.
fn go_float(f: f64) -> String {
    if f == 0.0 || !f.is_finite() {
        return f.to_string();
    }
    let s = format!("{f:e}");
    let Some((mantissa, exp)) = s.split_once('e') else {
        return s;
    };
    let exp: i32 = exp.parse().unwrap_or_default();
    if (-4..6).contains(&exp) {
        return f.to_string();
    }
    // Rust writes `1e-5`, Go `1e-05`: the exponent has a sign and at least two digits.
    let sign = if exp < 0 { '-' } else { '+' };
    format!("{mantissa}e{sign}{:02}", exp.abs())
}

/// The string formats checked, among those upstream's CRD validation knows (others are
/// published and not checked, as upstream leaves unknown formats alone).
const CHECKED_FORMATS: &[&str] = &["date-time", "date", "uuid", "ipv4", "ipv6", "byte"];

fn format_holds(format: &str, s: &str) -> bool {
    use base64::Engine as _;
    match format {
        "date-time" => is_date_time(s),
        "date" => s.len() == 10 && is_date(s),
        "uuid" => {
            let parts: Vec<&str> = s.split('-').collect();
            parts.iter().map(|p| p.len()).eq([8, 4, 4, 4, 12])
                && parts
                    .iter()
                    .all(|p| p.chars().all(|c| c.is_ascii_hexdigit()))
        }
        "ipv4" => s.parse::<std::net::Ipv4Addr>().is_ok(),
        "ipv6" => s.parse::<std::net::Ipv6Addr>().is_ok(),
        "byte" => base64::engine::general_purpose::STANDARD.decode(s).is_ok(),
        _ => true,
    }
}

/// `YYYY-MM-DD` with a plausible month and day.
fn is_date(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() < 10 || b[4] != b'-' || b[7] != b'-' {
        return false;
    }
    let num = |r: std::ops::Range<usize>| s.get(r).and_then(|x| x.parse::<u32>().ok());
    matches!((num(0..4), num(5..7), num(8..10)), (Some(_), Some(m), Some(d)) if (1..=12).contains(&m) && (1..=31).contains(&d))
}

/// RFC 3339 date-time (`2006-01-02T15:04:05Z`, fractions and offsets allowed).
fn is_date_time(s: &str) -> bool {
    if s.len() < 20 || !is_date(&s[..10]) {
        return false;
    }
    let rest = &s[10..];
    let Some(time) = rest.strip_prefix(['T', 't', ' ']) else {
        return false;
    };
    let b = time.as_bytes();
    if b.len() < 9 || b[2] != b':' || b[5] != b':' {
        return false;
    }
    let digits = |x: &[u8]| x.iter().all(u8::is_ascii_digit);
    if !digits(&b[0..2]) || !digits(&b[3..5]) || !digits(&b[6..8]) {
        return false;
    }
    let mut tail = &time[8..];
    if let Some(frac) = tail.strip_prefix('.') {
        let n = frac.bytes().take_while(u8::is_ascii_digit).count();
        if n == 0 {
            return false;
        }
        tail = &frac[n..];
    }
    match tail {
        "Z" | "z" => true,
        offset => {
            let b = offset.as_bytes();
            b.len() == 6
                && (b[0] == b'+' || b[0] == b'-')
                && b[3] == b':'
                && digits(&b[1..3])
                && digits(&b[4..6])
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_print_as_go_does() {
        assert_eq!(go_float(1.0), "1");
        assert_eq!(go_float(1.5), "1.5");
        assert_eq!(go_float(0.00001), "1e-05");
        assert_eq!(go_float(1e22), "1e+22");
        assert_eq!(go_float(100000.0), "100000");
        assert_eq!(go_float(1000000.0), "1e+06");
        assert_eq!(go_float(1234567.5), "1.2345675e+06");
    }

    #[test]
    fn formats() {
        assert!(format_holds("date-time", "2024-01-02T03:04:05Z"));
        assert!(format_holds("date-time", "2024-01-02T03:04:05.123+02:00"));
        assert!(!format_holds("date-time", "yesterday"));
        assert!(format_holds("uuid", "123e4567-e89b-12d3-a456-426614174000"));
        assert!(!format_holds("uuid", "123"));
        assert!(!format_holds("ipv4", "1.2.3"));
    }
}
