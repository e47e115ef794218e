//! Reading arguments: integers as Redis reads them, names case-insensitively.

/// An integer as Redis's `string2ll` reads it: optional `-`, digits, no `+`, no leading
/// zero (but `0` itself), no blanks, within `i64`.
pub(crate) fn int(bytes: &[u8]) -> Option<i64> {
    let digits = bytes.strip_prefix(b"-").unwrap_or(bytes);
    let ok_shape = match digits {
        [] => false,
        [b'0'] => bytes.len() == 1,
        [first, ..] => (b'1'..=b'9').contains(first) && digits.iter().all(u8::is_ascii_digit),
    };
    if !ok_shape || bytes.len() > 20 {
        return None;
    }
    std::str::from_utf8(bytes).ok()?.parse().ok()
}

/// True if `arg` is `word`, ignoring ASCII case.
pub(crate) fn is(arg: &[u8], word: &str) -> bool {
    arg.eq_ignore_ascii_case(word.as_bytes())
}

/// The lower-case text of a command or option name (lossy for non-UTF-8 bytes).
pub(crate) fn lower(arg: &[u8]) -> String {
    String::from_utf8_lossy(arg).to_ascii_lowercase()
}

#[cfg(test)]
mod tests {
    use super::int;

    #[test]
    fn redis_integer_rules() {
        assert_eq!(int(b"0"), Some(0));
        assert_eq!(int(b"-12"), Some(-12));
        assert_eq!(int(b"9223372036854775807"), Some(i64::MAX));
        assert_eq!(int(b"-9223372036854775808"), Some(i64::MIN));
        for bad in [
            &b""[..],
            b"-",
            b"-0",
            b"01",
            b"+1",
            b" 1",
            b"1 ",
            b"1.5",
            b"9223372036854775808",
        ] {
            assert_eq!(int(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }
}
