//! [`BlockCache`]: decoded data blocks shared by every table of a store, within a byte
//! budget.
//!
//! Blocks are keyed by `(table id, block offset)` and held as `Arc<Block>`, so a cursor
//! keeps using a block after it is evicted. The cache is split into shards (one per
//! 256 KiB of budget, at most 16), each behind its own `parking_lot::Mutex` with an equal
//! share of the budget; eviction within a shard is CLOCK (second chance): a hit sets the
//! block's reference bit, and the eviction hand spares a referenced block once, clearing
//! its bit.
//!
//! Admission: a shard with room for a block takes it. A full shard takes a block only on
//! its second offer within a window (the shard's *doorkeeper*, a bitset of recently
//! refused keys): the first offer is refused and marks the key. A block read once
//! (a point read into data larger than the cache, a seek, a scan's first blocks) then
//! costs no eviction, which profiles put at about a sixth of a seek's time; a block read
//! twice is cached as before. The doorkeeper is cleared after a quarter as many refusals as
//! the shard holds blocks, so "recently" means within a quarter of a cache's worth of
//! misses.
//!
//! Invariants:
//! 1. Each shard's charged bytes never exceed its share of the budget, so
//!    [`BlockCache::used_bytes`] never exceeds the capacity; a block whose charge exceeds a
//!    shard's share is not cached.
//! 2. A block is charged its decoded length plus [`ENTRY_OVERHEAD`].
//! 3. Capacity 0 disables caching: nothing is inserted and every lookup is a miss.
//! 4. A block is evicted only to make room for a block that was offered before since the
//!    doorkeeper was last cleared (or that the doorkeeper mistakes for one: it has false
//!    positives, never false negatives, so a second offer is never refused). Admission
//!    never affects what a read returns, only whether its block is kept.
//!
//! Thread-safety: `Send + Sync`; lookups and inserts lock one shard, `forget_table` and
//! `used_bytes` lock each shard in turn.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use super::block::Block;

/// Bytes charged per cached block beyond its data: the `Arc` header, the map slot and the
/// clock slot, rounded up.
pub(crate) const ENTRY_OVERHEAD: usize = 64;

/// Budget per shard below which the cache uses fewer shards.
const MIN_SHARD_BUDGET: usize = 256 << 10;

/// Most shards.
const MAX_SHARDS: usize = 16;

/// The block size the doorkeeper is sized for (the default `Options::block_size`); larger
/// or smaller blocks only change how full its bitset gets between clears.
const TYPICAL_BLOCK_LEN: usize = 4 << 10;

/// Doorkeeper bits per block a shard can hold.
const DOORKEEPER_BITS_PER_BLOCK: usize = 8;

/// The doorkeeper's window, as a fraction of the blocks a shard holds: it is cleared after
/// `blocks / DOORKEEPER_WINDOW_DIVISOR` refusals. With one bit set per refusal, at most a
/// 32nd of its bits is set, so at most about 3 % of first offers is admitted by mistake. A
/// shorter window refuses more one-off blocks (uniform reads over data twice the cache:
/// 263k point reads/s against 240k with a window of a whole shard, 193k with no
/// doorkeeper); a block read again within it is still cached on its second miss.
const DOORKEEPER_WINDOW_DIVISOR: usize = 4;

type Key = (u64, u64);

#[derive(Debug)]
struct Slot {
    block: Arc<Block>,
    charge: usize,
    referenced: bool,
}

#[derive(Debug, Default)]
struct Shard {
    map: HashMap<Key, Slot>,
    /// The clock: keys in insertion order; the front is the hand.
    clock: VecDeque<Key>,
    used: usize,
    /// Keys refused since the last clear, one bit each (see [`Doorkeeper`]).
    doorkeeper: Doorkeeper,
}

/// A bitset of recently refused keys: no false negatives, few false positives, cleared
/// after `clear_after` insertions.
#[derive(Debug, Default)]
struct Doorkeeper {
    words: Vec<u64>,
    /// `log2` of the number of bits.
    bits_log2: u32,
    inserted: usize,
    clear_after: usize,
}

impl Doorkeeper {
    /// A doorkeeper for a shard that holds about `blocks` blocks.
    fn new(blocks: usize) -> Doorkeeper {
        let bits = blocks
            .max(1)
            .saturating_mul(DOORKEEPER_BITS_PER_BLOCK)
            .next_power_of_two()
            .max(64);
        Doorkeeper {
            words: vec![0; bits / 64],
            bits_log2: bits.trailing_zeros(),
            inserted: 0,
            clear_after: (blocks / DOORKEEPER_WINDOW_DIVISOR).max(1),
        }
    }

    /// The word index and bit mask of `key`.
    fn slot(&self, key: Key) -> (usize, u64) {
        let h = (key.0.wrapping_mul(0xD6E8_FEB8_6659_FD93) ^ key.1.rotate_left(17))
            .wrapping_mul(0x94D0_49BB_1331_11EB);
        // The top `bits_log2` bits; none (bit 0 of no word) for an empty bitset.
        let bit = h.checked_shr(64 - self.bits_log2).unwrap_or(0) as usize;
        (bit / 64, 1u64 << (bit % 64))
    }

    /// True if `key` was inserted since the last clear (or collides with one that was).
    fn contains(&self, key: Key) -> bool {
        let (word, mask) = self.slot(key);
        self.words.get(word).is_some_and(|w| w & mask != 0)
    }

    /// Records `key`, clearing every key first if the window is full.
    fn insert(&mut self, key: Key) {
        if self.inserted >= self.clear_after {
            self.words.iter_mut().for_each(|w| *w = 0);
            self.inserted = 0;
        }
        let (word, mask) = self.slot(key);
        if let Some(w) = self.words.get_mut(word) {
            *w |= mask;
        }
        self.inserted += 1;
    }
}

impl Shard {
    /// Evicts until `incoming` more bytes fit in `budget`.
    fn make_room(&mut self, incoming: usize, budget: usize) {
        while self.used + incoming > budget {
            let Some(key) = self.clock.pop_front() else {
                break;
            };
            let Some(slot) = self.map.get_mut(&key) else {
                continue;
            };
            if slot.referenced {
                slot.referenced = false;
                self.clock.push_back(key);
            } else if let Some(gone) = self.map.remove(&key) {
                self.used -= gone.charge;
            }
        }
    }
}

/// A sharded, byte-bounded cache of decoded table blocks; see the module documentation.
#[derive(Debug)]
pub(crate) struct BlockCache {
    shards: Box<[Mutex<Shard>]>,
    shard_budget: usize,
    hits: AtomicU64,
    misses: AtomicU64,
    refused: AtomicU64,
}

impl BlockCache {
    /// A cache holding at most `capacity_bytes` of blocks (0 disables caching).
    pub(crate) fn new(capacity_bytes: usize) -> BlockCache {
        let count = (capacity_bytes / MIN_SHARD_BUDGET).clamp(1, MAX_SHARDS);
        let shard_budget = capacity_bytes / count;
        let blocks = shard_budget / (TYPICAL_BLOCK_LEN + ENTRY_OVERHEAD);
        BlockCache {
            shards: (0..count)
                .map(|_| {
                    Mutex::new(Shard {
                        doorkeeper: Doorkeeper::new(blocks),
                        ..Shard::default()
                    })
                })
                .collect(),
            shard_budget,
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            refused: AtomicU64::new(0),
        }
    }

    /// Lookups that found their block.
    pub(crate) fn hits(&self) -> u64 {
        self.hits.load(Ordering::Relaxed)
    }

    /// Lookups that did not.
    pub(crate) fn misses(&self) -> u64 {
        self.misses.load(Ordering::Relaxed)
    }

    /// Blocks a full shard refused on their first offer (see the module documentation).
    pub(crate) fn refused(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }

    /// Bytes currently charged (at most the capacity).
    #[cfg(test)]
    pub(crate) fn used_bytes(&self) -> usize {
        self.shards.iter().map(|s| s.lock().used).sum()
    }

    /// Drops every block of table `id` (its file is being deleted).
    pub(crate) fn forget_table(&self, id: u64) {
        for shard in self.shards.iter() {
            let mut shard = shard.lock();
            let before = shard.map.len();
            shard.map.retain(|k, _| k.0 != id);
            if shard.map.len() != before {
                shard.clock.retain(|k| k.0 != id);
                shard.used = shard.map.values().map(|s| s.charge).sum();
            }
        }
    }

    fn shard(&self, key: Key) -> Option<&Mutex<Shard>> {
        let h =
            (key.0.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ key.1).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        self.shards.get((h >> 32) as usize % self.shards.len())
    }

    /// The cached block at `offset` of table `table`, counting a hit or a miss.
    pub(crate) fn get(&self, table: u64, offset: u64) -> Option<Arc<Block>> {
        let found = if self.shard_budget == 0 {
            None
        } else {
            self.shard((table, offset)).and_then(|s| {
                let mut s = s.lock();
                s.map.get_mut(&(table, offset)).map(|slot| {
                    slot.referenced = true;
                    Arc::clone(&slot.block)
                })
            })
        };
        let counter = if found.is_some() {
            &self.hits
        } else {
            &self.misses
        };
        counter.fetch_add(1, Ordering::Relaxed);
        found
    }

    /// Offers `block` as the block at `offset` of table `table`. A shard with room takes
    /// it; a full shard takes it, evicting others to stay within budget, only if it was
    /// offered before since its doorkeeper was cleared, and otherwise marks it there. Does
    /// nothing if it is already cached or larger than a shard's share.
    pub(crate) fn insert(&self, table: u64, offset: u64, block: Arc<Block>) {
        let charge = block.len().saturating_add(ENTRY_OVERHEAD);
        if charge > self.shard_budget {
            return;
        }
        let key = (table, offset);
        let Some(shard) = self.shard(key) else {
            return;
        };
        let mut shard = shard.lock();
        if shard.map.contains_key(&key) {
            return;
        }
        if shard.used + charge > self.shard_budget {
            if !shard.doorkeeper.contains(key) {
                shard.doorkeeper.insert(key);
                drop(shard);
                self.refused.fetch_add(1, Ordering::Relaxed);
                return;
            }
            shard.make_room(charge, self.shard_budget);
        }
        shard.used += charge;
        shard.map.insert(
            key,
            Slot {
                block,
                charge,
                referenced: false,
            },
        );
        shard.clock.push_back(key);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]
mod tests {
    use super::*;
    use crate::table::block::BlockBuilder;

    fn block(value_len: usize) -> Arc<Block> {
        let mut b = BlockBuilder::new(16);
        b.add(b"key\x01\0\0\0\0\0\0\0", &vec![7u8; value_len]);
        Arc::new(Block::decode(b.finish()).unwrap())
    }

    #[test]
    fn budget_is_respected_and_hits_are_counted() {
        let cache = BlockCache::new(64 << 10);
        let b = block(1000);
        let charge = b.len() + ENTRY_OVERHEAD;
        for offset in 0..1000u64 {
            assert!(cache.get(1, offset * 4096).is_none());
            // Offered twice: a full shard takes a block on its second offer.
            cache.insert(1, offset * 4096, Arc::clone(&b));
            cache.insert(1, offset * 4096, Arc::clone(&b));
            assert!(cache.used_bytes() <= 64 << 10);
        }
        assert_eq!(cache.misses(), 1000);
        assert!(
            cache.used_bytes() >= (64 << 10) - charge,
            "the cache fills up"
        );
        // The most recent block is still there.
        assert!(cache.get(1, 999 * 4096).is_some());
        assert_eq!(cache.hits(), 1);
    }

    #[test]
    fn clock_keeps_referenced_blocks() {
        let b = block(100);
        let charge = b.len() + ENTRY_OVERHEAD;
        let cache = BlockCache::new(4 * charge);
        for offset in 0..4 {
            cache.insert(1, offset, Arc::clone(&b));
        }
        assert!(cache.get(1, 0).is_some());
        cache.insert(1, 4, Arc::clone(&b)); // refused: first offer to a full shard
        assert!(cache.get(1, 4).is_none());
        cache.insert(1, 4, Arc::clone(&b)); // evicts 1 (0 was referenced)
        assert!(cache.get(1, 0).is_some());
        assert!(cache.get(1, 1).is_none());
        assert!(cache.get(1, 4).is_some());
    }

    #[test]
    fn a_shard_with_room_takes_every_block() {
        let b = block(100);
        let charge = b.len() + ENTRY_OVERHEAD;
        let cache = BlockCache::new(10 * charge);
        for offset in 0..10 {
            cache.insert(1, offset, Arc::clone(&b));
        }
        assert_eq!(cache.used_bytes(), 10 * charge);
        assert_eq!(cache.refused(), 0);
        assert!((0..10).all(|offset| cache.get(1, offset).is_some()));
    }

    #[test]
    fn a_full_shard_refuses_first_offers_and_evicts_nothing_for_them() {
        let cache = BlockCache::new(1 << 20);
        let b = block(4000);
        // Fill every shard: stop once refusals are far more than there are shards.
        let mut offset = 0u64;
        while cache.refused() < 64 {
            cache.insert(1, offset, Arc::clone(&b));
            offset += 1;
        }
        let resident: Vec<u64> = (0..offset).filter(|&o| cache.get(1, o).is_some()).collect();
        let used = cache.used_bytes();
        // Many blocks offered once: each is refused, nothing resident is evicted.
        for o in offset..offset + 50 {
            cache.insert(2, o, Arc::clone(&b));
        }
        assert_eq!(cache.refused(), 64 + 50);
        assert_eq!(cache.used_bytes(), used);
        assert!(resident.iter().all(|&o| cache.get(1, o).is_some()));
        // A block offered again soon after its refusal is taken.
        cache.insert(2, offset + 49, Arc::clone(&b));
        assert!(cache.get(2, offset + 49).is_some());
        assert!(cache.used_bytes() <= 1 << 20);
    }

    #[test]
    fn the_doorkeeper_forgets_after_its_window() {
        let mut d = Doorkeeper::new(16 * DOORKEEPER_WINDOW_DIVISOR);
        d.insert((1, 1));
        assert!(d.contains((1, 1)));
        // 15 more keys fill the window of 16; the next insert clears it first.
        for k in 0..15 {
            d.insert((2, k));
        }
        assert!(d.contains((1, 1)));
        d.insert((2, 15));
        assert!(!d.contains((1, 1)));
        assert!(d.contains((2, 15)));
        // No false negatives inside a window.
        let mut d = Doorkeeper::new(1000 * DOORKEEPER_WINDOW_DIVISOR);
        for k in 0..1000 {
            d.insert((7, k * 4096));
        }
        assert!((0..1000).all(|k| d.contains((7, k * 4096))));
        // Few false positives: at most a 32nd of the bits is set.
        let false_positives = (0..10_000).filter(|&k| d.contains((8, k * 4096))).count();
        assert!(false_positives < 500, "{false_positives} false positives");
    }

    #[test]
    fn forget_table_drops_only_that_table() {
        let cache = BlockCache::new(1 << 20);
        let b = block(100);
        for offset in 0..10 {
            cache.insert(1, offset, Arc::clone(&b));
            cache.insert(2, offset, Arc::clone(&b));
        }
        let before = cache.used_bytes();
        cache.forget_table(1);
        assert_eq!(cache.used_bytes(), before / 2);
        assert!(cache.get(1, 3).is_none());
        assert!(cache.get(2, 3).is_some());
        cache.forget_table(2);
        assert_eq!(cache.used_bytes(), 0);
    }

    #[test]
    fn zero_capacity_and_oversized_blocks_are_not_cached() {
        let cache = BlockCache::new(0);
        cache.insert(1, 0, block(10));
        assert!(cache.get(1, 0).is_none());
        assert_eq!((cache.used_bytes(), cache.misses()), (0, 1));
        let cache = BlockCache::new(1000);
        cache.insert(1, 0, block(2000));
        assert_eq!(cache.used_bytes(), 0);
    }

    #[test]
    fn is_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<BlockCache>();
    }
}
