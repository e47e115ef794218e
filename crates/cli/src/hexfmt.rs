//! Lowercase hex, two digits per byte, no separators: the encoding of `dump` output and of
//! `get --hex` keys (and of the test vectors' `.expected` files).

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

/// Decodes hex (either case); `None` for an odd length or a non-hex character.
pub fn decode(text: &[u8]) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    text.chunks_exact(2)
        .map(|pair| match *pair {
            [hi, lo] => Some((nibble(hi)? << 4) | nibble(lo)?),
            _ => None,
        })
        .collect()
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
        assert_eq!(decode(&text), Some(all));
    }

    #[test]
    fn rejects_odd_length_and_non_hex() {
        assert_eq!(decode(b"abc"), None);
        assert_eq!(decode(b"zz"), None);
        assert_eq!(decode(b"AbCd"), Some(vec![0xab, 0xcd]));
        assert_eq!(decode(b""), Some(vec![]));
    }
}
