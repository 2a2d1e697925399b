//! Durations in Go's `time.ParseDuration` form (`5m`, `1h30m`, `2.5s`, `300ms`), as
//! kube-apiserver's flags and the `?timeout=` of a request take them.

use std::time::Duration;

/// A duration flag value; parses Go's duration syntax.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GoDuration(pub Duration);

impl std::str::FromStr for GoDuration {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        parse(s).map(GoDuration)
    }
}

impl std::fmt::Display for GoDuration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let secs = self.0.as_secs();
        let (h, m, s) = (secs / 3600, secs / 60 % 60, secs % 60);
        let nanos = self.0.subsec_nanos();
        if h > 0 {
            write!(f, "{h}h{m}m")?;
        } else if m > 0 {
            write!(f, "{m}m")?;
        }
        if nanos == 0 {
            write!(f, "{s}s")
        } else {
            let frac = format!("{:09}", nanos);
            write!(f, "{s}.{}s", frac.trim_end_matches('0'))
        }
    }
}

/// Parses a sequence of decimal numbers with units (`ns`, `us`, `µs`, `ms`, `s`, `m`, `h`);
/// `0` alone needs no unit. Negative durations are refused.
pub fn parse(text: &str) -> Result<Duration, String> {
    let invalid = || format!("time: invalid duration {text:?}");
    if text == "0" {
        return Ok(Duration::ZERO);
    }
    let mut rest = text.strip_prefix('+').unwrap_or(text);
    if rest.is_empty() || rest.starts_with('-') {
        return Err(invalid());
    }
    let mut total = 0f64;
    while !rest.is_empty() {
        let number_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(|| format!("time: missing unit in duration {text:?}"))?;
        let number: f64 = rest[..number_len].parse().map_err(|_| invalid())?;
        rest = &rest[number_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let nanos_per_unit = match &rest[..unit_len] {
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            other => return Err(format!("time: unknown unit {other:?} in duration {text:?}")),
        };
        total += number * nanos_per_unit;
        rest = &rest[unit_len..];
    }
    Ok(Duration::from_nanos(total.round() as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations() {
        assert_eq!(parse("5m").unwrap(), Duration::from_secs(300));
        assert_eq!(parse("1h30m").unwrap(), Duration::from_secs(5400));
        assert_eq!(parse("2.5s").unwrap(), Duration::from_millis(2500));
        assert_eq!(parse("300ms").unwrap(), Duration::from_millis(300));
        assert_eq!(parse("0").unwrap(), Duration::ZERO);
        assert_eq!(parse("5m0s").unwrap(), Duration::from_secs(300));
        assert!(parse("5").unwrap_err().contains("missing unit"));
        assert!(parse("5d").unwrap_err().contains("unknown unit"));
        assert!(parse("-1s").is_err());
        assert!(parse("").is_err());
        assert_eq!(GoDuration(Duration::from_secs(300)).to_string(), "5m0s");
        assert_eq!(GoDuration(Duration::from_secs(2)).to_string(), "2s");
        assert_eq!(GoDuration(Duration::from_secs(3700)).to_string(), "1h1m40s");
    }
}
