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
//! 4. `heap` holds exactly the valid children, as a binary heap in the order of the
//!    direction (smallest key first forward, largest first backward); its root is the
//!    current child. A step moves the root and sifts it down: about `2·log2(n)` key
//!    comparisons, against `n` for a linear scan. A store can have a dozen sources (up to
//!    nine memtables, the level-0 tables, one cursor per deeper level), and scans spent a
//!    third of their time choosing among them with a scan.

use std::cmp::Ordering;

use crate::cursor::Cursor;
use crate::error::Result;
use crate::key::{compare_encoded, user_key_of};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Direction {
    Forward,
    Backward,
}

/// A cursor yielding the union of its children in key order.
pub(crate) struct MergingCursor {
    children: Vec<Box<dyn Cursor>>,
    /// Indices of the valid children, a heap in `direction` order (invariant 4).
    heap: Vec<usize>,
    direction: Direction,
}

impl MergingCursor {
    /// Merges `children`; on equal keys the child listed first comes first.
    pub(crate) fn new(children: Vec<Box<dyn Cursor>>) -> MergingCursor {
        let heap = Vec::with_capacity(children.len());
        MergingCursor {
            children,
            heap,
            direction: Direction::Forward,
        }
    }

    fn current_child(&self) -> Option<&dyn Cursor> {
        self.heap
            .first()
            .and_then(|&i| self.children.get(i))
            .map(|c| c.as_ref())
    }

    /// True if child `a` comes before child `b` in the current direction: by key, then
    /// (equal keys) the earlier child first forward and the later one first backward, so
    /// a backward walk yields exactly the forward order reversed.
    fn before(&self, a: usize, b: usize) -> bool {
        let (Some(ca), Some(cb)) = (self.children.get(a), self.children.get(b)) else {
            return false;
        };
        let order = compare_encoded(ca.key(), cb.key()).then(a.cmp(&b));
        match self.direction {
            Direction::Forward => order == Ordering::Less,
            Direction::Backward => order == Ordering::Greater,
        }
    }

    /// Restores the heap order below position `pos`.
    fn sift_down(&mut self, mut pos: usize) {
        let len = self.heap.len();
        loop {
            let left = 2 * pos + 1;
            if left >= len {
                return;
            }
            let right = left + 1;
            let (Some(&l), Some(&p)) = (self.heap.get(left), self.heap.get(pos)) else {
                return;
            };
            let mut child = left;
            let mut child_idx = l;
            if let Some(&r) = self.heap.get(right) {
                if self.before(r, l) {
                    child = right;
                    child_idx = r;
                }
            }
            if !self.before(child_idx, p) {
                return;
            }
            self.heap.swap(pos, child);
            pos = child;
        }
    }

    /// Rebuilds the heap from every valid child, in `direction` order.
    fn rebuild(&mut self) {
        self.heap.clear();
        for (i, child) in self.children.iter().enumerate() {
            if child.valid() {
                self.heap.push(i);
            }
        }
        for pos in (0..self.heap.len() / 2).rev() {
            self.sift_down(pos);
        }
    }

    /// After the current child (the root) moved: sifts it down, or drops it from the heap
    /// if it is no longer valid.
    fn fix_root(&mut self) {
        let Some(&root) = self.heap.first() else {
            return;
        };
        let valid = self.children.get(root).is_some_and(|c| c.valid());
        if !valid {
            self.heap.swap_remove(0);
        }
        self.sift_down(0);
    }

    fn fail<T>(&mut self, e: crate::Error) -> Result<T> {
        self.heap.clear();
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

    fn current(&self) -> Option<(&[u8], &[u8])> {
        self.current_child().and_then(|c| c.current())
    }

    /// The current child answers for its own entries. Every other child stands at its
    /// first entry past the current one in the walk's direction (invariant 1), and a
    /// child holding the current user key further on would stand on that key (entries
    /// between two versions of a key are versions of it), so the nearest of them, one of
    /// the root's two children in the heap, would hold it: checking those two suffices.
    fn only_version(&self) -> bool {
        let Some(current) = self.current_child() else {
            return false;
        };
        if !current.only_version() {
            return false;
        }
        let user = user_key_of(current.key());
        self.heap.iter().skip(1).take(2).all(|&i| {
            self.children
                .get(i)
                .is_some_and(|c| user_key_of(c.key()) != user)
        })
    }

    fn seek_to_first(&mut self) -> Result<()> {
        for child in &mut self.children {
            if let Err(e) = child.seek_to_first() {
                return self.fail(e);
            }
        }
        self.direction = Direction::Forward;
        self.rebuild();
        Ok(())
    }

    fn seek_to_last(&mut self) -> Result<()> {
        for child in &mut self.children {
            if let Err(e) = child.seek_to_last() {
                return self.fail(e);
            }
        }
        self.direction = Direction::Backward;
        self.rebuild();
        Ok(())
    }

    fn seek(&mut self, target: &[u8]) -> Result<()> {
        for child in &mut self.children {
            if let Err(e) = child.seek(target) {
                return self.fail(e);
            }
        }
        self.direction = Direction::Forward;
        self.rebuild();
        Ok(())
    }

    fn seek_for_prev(&mut self, target: &[u8]) -> Result<()> {
        for child in &mut self.children {
            if let Err(e) = child.seek_for_prev(target) {
                return self.fail(e);
            }
        }
        self.direction = Direction::Backward;
        self.rebuild();
        Ok(())
    }

    fn next(&mut self) -> Result<()> {
        let Some(&cur) = self.heap.first() else {
            return Ok(());
        };
        let turn = self.direction == Direction::Backward;
        if turn {
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
        if turn {
            self.rebuild();
        } else {
            self.fix_root();
        }
        Ok(())
    }

    fn prev(&mut self) -> Result<()> {
        let Some(&cur) = self.heap.first() else {
            return Ok(());
        };
        let turn = self.direction == Direction::Forward;
        if turn {
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
        if turn {
            self.rebuild();
        } else {
            self.fix_root();
        }
        Ok(())
    }
}

/// Test helper: makes move `m` on `cursor` and on `model` alike (0 `seek_to_first`, 1
/// `seek_to_last`, 2 `seek(target)`, 3 `seek_for_prev(target)`, 4 `next`, 5 `prev`; the
/// steps only while the model is on an entry), then checks that both agree through
/// `valid`, `key`, `value` and `current`: `Err` says how they differ.
#[cfg(test)]
pub(crate) fn mirror_move(
    cursor: &mut dyn Cursor,
    model: &mut VecCursor,
    m: u8,
    target: &[u8],
) -> std::result::Result<(), String> {
    let moved = match m {
        0 => cursor.seek_to_first().and(model.seek_to_first()),
        1 => cursor.seek_to_last().and(model.seek_to_last()),
        2 => cursor.seek(target).and(model.seek(target)),
        3 => cursor
            .seek_for_prev(target)
            .and(model.seek_for_prev(target)),
        4 if model.valid() => cursor.next().and(model.next()),
        5 if model.valid() => cursor.prev().and(model.prev()),
        _ => Ok(()),
    };
    moved.map_err(|e| format!("move {m} failed: {e}"))?;
    let expected = model.valid().then(|| (model.key(), model.value()));
    let each = cursor.valid().then(|| (cursor.key(), cursor.value()));
    if each != expected || cursor.current() != expected {
        return Err(format!(
            "after move {m}: valid/key/value {each:?}, current {:?}, model {expected:?}",
            cursor.current()
        ));
    }
    Ok(())
}

/// A cursor over a sorted vector of `(encoded key, value)`; used by tests as the simplest
/// reference implementation of the [`Cursor`] contract.
#[cfg(test)]
#[derive(Debug, Default)]
pub(crate) struct VecCursor {
    entries: Vec<(Vec<u8>, Vec<u8>)>,
    pos: Option<usize>,
    /// Answer [`Cursor::only_version`] (from the neighbours' user keys) instead of `false`.
    knows_versions: bool,
}

#[cfg(test)]
impl VecCursor {
    /// A cursor over `entries`, which must be sorted by [`compare_encoded`].
    pub(crate) fn new(entries: Vec<(Vec<u8>, Vec<u8>)>) -> VecCursor {
        VecCursor {
            entries,
            pos: None,
            knows_versions: false,
        }
    }

    /// The same cursor, answering [`Cursor::only_version`] as a table with distinct keys
    /// does: true for an entry whose neighbours hold other user keys.
    pub(crate) fn knowing_versions(mut self) -> VecCursor {
        self.knows_versions = true;
        self
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
    fn only_version(&self) -> bool {
        let user = |i: usize| {
            self.entries
                .get(i)
                .and_then(|(k, _)| crate::key::split_encoded(k))
                .map(|(u, _)| u)
        };
        match self.pos {
            Some(p) if self.knows_versions && user(p).is_some() => {
                let me = user(p);
                p.checked_sub(1).and_then(user) != me && user(p + 1) != me
            }
            _ => false,
        }
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
                proptest::collection::btree_set((0u8..20, 1u64..50), 0..15), 1..14),
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
                children.push(Box::new(VecCursor::new(entries).knowing_versions()));
            }
            all.sort_by(|a, b| compare_encoded(&a.0, &b.0));
            let mut merged = MergingCursor::new(children);
            let mut model = VecCursor::new(all.clone());
            let target = seek_key(&[probe.0], SeqNo(probe.1));
            for m in moves {
                let agreed = mirror_move(&mut merged, &mut model, m, &target);
                prop_assert!(agreed.is_ok(), "{:?}", agreed);
                // Claimed single versions hold in the union, in the direction of the move
                // (moves 0, 2 and 4 go forward).
                if merged.only_version() {
                    let user = user_key_of(merged.key());
                    let at = all.iter().position(|(k, _)| k.as_slice() == merged.key());
                    prop_assert!(at.is_some());
                    let at = at.unwrap_or_default();
                    let ahead = if m % 2 == 0 { &all[at + 1..] } else { &all[..at] };
                    prop_assert!(
                        ahead.iter().all(|(k, _)| user_key_of(k) != user),
                        "move {}: {:?} is not the last version ahead", m, merged.key()
                    );
                }
            }
        }

        /// Keys present in several children (which the store never writes) come out
        /// earlier child first in a forward walk, and in exactly the reverse order in a
        /// backward walk, across heaps of many shapes.
        #[test]
        fn equal_keys_keep_child_order_both_ways(
            parts in proptest::collection::vec(
                proptest::collection::btree_set(0u8..12, 0..10), 1..12),
        ) {
            let mut children: Vec<Box<dyn Cursor>> = Vec::new();
            let mut all = Vec::new();
            for (child, part) in parts.into_iter().enumerate() {
                let entries: Vec<(Vec<u8>, Vec<u8>)> = part
                    .into_iter()
                    .map(|u| (enc(&[u], 1), vec![u, child as u8]))
                    .collect();
                all.extend(entries.clone());
                children.push(Box::new(VecCursor::new(entries)));
            }
            // A stable sort keeps equal keys in child order.
            all.sort_by(|a, b| compare_encoded(&a.0, &b.0));
            let mut merged = MergingCursor::new(children);
            let mut forward = Vec::new();
            merged.seek_to_first().unwrap();
            while merged.valid() {
                forward.push((merged.key().to_vec(), merged.value().to_vec()));
                merged.next().unwrap();
            }
            prop_assert_eq!(&forward, &all);
            let mut backward = Vec::new();
            merged.seek_to_last().unwrap();
            while merged.valid() {
                backward.push((merged.key().to_vec(), merged.value().to_vec()));
                merged.prev().unwrap();
            }
            backward.reverse();
            prop_assert_eq!(&backward, &all);
        }
    }

    /// A child that fails leaves the merge invalid, with the error returned (invariant 3).
    #[test]
    fn a_failing_child_ends_the_merge() {
        struct Failing;
        impl Cursor for Failing {
            fn valid(&self) -> bool {
                false
            }
            fn key(&self) -> &[u8] {
                &[]
            }
            fn value(&self) -> &[u8] {
                &[]
            }
            fn seek_to_first(&mut self) -> Result<()> {
                Err(crate::Error::invalid("injected"))
            }
            fn seek_to_last(&mut self) -> Result<()> {
                Err(crate::Error::invalid("injected"))
            }
            fn seek(&mut self, _: &[u8]) -> Result<()> {
                Err(crate::Error::invalid("injected"))
            }
            fn seek_for_prev(&mut self, _: &[u8]) -> Result<()> {
                Err(crate::Error::invalid("injected"))
            }
            fn next(&mut self) -> Result<()> {
                Err(crate::Error::invalid("injected"))
            }
            fn prev(&mut self) -> Result<()> {
                Err(crate::Error::invalid("injected"))
            }
        }
        let good = VecCursor::new(vec![(enc(b"a", 1), b"1".to_vec())]);
        let mut merged = MergingCursor::new(vec![Box::new(good), Box::new(Failing)]);
        assert!(merged.seek_to_first().is_err());
        assert!(!merged.valid());
        assert!(merged.seek(&enc(b"a", 1)).is_err());
        assert!(!merged.valid());
        assert!(merged.key().is_empty());
    }
}
