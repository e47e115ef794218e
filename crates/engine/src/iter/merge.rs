//! [`MergingCursor`]: one sorted [`Cursor`] over many (memtables, level-0 tables, levels).
//!
//! Invariants:
//! 1. Moving forward, every child is positioned at its first entry `> key()` (or is
//!    invalid), except the current child, which is at `key()`. Moving backward, every child
//!    is at its last entry `< key()`, except the current one. A change of direction
//!    re-seeks the other children to restore this (as leveldb's merger does).
//! 2. Entries equal in key (which the store never produces: seqnos are unique) are all
//!    yielded, the earlier child first.
//! 3. After a child fails, the merging cursor returns the error and is invalid.
//!
//! The current child is chosen by a linear scan: a store has a handful of sources (one or
//! two memtables, the level-0 tables, one cursor per deeper level), where a scan beats a
//! heap's bookkeeping.

use std::cmp::Ordering;

use crate::cursor::Cursor;
use crate::error::Result;
use crate::key::compare_encoded;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Direction {
    Forward,
    Backward,
}

/// A cursor yielding the union of its children in key order.
pub(crate) struct MergingCursor {
    children: Vec<Box<dyn Cursor>>,
    current: Option<usize>,
    direction: Direction,
}

impl MergingCursor {
    /// Merges `children`; on equal keys the child listed first comes first.
    pub(crate) fn new(children: Vec<Box<dyn Cursor>>) -> MergingCursor {
        MergingCursor {
            children,
            current: None,
            direction: Direction::Forward,
        }
    }

    fn current_child(&self) -> Option<&dyn Cursor> {
        self.current
            .and_then(|i| self.children.get(i))
            .map(|c| c.as_ref())
    }

    fn pick_smallest(&mut self) {
        let mut best: Option<usize> = None;
        for (i, child) in self.children.iter().enumerate() {
            if !child.valid() {
                continue;
            }
            best = match best.and_then(|b| self.children.get(b).map(|c| (b, c))) {
                Some((b, c)) if compare_encoded(child.key(), c.key()) != Ordering::Less => Some(b),
                _ => Some(i),
            };
        }
        self.current = best;
    }

    fn pick_largest(&mut self) {
        let mut best: Option<usize> = None;
        for (i, child) in self.children.iter().enumerate().rev() {
            if !child.valid() {
                continue;
            }
            best = match best.and_then(|b| self.children.get(b).map(|c| (b, c))) {
                Some((b, c)) if compare_encoded(child.key(), c.key()) != Ordering::Greater => {
                    Some(b)
                }
                _ => Some(i),
            };
        }
        self.current = best;
    }

    fn fail<T>(&mut self, e: crate::Error) -> Result<T> {
        self.current = None;
        Err(e)
    }
}

impl Cursor for MergingCursor {
    fn valid(&self) -> bool {
        self.current_child().is_some_and(|c| c.valid())
    }

    fn key(&self) -> &[u8] {
        self.current_child().map_or(&[], |c| c.key())
    }

    fn value(&self) -> &[u8] {
        self.current_child().map_or(&[], |c| c.value())
    }

    fn seek_to_first(&mut self) -> Result<()> {
        for child in &mut self.children {
            if let Err(e) = child.seek_to_first() {
                return self.fail(e);
            }
        }
        self.direction = Direction::Forward;
        self.pick_smallest();
        Ok(())
    }

    fn seek_to_last(&mut self) -> Result<()> {
        for child in &mut self.children {
            if let Err(e) = child.seek_to_last() {
                return self.fail(e);
            }
        }
        self.direction = Direction::Backward;
        self.pick_largest();
        Ok(())
    }

    fn seek(&mut self, target: &[u8]) -> Result<()> {
        for child in &mut self.children {
            if let Err(e) = child.seek(target) {
                return self.fail(e);
            }
        }
        self.direction = Direction::Forward;
        self.pick_smallest();
        Ok(())
    }

    fn seek_for_prev(&mut self, target: &[u8]) -> Result<()> {
        for child in &mut self.children {
            if let Err(e) = child.seek_for_prev(target) {
                return self.fail(e);
            }
        }
        self.direction = Direction::Backward;
        self.pick_largest();
        Ok(())
    }

    fn next(&mut self) -> Result<()> {
        let Some(cur) = self.current else {
            return Ok(());
        };
        if self.direction == Direction::Backward {
            // Invariant 1: put every other child at its first entry > key().
            let key = self.key().to_vec();
            for (i, child) in self.children.iter_mut().enumerate() {
                if i == cur {
                    continue;
                }
                if let Err(e) = child.seek(&key) {
                    return self.fail(e);
                }
                if child.valid() && compare_encoded(child.key(), &key) == Ordering::Equal {
                    if let Err(e) = child.next() {
                        return self.fail(e);
                    }
                }
            }
            self.direction = Direction::Forward;
        }
        if let Some(child) = self.children.get_mut(cur) {
            if let Err(e) = child.next() {
                return self.fail(e);
            }
        }
        self.pick_smallest();
        Ok(())
    }

    fn prev(&mut self) -> Result<()> {
        let Some(cur) = self.current else {
            return Ok(());
        };
        if self.direction == Direction::Forward {
            // Invariant 1: put every other child at its last entry < key().
            let key = self.key().to_vec();
            for (i, child) in self.children.iter_mut().enumerate() {
                if i == cur {
                    continue;
                }
                if let Err(e) = child.seek_for_prev(&key) {
                    return self.fail(e);
                }
                if child.valid() && compare_encoded(child.key(), &key) == Ordering::Equal {
                    if let Err(e) = child.prev() {
                        return self.fail(e);
                    }
                }
            }
            self.direction = Direction::Backward;
        }
        if let Some(child) = self.children.get_mut(cur) {
            if let Err(e) = child.prev() {
                return self.fail(e);
            }
        }
        self.pick_largest();
        Ok(())
    }
}

/// A cursor over a sorted vector of `(encoded key, value)`; used by tests as the simplest
/// reference implementation of the [`Cursor`] contract.
#[cfg(test)]
#[derive(Debug, Default)]
pub(crate) struct VecCursor {
    entries: Vec<(Vec<u8>, Vec<u8>)>,
    pos: Option<usize>,
}

#[cfg(test)]
impl VecCursor {
    /// A cursor over `entries`, which must be sorted by [`compare_encoded`].
    pub(crate) fn new(entries: Vec<(Vec<u8>, Vec<u8>)>) -> VecCursor {
        VecCursor { entries, pos: None }
    }

    fn entry(&self) -> Option<&(Vec<u8>, Vec<u8>)> {
        self.pos.and_then(|p| self.entries.get(p))
    }
}

#[cfg(test)]
impl Cursor for VecCursor {
    fn valid(&self) -> bool {
        self.entry().is_some()
    }
    fn key(&self) -> &[u8] {
        self.entry().map_or(&[], |e| &e.0)
    }
    fn value(&self) -> &[u8] {
        self.entry().map_or(&[], |e| &e.1)
    }
    fn seek_to_first(&mut self) -> Result<()> {
        self.pos = (!self.entries.is_empty()).then_some(0);
        Ok(())
    }
    fn seek_to_last(&mut self) -> Result<()> {
        self.pos = self.entries.len().checked_sub(1);
        Ok(())
    }
    fn seek(&mut self, target: &[u8]) -> Result<()> {
        let i = self
            .entries
            .partition_point(|(k, _)| compare_encoded(k, target) == Ordering::Less);
        self.pos = (i < self.entries.len()).then_some(i);
        Ok(())
    }
    fn seek_for_prev(&mut self, target: &[u8]) -> Result<()> {
        let i = self
            .entries
            .partition_point(|(k, _)| compare_encoded(k, target) != Ordering::Greater);
        self.pos = i.checked_sub(1);
        Ok(())
    }
    fn next(&mut self) -> Result<()> {
        self.pos = self.pos.map(|p| p + 1).filter(|p| *p < self.entries.len());
        Ok(())
    }
    fn prev(&mut self) -> Result<()> {
        self.pos = self.pos.and_then(|p| p.checked_sub(1));
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]
mod tests {
    use super::*;
    use crate::key::{seek_key, InternalKey, Kind, SeqNo};
    use proptest::prelude::*;

    fn enc(user: &[u8], seqno: u64) -> Vec<u8> {
        InternalKey::new(user, SeqNo(seqno), Kind::Put)
            .encode()
            .unwrap()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]
        /// Any interleaving of moves over a merge agrees with the same moves over the
        /// sorted union.
        #[test]
        fn merge_matches_the_sorted_union(
            parts in proptest::collection::vec(
                proptest::collection::btree_set((0u8..20, 1u64..50), 0..15), 1..5),
            moves in proptest::collection::vec(0u8..6, 1..60),
            probe in (0u8..22, 0u64..52),
        ) {
            // Make keys unique across children, as the store guarantees.
            let mut seen = std::collections::BTreeSet::new();
            let mut children: Vec<Box<dyn Cursor>> = Vec::new();
            let mut all = Vec::new();
            for part in parts {
                let mut entries: Vec<(Vec<u8>, Vec<u8>)> = part
                    .into_iter()
                    .filter(|k| seen.insert(*k))
                    .map(|(u, s)| (enc(&[u], s), vec![u]))
                    .collect();
                entries.sort_by(|a, b| compare_encoded(&a.0, &b.0));
                all.extend(entries.clone());
                children.push(Box::new(VecCursor::new(entries)));
            }
            all.sort_by(|a, b| compare_encoded(&a.0, &b.0));
            let mut merged = MergingCursor::new(children);
            let mut model = VecCursor::new(all);
            let target = seek_key(&[probe.0], SeqNo(probe.1));
            for m in moves {
                match m {
                    0 => { merged.seek_to_first().unwrap(); model.seek_to_first().unwrap(); }
                    1 => { merged.seek_to_last().unwrap(); model.seek_to_last().unwrap(); }
                    2 => { merged.seek(&target).unwrap(); model.seek(&target).unwrap(); }
                    3 => { merged.seek_for_prev(&target).unwrap(); model.seek_for_prev(&target).unwrap(); }
                    4 => if model.valid() { merged.next().unwrap(); model.next().unwrap(); },
                    _ => if model.valid() { merged.prev().unwrap(); model.prev().unwrap(); },
                }
                prop_assert_eq!(merged.valid(), model.valid());
                prop_assert_eq!(merged.key(), model.key());
                prop_assert_eq!(merged.value(), model.value());
            }
        }
    }
}
