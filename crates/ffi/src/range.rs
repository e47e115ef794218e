//! Key ranges as C passes them: a start and an end, each `const char*` + length, where a
//! NULL pointer means unbounded; a prefix turned into the range of keys it starts; and a
//! range narrowed to start (or end) at a sought key.
//!
//! Invariant: a range here is half-open, `[start, end)`, as in `cairn_delete_range` and
//! `cairn_iter_range`; [`is_empty`] is exact for the bounds this module builds.

use std::ops::Bound;

/// `[start, end)`, each side unbounded when `None`.
pub(crate) fn half_open(
    start: Option<&[u8]>,
    end: Option<&[u8]>,
) -> (Bound<Vec<u8>>, Bound<Vec<u8>>) {
    (
        start.map_or(Bound::Unbounded, |s| Bound::Included(s.to_vec())),
        end.map_or(Bound::Unbounded, |e| Bound::Excluded(e.to_vec())),
    )
}

/// The range of the keys starting with `prefix`: `[prefix, next)` where `next` is the
/// smallest key greater than every key with the prefix (unbounded when the prefix is all
/// `0xFF` bytes or empty).
pub(crate) fn prefix(prefix: &[u8]) -> (Bound<Vec<u8>>, Bound<Vec<u8>>) {
    let mut next = prefix.to_vec();
    let hi = loop {
        match next.pop() {
            None => break Bound::Unbounded,
            Some(0xFF) => continue,
            Some(b) => {
                next.push(b + 1);
                break Bound::Excluded(next);
            }
        }
    };
    (Bound::Included(prefix.to_vec()), hi)
}

/// `lo` raised to `key` if `key` is above it.
pub(crate) fn raise(lo: &Bound<Vec<u8>>, key: &[u8]) -> Bound<Vec<u8>> {
    match lo {
        Bound::Included(l) | Bound::Excluded(l) if key <= l.as_slice() => lo.clone(),
        _ => Bound::Included(key.to_vec()),
    }
}

/// `hi` lowered to `key` (included) if `key` is below it.
pub(crate) fn lower(hi: &Bound<Vec<u8>>, key: &[u8]) -> Bound<Vec<u8>> {
    match hi {
        Bound::Included(h) | Bound::Excluded(h) if key >= h.as_slice() => hi.clone(),
        _ => Bound::Included(key.to_vec()),
    }
}

/// True if no key lies between `lo` and `hi`.
pub(crate) fn is_empty(lo: &Bound<Vec<u8>>, hi: &Bound<Vec<u8>>) -> bool {
    match (lo, hi) {
        (Bound::Included(l), Bound::Included(h)) => l > h,
        (Bound::Included(l), Bound::Excluded(h)) | (Bound::Excluded(l), Bound::Included(h)) => {
            l >= h
        }
        (Bound::Excluded(l), Bound::Excluded(h)) => l >= h,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_ranges() {
        assert_eq!(
            prefix(b"ab"),
            (
                Bound::Included(b"ab".to_vec()),
                Bound::Excluded(b"ac".to_vec())
            )
        );
        assert_eq!(
            prefix(b"a\xff"),
            (
                Bound::Included(b"a\xff".to_vec()),
                Bound::Excluded(b"b".to_vec())
            )
        );
        assert_eq!(prefix(b"\xff\xff").1, Bound::Unbounded);
        assert_eq!(prefix(b"").1, Bound::Unbounded);
    }

    #[test]
    fn seek_narrows() {
        let lo = Bound::Included(b"b".to_vec());
        assert_eq!(raise(&lo, b"a"), lo);
        assert_eq!(raise(&lo, b"c"), Bound::Included(b"c".to_vec()));
        assert_eq!(
            raise(&Bound::Unbounded, b"c"),
            Bound::Included(b"c".to_vec())
        );
        let hi = Bound::Excluded(b"m".to_vec());
        assert_eq!(lower(&hi, b"z"), hi);
        assert_eq!(lower(&hi, b"c"), Bound::Included(b"c".to_vec()));
        assert!(is_empty(&Bound::Included(b"m".to_vec()), &hi));
        assert!(!is_empty(&Bound::Included(b"l".to_vec()), &hi));
    }
}
