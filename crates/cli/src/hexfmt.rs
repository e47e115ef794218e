//! Lowercase hex, two digits per byte, no separators: the encoding of `dump` output and of
//! `get --hex` keys (and of the test vectors' `.expected` files).

use std::fmt;

#[inline]
fn digit(n: u8) -> u8 {
    if n < 10 {
        b'0' + n
    } else {
        b'a' + (n - 10)
    }
}

/// Appends the lowercase hex form of `bytes` to `out`.
pub fn push_hex(out: &mut Vec<u8>, bytes: &[u8]) {
    out.reserve(bytes.len() * 2);
    for &b in bytes {
        out.push(digit(b >> 4));
        out.push(digit(b & 0x0f));
    }
}

fn nibble(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

/// Why text is not hex; `Display` says it in words ("has a non-hex character 'g' at
/// position 3"), to follow the name of what was being read ("--hex: the key ").
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HexError {
    /// The first character that is not a hex digit, and its position (counting
    /// characters from 1; everything before it is ASCII, so it is also its byte offset + 1).
    NonHex { found: Found, position: usize },
    /// Only hex digits, but an odd number of them.
    OddLength { digits: usize },
}

/// The offending character of [`HexError::NonHex`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Found {
    /// A character (shown quoted and escaped: `'g'`, `' '`, `'\t'`, `'é'`).
    Char(char),
    /// A byte that starts no valid UTF-8 character (shown by its value, `0xff`).
    Byte(u8),
}

impl fmt::Display for HexError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HexError::NonHex {
                found: Found::Char(c),
                position,
            } => write!(f, "has a non-hex character {c:?} at position {position}"),
            HexError::NonHex {
                found: Found::Byte(b),
                position,
            } => write!(
                f,
                "has a byte that is not a hex digit (0x{b:02x}, not UTF-8) at position {position}"
            ),
            HexError::OddLength { digits } => write!(
                f,
                "has an odd number of hex digits ({digits}); each byte takes two"
            ),
        }
    }
}

/// Decodes hex (either case).
///
/// # Errors
/// [`HexError::NonHex`] for the first character that is not a hex digit (checked before
/// the length, as it is the more useful thing to say), else [`HexError::OddLength`].
pub fn decode(text: &[u8]) -> Result<Vec<u8>, HexError> {
    if let Some(at) = text.iter().position(|&c| nibble(c).is_none()) {
        let rest = text.get(at..).unwrap_or_default();
        let found = match rest.utf8_chunks().next() {
            Some(chunk) => chunk.valid().chars().next().map_or_else(
                || Found::Byte(rest.first().copied().unwrap_or(0)),
                Found::Char,
            ),
            None => Found::Byte(0),
        };
        return Err(HexError::NonHex {
            found,
            position: at + 1,
        });
    }
    if !text.len().is_multiple_of(2) {
        return Err(HexError::OddLength { digits: text.len() });
    }
    // Every byte is a hex digit (checked above), so the fallbacks below are never taken.
    Ok(text
        .chunks_exact(2)
        .map(|pair| match *pair {
            [hi, lo] => (nibble(hi).unwrap_or(0) << 4) | nibble(lo).unwrap_or(0),
            _ => 0,
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_every_byte() {
        let all: Vec<u8> = (0..=255).collect();
        let mut text = Vec::new();
        push_hex(&mut text, &all);
        assert_eq!(text.len(), 512);
        assert_eq!(text.get(..6), Some(&b"000102"[..]));
        assert_eq!(decode(&text), Ok(all));
    }

    #[test]
    fn rejects_odd_length_and_non_hex() {
        assert_eq!(decode(b"abc"), Err(HexError::OddLength { digits: 3 }));
        assert_eq!(decode(b"AbCd"), Ok(vec![0xab, 0xcd]));
        assert_eq!(decode(b""), Ok(vec![]));
    }

    #[test]
    fn names_the_first_non_hex_character_and_its_position() {
        let non_hex = |text: &[u8]| match decode(text) {
            Err(HexError::NonHex { found, position }) => Some((found, position)),
            _ => None,
        };
        // A non-hex character is reported even when the length is odd as well.
        assert_eq!(non_hex(b"abg"), Some((Found::Char('g'), 3)));
        assert_eq!(non_hex(b"zz"), Some((Found::Char('z'), 1)));
        assert_eq!(non_hex(b"0xff"), Some((Found::Char('x'), 2)));
        assert_eq!(non_hex("12é4".as_bytes()), Some((Found::Char('é'), 3)));
        assert_eq!(non_hex(b"12\xff4"), Some((Found::Byte(0xff), 3)));
        assert_eq!(
            decode(b"ab cd").map_err(|e| e.to_string()),
            Err("has a non-hex character ' ' at position 3".to_string())
        );
        assert_eq!(
            decode(b"abc").map_err(|e| e.to_string()),
            Err("has an odd number of hex digits (3); each byte takes two".to_string())
        );
    }
}
