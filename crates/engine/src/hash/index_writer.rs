//! Building an index file for a log: Robin Hood insertion in log order, backward-shift
//! deletion, fresh or incremental, exactly as `hash/FORMAT.md` (§ "Building the table")
//! describes, so that Cairn reproduces the reference implementation's files byte for byte.
//!
//! Where the reference misbehaves, Cairn deviates deliberately (each listed in FORMAT.md):
//! * a table that would fill up and loop forever (possible when the hash size changes on
//!   an incremental build) is rebuilt with a fresh-build capacity instead;
//! * a hash-size change does not double-count `garbage_size`.
//!
//! The finished file replaces the old one atomically (temp file, fsync, rename, fsync
//! directory), so readers see the old or the new index, never a mix.

use std::fs::File;
use std::io::Read;
use std::path::Path;
use std::sync::Arc;

use crate::atomic;
use crate::coding::get_uint_le;
use crate::error::{Error, Reason, Result};
use crate::mmap::{prefetch, Map};

use super::fastmod::Modulus;
use super::header::{random_u32, IndexHeader, LogHeader, INDEX_HEADER_LEN, LOG_HEADER_LEN};
use super::log_reader::{EntryKind, LogInner, LogReader, RawIter};
use super::murmur::{murmur3_x64_128_h1, murmur3_x86_32, MAX_HASHED_KEY_LEN};

/// Width of the key hashes stored in the index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum HashSize {
    /// 64-bit hashes from 2^23 slots on (keeps an existing index's width), else 32-bit.
    #[default]
    Auto,
    /// MurmurHash3_x86_32.
    Bits32,
    /// First word of MurmurHash3_x64_128.
    Bits64,
}

/// Options for building an index.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct IndexOptions {
    /// Hash width.
    pub hash_size: HashSize,
    /// Hash seed for a fresh build; random when `None`. Incremental builds keep the
    /// existing index's seed.
    pub seed: Option<u32>,
    /// Always build from scratch, ignoring an existing index.
    pub fresh: bool,
}

impl IndexOptions {
    /// Sets the hash width.
    pub fn hash_size(mut self, hash_size: HashSize) -> Self {
        self.hash_size = hash_size;
        self
    }

    /// Sets the seed of a fresh build (for byte-identical reproduction).
    pub fn seed(mut self, seed: u32) -> Self {
        self.seed = Some(seed);
        self
    }

    /// Forces a fresh build.
    pub fn fresh(mut self, fresh: bool) -> Self {
        self.fresh = fresh;
        self
    }
}

/// `1 | trunc(n * 1.3)` in IEEE doubles, as the reference computes it.
pub fn capacity_for(n: u64) -> u64 {
    1 | ((n as f64) * 1.3) as u64
}

/// Address width for a log: 4 bytes while every address fits in 32 bits.
fn address_size_for(data_end: u64, bits: u32) -> u32 {
    if bits < 32 && data_end < (1u64 << (32 - bits)) {
        4
    } else {
        8
    }
}

#[derive(Debug, Clone, Copy, Default)]
struct Slot {
    hash: u64,
    addr: u64,
}

/// Signals that an insertion found no free slot (the table is full).
struct TableFull;

struct Table<'a> {
    slots: Vec<Slot>,
    cap: u64,
    modulus: Modulus,
    num_entries: u64,
    garbage: u64,
    hash64: bool,
    seed: u32,
    bits: u32,
    log: &'a LogInner,
    limit: u64,
    index_path: &'a Path,
}

impl<'a> Table<'a> {
    fn new(
        cap: u64,
        hash64: bool,
        seed: u32,
        bits: u32,
        log: &'a LogInner,
        index_path: &'a Path,
    ) -> Result<Self> {
        let len = usize::try_from(cap)
            .map_err(|_| Error::invalid("index capacity does not fit in memory"))?;
        let mut slots = Vec::new();
        slots
            .try_reserve_exact(len)
            .map_err(|_| Error::invalid(format!("cannot allocate an index of {cap} slots")))?;
        // Probes land at random across the table: huge pages spare a page walk per probe.
        crate::mmap::advise_huge_pages(slots.spare_capacity_mut());
        slots.resize(len, Slot::default());
        Ok(Table {
            slots,
            cap,
            modulus: Modulus::new(cap),
            num_entries: 0,
            garbage: 0,
            hash64,
            seed,
            bits,
            log,
            limit: log.header.data_end,
            index_path,
        })
    }

    #[inline]
    fn hash(&self, key: &[u8]) -> u64 {
        if self.hash64 {
            murmur3_x64_128_h1(key, self.seed)
        } else {
            u64::from(murmur3_x86_32(key, self.seed))
        }
    }

    #[inline]
    fn home(&self, hash: u64) -> u64 {
        self.modulus.rem(hash)
    }

    #[inline]
    fn displacement(&self, slot: u64, hash: u64) -> u64 {
        let home = self.home(hash);
        if slot >= home {
            slot - home
        } else {
            self.cap - home + slot
        }
    }

    #[inline]
    fn slot(&self, i: u64) -> Slot {
        self.slots.get(i as usize).copied().unwrap_or_default()
    }

    #[inline]
    fn set(&mut self, i: u64, s: Slot) {
        if let Some(dst) = self.slots.get_mut(i as usize) {
            *dst = s;
        }
    }

    /// Inserts or replaces `key`; `check_dups` false skips key comparison (re-inserting
    /// the slots of an existing index, whose keys are distinct).
    fn put(
        &mut self,
        hash: u64,
        addr: u64,
        key: &[u8],
        check_dups: bool,
    ) -> Result<Result<(), TableFull>> {
        let mut slot = self.home(hash);
        let mut d = 0u64;
        let mut check = check_dups;
        let mut cur = Slot { hash, addr };
        for _ in 0..=self.cap {
            let s = self.slot(slot);
            if s.addr == 0 {
                self.set(slot, cur);
                self.num_entries += 1;
                return Ok(Ok(()));
            }
            if check && s.hash == cur.hash {
                if let Some(old_len) =
                    self.log
                        .put_matches(s.addr, self.bits, self.limit, key, self.index_path)?
                {
                    self.set(
                        slot,
                        Slot {
                            hash: s.hash,
                            addr: cur.addr,
                        },
                    );
                    self.garbage += old_len;
                    return Ok(Ok(()));
                }
            }
            let e = self.displacement(slot, s.hash);
            if d > e {
                self.set(slot, cur);
                cur = s;
                d = e;
                check = false;
            }
            slot = if slot + 1 == self.cap { 0 } else { slot + 1 };
            // Not a loop counter: `d` restarts from the displaced entry's displacement.
            d += 1;
        }
        Ok(Err(TableFull))
    }

    fn delete(&mut self, hash: u64, key: &[u8], delete_len: u64) -> Result<()> {
        self.garbage += delete_len;
        let mut slot = self.home(hash);
        for d in 0..self.cap {
            let s = self.slot(slot);
            if s.addr == 0 {
                return Ok(());
            }
            if s.hash == hash {
                if let Some(old_len) =
                    self.log
                        .put_matches(s.addr, self.bits, self.limit, key, self.index_path)?
                {
                    // Backward-shift deletion.
                    for _ in 0..self.cap {
                        let nxt = (slot + 1) % self.cap;
                        let n = self.slot(nxt);
                        if n.addr == 0 || self.home(n.hash) == nxt {
                            break;
                        }
                        self.set(slot, n);
                        slot = nxt;
                    }
                    self.set(slot, Slot::default());
                    self.garbage += old_len;
                    self.num_entries -= 1;
                    return Ok(());
                }
            }
            if d > self.displacement(slot, s.hash) {
                return Ok(());
            }
            slot = (slot + 1) % self.cap;
        }
        Ok(())
    }

    /// Applies log entries from `start` to the log's `data_end`, in log order.
    ///
    /// Entries are decoded in chunks whose home slots are prefetched before the chunk is
    /// applied, so the cache misses of a chunk overlap instead of following one another;
    /// the order of insertions, hence the resulting table, is unchanged.
    fn replay(&mut self, log: &Arc<LogInner>, start: u64) -> Result<Result<(), TableFull>> {
        const CHUNK: usize = 32;
        struct Pending {
            kind: EntryKind,
            hash: u64,
            addr: u64,
            encoded_len: u64,
            key_end: usize,
        }
        let mut it = RawIter::starting_at(Arc::clone(log), start, log.header.data_end)?;
        let mut chunk: Vec<Pending> = Vec::with_capacity(CHUNK);
        let mut keys: Vec<u8> = Vec::new();
        loop {
            chunk.clear();
            keys.clear();
            while chunk.len() < CHUNK {
                let Some(e) = it.next_raw(false)? else { break };
                if e.key_len > MAX_HASHED_KEY_LEN {
                    return Err(Error::invalid(format!(
                        "log {} holds a key of {} bytes; keys of 2^31 bytes or more cannot be indexed",
                        log.path.display(),
                        e.key_len
                    )));
                }
                let hash = self.hash(&it.key);
                prefetch(&self.slots, self.home(hash) as usize);
                keys.extend_from_slice(&it.key);
                chunk.push(Pending {
                    kind: e.kind,
                    hash,
                    addr: e.address(self.bits),
                    encoded_len: e.encoded_len,
                    key_end: keys.len(),
                });
            }
            if chunk.is_empty() {
                return Ok(Ok(()));
            }
            let mut key_start = 0;
            for p in &chunk {
                let key = keys.get(key_start..p.key_end).unwrap_or(&[]);
                key_start = p.key_end;
                match p.kind {
                    EntryKind::Put => {
                        if let Err(full) = self.put(p.hash, p.addr, key, true)? {
                            return Ok(Err(full));
                        }
                    }
                    EntryKind::Delete => self.delete(p.hash, key, p.encoded_len)?,
                }
            }
        }
    }

    fn finish(self, log: &LogHeader) -> (IndexHeader, Vec<Slot>) {
        let mut total = 0u64;
        let mut max = 0u64;
        let mut collisions = 0u64;
        let mut prev: Option<Slot> = None;
        for (i, s) in self.slots.iter().enumerate() {
            if s.addr != 0 {
                let d = self.displacement(i as u64, s.hash);
                total += d;
                max = max.max(d);
            }
            if let Some(p) = prev {
                if p.addr != 0 && p.hash == s.hash {
                    collisions += 1;
                }
            }
            prev = Some(*s);
        }
        if let (Some(first), Some(last)) = (self.slots.first(), self.slots.last()) {
            if first.addr != 0 && last.addr != 0 && first.hash == last.hash {
                collisions += 1;
            }
        }
        let header = IndexHeader {
            major: 1,
            minor: 1,
            file_identifier: log.file_identifier,
            hash_seed: self.seed,
            data_end: log.data_end,
            max_key_len: log.max_key_len,
            max_value_len: log.max_value_len,
            num_puts: log.num_puts,
            garbage_size: self.garbage,
            num_entries: self.num_entries,
            address_size: address_size_for(log.data_end, self.bits),
            hash_size: if self.hash64 { 8 } else { 4 },
            hash_capacity: self.cap,
            max_displacement: max,
            entry_block_bits: self.bits,
            hash_collisions: collisions,
            total_displacement: total,
        };
        (header, self.slots)
    }
}

/// An index built in memory: its header and its slot table bytes.
#[derive(Debug, Clone)]
pub struct BuiltIndex {
    /// The header.
    pub header: IndexHeader,
    /// The encoded slot table.
    pub slots: Vec<u8>,
}

impl BuiltIndex {
    /// The complete file contents.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(INDEX_HEADER_LEN as usize + self.slots.len());
        out.extend_from_slice(&self.header.encode());
        out.extend_from_slice(&self.slots);
        out
    }
}

fn encode_slots(header: &IndexHeader, slots: &[Slot]) -> Vec<u8> {
    let hs = header.hash_size as usize;
    let as_ = header.address_size as usize;
    let mut out = Vec::with_capacity(slots.len() * (hs + as_));
    for s in slots {
        out.extend_from_slice(s.hash.to_le_bytes().get(..hs).unwrap_or(&[]));
        out.extend_from_slice(s.addr.to_le_bytes().get(..as_).unwrap_or(&[]));
    }
    out
}

/// What [`build_index`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum BuildKind {
    /// Built from the whole log.
    Fresh,
    /// Extended an existing index with the entries appended since.
    Incremental,
    /// The existing index already covers the whole log; nothing to do.
    Unchanged,
}

/// An existing index to extend: its header and its raw slot table.
#[derive(Debug, Clone, Copy)]
pub struct PreviousIndex<'a> {
    /// Its header.
    pub header: &'a IndexHeader,
    /// Its slot table bytes (`hash_capacity × slot_len`).
    pub slots: &'a [u8],
}

/// Builds an index for `log` in memory, incrementally from `previous` when it belongs to
/// this log (same identifier, version 1.1), as the reference does.
pub fn build_index(
    log: &LogReader,
    index_path: &Path,
    options: &IndexOptions,
    previous: Option<PreviousIndex<'_>>,
) -> Result<(BuildKind, Option<BuiltIndex>)> {
    let inner = &log.inner;
    let lh = &inner.header;
    let bits = lh.entry_block_bits();
    let previous = previous.filter(|p| {
        !options.fresh
            && p.header.file_identifier == lh.file_identifier
            && p.header.major == 1
            && p.header.minor == 1
            && p.header
                .check_against_log(index_path, &inner.path, lh)
                .is_ok()
            && p.header.num_puts <= lh.num_puts
    });
    let explicit = match options.hash_size {
        HashSize::Auto => None,
        HashSize::Bits32 => Some(false),
        HashSize::Bits64 => Some(true),
    };
    let fresh_cap = capacity_for(lh.num_puts);

    if let Some(prev) = previous {
        let old = prev.header;
        let cap = capacity_for((lh.num_puts - old.num_puts) + old.num_entries);
        let hash64 = explicit.unwrap_or(old.hash_size == 8 || cap >= 1 << 23);
        if hash64 == (old.hash_size == 8) {
            if old.data_end == lh.data_end {
                return Ok((BuildKind::Unchanged, None));
            }
            let mut table = Table::new(cap, hash64, old.hash_seed, bits, inner, index_path)?;
            table.garbage = old.garbage_size;
            if reinsert(&mut table, old, prev.slots, index_path)?.is_ok()
                && table.replay(inner, old.data_end)?.is_ok()
            {
                return Ok((BuildKind::Incremental, Some(finish(table, lh))));
            }
        } else {
            // Hash-size change: replay the whole log with the incremental capacity (as the
            // reference does), garbage recomputed rather than double-counted.
            let mut table = Table::new(cap, hash64, old.hash_seed, bits, inner, index_path)?;
            if table.replay(inner, LOG_HEADER_LEN)?.is_ok() {
                return Ok((BuildKind::Fresh, Some(finish(table, lh))));
            }
        }
        // The table filled up: the reference would loop forever. Build with the fresh
        // capacity, which always has room for every PUT, keeping the seed.
        let hash64 = explicit.unwrap_or(old.hash_size == 8 || fresh_cap >= 1 << 23);
        let mut table = Table::new(fresh_cap, hash64, old.hash_seed, bits, inner, index_path)?;
        return match table.replay(inner, LOG_HEADER_LEN)? {
            Ok(()) => Ok((BuildKind::Fresh, Some(finish(table, lh)))),
            Err(TableFull) => Err(Error::corruption(
                crate::error::FileKind::SparkeyLog,
                &inner.path,
                0,
                Reason::BadEntry("more live keys than PUT entries"),
            )),
        };
    }

    let hash64 = explicit.unwrap_or(fresh_cap >= 1 << 23);
    let seed = options.seed.unwrap_or_else(random_u32);
    let mut table = Table::new(fresh_cap, hash64, seed, bits, inner, index_path)?;
    match table.replay(inner, LOG_HEADER_LEN)? {
        Ok(()) => Ok((BuildKind::Fresh, Some(finish(table, lh)))),
        Err(TableFull) => Err(Error::corruption(
            crate::error::FileKind::SparkeyLog,
            &inner.path,
            16,
            Reason::HeaderField {
                field: "num_puts",
                detail: "fewer than the PUT entries in the log".into(),
            },
        )),
    }
}

fn finish(table: Table<'_>, lh: &LogHeader) -> BuiltIndex {
    let (header, slots) = table.finish(lh);
    let slots = encode_slots(&header, &slots);
    BuiltIndex { header, slots }
}

/// Re-inserts the occupied slots of an old index, in slot order, without duplicate checks.
fn reinsert(
    table: &mut Table<'_>,
    old: &IndexHeader,
    slots: &[u8],
    index_path: &Path,
) -> Result<Result<(), TableFull>> {
    let hs = old.hash_size as usize;
    let w = old.slot_len() as usize;
    let old_mask = if old.entry_block_bits == 0 {
        0
    } else {
        (1u64 << old.entry_block_bits) - 1
    };
    let bad = |i: usize| {
        Error::corruption(
            crate::error::FileKind::SparkeyIndex,
            index_path,
            INDEX_HEADER_LEN + (i * w) as u64,
            Reason::BadEntry("slot address outside the data the index covers"),
        )
    };
    for i in 0..old.hash_capacity as usize {
        let off = i * w;
        let hash = get_uint_le(slots, off, hs).ok_or_else(|| bad(i))?;
        let addr = get_uint_le(slots, off + hs, old.address_size as usize).ok_or_else(|| bad(i))?;
        if addr == 0 {
            continue;
        }
        let position = addr >> old.entry_block_bits;
        if position < LOG_HEADER_LEN || position >= old.data_end {
            return Err(bad(i));
        }
        let new_addr = if table.bits == 0 {
            position
        } else {
            (position << table.bits) | (addr & old_mask)
        };
        if table.put(hash, new_addr, &[], false)?.is_err() {
            return Ok(Err(TableFull));
        }
    }
    Ok(Ok(()))
}

/// Builds (or incrementally updates) the index at `index_path` for the log at `log_path`
/// and writes it atomically. Returns what was done and the new header.
///
/// An existing index of the same log is extended with the entries appended since it was
/// built (unless [`IndexOptions::fresh`]); readers that have the old index open keep
/// reading it, and readers opened afterwards see the new one.
///
/// # Errors
/// I/O errors, corruption of the log, or a key too long to hash.
///
/// ```
/// use cairn::hash::{
///     write_index, BuildKind, HashSize, IndexOptions, LogOptions, LogWriter, Reader,
/// };
///
/// # fn main() -> cairn::Result<()> {
/// # let dir = tempfile::tempdir().map_err(|e| cairn::Error::InvalidArgument(e.to_string()))?;
/// let (log, index) = (dir.path().join("kv.spl"), dir.path().join("kv.spi"));
/// let mut writer = LogWriter::create(&log, &LogOptions::default())?;
/// writer.put(b"a", b"1")?;
/// writer.close()?;
/// let (kind, header) = write_index(&index, &log, &IndexOptions::default())?;
/// assert_eq!((kind, header.num_entries), (BuildKind::Fresh, 1));
///
/// // Nothing appended: the index is left as it is.
/// let (kind, _) = write_index(&index, &log, &IndexOptions::default())?;
/// assert_eq!(kind, BuildKind::Unchanged);
///
/// // Entries appended to the log are added to the existing index.
/// let mut writer = LogWriter::append(&log)?;
/// writer.put(b"b", b"2")?;
/// writer.delete(b"a")?;
/// writer.close()?;
/// let (kind, header) = write_index(&index, &log, &IndexOptions::default())?;
/// assert_eq!((kind, header.num_entries), (BuildKind::Incremental, 1));
///
/// // A fixed seed and hash width reproduce a file byte for byte.
/// let options = IndexOptions::default().fresh(true).seed(42).hash_size(HashSize::Bits64);
/// let (kind, header) = write_index(&index, &log, &options)?;
/// assert_eq!((kind, header.hash_seed, header.hash_size), (BuildKind::Fresh, 42, 8));
///
/// let reader = Reader::open(&index, &log)?;
/// assert_eq!(reader.get(b"a")?, None);
/// assert_eq!(reader.get(b"b")?, Some(b"2".to_vec()));
/// # Ok(())
/// # }
/// ```
pub fn write_index(
    index_path: impl AsRef<Path>,
    log_path: impl AsRef<Path>,
    options: &IndexOptions,
) -> Result<(BuildKind, IndexHeader)> {
    let index_path = index_path.as_ref();
    let log = LogReader::open(log_path)?;
    let existing = if options.fresh {
        None
    } else {
        read_existing(index_path)
    };
    let previous = existing.as_ref().map(|(h, map)| PreviousIndex {
        header: h,
        slots: map.bytes().get(INDEX_HEADER_LEN as usize..).unwrap_or(&[]),
    });
    let (kind, built) = build_index(&log, index_path, options, previous)?;
    match built {
        None => match existing {
            Some((h, _)) => Ok((kind, h)),
            None => Err(Error::invalid("index unchanged but no index exists")),
        },
        Some(built) => {
            atomic::write_file(index_path, |w: &mut dyn std::io::Write| {
                w.write_all(&built.header.encode())?;
                w.write_all(&built.slots)
            })?;
            Ok((kind, built.header))
        }
    }
}

/// Opens an existing index whose header is valid; `None` on any error (fresh build). The
/// slot table is mapped, not read: an index that already covers the log is left untouched
/// after reading its 112-byte header, and an incremental build reads the old slots once.
/// The mapping stays valid while the new index replaces the file (rename, new inode).
fn read_existing(path: &Path) -> Option<(IndexHeader, Map)> {
    let mut file = File::open(path).ok()?;
    let file_len = file.metadata().ok()?.len();
    let mut head = Vec::with_capacity(INDEX_HEADER_LEN as usize);
    (&mut file)
        .take(INDEX_HEADER_LEN)
        .read_to_end(&mut head)
        .ok()?;
    let header = IndexHeader::decode(path, &head, file_len).ok()?;
    let map = Map::new(&file, header.file_len()?).ok()?;
    Some((header, map))
}
