//! Range tombstones: a [`RangeTombstone`] removes every key in `[start, end)` of one
//! keyspace as of its seqno; [`Fragments`] answers "which tombstones cover this key" for a
//! reader at a snapshot, and for compaction.
//!
//! Owns: the normalisation of user ranges (any `RangeBounds`, a prefix) to a half-open
//! `[start, end)` on user keys, the representation of an unbounded end, clipping, the
//! boundaries a table holding tombstones claims, and the fragmented, queryable set. Does
//! not own any byte layout (the write batch and the table's range-tombstone block
//! document theirs) nor where tombstones are kept (memtables, tables, the super version).
//!
//! Invariants:
//! 1. A tombstone is never empty: `end` is empty (unbounded, +infinity) or `start < end`.
//!    An empty `end` can mean nothing else, since no bounded range ending at the empty key
//!    holds a key.
//! 2. A version of key `k` with seqno `s` is deleted for a reader at seqno `r` iff some
//!    tombstone covering `k` has `s < t.seqno <= r`. A tombstone never deletes a version
//!    of its own seqno or a newer one.
//! 3. [`Fragments`] holds non-overlapping pieces in key order; each piece lists the seqnos
//!    of every tombstone covering all of it, newest first, without duplicates. Queries
//!    are a binary search over the pieces plus one over the piece's seqnos.
//!
//! Cost: tombstones are expected to be few (a range delete is a rare, bulk operation).
//! Fragmenting `n` tombstones takes `O(n log n)` plus the output size, which is `O(n)`
//! pieces for disjoint or nested-free ranges and at most `O(n^2)` seqno entries when every
//! range overlaps every other. The read path builds one set per keyspace per super version
//! (see `db/tombstones.rs`), so the cost is paid once per flush or compaction, not per read.
//!
//! Thread-safety: plain data; `Fragments` is shared read-only through `Arc`.

use std::collections::BTreeMap;
use std::ops::{Bound, RangeBounds};

use crate::error::{Error, Result};
use crate::key::{check_key_len, SeqNo, MAX_KEY_LEN};

/// One range tombstone: every key in `[start, end)` is removed as of `seqno`. An empty
/// `end` means unbounded (invariant 1).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct RangeTombstone {
    /// First key removed.
    pub(crate) start: Vec<u8>,
    /// First key after the range; empty for "no end".
    pub(crate) end: Vec<u8>,
    /// The write that recorded it.
    pub(crate) seqno: SeqNo,
}

/// True if `key` is below the exclusive `end` (empty `end`: unbounded, always true).
pub(crate) fn below_end(key: &[u8], end: &[u8]) -> bool {
    end.is_empty() || key < end
}

/// Orders two exclusive ends, an empty (unbounded) end being the largest.
fn cmp_end(a: &[u8], b: &[u8]) -> std::cmp::Ordering {
    match (a.is_empty(), b.is_empty()) {
        (true, true) => std::cmp::Ordering::Equal,
        (true, false) => std::cmp::Ordering::Greater,
        (false, true) => std::cmp::Ordering::Less,
        (false, false) => a.cmp(b),
    }
}

/// The smallest key greater than `key`: `key` followed by a zero byte.
pub(crate) fn successor(key: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(key.len() + 1);
    out.extend_from_slice(key);
    out.push(0);
    out
}

/// The largest valid user key: 65,535 bytes of `0xff`. Every key is at most this.
pub(crate) fn max_user_key() -> Vec<u8> {
    vec![0xff; MAX_KEY_LEN]
}

impl RangeTombstone {
    /// A tombstone, or `None` if `[start, end)` holds no key.
    pub(crate) fn new(start: Vec<u8>, end: Vec<u8>, seqno: SeqNo) -> Option<RangeTombstone> {
        (end.is_empty() || start < end).then_some(RangeTombstone { start, end, seqno })
    }

    /// True if `key` lies in `[start, end)`.
    #[cfg(test)]
    pub(crate) fn covers(&self, key: &[u8]) -> bool {
        key >= self.start.as_slice() && below_end(key, &self.end)
    }

    /// The part of this tombstone inside `[lo, hi)` (`hi` empty: unbounded), if any.
    pub(crate) fn clip(&self, lo: &[u8], hi: &[u8]) -> Option<RangeTombstone> {
        let start = if lo > self.start.as_slice() {
            lo
        } else {
            &self.start
        };
        let end = if cmp_end(hi, &self.end).is_lt() {
            hi
        } else {
            &self.end
        };
        RangeTombstone::new(start.to_vec(), end.to_vec(), self.seqno)
    }

    /// The smallest user key a table holding this tombstone claims: `start`.
    pub(crate) fn claim_lo(&self) -> &[u8] {
        &self.start
    }

    /// The largest user key (inclusive) a table holding this tombstone claims: the key
    /// just before `end` when `end` ends in a zero byte (exactly the key it was made
    /// from by [`successor`]), else `end` itself (one key more than needed, harmless:
    /// claims only widen what reads and compaction consider), or the largest valid key
    /// for an unbounded end.
    pub(crate) fn claim_hi(&self) -> Vec<u8> {
        match self.end.split_last() {
            None => max_user_key(),
            Some((0, head)) => head.to_vec(),
            Some(_) => self.end.clone(),
        }
    }
}

fn bound_start(b: Bound<&[u8]>) -> Vec<u8> {
    match b {
        Bound::Included(k) => k.to_vec(),
        Bound::Excluded(k) => successor(k),
        Bound::Unbounded => Vec::new(),
    }
}

fn bound_end(b: Bound<&[u8]>) -> Vec<u8> {
    match b {
        Bound::Included(k) => successor(k),
        Bound::Excluded(k) => k.to_vec(),
        Bound::Unbounded => Vec::new(),
    }
}

/// Normalises `range` to the half-open `[start, end)` it denotes on user keys (`end`
/// empty: unbounded): an excluded start or an included end becomes its [`successor`].
/// Returns `None` if the range holds no key (then nothing need be written).
///
/// # Errors
/// `InvalidArgument` if a normalised bound is longer than the key limit (an excluded start
/// or included end of exactly 65,535 bytes, or a longer bound).
pub(crate) fn normalize<K: AsRef<[u8]>, R: RangeBounds<K>>(
    range: &R,
) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
    let start = bound_start(range.start_bound().map(|k| k.as_ref()));
    let end = bound_end(range.end_bound().map(|k| k.as_ref()));
    if !range.end_bound().map(|k| k.as_ref()).eq(&Bound::Unbounded) && end.is_empty() {
        // An excluded empty end: `..b""` holds no key.
        return Ok(None);
    }
    check_key_len(&start)
        .and_then(|()| check_key_len(&end))
        .map_err(|_| {
            Error::invalid("a range bound is too long (its successor passes the key limit)")
        })?;
    Ok((end.is_empty() || start < end).then_some((start, end)))
}

/// The range `[prefix, end)` of every key starting with `prefix`: `end` is the prefix
/// without its trailing `0xff` bytes, last byte incremented; empty (unbounded) if the
/// prefix is empty or all `0xff`.
///
/// # Errors
/// `InvalidArgument` if the prefix is longer than the key limit.
pub(crate) fn prefix_range(prefix: &[u8]) -> Result<(Vec<u8>, Vec<u8>)> {
    check_key_len(prefix)?;
    let mut end = prefix.to_vec();
    while end.last() == Some(&0xff) {
        end.pop();
    }
    if let Some(last) = end.last_mut() {
        *last += 1;
    }
    Ok((prefix.to_vec(), end))
}

/// One piece of a fragmented set: `[start, end)` and the seqnos of the tombstones that
/// cover it, newest first.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Piece {
    start: Vec<u8>,
    /// Empty: unbounded (only the last piece).
    end: Vec<u8>,
    seqnos: Vec<SeqNo>,
}

/// A set of range tombstones cut into non-overlapping pieces (module invariant 3).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Fragments {
    pieces: Vec<Piece>,
}

impl Fragments {
    /// Fragments `tombstones` (any order, duplicates allowed).
    pub(crate) fn build<'a>(tombstones: impl IntoIterator<Item = &'a RangeTombstone>) -> Fragments {
        let mut list: Vec<&RangeTombstone> = tombstones.into_iter().collect();
        if list.is_empty() {
            return Fragments::default();
        }
        list.sort_by(|a, b| a.start.cmp(&b.start));
        // Every boundary (starts and bounded ends), ascending and distinct.
        let mut bounds: Vec<&[u8]> = list
            .iter()
            .flat_map(|t| {
                std::iter::once(t.start.as_slice())
                    .chain((!t.end.is_empty()).then_some(t.end.as_slice()))
            })
            .collect();
        bounds.sort();
        bounds.dedup();
        // Sweep: `active` maps each seqno to the ends of the tombstones with that seqno
        // that started at or before the current boundary.
        let mut active: BTreeMap<SeqNo, Vec<&[u8]>> = BTreeMap::new();
        let mut next = 0usize;
        let mut pieces: Vec<Piece> = Vec::new();
        for (i, &at) in bounds.iter().enumerate() {
            while let Some(t) = list.get(next).filter(|t| t.start.as_slice() <= at) {
                active.entry(t.seqno).or_default().push(&t.end);
                next += 1;
            }
            active.retain(|_, ends| {
                ends.retain(|e| below_end(at, e));
                !ends.is_empty()
            });
            if active.is_empty() {
                continue;
            }
            let end = bounds.get(i + 1).map_or(Vec::new(), |e| e.to_vec());
            let seqnos: Vec<SeqNo> = active.keys().rev().copied().collect();
            match pieces.last_mut() {
                Some(last) if last.end.as_slice() == at && last.seqnos == seqnos => last.end = end,
                _ => pieces.push(Piece {
                    start: at.to_vec(),
                    end,
                    seqnos,
                }),
            }
        }
        Fragments { pieces }
    }

    /// True if the set holds no tombstone.
    pub(crate) fn is_empty(&self) -> bool {
        self.pieces.is_empty()
    }

    /// Number of pieces.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.pieces.len()
    }

    /// The seqnos of the tombstones covering `key`, newest first (empty if none).
    fn seqnos_at(&self, key: &[u8]) -> &[SeqNo] {
        let after = self.pieces.partition_point(|p| p.start.as_slice() <= key);
        after
            .checked_sub(1)
            .and_then(|i| self.pieces.get(i))
            .filter(|p| below_end(key, &p.end))
            .map_or(&[], |p| p.seqnos.as_slice())
    }

    /// The newest seqno `<= at` of a tombstone covering `key`.
    pub(crate) fn newest_covering(&self, key: &[u8], at: SeqNo) -> Option<SeqNo> {
        let seqnos = self.seqnos_at(key);
        let i = seqnos.partition_point(|s| *s > at);
        seqnos.get(i).copied()
    }

    /// The oldest seqno `> above` of a tombstone covering `key`.
    pub(crate) fn oldest_covering_above(&self, key: &[u8], above: SeqNo) -> Option<SeqNo> {
        let seqnos = self.seqnos_at(key);
        let i = seqnos.partition_point(|s| *s > above);
        i.checked_sub(1).and_then(|i| seqnos.get(i)).copied()
    }

    /// True if a reader at `at` must not see the version of `key` with seqno `seqno`
    /// (module invariant 2).
    pub(crate) fn deletes(&self, key: &[u8], seqno: SeqNo, at: SeqNo) -> bool {
        self.newest_covering(key, at).is_some_and(|t| t > seqno)
    }

    /// The pieces as tombstones (one per piece and seqno), in key order.
    pub(crate) fn tombstones(&self) -> impl Iterator<Item = RangeTombstone> + '_ {
        self.pieces.iter().flat_map(|p| {
            p.seqnos.iter().map(move |s| RangeTombstone {
                start: p.start.clone(),
                end: p.end.clone(),
                seqno: *s,
            })
        })
    }
}

/// The tombstones a reader applies: fragments cached per super version plus the ones of
/// the active memtable, which grows after the super version was built.
#[derive(Debug, Clone, Default)]
pub(crate) struct ReadTombstones {
    sets: Vec<std::sync::Arc<Fragments>>,
}

impl ReadTombstones {
    /// The union of `sets` (empty sets are left out).
    pub(crate) fn new(sets: impl IntoIterator<Item = std::sync::Arc<Fragments>>) -> Self {
        ReadTombstones {
            sets: sets.into_iter().filter(|s| !s.is_empty()).collect(),
        }
    }

    /// Every tombstone of every set (a piece per seqno; see [`Fragments::tombstones`]).
    pub(crate) fn tombstones(&self) -> impl Iterator<Item = RangeTombstone> + '_ {
        self.sets.iter().flat_map(|s| s.tombstones())
    }

    /// As [`Fragments::deletes`], over every set.
    pub(crate) fn deletes(&self, key: &[u8], seqno: SeqNo, at: SeqNo) -> bool {
        self.sets.iter().any(|s| s.deletes(key, seqno, at))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn t(start: &[u8], end: &[u8], seqno: u64) -> RangeTombstone {
        RangeTombstone::new(start.to_vec(), end.to_vec(), SeqNo(seqno)).unwrap()
    }

    #[test]
    fn normalize_handles_every_bound_kind() {
        type Normalized = Result<Option<(Vec<u8>, Vec<u8>)>>;
        let n = |r: &dyn Fn() -> Normalized| r().unwrap();
        assert_eq!(
            n(&|| normalize(&(b"a".as_slice()..b"c".as_slice()))),
            Some((b"a".to_vec(), b"c".to_vec()))
        );
        assert_eq!(
            n(&|| normalize(&(b"a".as_slice()..=b"c".as_slice()))),
            Some((b"a".to_vec(), b"c\0".to_vec()))
        );
        assert_eq!(
            n(&|| normalize::<&[u8], _>(&(Bound::Excluded(b"a".as_slice()), Bound::Unbounded))),
            Some((b"a\0".to_vec(), Vec::new()))
        );
        assert_eq!(
            n(&|| normalize::<&[u8], _>(&(..))),
            Some((Vec::new(), Vec::new()))
        );
        assert_eq!(n(&|| normalize(&(b"c".as_slice()..b"a".as_slice()))), None);
        assert_eq!(n(&|| normalize(&(b"c".as_slice()..b"c".as_slice()))), None);
        assert_eq!(n(&|| normalize(&(..b"".as_slice()))), None);
        assert_eq!(
            n(&|| normalize(&(..=b"".as_slice()))),
            Some((Vec::new(), vec![0]))
        );
        let long = vec![1u8; MAX_KEY_LEN];
        assert!(normalize(&(long.as_slice()..)).unwrap().is_some());
        assert!(matches!(
            normalize(&(..=long.as_slice())),
            Err(Error::InvalidArgument(_))
        ));
    }

    #[test]
    fn prefix_ranges_cover_exactly_the_prefix() {
        assert_eq!(
            prefix_range(b"ab").unwrap(),
            (b"ab".to_vec(), b"ac".to_vec())
        );
        assert_eq!(
            prefix_range(b"a\xff").unwrap(),
            (b"a\xff".to_vec(), b"b".to_vec())
        );
        assert_eq!(
            prefix_range(b"\xff").unwrap(),
            (b"\xff".to_vec(), Vec::new())
        );
        assert_eq!(prefix_range(b"").unwrap(), (Vec::new(), Vec::new()));
    }

    #[test]
    fn clipping_and_claims() {
        let x = t(b"b", b"f", 5);
        assert_eq!(x.clip(b"a", b"z"), Some(x.clone()));
        assert_eq!(x.clip(b"c", b"d"), Some(t(b"c", b"d", 5)));
        assert_eq!(x.clip(b"f", b""), None);
        assert_eq!(x.clip(b"", b"b"), None);
        let open = t(b"b", b"", 5);
        assert_eq!(open.clip(b"a", b""), Some(open.clone()));
        assert_eq!(open.clip(b"c", b"d"), Some(t(b"c", b"d", 5)));
        assert_eq!(open.claim_hi(), max_user_key());
        assert_eq!(t(b"a", b"k\0", 1).claim_hi(), b"k".to_vec());
        assert_eq!(x.claim_hi(), b"f".to_vec());
        assert_eq!(x.claim_lo(), b"b");
        assert!(x.covers(b"b") && x.covers(b"ezz") && !x.covers(b"f") && !x.covers(b"a"));
        assert!(open.covers(&max_user_key()));
    }

    #[test]
    fn fragments_of_overlapping_ranges() {
        let f = Fragments::build(&[t(b"a", b"e", 3), t(b"c", b"g", 7), t(b"x", b"", 2)]);
        // [a,c) {3}, [c,e) {7,3}, [e,g) {7}, [x,inf) {2}
        assert_eq!(f.len(), 4);
        assert_eq!(f.newest_covering(b"b", SeqNo(10)), Some(SeqNo(3)));
        assert_eq!(f.newest_covering(b"d", SeqNo(10)), Some(SeqNo(7)));
        assert_eq!(f.newest_covering(b"d", SeqNo(6)), Some(SeqNo(3)));
        assert_eq!(f.newest_covering(b"d", SeqNo(2)), None);
        assert_eq!(f.newest_covering(b"g", SeqNo(10)), None);
        assert_eq!(f.newest_covering(b"\xff\xff", SeqNo(10)), Some(SeqNo(2)));
        assert_eq!(f.oldest_covering_above(b"d", SeqNo(1)), Some(SeqNo(3)));
        assert_eq!(f.oldest_covering_above(b"d", SeqNo(3)), Some(SeqNo(7)));
        assert_eq!(f.oldest_covering_above(b"d", SeqNo(7)), None);
        assert!(f.deletes(b"d", SeqNo(5), SeqNo(7)));
        assert!(!f.deletes(b"d", SeqNo(7), SeqNo(9)), "not its own seqno");
        assert!(!f.deletes(b"d", SeqNo(5), SeqNo(6)), "not above the reader");
    }

    #[test]
    fn adjacent_pieces_of_one_tombstone_merge_back() {
        let f = Fragments::build(&[t(b"a", b"c", 4), t(b"c", b"e", 4), t(b"a", b"c", 4)]);
        assert_eq!(f.len(), 1);
        assert_eq!(f.tombstones().collect::<Vec<_>>(), vec![t(b"a", b"e", 4)]);
        assert!(Fragments::build(&[]).is_empty());
    }

    proptest! {
        /// Fragmenting never changes which tombstones cover a key.
        #[test]
        fn fragments_agree_with_brute_force(
            raw in proptest::collection::vec((0u8..8, 0u8..9, 1u64..20), 0..12),
            key in proptest::collection::vec(0u8..9, 0..3),
            at in 0u64..25,
            above in 0u64..25,
        ) {
            let list: Vec<RangeTombstone> = raw
                .iter()
                .filter_map(|(s, e, q)| {
                    let end = if *e == 8 { Vec::new() } else { vec![*e] };
                    RangeTombstone::new(vec![*s], end, SeqNo(*q))
                })
                .collect();
            let f = Fragments::build(&list);
            let covering: Vec<SeqNo> =
                list.iter().filter(|t| t.covers(&key)).map(|t| t.seqno).collect();
            let newest = covering.iter().filter(|s| **s <= SeqNo(at)).max().copied();
            let oldest = covering.iter().filter(|s| **s > SeqNo(above)).min().copied();
            prop_assert_eq!(f.newest_covering(&key, SeqNo(at)), newest);
            prop_assert_eq!(f.oldest_covering_above(&key, SeqNo(above)), oldest);
            // Re-fragmenting the pieces gives the same set.
            let again: Vec<RangeTombstone> = f.tombstones().collect();
            prop_assert_eq!(Fragments::build(&again), f);
        }
    }
}
