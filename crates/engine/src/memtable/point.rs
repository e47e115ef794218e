//! [`PointIndex`]: a hash table from a memtable's user keys to the skip-list node of each
//! key's newest version, so a point read that finds its key here reads one slot and one
//! node instead of descending the skip list (a dozen dependent cache misses at a few
//! hundred thousand entries).
//!
//! Layout: a power-of-two array of slots, each an `AtomicPtr` to a node with 16 bits of
//! the key's hash (the *tag*) in the pointer's unused top bits, or null. A key's probe
//! sequence starts at its hash's low bits and runs linearly for at most [`MAX_PROBE`]
//! slots. A slot, once filled, only ever points to a newer version of the same key.
//!
//! The table is sized when the memtable is made and never grows: it indexes keys while it
//! is under three quarters full (and their probe sequences have room); a key it cannot
//! take makes it *incomplete* for good. A complete index that lacks a key proves the
//! memtable holds no version of it; an incomplete one proves nothing, and the reader
//! searches the skip list as before.
//!
//! Invariants:
//! 1. One writer at a time (the skip list's insert lock); readers take no lock.
//! 2. A version is entered (or the index made incomplete) before the insert of that
//!    version returns, with `Release` stores that readers load with `Acquire`; the
//!    memtable publishes a version's seqno only after its insert returns. So a reader
//!    whose snapshot covers a version finds that version or a newer one in the index, or
//!    finds the index incomplete.
//! 3. A slot holds the newest version of its key entered so far: an older version entered
//!    later (inserts of different batches may interleave) leaves it unchanged.
//! 4. Pointers keep their provenance: the tag is added and removed with `map_addr`, and a
//!    node whose address does not fit in 48 bits is not entered. Its key's slot may then
//!    name an older version, so the index is *abandoned* for good: it becomes incomplete
//!    and [`PointIndex::find`] finds nothing (the flag is stored, `Release`, before the
//!    insert returns, as in invariant 2). Only a platform whose pointers use their top
//!    bits (tagged pointers, 57-bit address spaces) gets there.
//!
//! This module holds no `unsafe` code: it stores and returns pointers, and the skip list
//! (`skiplist.rs`) reads the nodes they point to.
//!
//! Thread-safety: `Send + Sync` (atomics only).

use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};

/// Most slots a key's probe sequence visits.
pub(crate) const MAX_PROBE: usize = 16;

/// Fewest slots an index has.
const MIN_SLOTS: usize = 64;

/// Bits of address kept below the tag.
const ADDR_BITS: u32 = 48;
const ADDR_MASK: usize = (1 << ADDR_BITS) - 1;

/// The index; see the module documentation.
#[derive(Debug)]
pub(crate) struct PointIndex {
    slots: Box<[AtomicPtr<u8>]>,
    /// Keys entered (written by the one writer only).
    len: std::sync::atomic::AtomicUsize,
    /// Most keys entered: three quarters of the slots.
    limit: usize,
    /// Set once a key could not be entered.
    incomplete: AtomicBool,
    /// A node could not be entered (invariant 4): nothing is found any more.
    abandoned: AtomicBool,
}

/// The tag of `hash`: its top 16 bits, never used to pick a slot.
fn tag(hash: u64) -> usize {
    (hash >> ADDR_BITS) as usize
}

impl PointIndex {
    /// An index of at least `keys / 0.75` slots (a power of two, at least [`MIN_SLOTS`]);
    /// `keys` 0 makes an index that enters nothing and is incomplete from the start.
    pub(crate) fn new(keys: usize) -> PointIndex {
        if keys == 0 {
            return PointIndex {
                slots: Box::new([]),
                len: 0.into(),
                limit: 0,
                incomplete: AtomicBool::new(true),
                abandoned: AtomicBool::new(false),
            };
        }
        let count = (keys.saturating_mul(4) / 3)
            .max(MIN_SLOTS)
            .checked_next_power_of_two()
            .unwrap_or(MIN_SLOTS);
        PointIndex {
            slots: (0..count)
                .map(|_| AtomicPtr::new(std::ptr::null_mut()))
                .collect(),
            len: 0.into(),
            limit: count / 4 * 3,
            incomplete: AtomicBool::new(false),
            abandoned: AtomicBool::new(false),
        }
    }

    /// Bytes the slots take.
    pub(crate) fn heap_bytes(&self) -> usize {
        std::mem::size_of_val(&*self.slots)
    }

    /// The slots of `hash`'s probe sequence, in order.
    fn probe(&self, hash: u64) -> impl Iterator<Item = &AtomicPtr<u8>> {
        let mask = self.slots.len().wrapping_sub(1);
        let start = hash as usize;
        (0..MAX_PROBE.min(self.slots.len()))
            .filter_map(move |i| self.slots.get(start.wrapping_add(i) & mask))
    }

    /// The node entered for the key of `hash` that `is_key` accepts (given an untagged
    /// node pointer), if any. `None` proves the key absent only if [`PointIndex::complete`]
    /// holds afterwards.
    pub(crate) fn find(
        &self,
        hash: u64,
        mut is_key: impl FnMut(*mut u8) -> bool,
    ) -> Option<*mut u8> {
        if self.abandoned.load(Ordering::Acquire) {
            return None;
        }
        let want = tag(hash);
        for slot in self.probe(hash) {
            let p = slot.load(Ordering::Acquire);
            if p.is_null() {
                return None;
            }
            if p.addr() >> ADDR_BITS == want {
                let node = p.map_addr(|a| a & ADDR_MASK);
                if is_key(node) {
                    return Some(node);
                }
            }
        }
        None
    }

    /// Hints the CPU to fetch the first slot of `hash`'s probe sequence.
    pub(crate) fn prefetch_slot(&self, hash: u64) {
        let mask = self.slots.len().wrapping_sub(1);
        crate::mmap::prefetch(&self.slots, (hash as usize) & mask);
    }

    /// Hints the CPU to fetch the first `lines` cache lines of the node in the first slot
    /// of `hash`'s probe sequence whose tag matches `hash` (the key's node, unless two
    /// keys share the tag), without reading the node.
    pub(crate) fn prefetch_node(&self, hash: u64, lines: usize) {
        self.find(hash, |node| {
            for line in 0..lines {
                crate::mmap::prefetch_address(node.cast_const().wrapping_add(line * 64));
            }
            true
        });
    }

    /// True while every key given to [`PointIndex::enter`] was entered (load it after the
    /// [`PointIndex::find`] whose `None` it is to vouch for).
    pub(crate) fn complete(&self) -> bool {
        !self.incomplete.load(Ordering::Acquire)
    }

    /// Enters `node`, a version of the key of `hash`: in the slot of that key (found with
    /// `is_key`) if `newer` says `node` is newer than the version there, else in the first
    /// empty slot of the probe sequence. Makes the index incomplete if there is no room.
    /// Only the one writer calls this (invariant 1).
    pub(crate) fn enter(
        &self,
        hash: u64,
        node: *mut u8,
        mut is_key: impl FnMut(*mut u8) -> bool,
        newer: impl FnOnce(*mut u8) -> bool,
    ) {
        if node.addr() > ADDR_MASK {
            self.incomplete.store(true, Ordering::Release);
            self.abandoned.store(true, Ordering::Release);
            return;
        }
        let want = tag(hash);
        let tagged = node.map_addr(|a| a | (want << ADDR_BITS));
        for slot in self.probe(hash) {
            let p = slot.load(Ordering::Acquire);
            if p.is_null() {
                let len = self.len.load(Ordering::Relaxed);
                if len >= self.limit {
                    break;
                }
                slot.store(tagged, Ordering::Release);
                self.len.store(len + 1, Ordering::Relaxed);
                return;
            }
            if p.addr() >> ADDR_BITS == want {
                let old = p.map_addr(|a| a & ADDR_MASK);
                if is_key(old) {
                    if newer(old) {
                        slot.store(tagged, Ordering::Release);
                    }
                    return;
                }
            }
        }
        self.incomplete.store(true, Ordering::Release);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    /// Stand-ins for nodes: pointers into `data` (never dereferenced); `at` maps one back
    /// to its element.
    struct Nodes {
        data: Vec<(u64, u64)>,
    }

    impl Nodes {
        fn ptr(&self, i: usize) -> *mut u8 {
            self.data.as_ptr().wrapping_add(i).cast_mut().cast::<u8>()
        }

        fn at(&self, p: *mut u8) -> (u64, u64) {
            let i = (p.addr() - self.data.as_ptr().addr()) / std::mem::size_of::<(u64, u64)>();
            self.data[i]
        }
    }

    fn hash(k: u64) -> u64 {
        k.wrapping_mul(0x9e37_79b9_7f4a_7c15)
    }

    #[test]
    fn finds_what_it_entered_and_keeps_the_newest_version() {
        let index = PointIndex::new(100);
        let nodes = Nodes {
            data: vec![(7, 1), (7, 3), (7, 2), (9, 1)],
        };
        for (i, &(k, v)) in nodes.data.iter().enumerate() {
            index.enter(
                hash(k),
                nodes.ptr(i),
                |q| nodes.at(q).0 == k,
                |old| nodes.at(old).1 < v,
            );
        }
        let found = index.find(hash(7), |q| nodes.at(q).0 == 7).unwrap();
        assert_eq!(
            nodes.at(found),
            (7, 3),
            "the newest, though (7, 2) came later"
        );
        let nine = index.find(hash(9), |q| nodes.at(q).0 == 9).unwrap();
        assert_eq!(nodes.at(nine), (9, 1));
        assert!(index.find(hash(8), |q| nodes.at(q).0 == 8).is_none());
        assert!(index.complete());
    }

    #[test]
    fn a_full_index_becomes_incomplete_and_still_finds_what_it_holds() {
        let index = PointIndex::new(10);
        let slots = index.slots.len();
        let nodes = Nodes {
            data: (0..slots as u64).map(|k| (k, 0)).collect(),
        };
        for k in 0..slots {
            let key = k as u64;
            index.enter(hash(key), nodes.ptr(k), |q| nodes.at(q).0 == key, |_| true);
        }
        assert!(
            !index.complete(),
            "more keys than three quarters of the slots"
        );
        let entered = (0..slots as u64)
            .filter(|&k| index.find(hash(k), |q| nodes.at(q).0 == k).is_some())
            .count();
        // Every key entered is found; entering stops at the limit (or a little before,
        // where a probe sequence ran out of room).
        assert!(
            entered <= index.limit && entered * 10 >= index.limit * 9,
            "{entered}"
        );
        assert_eq!(index.len.load(Ordering::Relaxed), entered);
    }

    #[test]
    fn a_node_it_cannot_enter_abandons_the_index() {
        let index = PointIndex::new(100);
        let nodes = Nodes {
            data: vec![(7, 1), (9, 1)],
        };
        for (i, &(k, _)) in nodes.data.iter().enumerate() {
            index.enter(hash(k), nodes.ptr(i), |q| nodes.at(q).0 == k, |_| true);
        }
        assert!(index.find(hash(7), |q| nodes.at(q).0 == 7).is_some());
        // A newer version of 7 at an address with more than 48 bits is not entered: 7's
        // slot would name the older version, so nothing is found any more.
        let high = std::ptr::without_provenance_mut::<u8>(1 << 50);
        index.enter(hash(7), high, |_| true, |_| true);
        assert!(!index.complete());
        assert!(index.find(hash(7), |q| nodes.at(q).0 == 7).is_none());
        assert!(index.find(hash(9), |q| nodes.at(q).0 == 9).is_none());
    }

    #[test]
    fn a_zero_sized_index_is_incomplete() {
        let index = PointIndex::new(0);
        assert!(!index.complete());
        assert!(index.find(1, |_| true).is_none());
        assert_eq!(index.heap_bytes(), 0);
    }
}
