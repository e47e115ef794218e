//! [`MemFilter`]: a bloom filter over the user keys of one memtable, so a point lookup for
//! a key the memtable does not hold skips the skip-list search (a chain of cache misses
//! through nodes spread over the whole memtable) for one cache line.
//!
//! Layout: `words` 64-bit words (a register-blocked bloom filter). A key's 64-bit XXH3
//! hash picks its word (multiply-shift over the word count); six 6-bit fields of a second
//! mix of the hash pick the bits set in it. So an insert is one `fetch_or` (one locked
//! instruction, which on the write path also waits for earlier stores to drain, so fewer
//! is cheaper) and a probe one load. Sized for [`BITS_PER_ENTRY`] bits per entry at the
//! smallest entry a memtable of the given budget can hold: at a full memtable of such
//! entries about 2 % of absent keys still search, and larger entries leave the filter
//! sparser.
//!
//! Invariants:
//! 1. No false negatives: [`MemFilter::insert`] sets a key's bits before the caller
//!    inserts the key into the skip list, and bits are never cleared, so a reader that can
//!    see an entry (through the skip list's release/acquire links, or a published seqno)
//!    also sees its bits.
//! 2. Keyspaces share the filter: a key of another keyspace can only cause a false
//!    positive, never a false negative.
//! 3. A memtable that outgrows its budget (a large batch) only raises the false-positive
//!    rate.
//!
//! Thread-safety: `Send + Sync`; inserts and probes are lock-free (`fetch_or` / loads).

use std::sync::atomic::{AtomicU64, Ordering};

use xxhash_rust::xxh3::xxh3_64;

/// Filter bits per entry of the smallest possible size.
pub(crate) const BITS_PER_ENTRY: usize = 10;

/// Bits set per key, all in the key's word.
const PROBES: u32 = 6;

/// Largest filter, in words (64 MiB), whatever the budget.
const MAX_WORDS: usize = 8 << 20;

/// The hash a key is filed under (and that the memtable's point index starts from).
pub(crate) fn key_hash(user_key: &[u8]) -> u64 {
    xxh3_64(user_key)
}

/// The word and the bits to set or test in it of a key whose [`key_hash`] is `h`.
fn locate(h: u64, words: usize) -> (usize, u64) {
    let word = ((u128::from(h) * words as u128) >> 64) as usize;
    let mut g = h.rotate_left(32).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    let mut mask = 0u64;
    for _ in 0..PROBES {
        mask |= 1 << (g & 63);
        g >>= 6;
    }
    (word, mask)
}

/// A concurrent bloom filter over user keys; see the module documentation.
#[derive(Debug)]
pub(crate) struct MemFilter {
    words: Box<[AtomicU64]>,
}

impl MemFilter {
    /// A filter for a memtable of `budget` bytes whose entries are charged at least
    /// `min_entry_charge` bytes each.
    pub(crate) fn new(budget: usize, min_entry_charge: usize) -> MemFilter {
        let entries = budget / min_entry_charge.max(1);
        let bits = entries.saturating_mul(BITS_PER_ENTRY);
        let count = bits.div_ceil(64).clamp(1, MAX_WORDS);
        let words = (0..count).map(|_| AtomicU64::new(0)).collect();
        MemFilter { words }
    }

    /// Bytes the filter holds.
    #[cfg(test)]
    pub(crate) fn heap_bytes(&self) -> usize {
        self.words.len() * 8
    }

    /// Adds `user_key` (invariant 1: before the key enters the skip list).
    #[cfg(test)]
    pub(crate) fn insert(&self, user_key: &[u8]) {
        self.insert_hash(key_hash(user_key));
    }

    /// Adds the key whose [`key_hash`] is `hash`.
    pub(crate) fn insert_hash(&self, hash: u64) {
        let (i, mask) = locate(hash, self.words.len());
        if let Some(w) = self.words.get(i) {
            // Skip the locked write when the bits are there (rewrites of a hot key).
            if w.load(Ordering::Relaxed) & mask != mask {
                w.fetch_or(mask, Ordering::Relaxed);
            }
        }
    }

    /// False if no version of `user_key` was inserted.
    #[cfg(test)]
    pub(crate) fn may_contain(&self, user_key: &[u8]) -> bool {
        self.may_contain_hash(key_hash(user_key))
    }

    /// Hints the CPU to fetch the word [`MemFilter::may_contain_hash`] reads for `hash`.
    pub(crate) fn prefetch_hash(&self, hash: u64) {
        let (i, _) = locate(hash, self.words.len());
        crate::mmap::prefetch(&self.words, i);
    }

    /// False if no version of the key whose [`key_hash`] is `hash` was inserted.
    pub(crate) fn may_contain_hash(&self, hash: u64) -> bool {
        let (i, mask) = locate(hash, self.words.len());
        self.words
            .get(i)
            .is_none_or(|w| w.load(Ordering::Relaxed) & mask == mask)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    #[test]
    fn inserted_keys_are_always_found_and_absent_ones_mostly_not() {
        // Sized for 100,000 entries of 100 bytes; filled to that.
        let f = MemFilter::new(10_000_000, 100);
        assert_eq!(f.heap_bytes(), 1_000_000usize.div_ceil(64) * 8);
        for i in 0..100_000u64 {
            f.insert(&i.to_le_bytes());
        }
        assert!((0..100_000u64).all(|i| f.may_contain(&i.to_le_bytes())));
        let false_positives = (100_000..300_000u64)
            .filter(|i| f.may_contain(&i.to_le_bytes()))
            .count();
        // About 1.2 % for 512-bit blocks at 10 bits per key and 6 probes.
        assert!(
            false_positives < 200_000 * 3 / 100,
            "{false_positives} false positives"
        );
        assert!(
            false_positives > 0,
            "a bloom filter this full has some false positives"
        );
    }

    #[test]
    fn tiny_and_overfull_filters_keep_every_key() {
        let f = MemFilter::new(0, 0);
        assert_eq!(f.heap_bytes(), 8);
        for i in 0..1_000u32 {
            f.insert(&i.to_le_bytes());
        }
        assert!((0..1_000u32).all(|i| f.may_contain(&i.to_le_bytes())));
        assert!(
            f.may_contain(b"anything"),
            "a saturated filter answers maybe"
        );
    }

    #[test]
    fn an_empty_filter_holds_nothing() {
        let f = MemFilter::new(1 << 20, 100);
        assert!(!f.may_contain(b""));
        assert!(!f.may_contain(b"key"));
    }

    #[test]
    fn concurrent_inserts_are_all_seen() {
        let f = std::sync::Arc::new(MemFilter::new(1 << 20, 100));
        let threads: Vec<_> = (0..4u64)
            .map(|t| {
                let f = std::sync::Arc::clone(&f);
                std::thread::spawn(move || {
                    for i in 0..5_000u64 {
                        f.insert(&(t * 1_000_000 + i).to_le_bytes());
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        for t in 0..4u64 {
            assert!((0..5_000u64).all(|i| f.may_contain(&(t * 1_000_000 + i).to_le_bytes())));
        }
    }
}
