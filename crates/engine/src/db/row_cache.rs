//! [`RowCache`]: the answers of point lookups in tables, kept so that a key read again
//! costs a probe of one cache line instead of an index search and a data block search
//! (`Options::row_cache_size`).
//!
//! A row is what one table holds as the newest version of one user key: its seqno, kind
//! and stored bytes (value and attributes, or a separated value's handle), exactly as the
//! table's lookup hands them to the read path, which interprets them as it would have
//! (tombstones, expiry by the clock of the read, merge operands, range tombstones and
//! separated values are all decided after the cache, per read).
//!
//! Layout: a set-associative table. A row's place is one of [`WAYS`] ways of one set,
//! chosen by the user key's hash (the one its table's filter uses) mixed with the table
//! id; a set is one cache line holding its lock, a short tag per way and the rows'
//! pointers, so a lookup touches that line and the row it finds, and a batched read can
//! prefetch the line ([`RowCache::prefetch`]) before it looks. A row is one allocation:
//! table id, trailer, key length, key, stored bytes. Eviction is CLOCK: a hit marks its
//! way; an offer to a full set takes the first unmarked way from the set's hand, clearing
//! marks as it passes, so a row hit since the hand last passed survives one more offer
//! to its set; and an offer that does not fit the capacity evicts so from the sets a
//! global hand sweeps (then from its own), so rows larger than typical, which fill the
//! bytes before the ways, still make room. Every row a read misses is offered (there is
//! no admission test): a pass of reads over cold keys can displace rows that are not hit
//! again before their set's hand comes round.
//!
//! Invariants:
//! 1. Tables never change and table ids are never reused, so a row never goes stale: the
//!    rows of a deleted table are never asked for again and are evicted as other rows
//!    are offered.
//! 2. A row is offered only from a lookup at a seqno at or above the table's largest, so
//!    it is the table's newest version of the key; a read uses it only if its seqno is at
//!    or below the read's, when the table's lookup would have found that same version. A
//!    read at an older snapshot goes to the table.
//! 3. A row is used only if its table id and key equal the ones read: a tag or hash
//!    collision costs a miss, never a wrong answer. Keys chosen to collide only evict
//!    each other from their set (a set's cost is fixed), they cannot slow other keys.
//! 4. The rows' charges plus the sets' own memory never exceed the capacity: an offer
//!    takes an empty way of its set or its set's victim's, then, until the row fits,
//!    evicts from the sets the global hand sweeps and then from its own set, and gives up
//!    if nothing is left to evict. A row larger than the room the sets leave is not
//!    offered at all (it would empty the cache for nothing), nor is one larger than
//!    [`MAX_ROW_BYTES`]: reading such rows costs more than finding them, and they would
//!    crowd out many small rows. A capacity below [`MIN_CAPACITY`] is refused.
//!
//! Thread-safety: `Send + Sync`; lookups and offers lock one set.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::error::{Error, Result};
use crate::files::TableId;
use crate::key::{Kind, SeqNo};

/// Largest key plus stored bytes a row may hold.
pub(crate) const MAX_ROW_BYTES: usize = 4 << 10;

/// Smallest capacity: one set and a typical row.
pub(crate) const MIN_CAPACITY: usize = 64 + TYPICAL_CHARGE;

/// Ways per set: three rows' pointers, their tags, the marks and the lock fill a line.
pub(crate) const WAYS: usize = 3;

/// The charge of a typical row (a short key and value, its header and its allocation's):
/// the capacity buys one way per this many bytes.
const TYPICAL_CHARGE: usize = 128;

/// Bytes charged per row beyond its bytes: the `Arc`'s counts and the allocator's header.
const ROW_OVERHEAD: usize = 32;

/// Bytes of a row before its key: table id, trailer (seqno and kind), key length.
const HEADER: usize = 20;

/// Most sets an offer that does not fit looks at for a row to evict elsewhere.
const SWEEP: usize = 64;

/// Stripes of the hit and miss counters, so threads reading different sets rarely write
/// the same line.
const STRIPES: usize = 8;

/// One table's newest version of one user key, in one allocation.
#[derive(Debug, Clone)]
pub(crate) struct Row(Arc<[u8]>);

impl Row {
    fn build(table: TableId, user_key: &[u8], seqno: SeqNo, kind: Kind, stored: &[u8]) -> Row {
        let mut bytes = Vec::with_capacity(HEADER + user_key.len() + stored.len());
        bytes.extend_from_slice(&table.0.to_le_bytes());
        bytes.extend_from_slice(&((seqno.0 << 8) | u64::from(kind.as_u8())).to_le_bytes());
        bytes.extend_from_slice(&(user_key.len() as u32).to_le_bytes());
        bytes.extend_from_slice(user_key);
        bytes.extend_from_slice(stored);
        Row(Arc::from(bytes))
    }

    fn word(&self, at: usize) -> u64 {
        self.0
            .get(at..at + 8)
            .and_then(|b| b.try_into().ok())
            .map_or(0, u64::from_le_bytes)
    }

    fn table(&self) -> u64 {
        self.word(0)
    }

    fn key_len(&self) -> usize {
        self.0
            .get(16..HEADER)
            .and_then(|b| b.try_into().ok())
            .map_or(0, u32::from_le_bytes) as usize
    }

    fn key(&self) -> &[u8] {
        self.0.get(HEADER..HEADER + self.key_len()).unwrap_or(&[])
    }

    fn charge(&self) -> usize {
        self.0.len() + ROW_OVERHEAD
    }

    pub(crate) fn seqno(&self) -> SeqNo {
        SeqNo(self.word(8) >> 8)
    }

    /// The entry's kind (`None` only for a row this module did not build).
    pub(crate) fn kind(&self) -> Option<Kind> {
        Kind::from_u8(self.word(8) as u8)
    }

    /// The stored bytes, as the table's lookup returned them.
    pub(crate) fn stored(&self) -> &[u8] {
        self.0.get(HEADER + self.key_len()..).unwrap_or(&[])
    }
}

/// Where a user key's row of one table would be: computed once per lookup, for the
/// prefetch, the probe and the offer that may follow.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RowKey {
    set: usize,
    tag: u16,
    table: u64,
}

/// One set: its ways, behind the set's lock, in one cache line.
#[repr(align(64))]
#[derive(Default)]
struct Set(Mutex<Ways>);

#[derive(Default)]
struct Ways {
    rows: [Option<Row>; WAYS],
    tags: [u16; WAYS],
    /// Bit `i`: way `i` was hit since the hand last passed it.
    marked: u8,
    /// The way the next eviction looks at first.
    hand: u8,
}

#[repr(align(64))]
#[derive(Default)]
struct Stripe {
    hits: AtomicU64,
    misses: AtomicU64,
}

/// A byte-bounded, set-associative cache of rows; see the module documentation.
pub(crate) struct RowCache {
    sets: Box<[Set]>,
    /// Charged bytes: the sets' own and every row's (invariant 4).
    used: AtomicUsize,
    capacity: usize,
    /// The capacity less the sets' bytes: the most all rows together may be charged.
    room: usize,
    /// The next set an offer that does not fit evicts from (a CLOCK hand over the sets).
    hand: AtomicUsize,
    stripes: [Stripe; STRIPES],
}

impl std::fmt::Debug for RowCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RowCache")
            .field("sets", &self.sets.len())
            .field("used", &self.used)
            .field("capacity", &self.capacity)
            .finish_non_exhaustive()
    }
}

impl RowCache {
    /// A cache of at most `capacity` bytes, sets included, or `None` for 0 (no row cache).
    /// The sets, a sixth of the capacity, are allocated (and written) here.
    ///
    /// # Errors
    /// `InvalidArgument` naming `row_cache_size` if `capacity` is below [`MIN_CAPACITY`]
    /// or the allocator refuses the sets.
    pub(crate) fn new(capacity: usize) -> Result<Option<RowCache>> {
        if capacity == 0 {
            return Ok(None);
        }
        if capacity < MIN_CAPACITY {
            return Err(Error::invalid(format!(
                "Options: row_cache_size must be 0 (no row cache) or at least {MIN_CAPACITY} \
                 bytes, got {capacity}"
            )));
        }
        let count = (capacity / (WAYS * TYPICAL_CHARGE)).max(1);
        let mut sets = Vec::new();
        sets.try_reserve_exact(count).map_err(|_| {
            Error::invalid(format!(
                "Options: row_cache_size {capacity} needs {} bytes of sets, which cannot be \
                 allocated",
                count.saturating_mul(std::mem::size_of::<Set>())
            ))
        })?;
        sets.resize_with(count, Set::default);
        let sets = sets.into_boxed_slice();
        let sets_bytes = std::mem::size_of_val(&*sets);
        Ok(Some(RowCache {
            used: AtomicUsize::new(sets_bytes),
            room: capacity.saturating_sub(sets_bytes),
            sets,
            capacity,
            hand: AtomicUsize::new(0),
            stripes: Default::default(),
        }))
    }

    /// The capacity in bytes.
    pub(crate) fn capacity(&self) -> usize {
        self.capacity
    }

    /// Where the row of the user key whose `table::filter::key_hash` is `hash` would be
    /// in `table`.
    pub(crate) fn key(&self, table: TableId, hash: u64) -> RowKey {
        let mixed = (hash ^ table.0.wrapping_mul(0x9E37_79B9_7F4A_7C15))
            .wrapping_mul(0xD6E8_FEB8_6659_FD93);
        RowKey {
            set: ((u128::from(mixed) * self.sets.len() as u128) >> 64) as usize,
            tag: mixed as u16,
            table: table.0,
        }
    }

    /// Starts fetching the set `at` names, for a lookup soon after.
    pub(crate) fn prefetch(&self, at: RowKey) {
        if let Some(set) = self.sets.get(at.set) {
            crate::mmap::prefetch_address((set as *const Set).cast());
        }
    }

    /// Starts fetching the row at `at` if its set (fetched by [`RowCache::prefetch`]
    /// earlier) holds one with its tag, for a lookup soon after.
    pub(crate) fn prefetch_row(&self, at: RowKey) {
        let Some(set) = self.sets.get(at.set) else {
            return;
        };
        let ways = set.0.lock();
        for (tag, row) in ways.tags.iter().zip(&ways.rows) {
            if let (true, Some(row)) = (*tag == at.tag, row) {
                crate::mmap::prefetch_address(row.0.as_ptr());
            }
        }
    }

    fn stripe(&self, at: RowKey) -> Option<&Stripe> {
        self.stripes.get(at.set % STRIPES)
    }

    /// The cached row of `user_key` at `at` if there is one (invariant 3) and a read at
    /// `seqno` may use it (invariant 2: the row's seqno is at or below), counting a hit;
    /// else `None`, counting a miss.
    pub(crate) fn get(&self, at: RowKey, user_key: &[u8], seqno: SeqNo) -> Option<Row> {
        let found = self.sets.get(at.set).and_then(|set| {
            let mut ways = set.0.lock();
            let way = (0..WAYS).find(|&i| {
                ways.tags.get(i) == Some(&at.tag)
                    && ways
                        .rows
                        .get(i)
                        .and_then(Option::as_ref)
                        .is_some_and(|row| {
                            row.table() == at.table && row.key() == user_key && row.seqno() <= seqno
                        })
            })?;
            ways.marked |= 1 << way;
            ways.rows.get(way).cloned().flatten()
        });
        if let Some(stripe) = self.stripe(at) {
            let counter = if found.is_some() {
                &stripe.hits
            } else {
                &stripe.misses
            };
            counter.fetch_add(1, Ordering::Relaxed);
        }
        found
    }

    /// Offers the newest version of `user_key` in the table of `at` (invariant 2 is the
    /// caller's). Unless it is too large or already cached, it takes an empty way of its
    /// set or evicts the set's victim, and is kept if it fits the capacity (invariant 4).
    pub(crate) fn offer(
        &self,
        at: RowKey,
        user_key: &[u8],
        seqno: SeqNo,
        kind: Kind,
        stored: &[u8],
    ) {
        if user_key.len().saturating_add(stored.len()) > MAX_ROW_BYTES {
            return;
        }
        let Some(set) = self.sets.get(at.set) else {
            return;
        };
        let row = Row::build(TableId(at.table), user_key, seqno, kind, stored);
        let charge = row.charge();
        if charge > self.room {
            return;
        }
        let mut ways = set.0.lock();
        let cached = (0..WAYS).any(|i| {
            ways.tags.get(i) == Some(&at.tag)
                && ways
                    .rows
                    .get(i)
                    .and_then(Option::as_ref)
                    .is_some_and(|r| r.table() == at.table && r.key() == user_key)
        });
        if cached {
            return;
        }
        // A free way: an empty one, or the set's victim's.
        let way = match ways.rows.iter().position(Option::is_none) {
            Some(empty) => empty,
            None => match self.evict(&mut ways) {
                Some(way) => way,
                None => return,
            },
        };
        // Until the row fits the capacity, evict rows: other sets' from the sweep's hand,
        // then this set's (invariant 4).
        while self
            .used
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |used| {
                used.checked_add(charge).filter(|&u| u <= self.capacity)
            })
            .is_err()
        {
            if !self.evict_elsewhere(at.set) && self.evict(&mut ways).is_none() {
                return;
            }
        }
        if let Some(slot) = ways.rows.get_mut(way) {
            *slot = Some(row);
        }
        if let Some(tag) = ways.tags.get_mut(way) {
            *tag = at.tag;
        }
        ways.marked &= !(1 << way);
    }

    /// Evicts the victim of the next set the sweep's hand reaches that holds a row and is
    /// not locked (a set locked by another thread is passed: waiting for it while holding
    /// `own`'s lock could deadlock), looking at most at [`SWEEP`] sets. True if it
    /// evicted one.
    fn evict_elsewhere(&self, own: usize) -> bool {
        for _ in 0..SWEEP {
            let i = self.hand.fetch_add(1, Ordering::Relaxed) % self.sets.len();
            if i == own {
                continue;
            }
            let Some(mut ways) = self.sets.get(i).and_then(|set| set.0.try_lock()) else {
                continue;
            };
            if self.evict(&mut ways).is_some() {
                return true;
            }
        }
        false
    }

    /// Evicts the set's victim ([`victim`]), uncharging it; returns its way, or `None` if
    /// the set holds no row.
    fn evict(&self, ways: &mut Ways) -> Option<usize> {
        let way = victim(ways)?;
        let old = ways.rows.get_mut(way).and_then(Option::take)?;
        self.used.fetch_sub(old.charge(), Ordering::Relaxed);
        Some(way)
    }

    /// Lookups that found a row for their key.
    pub(crate) fn hits(&self) -> u64 {
        self.stripes
            .iter()
            .map(|s| s.hits.load(Ordering::Relaxed))
            .sum()
    }

    /// Lookups that found none.
    pub(crate) fn misses(&self) -> u64 {
        self.stripes
            .iter()
            .map(|s| s.misses.load(Ordering::Relaxed))
            .sum()
    }

    /// Bytes charged: the sets' (allocated at open) and the rows held.
    pub(crate) fn used_bytes(&self) -> usize {
        self.used.load(Ordering::Relaxed)
    }
}

/// The way of the row to evict from a set: the first unmarked row from the hand (CLOCK),
/// clearing the marks it passes; the hand moves past it. `None` if the set holds no row.
fn victim(ways: &mut Ways) -> Option<usize> {
    if ways.rows.iter().all(Option::is_none) {
        return None;
    }
    let mut way = usize::from(ways.hand) % WAYS;
    // Every mark passed is cleared, so the second turn stops at a row.
    for _ in 0..2 * WAYS {
        let held = ways.rows.get(way).is_some_and(Option::is_some);
        if held && ways.marked & (1 << way) == 0 {
            break;
        }
        ways.marked &= !(1 << way);
        way = (way + 1) % WAYS;
    }
    ways.hand = ((way + 1) % WAYS) as u8;
    Some(way)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use crate::table::filter::key_hash;

    fn key(cache: &RowCache, table: u64, user_key: &[u8]) -> RowKey {
        cache.key(TableId(table), key_hash(user_key))
    }

    #[test]
    fn a_set_is_one_cache_line() {
        assert_eq!(std::mem::size_of::<Set>(), 64);
    }

    #[test]
    fn a_row_round_trips_and_answers_only_its_own_table_and_key() {
        let cache = RowCache::new(1 << 20).unwrap().unwrap();
        let at = key(&cache, 7, b"key");
        assert!(cache.get(at, b"key", SeqNo::MAX).is_none());
        cache.offer(at, b"key", SeqNo(42), Kind::Put, b"stored");
        let row = cache.get(at, b"key", SeqNo::MAX).unwrap();
        assert_eq!(
            (row.seqno(), row.kind(), row.stored()),
            (SeqNo(42), Some(Kind::Put), &b"stored"[..])
        );
        // A key or a table that lands on the same place (a collision) misses.
        assert!(cache.get(at, b"kex", SeqNo::MAX).is_none());
        let other = RowKey { table: 8, ..at };
        assert!(cache.get(other, b"key", SeqNo::MAX).is_none());
        assert_eq!((cache.hits(), cache.misses()), (1, 3));
    }

    /// A row newer than a read's seqno is not the read's: a miss, counted as one.
    #[test]
    fn a_row_newer_than_the_read_is_a_miss() {
        let cache = RowCache::new(1 << 20).unwrap().unwrap();
        let at = key(&cache, 7, b"key");
        cache.offer(at, b"key", SeqNo(42), Kind::Put, b"v");
        assert!(cache.get(at, b"key", SeqNo(41)).is_none());
        assert!(cache.get(at, b"key", SeqNo(42)).is_some());
        assert_eq!((cache.hits(), cache.misses()), (1, 1));
    }

    /// The smallest capacity holds a row; a smaller one is refused; a row larger than the
    /// room the sets leave is not offered, so it evicts nothing.
    #[test]
    fn tiny_capacities_and_rows_larger_than_the_room() {
        for capacity in [1, 63, MIN_CAPACITY - 1] {
            let err = RowCache::new(capacity).unwrap_err();
            assert!(matches!(err, Error::InvalidArgument(m) if m.contains("row_cache_size")));
        }
        let cache = RowCache::new(MIN_CAPACITY).unwrap().unwrap();
        let small = key(&cache, 1, b"a");
        cache.offer(small, b"a", SeqNo(1), Kind::Put, b"v");
        assert!(cache.get(small, b"a", SeqNo::MAX).is_some());
        let big = key(&cache, 1, b"b");
        cache.offer(big, b"b", SeqNo(1), Kind::Put, &[0; 200]);
        assert!(cache.get(big, b"b", SeqNo::MAX).is_none());
        assert!(cache.get(small, b"a", SeqNo::MAX).is_some());
        assert!(cache.used_bytes() <= cache.capacity());
    }

    #[test]
    fn large_rows_and_a_zero_capacity_cache_nothing() {
        assert!(RowCache::new(0).unwrap().is_none());
        let huge = RowCache::new(usize::MAX).unwrap_err();
        assert!(matches!(huge, Error::InvalidArgument(m) if m.contains("row_cache_size")));
        let cache = RowCache::new(1 << 20).unwrap().unwrap();
        let at = key(&cache, 1, b"k");
        cache.offer(at, b"k", SeqNo(1), Kind::Put, &vec![0; MAX_ROW_BYTES]);
        assert!(cache.get(at, b"k", SeqNo::MAX).is_none());
        cache.offer(at, b"k", SeqNo(1), Kind::Put, &vec![0; MAX_ROW_BYTES - 1]);
        assert!(cache.get(at, b"k", SeqNo::MAX).is_some());
    }

    #[test]
    fn rows_stay_within_the_capacity_and_recent_rows_are_found() {
        for (capacity, len) in [(64 << 10, 100), (64 << 10, 4000), (2 << 10, 300)] {
            let cache = RowCache::new(capacity).unwrap().unwrap();
            let mut kept = 0;
            for i in 0u32..20_000 {
                let k = i.to_le_bytes();
                let at = key(&cache, 1, &k);
                cache.offer(at, &k, SeqNo(u64::from(i)), Kind::Put, &vec![1; len]);
                assert!(cache.used_bytes() <= cache.capacity());
                kept += usize::from(cache.get(at, &k, SeqNo::MAX).is_some());
            }
            // Most rows are kept when offered (a full set evicts for them).
            assert!(kept > 10_000, "{capacity} {len}: {kept}");
        }
    }

    /// Threads offering and reading rows of every size at once (offers that sweep other
    /// sets while holding their own) finish, find only their own rows, and keep within
    /// the capacity.
    #[test]
    fn concurrent_offers_and_reads_stay_within_the_capacity() {
        let cache = std::sync::Arc::new(RowCache::new(32 << 10).unwrap().unwrap());
        let threads: Vec<_> = (0..4u64)
            .map(|t| {
                let cache = std::sync::Arc::clone(&cache);
                std::thread::spawn(move || {
                    for i in 0..20_000u64 {
                        let k = (i % 3000).to_le_bytes();
                        let at = key(&cache, t, &k);
                        let len = (i as usize * 37) % 2000;
                        cache.offer(at, &k, SeqNo(t), Kind::Put, &vec![t as u8; len]);
                        if let Some(row) = cache.get(at, &k, SeqNo::MAX) {
                            assert_eq!(row.seqno(), SeqNo(t));
                            assert!(row.stored().iter().all(|&b| b == t as u8));
                        }
                        assert!(cache.used_bytes() <= cache.capacity());
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        assert!(cache.hits() > 0);
    }

    /// Rows hit since the hand passed stay; an unmarked one is the victim.
    #[test]
    fn a_full_set_evicts_a_row_not_hit_since_the_hand_passed() {
        // One set: every key lands in it.
        let cache = RowCache::new(WAYS * TYPICAL_CHARGE).unwrap().unwrap();
        assert_eq!(cache.sets.len(), 1);
        let cache = RowCache {
            capacity: 1 << 20,
            ..cache
        };
        let keys: Vec<[u8; 1]> = (0..=WAYS as u8).map(|i| [i]).collect();
        for k in &keys[..WAYS] {
            cache.offer(key(&cache, 1, k), k, SeqNo(1), Kind::Put, b"v");
        }
        // Ways 0 and 2 are hit; the next offer evicts way 1.
        assert!(cache
            .get(key(&cache, 1, &keys[0]), &keys[0], SeqNo::MAX)
            .is_some());
        assert!(cache
            .get(key(&cache, 1, &keys[2]), &keys[2], SeqNo::MAX)
            .is_some());
        let last = &keys[WAYS];
        cache.offer(key(&cache, 1, last), last, SeqNo(1), Kind::Put, b"v");
        let held: Vec<bool> = keys
            .iter()
            .map(|k| cache.get(key(&cache, 1, k), k, SeqNo::MAX).is_some())
            .collect();
        assert_eq!(held, [true, false, true, true]);
    }
}
