//! A write group's inserts in one hold of the skip list's lock ([`SkipList::insert_group`]),
//! with their searches run side by side.
//!
//! A search that has to descend the list waits on a cache miss at nearly every node it
//! compares: the nodes lie in the arena in insert order, not key order. One search alone
//! has one miss in flight at a time. The group's searches are independent of each other
//! (they read the list as it was before the group; a node the group links later only
//! lies between a found place and its key, and is walked over then), so they run
//! interleaved here: each step of one search compares the node an earlier step fetched
//! for it, then starts fetching the node it compares next, and moves on to the next
//! search. [`WINDOW`] searches are under way at once, so that many misses overlap.
//!
//! A dense group (one with few list entries per entry of its own, [`DENSE`]) skips
//! phase 1: in key order, each of its searches starts from where the last one stopped
//! (the finger, skip-list invariant 8) and walks few nodes.
//!
//! Phase 1 draws every node's height and, for each entry that invariant 7's shortcut
//! may not cover, finds the last node before it on each level below its height.
//! Phase 2 links the entries in the given order (`SkipList::insert_locked`): a shortcut
//! if it applies then, else from the places phase 1 found, walking right past the nodes
//! the group linked since (skip-list invariant 9), else a descent from the group's
//! finger (invariant 8).
//!
//! Invariants:
//! 1. The lock is held from the first height drawn to the last link, so the list phase
//!    1 read is the list phase 2 starts from, plus the group's own nodes.
//! 2. Every place phase 1 records for a level is a node on that level that sorts before
//!    the entry, or `None` (the head): it is where a descent for the entry stopped on
//!    that level.

use std::cmp::Ordering;
use std::sync::atomic::Ordering as Mo;

use smallvec::SmallVec;

use super::{point_hash, Arena, Node, Probe, SkipList, CACHE_LINE, MAX_HEIGHT};

/// Searches under way at once in phase 1: enough to overlap as many misses as a core
/// keeps in flight, few enough that each search's fetch has arrived when its turn comes
/// round again.
const WINDOW: usize = 16;

/// One entry for [`SkipList::insert_group`]: `(keyspace, user ++ trailer) → value`, with
/// the user key's `filter::key_hash`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct NewEntry<'a> {
    pub(crate) keyspace: u32,
    pub(crate) user: &'a [u8],
    pub(crate) trailer: u64,
    pub(crate) value: &'a [u8],
    pub(crate) user_hash: u64,
}

impl NewEntry<'_> {
    fn probe(&self) -> Probe<'_> {
        Probe {
            keyspace: self.keyspace,
            user: self.user,
            trailer: self.trailer,
        }
    }
}

/// Where one phase-1 search is.
#[derive(Debug, Clone, Copy)]
enum Stage {
    /// The point-index slot of the key is being fetched.
    Slot,
    /// The node that slot names is being fetched.
    Newest,
    /// Descending: on `level`, standing on `at` (`None`: the head), comparing `next`.
    Descend {
        level: usize,
        at: Option<Node>,
        next: Option<Node>,
    },
}

/// One phase-1 search: its entry and its stage.
#[derive(Debug, Clone, Copy)]
struct Walk {
    entry: usize,
    stage: Stage,
}

/// Hints the CPU to fetch the lines of `node` a comparison reads: the header, and the key
/// of a node on few levels.
fn fetch(node: Option<Node>) {
    if let Some(n) = node {
        crate::mmap::prefetch_address(n.0.as_ptr());
        crate::mmap::prefetch_address(n.0.as_ptr().wrapping_add(CACHE_LINE));
    }
}

/// A group with fewer than this many list entries per entry of its own is dense: its
/// keys, in order, lie so close together in the list that a search from where the last
/// one stopped (the finger, skip-list invariant 8) walks a few nodes, most of them
/// fetched by the searches before it, and phase 1's full descents would cost more than
/// the misses they overlap. Measured: 1,000-entry groups into lists of up to 76,000
/// entries insert about 15 % faster through the finger, 100-entry groups about 15 %
/// faster through phase 1 (docs/BENCHMARKS.md).
const DENSE: usize = 64;

/// Entries of a group whose bookkeeping stays on the stack.
const INLINE: usize = 16;

/// Phase 1's findings: per entry, where its places start in `found`, if it was searched.
type Offsets = SmallVec<[Option<usize>; INLINE]>;
/// Phase 1's places, each searched entry's levels below its height in a run.
type Places = SmallVec<[Option<Node>; INLINE]>;

impl SkipList {
    /// Inserts `entries`, as inserting them one after the other would, under
    /// one hold of the lock, with their searches interleaved (see the module
    /// documentation). Any order is correct; in key order (a key's versions oldest first)
    /// each entry's walk from its found places is shortest.
    pub(crate) fn insert_group(&self, entries: &[NewEntry<'_>]) {
        self.insert_group_with(entries, DENSE);
    }

    /// [`SkipList::insert_group`], a group with fewer than `dense` list entries per entry
    /// being dense (tests take both ways whatever the sizes).
    pub(super) fn insert_group_with(&self, entries: &[NewEntry<'_>], dense: usize) {
        let mut arena = self.arena.lock();
        if let [entry] = entries {
            // One search has nothing to overlap with.
            let height = arena.height();
            self.insert_locked(&mut arena, None, None, height, entry);
            return;
        }
        let heights: SmallVec<[usize; INLINE]> = entries.iter().map(|_| arena.height()).collect();
        let mut finger = [None; MAX_HEIGHT];
        if self.len() < entries.len().saturating_mul(dense) {
            // Dense: each search, from where the last one stopped, walks few nodes.
            for (entry, &height) in entries.iter().zip(&heights) {
                self.insert_locked(&mut arena, Some(&mut finger), None, height, entry);
            }
            return;
        }
        let (offsets, found) = self.search_group(&arena, entries, &heights);
        for ((entry, &height), offset) in entries.iter().zip(&heights).zip(&offsets) {
            let places = offset.and_then(|o| found.get(o..o.checked_add(height)?));
            self.insert_locked(&mut arena, Some(&mut finger), places, height, entry);
        }
        drop(arena);
    }

    /// Phase 1, the lock held (`_held`): for each entry, `Some(offset)` if it was
    /// searched, its places on levels `0..height` being `found[offset..]` (invariant 2);
    /// `None` if its shortcut (skip-list invariant 7) applies to the list as it is.
    fn search_group(
        &self,
        _held: &Arena,
        entries: &[NewEntry<'_>],
        heights: &[usize],
    ) -> (Offsets, Places) {
        let mut offsets: Offsets = smallvec::smallvec![None; entries.len()];
        let mut found = Places::with_capacity(heights.iter().sum());
        let top = self.height.load(Mo::Relaxed).clamp(1, MAX_HEIGHT) - 1;
        let point = self.point.get();
        let mut pending = entries.iter().zip(heights).enumerate();
        // The searches under way, taken in turn; a finished one's place goes to the next
        // entry, or the last search moves into it.
        let mut window: SmallVec<[Walk; WINDOW]> = SmallVec::new();
        let start = |(index, (entry, &height)): (usize, (&NewEntry<'_>, &usize))| {
            let stage = match point {
                // Only a one-level node can take the shortcut.
                Some(point) if height == 1 => {
                    point.prefetch_slot(point_hash(entry.keyspace, entry.user_hash));
                    Stage::Slot
                }
                _ => self.descend_from(top),
            };
            Walk {
                entry: index,
                stage,
            }
        };
        window.extend(pending.by_ref().take(WINDOW).map(start));
        let mut turn = 0;
        while !window.is_empty() {
            if turn >= window.len() {
                turn = 0;
            }
            let Some(walk) = window.get_mut(turn) else {
                break;
            };
            let done = match (entries.get(walk.entry), heights.get(walk.entry)) {
                (Some(entry), Some(&height)) => {
                    self.step(walk, entry, height, top, &mut offsets, &mut found)
                }
                _ => true,
            };
            if done {
                match pending.next() {
                    Some(next) => {
                        if let Some(w) = window.get_mut(turn) {
                            *w = start(next);
                        }
                    }
                    None => {
                        window.swap_remove(turn);
                        continue;
                    }
                }
            }
            turn += 1;
        }
        (offsets, found)
    }

    /// One step of `walk`, the search for `entry` (a node of `height` levels); true once
    /// the search is over.
    fn step(
        &self,
        walk: &mut Walk,
        entry: &NewEntry<'_>,
        height: usize,
        top: usize,
        offsets: &mut Offsets,
        found: &mut Places,
    ) -> bool {
        match walk.stage {
            Stage::Slot => {
                if let Some(point) = self.point.get() {
                    point.prefetch_node(point_hash(entry.keyspace, entry.user_hash), 2);
                }
                walk.stage = Stage::Newest;
                false
            }
            Stage::Newest => {
                let newest = self.newest_older_than(
                    height,
                    entry.keyspace,
                    entry.user,
                    entry.trailer,
                    entry.user_hash,
                );
                if newest.is_some() {
                    return true;
                }
                walk.stage = self.descend_from(top);
                false
            }
            Stage::Descend { level, at, next } => {
                if let Some(n) = next.filter(|n| n.cmp(&entry.probe()) == Ordering::Less) {
                    let next = self.next(Some(n), level);
                    fetch(next);
                    walk.stage = Stage::Descend {
                        level,
                        at: Some(n),
                        next,
                    };
                    return false;
                }
                if level < height {
                    // The entry's places are made at its first stop below its height:
                    // on the top one of those levels.
                    let offset = match offsets.get(walk.entry).copied().flatten() {
                        Some(offset) => offset,
                        None => {
                            let offset = found.len();
                            found.resize(offset + height, None);
                            if let Some(o) = offsets.get_mut(walk.entry) {
                                *o = Some(offset);
                            }
                            offset
                        }
                    };
                    if let Some(place) = found.get_mut(offset + level) {
                        *place = at;
                    }
                }
                let Some(below) = level.checked_sub(1) else {
                    return true;
                };
                let next = self.next(at, below);
                fetch(next);
                walk.stage = Stage::Descend {
                    level: below,
                    at,
                    next,
                };
                false
            }
        }
    }

    /// The first stage of a descent from level `top`, its first node being fetched.
    fn descend_from(&self, top: usize) -> Stage {
        let next = self.next(None, top);
        fetch(next);
        Stage::Descend {
            level: top,
            at: None,
            next,
        }
    }
}
