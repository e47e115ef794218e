//! The memtable: the sorted, in-memory home of recent writes, shared by every keyspace,
//! until a flush turns it into one table per keyspace.
//!
//! Owns: the map from `(keyspace, internal key)` to value, its approximate size, the range
//! of seqnos it holds, and a [`Cursor`] over one keyspace. It does not own durability (the
//! WAL does) nor visibility (readers filter by seqno above it).
//!
//! Invariants:
//! 1. Entries sort by keyspace id, then by internal key (user key ascending, trailer
//!    descending, as [`crate::key::compare_encoded`]), so one
//!    keyspace is one contiguous run and the newest version of a user key comes first.
//! 2. An internal key is inserted at most once (seqnos are unique per op), so an insert
//!    never replaces an entry a reader may be looking at.
//! 3. Inserts and reads may run concurrently: inserts take turns on the skip list's lock,
//!    reads take none ([`skiplist`]). The write path inserts a batch's entries before it
//!    publishes the batch's seqnos, so readers never see part of a batch.
//!
//! 4. Range tombstones are kept beside the skip list, in an append-only list per memtable
//!    (`range_tombstones`), inserted like entries before their seqno is published. A
//!    keyspace with only range tombstones still counts as written ([`Memtable::keyspaces`])
//!    so a flush writes them out.
//!
//! 5. Every user key inserted is first added to the memtable's bloom filter ([`filter`]),
//!    so a point lookup that the filter rules out skips the skip-list search.
//!
//! 6. Every version inserted is entered in the skip list's point index ([`point`], made
//!    by the first insert) before its insert returns, unless the index is full (it then
//!    says so): a point lookup whose snapshot sees the newest version takes it from there
//!    without a search.
//!
//! Thread-safety: `Send + Sync`; shared through `Arc`.

mod filter;
mod point;
mod skiplist;

pub(crate) use filter::key_hash;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering as AtomicOrdering};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::cursor::Cursor;
use crate::entry::{self, Body, EntryView};
use crate::error::Result;
use crate::key::{split_encoded, KeyspaceId, Kind, SeqNo, TRAILER_LEN};
use crate::rangedel::RangeTombstone;
use crate::vlog::BlobFileMeta;

use filter::MemFilter;
use skiplist::{Entry, NewEntry, Newest, Position, Probe, SkipList};

/// Bytes charged per entry beyond its key and value: an estimate of a node's header and
/// links, its share of arena chunk slack and of the filter, on the safe side.
const ENTRY_OVERHEAD: usize = 80;

/// Bytes of memtable budget per key its point index is sized for: `budget / 192` keys,
/// in slots of 8 bytes for a third more keys rounded up to a power of two (6.25 % of a
/// power-of-two budget, 16 MiB: 1 MiB). The index takes keys until it is three quarters
/// full (a 16 MiB memtable: 98,304 keys), so a memtable of entries of about 170 bytes or
/// more (key, value and [`ENTRY_OVERHEAD`]) is indexed whole; one of smaller entries
/// indexes its first keys and searches the skip list for the others.
const POINT_INDEX_BYTES_PER_KEY: usize = 192;

/// How many ops ahead [`Memtable::apply_group`] fetches a filter word: far enough that it
/// has arrived when the op's turn comes.
const FILTER_AHEAD: usize = 4;

/// The probe for an encoded internal key (or seek target) in `keyspace`. A target shorter
/// than a trailer is a user key with trailer 0, as `compare_encoded` reads it.
fn probe_of(keyspace: u32, ikey: &[u8]) -> Probe<'_> {
    let (user, trailer) = split_encoded(ikey).unwrap_or((ikey, 0));
    Probe {
        keyspace,
        user,
        trailer,
    }
}

/// The probe that sorts before every entry of `keyspace`: empty user key, largest trailer.
fn first_of(keyspace: u32) -> Probe<'static> {
    Probe {
        keyspace,
        user: &[],
        trailer: u64::MAX,
    }
}

/// A sorted in-memory table of recent writes.
#[derive(Debug)]
pub(crate) struct Memtable {
    /// The entries, in the memtable's order (invariant 1).
    list: Arc<SkipList>,
    /// The user keys of `list` (invariant 5).
    filter: MemFilter,
    /// Range tombstones, in insertion order (invariant 4); `range_count` mirrors the
    /// length so readers skip the lock when there are none.
    range_tombstones: Mutex<Vec<(KeyspaceId, RangeTombstone)>>,
    range_count: AtomicUsize,
    size: AtomicUsize,
    max_seqno: AtomicU64,
    /// The first WAL file holding this memtable's writes; once it is flushed, WAL files
    /// below the next memtable's `wal_id` are obsolete.
    wal_id: u64,
    /// Bytes each keyspace's writes take in the log (encoded batch ops), added by the
    /// writer once per group ([`Memtable::add_logged`]); an estimate's input, not exact.
    logged: Mutex<HashMap<KeyspaceId, u64>>,
    /// Blob files finished while this memtable was active: the files its separated values
    /// point into, which its flush records in the manifest with its tables.
    blob_files: Mutex<Vec<BlobFileMeta>>,
    /// Smallest and largest blob file id an entry references (`u64::MAX` and 0 if none):
    /// value-log GC and file deletion leave these files alone while the memtable is alive.
    blob_min: AtomicU64,
    blob_max: AtomicU64,
    /// Bytes of the separated values its entries point to: the value log this memtable
    /// keeps unflushed (GC cannot see those files before the flush, and recovery reads
    /// them all), so it counts toward the switch like the WAL does.
    blob_bytes: AtomicU64,
}

/// Bytes of writes per keyspace, gathered while a group of writes is inserted and added
/// to the memtable at once. Consecutive writes to one keyspace cost one comparison each.
#[derive(Debug, Default)]
pub(crate) struct KeyspaceBytes {
    last: Option<(KeyspaceId, u64)>,
    rest: HashMap<KeyspaceId, u64>,
}

impl KeyspaceBytes {
    /// Counts `bytes` for `keyspace`.
    pub(crate) fn add(&mut self, keyspace: KeyspaceId, bytes: u64) {
        match &mut self.last {
            Some((ks, n)) if *ks == keyspace => *n += bytes,
            last => {
                if let Some((ks, n)) = last.replace((keyspace, bytes)) {
                    *self.rest.entry(ks).or_default() += n;
                }
            }
        }
    }
}

/// Puts a group's ops (in seqno order) in the order [`Memtable::apply_group`] inserts
/// fastest: by keyspace and user key, a key's versions oldest first (a stable sort).
pub(crate) fn sort_group(ops: &mut [(SeqNo, crate::batch::Op<'_>)]) {
    if ops.len() > 1 {
        ops.sort_by(|(_, a), (_, b)| (a.keyspace(), a.key()).cmp(&(b.keyspace(), b.key())));
    }
}

impl Memtable {
    /// An empty memtable whose writes are logged from WAL file `wal_id` on, with a filter
    /// sized for `budget` bytes of entries (the store's `memtable_size`).
    pub(crate) fn new(wal_id: u64, budget: usize) -> Memtable {
        Memtable::with_huge_pages(wal_id, budget, false)
    }

    /// As [`Memtable::new`], on transparent huge pages if `huge_pages`
    /// (`Options::memtable_huge_pages`).
    pub(crate) fn with_huge_pages(wal_id: u64, budget: usize, huge_pages: bool) -> Memtable {
        Memtable {
            list: Arc::new(SkipList::with_options(
                huge_pages,
                budget / POINT_INDEX_BYTES_PER_KEY,
            )),
            filter: MemFilter::new(budget, TRAILER_LEN + ENTRY_OVERHEAD),
            range_tombstones: Mutex::new(Vec::new()),
            range_count: AtomicUsize::new(0),
            size: AtomicUsize::new(0),
            max_seqno: AtomicU64::new(0),
            wal_id,
            logged: Mutex::new(HashMap::new()),
            blob_files: Mutex::new(Vec::new()),
            blob_min: AtomicU64::new(u64::MAX),
            blob_max: AtomicU64::new(0),
            blob_bytes: AtomicU64::new(0),
        }
    }

    /// Records blob files finished while this memtable is active (see `blob_files`).
    pub(crate) fn attach_blob_files(&self, files: Vec<BlobFileMeta>) {
        if !files.is_empty() {
            self.blob_files.lock().extend(files);
        }
    }

    /// The blob files attached so far.
    pub(crate) fn blob_files(&self) -> Vec<BlobFileMeta> {
        self.blob_files.lock().clone()
    }

    /// Bytes of the separated values its entries point to.
    pub(crate) fn blob_bytes(&self) -> u64 {
        self.blob_bytes.load(AtomicOrdering::Relaxed)
    }

    /// The smallest and largest blob file id its entries reference, if any.
    pub(crate) fn blob_id_range(&self) -> Option<(u64, u64)> {
        let (lo, hi) = (
            self.blob_min.load(AtomicOrdering::Acquire),
            self.blob_max.load(AtomicOrdering::Acquire),
        );
        (lo <= hi).then_some((lo, hi))
    }

    /// Inserts one version. See invariant 2: `(keyspace, user_key, seqno)` must be new.
    #[cfg(test)]
    pub(crate) fn insert(
        &self,
        keyspace: KeyspaceId,
        user_key: &[u8],
        seqno: SeqNo,
        kind: Kind,
        value: &[u8],
    ) {
        self.insert_version(keyspace, user_key, seqno, kind, value);
    }

    /// The insert of one version, alone ([`Memtable::apply_group`] inserts a group's).
    #[cfg(test)]
    fn insert_version(
        &self,
        keyspace: KeyspaceId,
        user_key: &[u8],
        seqno: SeqNo,
        kind: Kind,
        value: &[u8],
    ) {
        let hash = filter::key_hash(user_key);
        // The slot the insert reads next is fetched while the filter's word is.
        self.list.prefetch_point_slot(keyspace.0, hash);
        let trailer = self.note_version(user_key, seqno, kind, value, hash);
        self.list
            .insert_hashed(keyspace.0, user_key, trailer, value, hash);
    }

    /// Everything an insert of a version does besides the skip list: the filter
    /// (invariant 5), the size, the seqno range and the value-log range. Returns the
    /// entry's trailer.
    fn note_version(
        &self,
        user_key: &[u8],
        seqno: SeqNo,
        kind: Kind,
        value: &[u8],
        hash: u64,
    ) -> u64 {
        let charge = user_key.len() + TRAILER_LEN + value.len() + ENTRY_OVERHEAD;
        self.filter.insert_hash(hash);
        self.size.fetch_add(charge, AtomicOrdering::Relaxed);
        self.max_seqno.fetch_max(seqno.0, AtomicOrdering::Relaxed);
        if kind == Kind::ValueHandle {
            if let Ok(Some(EntryView {
                body: Body::Handle(h),
                ..
            })) = entry::view(kind, value)
            {
                self.blob_min.fetch_min(h.file_id.0, AtomicOrdering::AcqRel);
                self.blob_max.fetch_max(h.file_id.0, AtomicOrdering::AcqRel);
                self.blob_bytes
                    .fetch_add(u64::from(h.value_len), AtomicOrdering::Relaxed);
            }
        }
        (seqno.0 << 8) | u64::from(kind.as_u8())
    }

    /// Inserts a batch's or a write group's ops with their seqnos (versions and range
    /// tombstones), the versions through one [`SkipList::insert_group`], which runs
    /// their skip-list searches side by side. Any order is correct; in key order (a
    /// key's versions oldest first) each insert starts nearest its place.
    pub(crate) fn apply_group(&self, ops: &[(SeqNo, crate::batch::Op<'_>)]) {
        let mut entries: smallvec::SmallVec<[NewEntry<'_>; 16]> =
            smallvec::SmallVec::with_capacity(ops.len());
        for (i, (seqno, op)) in ops.iter().enumerate() {
            // The filter words of the ops a few places on are fetched meanwhile.
            if let Some((_, ahead)) = ops.get(i + FILTER_AHEAD) {
                self.filter.prefetch_hash(filter::key_hash(ahead.key()));
            }
            match *op {
                crate::batch::Op::RangeDelete {
                    keyspace,
                    start,
                    end,
                } => {
                    if let Some(t) = RangeTombstone::new(start.to_vec(), end.to_vec(), *seqno) {
                        self.insert_range_tombstone(keyspace, t);
                    }
                }
                _ => {
                    let (keyspace, user, value) = (op.keyspace(), op.key(), op.stored());
                    let user_hash = filter::key_hash(user);
                    // The point-index slot the insert reads first is fetched while the
                    // filter's word is.
                    self.list.prefetch_point_slot(keyspace.0, user_hash);
                    let trailer = self.note_version(user, *seqno, op.kind(), value, user_hash);
                    entries.push(NewEntry {
                        keyspace: keyspace.0,
                        user,
                        trailer,
                        value,
                        user_hash,
                    });
                }
            }
        }
        self.list.insert_group(&entries);
    }

    /// Records the range tombstone `tombstone` of `keyspace` (invariant 4).
    pub(crate) fn insert_range_tombstone(&self, keyspace: KeyspaceId, tombstone: RangeTombstone) {
        let charge = tombstone.start.len() + tombstone.end.len() + TRAILER_LEN + ENTRY_OVERHEAD;
        let seqno = tombstone.seqno;
        let mut list = self.range_tombstones.lock();
        list.push((keyspace, tombstone));
        self.range_count.store(list.len(), AtomicOrdering::Release);
        drop(list);
        self.size.fetch_add(charge, AtomicOrdering::Relaxed);
        self.max_seqno.fetch_max(seqno.0, AtomicOrdering::Relaxed);
    }

    /// The range tombstones of `keyspace` (all seqnos; readers filter), in insertion order.
    pub(crate) fn range_tombstones(&self, keyspace: KeyspaceId) -> Vec<RangeTombstone> {
        if self.range_count.load(AtomicOrdering::Acquire) == 0 {
            return Vec::new();
        }
        self.range_tombstones
            .lock()
            .iter()
            .filter(|(ks, _)| *ks == keyspace)
            .map(|(_, t)| t.clone())
            .collect()
    }

    /// True if any range tombstone was inserted.
    pub(crate) fn has_range_tombstones(&self) -> bool {
        self.range_count.load(AtomicOrdering::Acquire) > 0
    }

    /// The newest version of `user_key` in `keyspace` with seqno `<= snapshot`:
    /// `(seqno, kind, value)`.
    #[cfg(test)]
    pub(crate) fn get(
        &self,
        keyspace: KeyspaceId,
        user_key: &[u8],
        snapshot: SeqNo,
    ) -> Option<(SeqNo, Kind, Vec<u8>)> {
        self.get_with(keyspace, user_key, snapshot, |s, k, v| (s, k, v.to_vec()))
    }

    /// The first of two steps that let a batch of point reads overlap their cache misses:
    /// hints the CPU to fetch the filter word and the point-index slot that
    /// [`Memtable::get_with`] reads first for the key whose `filter::key_hash` is `hash`.
    pub(crate) fn prefetch_get(&self, keyspace: KeyspaceId, hash: u64) {
        if self.list.is_empty() {
            return;
        }
        self.filter.prefetch_hash(hash);
        self.list.prefetch_point_slot(keyspace.0, hash);
    }

    /// The second step (after [`Memtable::prefetch_get`] for the batch's keys): if the
    /// filter may hold the key, hints the CPU to fetch the node the point index names.
    /// Returns whether it may (false: the memtable certainly lacks the key).
    pub(crate) fn prefetch_node(&self, keyspace: KeyspaceId, hash: u64) -> bool {
        if self.list.is_empty() || !self.filter.may_contain_hash(hash) {
            return false;
        }
        self.list.prefetch_newest(keyspace.0, hash);
        true
    }

    /// `f(seqno, kind, stored value)` of the newest version of `user_key` in `keyspace`
    /// with seqno `<= snapshot`, without copying the value.
    pub(crate) fn get_with<R>(
        &self,
        keyspace: KeyspaceId,
        user_key: &[u8],
        snapshot: SeqNo,
        f: impl FnOnce(SeqNo, Kind, &[u8]) -> R,
    ) -> Option<R> {
        // An empty memtable (the usual state of a store that only reads) answers before
        // hashing the key for the filter. A write is counted before its seqno is
        // published, so a reader that may see it never finds the list empty.
        if self.list.is_empty() {
            return None;
        }
        let hash = filter::key_hash(user_key);
        if !self.filter.may_contain_hash(hash) {
            return None;
        }
        // The point index answers for the newest version when the snapshot sees it
        // (invariant 6); older snapshots, and keys an incomplete index lacks, search.
        let found = match self.list.newest(keyspace.0, user_key, hash) {
            Newest::Absent => return None,
            Newest::Found(entry) if entry.trailer() >> 8 <= snapshot.0 => Some(entry),
            Newest::Found(_) | Newest::Unknown => None,
        };
        if let Some(entry) = found {
            let trailer = entry.trailer();
            let kind = Kind::from_u8((trailer & 0xff) as u8)?;
            return Some(f(SeqNo(trailer >> 8), kind, entry.value()));
        }
        let entry = self.list.seek_ge(&Probe {
            keyspace: keyspace.0,
            user: user_key,
            trailer: (snapshot.0.min(SeqNo::MAX.0) << 8) | 0xff,
        })?;
        if entry.keyspace() != keyspace.0 || entry.user_key() != user_key {
            return None;
        }
        let trailer = entry.trailer();
        let kind = Kind::from_u8((trailer & 0xff) as u8)?;
        Some(f(SeqNo(trailer >> 8), kind, entry.value()))
    }

    /// Records that writes up to `seqno` went through this memtable even if none of them
    /// was inserted (writes to a dropped keyspace), so flushing it covers them.
    pub(crate) fn note_seqno(&self, seqno: SeqNo) {
        self.max_seqno.fetch_max(seqno.0, AtomicOrdering::Relaxed);
    }

    /// Adds the log bytes of a group of writes inserted into this memtable.
    pub(crate) fn add_logged(&self, bytes: KeyspaceBytes) {
        let mut logged = self.logged.lock();
        for (ks, n) in bytes.rest.into_iter().chain(bytes.last) {
            *logged.entry(ks).or_default() += n;
        }
    }

    /// Bytes the writes of `keyspace` in this memtable take in the log.
    pub(crate) fn logged_bytes(&self, keyspace: KeyspaceId) -> u64 {
        self.logged.lock().get(&keyspace).copied().unwrap_or(0)
    }

    /// At least the bytes [`Memtable::size`] grows by when a batch of `ops` ops whose
    /// encoding (keys, values and their framing) takes `encoded_len` bytes is inserted:
    /// each entry is charged its key, trailer, value and [`ENTRY_OVERHEAD`], and the
    /// encoding holds every key and value.
    pub(crate) fn charge_bound(encoded_len: usize, ops: usize) -> usize {
        encoded_len.saturating_add(ops.saturating_mul(TRAILER_LEN + ENTRY_OVERHEAD))
    }

    /// Approximate bytes the entries take (their charges): what fills a memtable.
    pub(crate) fn size(&self) -> usize {
        self.size.load(AtomicOrdering::Relaxed)
    }

    /// Approximate bytes of memory held: [`Memtable::size`] and the point index, which
    /// the first insert allocates whole.
    pub(crate) fn memory(&self) -> usize {
        self.size() + self.list.point_index_bytes()
    }

    /// True if nothing was inserted.
    pub(crate) fn is_empty(&self) -> bool {
        self.list.is_empty() && !self.has_range_tombstones()
    }

    /// Number of entries (all versions, all keyspaces).
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.list.len()
    }

    /// The largest seqno inserted (0 if empty).
    pub(crate) fn max_seqno(&self) -> SeqNo {
        SeqNo(self.max_seqno.load(AtomicOrdering::Relaxed))
    }

    /// The first WAL file holding this memtable's writes.
    pub(crate) fn wal_id(&self) -> u64 {
        self.wal_id
    }

    /// The keyspaces that have at least one entry or range tombstone, ascending.
    pub(crate) fn keyspaces(&self) -> Vec<KeyspaceId> {
        let mut out: Vec<KeyspaceId> = Vec::new();
        if self.has_range_tombstones() {
            out.extend(self.range_tombstones.lock().iter().map(|(ks, _)| *ks));
        }
        let mut next = self.list.first();
        while let Some(entry) = next {
            let ks = entry.keyspace();
            out.push(KeyspaceId(ks));
            next = ks
                .checked_add(1)
                .and_then(|following| self.list.seek_ge(&first_of(following)));
        }
        out.sort();
        out.dedup();
        out
    }

    /// A cursor over the entries of `keyspace`.
    pub(crate) fn cursor(&self, keyspace: KeyspaceId) -> MemCursor {
        MemCursor {
            pos: Position::new(Arc::clone(&self.list)),
            keyspace: keyspace.0,
            keys_only: false,
        }
    }

    /// A cursor over the entries of `keyspace` whose `value()` is empty for plain puts;
    /// entries with attributes keep theirs, since their expiry decides whether they are
    /// live. For walks that only look at keys (counting).
    pub(crate) fn key_cursor(&self, keyspace: KeyspaceId) -> MemCursor {
        MemCursor {
            keys_only: true,
            ..self.cursor(keyspace)
        }
    }
}

/// A [`Cursor`] over one keyspace of a memtable.
///
/// It stands on a node of the skip list, which its [`Position`] keeps alive, and hands out
/// the node's key and value without copying them. Forward steps follow a link, backward
/// steps the level-0 back link, and seeks search. It stays valid while writers insert: an
/// entry inserted after the cursor was made may be seen or missed, which is harmless, as
/// readers only use entries whose seqno was published before their cursor was made, and
/// those were all in the list already (invariant 3). Once it steps off its keyspace it is
/// invalid, and stays so until the next seek.
#[derive(Debug)]
pub(crate) struct MemCursor {
    pos: Position,
    keyspace: u32,
    /// Set by [`Memtable::key_cursor`]: values of plain puts read as empty.
    keys_only: bool,
}

impl MemCursor {
    /// The entry the cursor is on, if it is in the cursor's keyspace.
    fn current(&self) -> Option<Entry<'_>> {
        self.pos.entry().filter(|e| e.keyspace() == self.keyspace)
    }
}

impl Cursor for MemCursor {
    fn valid(&self) -> bool {
        self.current().is_some()
    }

    fn key(&self) -> &[u8] {
        self.current().map_or(&[], |e| e.key())
    }

    fn value(&self) -> &[u8] {
        match self.current() {
            Some(e) if !(self.keys_only && (e.trailer() & 0xff) == u64::from(Kind::Put as u8)) => {
                e.value()
            }
            _ => &[],
        }
    }

    fn seek_to_first(&mut self) -> Result<()> {
        self.pos.seek_ge(&first_of(self.keyspace));
        Ok(())
    }

    fn seek_to_last(&mut self) -> Result<()> {
        match self.keyspace.checked_add(1) {
            Some(next) => self.pos.seek_lt(&first_of(next)),
            None => self.pos.seek_last(),
        }
        Ok(())
    }

    fn seek(&mut self, target: &[u8]) -> Result<()> {
        self.pos.seek_ge(&probe_of(self.keyspace, target));
        Ok(())
    }

    fn seek_for_prev(&mut self, target: &[u8]) -> Result<()> {
        self.pos.seek_le(&probe_of(self.keyspace, target));
        Ok(())
    }

    fn next(&mut self) -> Result<()> {
        if self.valid() {
            self.pos.next();
        }
        Ok(())
    }

    fn prev(&mut self) -> Result<()> {
        if self.valid() {
            self.pos.prev();
        }
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]
mod tests {
    use super::*;
    use crate::key::{parse_encoded, seek_key};

    fn user_keys(c: &mut MemCursor, forward: bool) -> Vec<(Vec<u8>, u64)> {
        let mut out = Vec::new();
        if forward {
            c.seek_to_first().unwrap();
        } else {
            c.seek_to_last().unwrap();
        }
        while c.valid() {
            let (user, trailer) = split_encoded(c.key()).unwrap();
            out.push((user.to_vec(), trailer >> 8));
            if forward {
                c.next().unwrap();
            } else {
                c.prev().unwrap();
            }
        }
        out
    }

    #[test]
    fn versions_sort_newest_first_and_keyspaces_stay_apart() {
        let m = Arc::new(Memtable::new(7, 1 << 20));
        let (a, b) = (KeyspaceId(1), KeyspaceId(2));
        m.insert(a, b"k", SeqNo(1), Kind::Put, b"v1");
        m.insert(a, b"k", SeqNo(3), Kind::Delete, b"");
        m.insert(a, b"", SeqNo(2), Kind::Put, b"empty");
        m.insert(b, b"k", SeqNo(4), Kind::Put, b"other");
        m.insert(KeyspaceId(u32::MAX), b"z", SeqNo(5), Kind::Put, b"last");

        assert_eq!(
            m.get(a, b"k", SeqNo(10)),
            Some((SeqNo(3), Kind::Delete, vec![]))
        );
        assert_eq!(
            m.get(a, b"k", SeqNo(2)),
            Some((SeqNo(1), Kind::Put, b"v1".to_vec()))
        );
        assert_eq!(m.get(a, b"k", SeqNo(0)), None);
        assert_eq!(m.get(a, b"", SeqNo(9)).unwrap().2, b"empty");
        assert_eq!(m.get(b, b"k", SeqNo(9)).unwrap().2, b"other");
        assert_eq!(m.get(KeyspaceId(3), b"k", SeqNo(9)), None);
        assert_eq!(m.keyspaces(), vec![a, b, KeyspaceId(u32::MAX)]);
        assert_eq!(m.max_seqno(), SeqNo(5));
        assert_eq!(m.wal_id(), 7);

        let fwd = user_keys(&mut m.cursor(a), true);
        assert_eq!(
            fwd,
            vec![(b"".to_vec(), 2), (b"k".to_vec(), 3), (b"k".to_vec(), 1)]
        );
        let mut back = user_keys(&mut m.cursor(a), false);
        back.reverse();
        assert_eq!(fwd, back);
        assert_eq!(
            user_keys(&mut m.cursor(KeyspaceId(u32::MAX)), false).len(),
            1
        );
        assert!(user_keys(&mut m.cursor(KeyspaceId(9)), true).is_empty());
    }

    #[test]
    fn a_key_cursor_walks_the_same_keys_without_values() {
        let m = Arc::new(Memtable::new(1, 1 << 20));
        let ks = KeyspaceId(3);
        m.insert(ks, b"a", SeqNo(1), Kind::Put, b"value-a");
        m.insert(ks, b"a", SeqNo(2), Kind::Delete, b"");
        m.insert(ks, b"b", SeqNo(3), Kind::Put, b"value-b");
        for forward in [true, false] {
            assert_eq!(
                user_keys(&mut m.key_cursor(ks), forward),
                user_keys(&mut m.cursor(ks), forward)
            );
        }
        let mut keys = m.key_cursor(ks);
        let mut full = m.cursor(ks);
        keys.seek_to_first().unwrap();
        full.seek_to_first().unwrap();
        while keys.valid() {
            assert_eq!(keys.key(), full.key());
            assert_eq!(keys.value(), b"");
            keys.next().unwrap();
            full.next().unwrap();
        }
        assert!(!full.valid());
    }

    #[test]
    fn logged_bytes_add_up_per_keyspace() {
        let m = Memtable::new(1, 1 << 20);
        let (a, b, c) = (KeyspaceId(1), KeyspaceId(2), KeyspaceId(3));
        let mut group = KeyspaceBytes::default();
        for (ks, n) in [(a, 10), (a, 5), (b, 7), (a, 1), (c, 2), (c, 2)] {
            group.add(ks, n);
        }
        m.add_logged(group);
        let mut group = KeyspaceBytes::default();
        group.add(b, 100);
        m.add_logged(group);
        assert_eq!(
            [a, b, c, KeyspaceId(4)].map(|ks| m.logged_bytes(ks)),
            [16, 107, 4, 0]
        );
    }

    #[test]
    fn seeks_land_on_the_visible_version() {
        let m = Arc::new(Memtable::new(1, 1 << 20));
        let ks = KeyspaceId(0);
        for (i, key) in [b"a", b"b", b"c"].iter().enumerate() {
            m.insert(ks, *key, SeqNo(i as u64 + 1), Kind::Put, *key);
            m.insert(ks, *key, SeqNo(i as u64 + 10), Kind::Put, b"new");
        }
        let mut c = m.cursor(ks);
        c.seek(&seek_key(b"b", SeqNo(5))).unwrap();
        assert_eq!(parse_encoded(c.key()).unwrap().0, b"b");
        assert_eq!(c.value(), b"b");
        c.seek_for_prev(&seek_key(b"b", SeqNo(5))).unwrap();
        assert_eq!(parse_encoded(c.key()).unwrap().1, SeqNo(11));
        c.seek(&seek_key(b"zz", SeqNo(5))).unwrap();
        assert!(!c.valid());
        assert_eq!(c.key(), b"");
        c.seek_for_prev(&seek_key(b"", SeqNo(5))).unwrap();
        assert!(!c.valid());
    }

    #[test]
    fn concurrent_inserts_and_reads_agree() {
        let m = Arc::new(Memtable::new(1, 1 << 20));
        std::thread::scope(|s| {
            for t in 0..4u64 {
                let m = Arc::clone(&m);
                s.spawn(move || {
                    for i in 0..2_000u64 {
                        let key = format!("{t}-{i:05}");
                        m.insert(
                            KeyspaceId(0),
                            key.as_bytes(),
                            SeqNo(t * 10_000 + i + 1),
                            Kind::Put,
                            key.as_bytes(),
                        );
                    }
                });
            }
        });
        assert_eq!(m.len(), 8_000);
        assert!(m.size() >= 8_000 * ENTRY_OVERHEAD);
        let all = user_keys(&mut m.cursor(KeyspaceId(0)), true);
        assert_eq!(all.len(), 8_000);
        assert!(all.windows(2).all(|w| w[0].0 < w[1].0));
    }

    /// A cursor's moves (seeks, long walks, direction changes across batch ends and
    /// keyspace ends, values of every size) agree with a sorted model of the keyspace.
    #[test]
    fn cursor_moves_agree_with_a_sorted_model() {
        use crate::key::compare_encoded;
        let encode_key = |user: &[u8], seqno: SeqNo, kind: Kind| {
            let mut k = user.to_vec();
            k.extend_from_slice(&((seqno.0 << 8) | u64::from(kind as u8)).to_le_bytes());
            k
        };
        let m = Arc::new(Memtable::new(1, 1 << 20));
        let ks = KeyspaceId(5);
        let mut rng = 0x9e37_79b9_7f4a_7c15u64;
        let mut rand = move || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        // Neighbouring keyspaces, so walks must stop at both ends of this one.
        m.insert(KeyspaceId(4), b"zz", SeqNo(1), Kind::Put, b"before");
        m.insert(KeyspaceId(6), b"", SeqNo(2), Kind::Put, b"after");
        let mut model: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
        for seqno in 3..1500u64 {
            let user = format!("k{:03}", rand() % 600).into_bytes();
            let kind = if rand() % 5 == 0 {
                Kind::Delete
            } else {
                Kind::Put
            };
            let len = match rand() % 50 {
                0 => 70_000, // larger than a batch's byte budget
                n => (n * 7) as usize,
            };
            let value = if kind == Kind::Put {
                vec![(seqno % 251) as u8; len]
            } else {
                Vec::new()
            };
            m.insert(ks, &user, SeqNo(seqno), kind, &value);
            model.push((encode_key(&user, SeqNo(seqno), kind), value));
        }
        model.sort_by(|a, b| compare_encoded(&a.0, &b.0));
        let at = |c: &MemCursor| -> Option<usize> {
            c.valid().then(|| {
                model
                    .binary_search_by(|(k, _)| compare_encoded(k, c.key()))
                    .unwrap()
            })
        };
        let mut c = m.cursor(ks);
        let mut expect: Option<usize> = None;
        for step in 0..20_000u32 {
            let target = encode_key(
                format!("k{:03}", rand() % 620).as_bytes(),
                SeqNo(rand() % 1600),
                Kind::Put,
            );
            match rand() % 16 {
                0 => {
                    c.seek_to_first().unwrap();
                    expect = (!model.is_empty()).then_some(0);
                }
                1 => {
                    c.seek_to_last().unwrap();
                    expect = model.len().checked_sub(1);
                }
                2 => {
                    c.seek(&target).unwrap();
                    let i = model.partition_point(|(k, _)| compare_encoded(k, &target).is_lt());
                    expect = (i < model.len()).then_some(i);
                }
                3 => {
                    c.seek_for_prev(&target).unwrap();
                    let i = model.partition_point(|(k, _)| compare_encoded(k, &target).is_le());
                    expect = i.checked_sub(1);
                }
                4..=10 => {
                    c.next().unwrap();
                    expect = expect.map(|i| i + 1).filter(|&i| i < model.len());
                }
                _ => {
                    c.prev().unwrap();
                    expect = expect.and_then(|i| i.checked_sub(1));
                }
            }
            assert_eq!(at(&c), expect, "step {step}");
            if let Some(i) = expect {
                assert_eq!(c.value(), model[i].1.as_slice(), "step {step}");
            }
            if expect.is_none() {
                // An invalid cursor stays put until the next seek.
                c.seek_to_first().unwrap();
                expect = Some(0);
            }
        }
        // A whole walk each way sees every entry once, in order.
        let forward = user_keys(&mut m.cursor(ks), true);
        let mut backward = user_keys(&mut m.cursor(ks), false);
        backward.reverse();
        assert_eq!(forward.len(), model.len());
        assert_eq!(forward, backward);
    }
}
