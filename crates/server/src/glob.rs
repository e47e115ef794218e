//! Redis's glob patterns (SCAN MATCH, CONFIG GET, KEYS): `*`, `?`, `[abc]`, `[^a-z]`,
//! `\x`. Iterative with backtracking to the last `*`, so the cost is O(pattern × text)
//! at worst and the stack never grows with input.

/// True if `text` matches `pattern`.
pub(crate) fn matches(pattern: &[u8], text: &[u8]) -> bool {
    let (mut p, mut t) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    loop {
        if let Some(&pc) = pattern.get(p) {
            match pc {
                b'*' => {
                    star = Some((p, t));
                    p += 1;
                    continue;
                }
                _ => {
                    if let Some(&tc) = text.get(t) {
                        if let Some(len) = one(pattern, p, tc) {
                            p += len;
                            t += 1;
                            continue;
                        }
                    }
                }
            }
        } else if t == text.len() {
            return true;
        }
        // Mismatch: let the last star swallow one more byte.
        match star {
            Some((sp, st)) if st < text.len() => {
                star = Some((sp, st + 1));
                p = sp + 1;
                t = st + 1;
            }
            _ => return false,
        }
    }
}

/// If the pattern element at `p` (not `*`) matches byte `c`, its length in the pattern.
fn one(pattern: &[u8], p: usize, c: u8) -> Option<usize> {
    match pattern.get(p)? {
        b'?' => Some(1),
        b'\\' => match pattern.get(p + 1) {
            Some(&e) => (e == c).then_some(2),
            None => (c == b'\\').then_some(1),
        },
        b'[' => {
            let mut i = p + 1;
            let negate = pattern.get(i) == Some(&b'^');
            if negate {
                i += 1;
            }
            let mut hit = false;
            loop {
                match pattern.get(i) {
                    None => break, // unterminated: the class runs to the end (as Redis)
                    Some(b']') => {
                        i += 1;
                        break;
                    }
                    Some(b'\\') if pattern.get(i + 1).is_some() => {
                        hit |= pattern.get(i + 1) == Some(&c);
                        i += 2;
                    }
                    Some(&lo)
                        if pattern.get(i + 1) == Some(&b'-')
                            && pattern.get(i + 2).is_some_and(|&b| b != b']') =>
                    {
                        let hi = pattern.get(i + 2).copied().unwrap_or(lo);
                        let (lo, hi) = if lo <= hi { (lo, hi) } else { (hi, lo) };
                        hit |= (lo..=hi).contains(&c);
                        i += 3;
                    }
                    Some(&b) => {
                        hit |= b == c;
                        i += 1;
                    }
                }
            }
            (hit != negate).then_some(i - p)
        }
        &b => (b == c).then_some(1),
    }
}

#[cfg(test)]
mod tests {
    use super::matches;

    #[test]
    fn redis_patterns() {
        assert!(matches(b"*", b""));
        assert!(matches(b"user:*", b"user:42"));
        assert!(!matches(b"user:*", b"users"));
        assert!(matches(b"h?llo", b"hello"));
        assert!(matches(b"h[ae]llo", b"hallo"));
        assert!(!matches(b"h[^e]llo", b"hello"));
        assert!(matches(b"h[a-c]llo", b"hbllo"));
        assert!(matches(b"a\\*b", b"a*b"));
        assert!(matches(b"*a*b*c*", b"xxaxxbxxcxx"));
        assert!(!matches(b"*a*b*c*d", b"xxaxxbxxcxx"));
    }
}
