//! Formatting the reports share: rates, thousands separators, durations, and text for
//! SVG charts.

use std::time::Duration;

/// `count` per second of `time`: 0 when no time passed.
pub fn per_second(count: f64, time: Duration) -> f64 {
    let secs = time.as_secs_f64();
    if secs > 0.0 {
        count / secs
    } else {
        0.0
    }
}

/// A whole number with thousands separators: `1234567.8` -> `1,234,568`. Rounded as
/// `{:.0}` rounds (a half to the even neighbour, so reports re-rendered from their JSON
/// print what they printed); negative numbers and NaN print as `0`.
pub fn thousands(x: f64) -> String {
    let digits = format!("{:.0}", if x > 0.0 { x } else { 0.0 });
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A latency in the unit that reads best: `1.2 µs`, `345.0 µs`, `1.2 ms`, `3.40 s`.
pub fn duration_ns(ns: u64) -> String {
    let n = ns as f64;
    if ns < 1_000_000 {
        format!("{:.1} µs", n / 1e3)
    } else if ns < 1_000_000_000 {
        format!("{:.1} ms", n / 1e6)
    } else {
        format!("{:.2} s", n / 1e9)
    }
}

/// `text` with `&`, `<` and `>` escaped, for SVG (XML) text and titles.
pub fn xml_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_groups_and_rounds() {
        assert_eq!(thousands(0.4), "0");
        assert_eq!(thousands(-3.0), "0");
        assert_eq!(thousands(-0.0), "0");
        assert_eq!(thousands(f64::NAN), "0");
        assert_eq!(thousands(2.5), "2");
        assert_eq!(thousands(579_778.5), "579,778");
        assert_eq!(thousands(999.0), "999");
        assert_eq!(thousands(1000.0), "1,000");
        assert_eq!(thousands(1_234_567.2), "1,234,567");
        assert_eq!(thousands(1_234_567.8), "1,234,568");
    }

    #[test]
    fn durations_pick_a_unit() {
        assert_eq!(duration_ns(900), "0.9 µs");
        assert_eq!(duration_ns(12_000), "12.0 µs");
        assert_eq!(duration_ns(1_200_000), "1.2 ms");
        assert_eq!(duration_ns(3_400_000_000), "3.40 s");
    }

    #[test]
    fn rates_and_escapes() {
        assert_eq!(per_second(500.0, Duration::from_millis(250)), 2000.0);
        assert_eq!(per_second(500.0, Duration::ZERO), 0.0);
        assert_eq!(xml_escape("a<b & c>"), "a&lt;b &amp; c&gt;");
    }
}
