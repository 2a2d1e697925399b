//! Bucket bounds written as upstream's Go client writes them. The `prometheus` crate writes a
//! bound with Rust's `Display` (`le="1000000000"`); Go's client writes `strconv`'s shortest
//! `%g` (`le="1e+09"`), so that dashboards and alerts matching `le` as a string find the same
//! series. Only the `le` labels of the encoded text are rewritten; values below a million and
//! above 1e-4 read the same either way.

/// `v` as Go's `strconv.FormatFloat(v, 'g', -1, 64)` writes it.
pub(crate) fn go_g(v: f64) -> String {
    if v.is_infinite() {
        return if v > 0.0 {
            "+Inf".into()
        } else {
            "-Inf".into()
        };
    }
    if v == 0.0 || v.is_nan() {
        return if v.is_nan() { "NaN".into() } else { "0".into() };
    }
    let scientific = format!("{v:e}");
    let (mantissa, exp) = scientific
        .split_once('e')
        .expect("Rust's {:e} always has an exponent");
    let exp: i32 = exp.parse().expect("an integer exponent");
    if (-4..6).contains(&exp) {
        return v.to_string();
    }
    let sign = if exp < 0 { '-' } else { '+' };
    format!("{mantissa}e{sign}{:02}", exp.abs())
}

/// `text` (the Prometheus text format) with every `le="…"` bound written as Go writes it.
pub(crate) fn go_bounds(text: String) -> String {
    if !text.contains("le=\"") {
        return text;
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text.as_str();
    while let Some(at) = rest.find("le=\"") {
        let (head, tail) = rest.split_at(at + 4);
        out.push_str(head);
        let end = tail.find('"').unwrap_or(tail.len());
        let bound = &tail[..end];
        match bound.parse::<f64>() {
            Ok(v) if bound != "+Inf" => out.push_str(&go_g(v)),
            _ => out.push_str(bound),
        }
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_read_as_gos() {
        for (v, go) in [
            (0.005, "0.005"),
            (0.0001, "0.0001"),
            (0.00005, "5e-05"),
            (1.25, "1.25"),
            (60.0, "60"),
            (1000.0, "1000"),
            (100000.0, "100000"),
            (1e6, "1e+06"),
            (1.5e7, "1.5e+07"),
            (1e9, "1e+09"),
        ] {
            assert_eq!(go_g(v), go, "{v}");
        }
        let text = "x_bucket{a=\"b\",le=\"1000000000\"} 3\nx_bucket{le=\"+Inf\"} 3\nx_sum 2\n";
        assert_eq!(
            go_bounds(text.to_string()),
            "x_bucket{a=\"b\",le=\"1e+09\"} 3\nx_bucket{le=\"+Inf\"} 3\nx_sum 2\n"
        );
    }
}
