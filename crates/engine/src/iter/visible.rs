//! [`Visible`]: what a reader sees — the newest version of each user key at a snapshot
//! seqno, tombstones hidden, within user-key bounds — walked in one direction over a
//! merged [`Cursor`] of internal keys.
//!
//! Invariants:
//! 1. For each user key, exactly the newest version with seqno `<= snapshot` decides: a
//!    put yields the key once, a tombstone hides it. Versions above the snapshot are
//!    invisible whatever they are.
//! 2. Keys come strictly increasing (forward) or strictly decreasing (backward), all
//!    within the bounds.
//! 3. After an error (from a child cursor, or an undecodable key) every later call
//!    returns `Ok(None)`: an iterator stops for good after one error.
//! 4. A put hidden by a range tombstone (`rangedel.rs` invariant 2, at the snapshot) is
//!    treated exactly like a point tombstone at that version.

use std::ops::Bound;
use std::path::Path;

use crate::cursor::Cursor;
use crate::error::{Error, FileKind, Reason, Result};
use crate::key::{after_key, parse_encoded, seek_key, Kind, SeqNo};
use crate::rangedel::ReadTombstones;

/// A key and its value, as yielded to users.
pub(crate) type Pair = (Vec<u8>, Vec<u8>);

/// User-key bounds of a scan.
#[derive(Debug, Clone)]
pub(crate) struct Bounds {
    pub(crate) lo: Bound<Vec<u8>>,
    pub(crate) hi: Bound<Vec<u8>>,
}

impl Bounds {
    /// True if `key` is not below the lower bound.
    fn above_lo(&self, key: &[u8]) -> bool {
        match &self.lo {
            Bound::Unbounded => true,
            Bound::Included(lo) => key >= lo.as_slice(),
            Bound::Excluded(lo) => key > lo.as_slice(),
        }
    }

    /// True if `key` is not above the upper bound.
    fn below_hi(&self, key: &[u8]) -> bool {
        match &self.hi {
            Bound::Unbounded => true,
            Bound::Included(hi) => key <= hi.as_slice(),
            Bound::Excluded(hi) => key < hi.as_slice(),
        }
    }

    /// The bounds of all keys starting with `prefix`.
    pub(crate) fn prefix(prefix: &[u8]) -> Bounds {
        let mut end = prefix.to_vec();
        while end.last() == Some(&0xff) {
            end.pop();
        }
        let hi = match end.last_mut() {
            Some(last) => {
                *last += 1;
                Bound::Excluded(end)
            }
            None => Bound::Unbounded,
        };
        Bounds {
            lo: Bound::Included(prefix.to_vec()),
            hi,
        }
    }
}

fn bad_key() -> Error {
    Error::corruption(
        FileKind::Table,
        Path::new("<merged read>"),
        0,
        Reason::BadEntry("internal key shorter than its trailer or of an unknown kind"),
    )
}

/// Decodes a cursor key into `(user key, seqno, kind)`.
fn parse(key: &[u8]) -> Result<(&[u8], SeqNo, Kind)> {
    let (user, seqno, tag) = parse_encoded(key).ok_or_else(bad_key)?;
    let kind = Kind::from_u8(tag).ok_or_else(bad_key)?;
    Ok((user, seqno, kind))
}

/// One direction of a user-facing scan; see the module documentation.
pub(crate) struct Visible {
    cursor: Box<dyn Cursor>,
    snapshot: SeqNo,
    bounds: Bounds,
    started: bool,
    done: bool,
    /// A reused buffer for the user key whose versions are being skipped.
    scratch: Vec<u8>,
    /// Range tombstones applied on top of the versions (invariant 4).
    range_dels: ReadTombstones,
}

impl Visible {
    /// A scan of `cursor` at `snapshot` within `bounds`; nothing is read until the first
    /// call.
    pub(crate) fn new(cursor: Box<dyn Cursor>, snapshot: SeqNo, bounds: Bounds) -> Visible {
        Visible {
            cursor,
            snapshot,
            bounds,
            started: false,
            done: false,
            scratch: Vec::new(),
            range_dels: ReadTombstones::default(),
        }
    }

    /// Applies `range_dels` too (invariant 4).
    pub(crate) fn with_range_tombstones(mut self, range_dels: ReadTombstones) -> Visible {
        self.range_dels = range_dels;
        self
    }

    /// True if the version `(user, seqno)` of kind `kind` shows a value at the snapshot.
    fn shows(&self, user: &[u8], seqno: SeqNo, kind: Kind) -> bool {
        kind == Kind::Put && !self.range_dels.deletes(user, seqno, self.snapshot)
    }

    /// The next pair in ascending order.
    pub(crate) fn next_forward(&mut self) -> Result<Option<Pair>> {
        if self.done {
            return Ok(None);
        }
        let out = self.step_forward();
        if !matches!(out, Ok(Some(_))) {
            self.done = true;
        }
        out
    }

    /// The next pair in descending order.
    pub(crate) fn next_backward(&mut self) -> Result<Option<Pair>> {
        if self.done {
            return Ok(None);
        }
        let out = self.step_backward();
        if !matches!(out, Ok(Some(_))) {
            self.done = true;
        }
        out
    }

    /// Moves the cursor past the remaining (older) versions of `user`.
    fn skip_versions(cursor: &mut dyn Cursor, user: &[u8]) -> Result<()> {
        loop {
            cursor.next()?;
            if !cursor.valid() || parse(cursor.key())?.0 != user {
                return Ok(());
            }
        }
    }

    fn step_forward(&mut self) -> Result<Option<Pair>> {
        if !self.started {
            self.started = true;
            match &self.bounds.lo {
                Bound::Unbounded => self.cursor.seek_to_first()?,
                Bound::Included(k) => self.cursor.seek(&seek_key(k, SeqNo::MAX))?,
                Bound::Excluded(k) => self.cursor.seek(&after_key(k))?,
            }
        }
        while self.cursor.valid() {
            let (user, seqno, kind) = parse(self.cursor.key())?;
            if seqno > self.snapshot {
                self.cursor.next()?;
                continue;
            }
            if !self.bounds.below_hi(user) {
                return Ok(None);
            }
            if self.shows(user, seqno, kind) {
                let key = user.to_vec();
                let value = self.cursor.value().to_vec();
                Self::skip_versions(self.cursor.as_mut(), &key)?;
                return Ok(Some((key, value)));
            }
            self.scratch.clear();
            self.scratch.extend_from_slice(user);
            Self::skip_versions(self.cursor.as_mut(), &self.scratch)?;
        }
        Ok(None)
    }

    fn step_backward(&mut self) -> Result<Option<Pair>> {
        if !self.started {
            self.started = true;
            match &self.bounds.hi {
                Bound::Unbounded => self.cursor.seek_to_last()?,
                Bound::Included(k) => self.cursor.seek_for_prev(&after_key(k))?,
                Bound::Excluded(k) => self.cursor.seek_for_prev(&seek_key(k, SeqNo::MAX))?,
            }
        }
        // Versions of one user key arrive oldest first; the last visible one decides.
        // `scratch` holds the candidate's user key, `value` its value.
        let mut candidate: Option<(SeqNo, Kind)> = None;
        let mut value: Vec<u8> = Vec::new();
        while self.cursor.valid() {
            let (user, seqno, kind) = parse(self.cursor.key())?;
            if let Some((cand_seqno, cand_kind)) = candidate {
                if self.scratch.as_slice() != user {
                    if self.shows(&self.scratch, cand_seqno, cand_kind) {
                        return Ok(Some((self.scratch.clone(), value)));
                    }
                    candidate = None;
                }
            }
            if !self.bounds.above_lo(user) {
                break;
            }
            if seqno <= self.snapshot {
                if candidate.is_none() {
                    self.scratch.clear();
                    self.scratch.extend_from_slice(user);
                }
                candidate = Some((seqno, kind));
                value.clear();
                value.extend_from_slice(self.cursor.value());
            }
            self.cursor.prev()?;
        }
        Ok(match candidate {
            Some((seqno, kind)) if self.shows(&self.scratch, seqno, kind) => {
                Some((self.scratch.clone(), value))
            }
            _ => None,
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::iter::merge::VecCursor;
    use crate::key::{compare_encoded, InternalKey};
    use proptest::prelude::*;

    fn bound(b: (u8, u8)) -> Bound<Vec<u8>> {
        match b.0 {
            0 => Bound::Unbounded,
            1 => Bound::Included(vec![b.1]),
            _ => Bound::Excluded(vec![b.1]),
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]
        #[test]
        fn scans_match_a_model_at_every_snapshot(
            ops in proptest::collection::vec((0u8..12, any::<bool>()), 0..60),
            snapshot in 0u64..70,
            lo in (0u8..3, 0u8..12),
            hi in (0u8..3, 0u8..12),
        ) {
            let mut entries = Vec::new();
            let mut model = BTreeMap::new();
            for (i, (key, put)) in ops.iter().enumerate() {
                let seqno = i as u64 + 1;
                let kind = if *put { Kind::Put } else { Kind::Delete };
                let value = if *put { vec![*key, i as u8] } else { vec![] };
                entries.push((InternalKey::new(vec![*key], SeqNo(seqno), kind).encode().unwrap(), value.clone()));
                if seqno <= snapshot {
                    if *put { model.insert(vec![*key], value); } else { model.remove(&vec![*key]); }
                }
            }
            entries.sort_by(|a, b| compare_encoded(&a.0, &b.0));
            let bounds = Bounds { lo: bound(lo), hi: bound(hi) };
            let expected: Vec<Pair> = model
                .into_iter()
                .filter(|(k, _)| bounds.above_lo(k) && bounds.below_hi(k))
                .collect();

            let mut fwd = Visible::new(Box::new(VecCursor::new(entries.clone())), SeqNo(snapshot), bounds.clone());
            let mut got = Vec::new();
            while let Some(p) = fwd.next_forward().unwrap() { got.push(p); }
            prop_assert_eq!(&got, &expected);

            let mut back = Visible::new(Box::new(VecCursor::new(entries)), SeqNo(snapshot), bounds);
            let mut got = Vec::new();
            while let Some(p) = back.next_backward().unwrap() { got.push(p); }
            got.reverse();
            prop_assert_eq!(&got, &expected);
        }
    }

    #[test]
    fn prefix_bounds_cover_exactly_the_prefix() {
        let b = Bounds::prefix(b"ab");
        assert!(b.above_lo(b"ab") && b.below_hi(b"ab\xff\xff"));
        assert!(!b.below_hi(b"ac") && !b.above_lo(b"aa\xff"));
        let b = Bounds::prefix(b"a\xff");
        assert!(b.below_hi(b"a\xff\xff") && !b.below_hi(b"b"));
        let b = Bounds::prefix(b"\xff\xff");
        assert!(b.below_hi(b"\xff\xff\xff\xff") && matches!(b.hi, Bound::Unbounded));
        let b = Bounds::prefix(b"");
        assert!(matches!(b.hi, Bound::Unbounded) && b.above_lo(b""));
    }

    #[test]
    fn an_undecodable_key_is_an_error_then_the_scan_stops() {
        let mut v = Visible::new(
            Box::new(VecCursor::new(vec![(b"short".to_vec(), vec![])])),
            SeqNo(9),
            Bounds {
                lo: Bound::Unbounded,
                hi: Bound::Unbounded,
            },
        );
        assert!(v.next_forward().unwrap_err().is_corruption());
        assert!(v.next_forward().unwrap().is_none());
    }
}
