//! Byte counts for people: `512 B`, `12.3 KiB`, `1.5 GiB` (binary units, one decimal).
//!
//! Text output only; JSON output keeps exact byte counts as numbers.

/// The units after bytes, each 1024 times the one before.
const UNITS: [&str; 6] = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];

/// `n` bytes in the largest unit it reaches: `0 B`, `1023 B`, `1.0 KiB`, `12.3 MiB`.
pub fn human(n: u64) -> String {
    if n < 1024 {
        return format!("{n} B");
    }
    let mut value = n as f64;
    let mut unit = "B";
    for next in UNITS {
        // Move up from 1023.95 on, so a value never prints as "1024.0".
        if value < 1023.95 {
            break;
        }
        value /= 1024.0;
        unit = next;
    }
    format!("{value:.1} {unit}")
}

/// [`human`] and, from 1 KiB on, the exact count: `12.3 KiB (12601 bytes)`.
pub fn human_exact(n: u64) -> String {
    if n < 1024 {
        human(n)
    } else {
        format!("{} ({n} bytes)", human(n))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picks_the_largest_unit_reached() {
        assert_eq!(human(0), "0 B");
        assert_eq!(human(1023), "1023 B");
        assert_eq!(human(1024), "1.0 KiB");
        assert_eq!(human(12_601), "12.3 KiB");
        assert_eq!(human(1_048_575), "1.0 MiB");
        assert_eq!(human(3 << 20), "3.0 MiB");
        assert_eq!(human(1_610_612_736), "1.5 GiB");
        assert_eq!(human(u64::MAX), "16.0 EiB");
        assert_eq!(human_exact(512), "512 B");
        assert_eq!(human_exact(2048), "2.0 KiB (2048 bytes)");
    }
}
