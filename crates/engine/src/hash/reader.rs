//! Reading a log/index pair: lookups, batched lookups and the live-entry iterator.
//!
//! A [`Reader`] maps the whole index and the log up to its `data_end`. A lookup hashes the
//! key, probes the Robin Hood table from the key's home slot and compares the key stored
//! in the log at each slot whose hash matches, so a lookup in an uncompressed log touches
//! one index cache line (usually) and one log location: with the index pinned in memory
//! ([`ReadOptions::pin_index`]) a cold lookup costs one read of the log.
//!
//! Every probe loop is bounded by the table capacity, every address is checked against the
//! range the index covers, and a slot that points at anything but a PUT is reported as
//! corruption of the index, so a damaged index gives an error, never a hang or a wrong
//! value. Thread-safety: `Reader` is `Send + Sync`; share it behind an `Arc` or by reference.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::coding::{get_u32_le, get_u64_le, vlq_len};
use crate::error::{Error, FileKind, Reason, Result};
use crate::mmap::{prefetch, Map, Residency};

use super::fastmod::Modulus;
use super::header::{Compression, IndexHeader, INDEX_HEADER_LEN};
use super::log_reader::{EntryKind, Located, LogReader, RawIter, DEFAULT_BLOCK_CACHE_BYTES};
use super::murmur::{murmur3_x64_128_h1, murmur3_x86_32};

/// How to open a [`Reader`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ReadOptions {
    /// Load the index into memory (huge pages where available) and lock it there
    /// (`mlock`) when permitted, so lookups never wait for the index to be read from disk
    /// and rarely miss the TLB. Costs
    /// `hash_capacity × (hash_size + address_size)` bytes of memory: about 10.4 bytes per
    /// PUT in the log at build time (overwritten and deleted ones included) with 32-bit
    /// hashes and 4-byte addresses, since the capacity is 1.3× the puts.
    pub pin_index: bool,
    /// Byte budget of the cache of decoded blocks (compressed logs only). Default 64 MiB.
    /// While the cache has room it keeps every block a lookup decodes; once full, it keeps
    /// a block only when it is missed again soon after (the rule of the ordered store's
    /// `Options::block_cache_size`: one cache implementation serves both stores), so
    /// lookups spread over a log far larger than the budget evict nothing.
    pub block_cache_bytes: usize,
    /// Copy the log's data into memory (huge pages where available, locked when
    /// permitted) instead of mapping the file: lookups then never wait for the disk and
    /// rarely miss the TLB. Costs the log's `data_end` bytes of memory; for serving hot
    /// data sets that fit in RAM.
    pub load_log: bool,
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions {
            pin_index: false,
            block_cache_bytes: DEFAULT_BLOCK_CACHE_BYTES,
            load_log: false,
        }
    }
}

impl ReadOptions {
    /// Sets [`ReadOptions::pin_index`].
    pub fn pin_index(mut self, pin: bool) -> Self {
        self.pin_index = pin;
        self
    }

    /// Sets [`ReadOptions::load_log`].
    pub fn load_log(mut self, load: bool) -> Self {
        self.load_log = load;
        self
    }

    /// Sets [`ReadOptions::block_cache_bytes`].
    pub fn block_cache_bytes(mut self, bytes: usize) -> Self {
        self.block_cache_bytes = bytes;
        self
    }
}

/// Where a lookup found a value.
enum Found {
    /// In the log's memory map, at this byte range.
    Mapped { start: usize, len: usize },
    /// Decoded into the caller's scratch buffer.
    Scratch,
    /// Not present.
    Absent,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Layout {
    H4A4,
    H4A8,
    H8A4,
    H8A8,
}

/// An open log/index pair.
///
/// ```
/// use cairn::hash::{write_index, IndexOptions, LogOptions, LogWriter, ReadOptions, Reader};
///
/// # fn main() -> cairn::Result<()> {
/// # let dir = tempfile::tempdir().map_err(|e| cairn::Error::InvalidArgument(e.to_string()))?;
/// let (log, index) = (dir.path().join("cities.spl"), dir.path().join("cities.spi"));
/// let mut writer = LogWriter::create(&log, &LogOptions::default())?;
/// writer.put(b"paris", b"fr")?;
/// writer.put(b"lyon", b"fr")?;
/// writer.put(b"turin", b"it")?;
/// writer.put(b"paris", b"FR")?; // a later PUT replaces the value
/// writer.close()?;
/// write_index(&index, &log, &IndexOptions::default())?;
///
/// // Pinning loads the index into memory, so no lookup waits for it to be read from disk.
/// let reader = Reader::open_with(&index, &log, &ReadOptions::default().pin_index(true))?;
/// assert_eq!(reader.len(), 3);
/// assert_eq!(reader.get(b"paris")?, Some(b"FR".to_vec()));
/// assert_eq!(reader.get(b"rome")?, None); // absent is not an error
/// assert!(reader.contains(b"turin")?);
///
/// // A reused buffer avoids an allocation per lookup.
/// let mut value = Vec::new();
/// assert!(reader.get_into(b"lyon", &mut value)?);
/// assert_eq!(value, b"fr");
///
/// // Live entries, in the order of their PUTs in the log.
/// let live = reader.iter().collect::<cairn::Result<Vec<_>>>()?;
/// let keys: Vec<&[u8]> = live.iter().map(|(k, _)| k.as_slice()).collect();
/// assert_eq!(keys, [&b"lyon"[..], b"turin", b"paris"]);
///
/// // A Reader is Send + Sync: share it between threads.
/// std::thread::scope(|s| {
///     s.spawn(|| assert_eq!(reader.get(b"turin").ok().flatten(), Some(b"it".to_vec())));
/// });
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct Reader {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    index_path: PathBuf,
    header: IndexHeader,
    map: Map,
    log: LogReader,
    residency: Residency,
    layout: Layout,
    cap: u64,
    modulus: Modulus,
    slot_len: usize,
    bits: u32,
    plain: bool,
    /// Bytes of log from a PUT's start that `prefetch_put` brings into cache: the
    /// longest PUT the log header allows, at most `ENTRY_PREFETCH_MAX`.
    entry_span: usize,
}

/// The most log bytes prefetched for one entry by `Reader::get_many` (four cache lines:
/// the lines of longer values are fetched by the copy that reads them in order).
const ENTRY_PREFETCH_MAX: u64 = 256;

/// The most slots `Reader::get_many` walks ahead of a lookup to find the entry to
/// prefetch (a miss past them costs only the overlap).
const PROBE_PREFETCH_MAX: u64 = 8;

/// The index file name for a log file name: a trailing `.spl` becomes `.spi`.
pub fn index_path_for(log_path: &Path) -> Option<PathBuf> {
    let s = log_path.to_str()?;
    s.strip_suffix(".spl")
        .map(|stem| PathBuf::from(format!("{stem}.spi")))
}

/// The log file name for an index file name: a trailing `.spi` becomes `.spl`.
pub fn log_path_for(index_path: &Path) -> Option<PathBuf> {
    let s = index_path.to_str()?;
    s.strip_suffix(".spi")
        .map(|stem| PathBuf::from(format!("{stem}.spl")))
}

impl Reader {
    /// Opens the pair with default options.
    ///
    /// # Errors
    /// I/O errors; `Corruption` if either header is damaged or the index does not fit the
    /// log; `IdentifierMismatch` if they do not belong together; `UnsupportedVersion`.
    pub fn open(index_path: impl AsRef<Path>, log_path: impl AsRef<Path>) -> Result<Reader> {
        Reader::open_with(index_path, log_path, &ReadOptions::default())
    }

    /// Opens the pair with `options`.
    pub fn open_with(
        index_path: impl AsRef<Path>,
        log_path: impl AsRef<Path>,
        options: &ReadOptions,
    ) -> Result<Reader> {
        let index_path = index_path.as_ref();
        let log_path = log_path.as_ref();
        let mut file = File::open(index_path).map_err(|e| Error::io(index_path, "open", e))?;
        let file_len = file
            .metadata()
            .map_err(|e| Error::io(index_path, "stat", e))?
            .len();
        let mut head = Vec::with_capacity(INDEX_HEADER_LEN as usize);
        (&mut file)
            .take(INDEX_HEADER_LEN)
            .read_to_end(&mut head)
            .map_err(|e| Error::io(index_path, "read", e))?;
        let header = IndexHeader::decode(index_path, &head, file_len)?;
        let log = LogReader::open_inner(log_path, options.block_cache_bytes, options.load_log)?;
        header.check_against_log(index_path, log_path, log.header())?;
        let map_len = header.file_len().unwrap_or(file_len);
        let (map, residency) = if options.pin_index {
            Map::load(&file, map_len).map_err(|e| Error::io(index_path, "load", e))?
        } else {
            let map = Map::new(&file, map_len).map_err(|e| Error::io(index_path, "mmap", e))?;
            map.advise_random();
            (map, Residency::OnDemand)
        };
        log.advise_random();
        let layout = match (header.hash_size, header.address_size) {
            (4, 4) => Layout::H4A4,
            (4, _) => Layout::H4A8,
            (_, 4) => Layout::H8A4,
            _ => Layout::H8A8,
        };
        let plain = log.header().compression == Compression::None;
        // The two length varints (key length + 1 and value length, minimal as writers
        // make them), then the key and the value.
        let (max_key, max_value) = (log.header().max_key_len, log.header().max_value_len);
        let entry_span = (vlq_len(max_key.saturating_add(1)) as u64 + vlq_len(max_value) as u64)
            .saturating_add(max_key)
            .saturating_add(max_value)
            .min(ENTRY_PREFETCH_MAX) as usize;
        Ok(Reader {
            inner: Arc::new(Inner {
                index_path: index_path.to_path_buf(),
                cap: header.hash_capacity,
                modulus: Modulus::new(header.hash_capacity),
                slot_len: header.slot_len() as usize,
                bits: header.entry_block_bits,
                header,
                map,
                log,
                residency,
                layout,
                plain,
                entry_span,
            }),
        })
    }

    /// Opens `x.spl` with its index `x.spi`.
    pub fn open_log(log_path: impl AsRef<Path>, options: &ReadOptions) -> Result<Reader> {
        let log_path = log_path.as_ref();
        let index = index_path_for(log_path).ok_or_else(|| {
            Error::invalid(format!(
                "log file name {} does not end with .spl",
                log_path.display()
            ))
        })?;
        Reader::open_with(index, log_path, options)
    }

    /// The index header.
    pub fn header(&self) -> &IndexHeader {
        &self.inner.header
    }

    /// The log this index belongs to.
    pub fn log(&self) -> &LogReader {
        &self.inner.log
    }

    /// The index file's path.
    pub fn index_path(&self) -> &Path {
        &self.inner.index_path
    }

    /// Number of live keys.
    pub fn len(&self) -> u64 {
        self.inner.header.num_entries
    }

    /// True if the index holds no key.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes of decoded blocks currently held by the block cache (compressed logs).
    pub fn block_cache_used(&self) -> usize {
        self.inner.log.inner.cache.used_bytes()
    }

    /// Whether the index was pinned in memory, and how.
    pub fn residency(&self) -> Residency {
        self.inner.residency
    }

    /// True if every lookup reads memory only, never a file: the index was loaded at open
    /// ([`ReadOptions::pin_index`]) and so was the log ([`ReadOptions::load_log`]). A
    /// caller that must not wait for the disk (a language binding holding its interpreter
    /// lock) can then look up in place; otherwise a lookup may fault in pages of the
    /// mapped files.
    pub fn reads_memory_only(&self) -> bool {
        self.inner.residency != Residency::OnDemand && self.inner.log.inner.loaded
    }

    /// Looks `key` up; returns a copy of its value.
    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let mut scratch = Vec::new();
        Ok(self.get_ref(key, &mut scratch)?.map(<[u8]>::to_vec))
    }

    /// Looks `key` up and copies its value into `out` (cleared first). Returns whether the
    /// key was found. Reusing `out` makes lookups allocation-free.
    pub fn get_into(&self, key: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        let inner = &*self.inner;
        match inner.find(key, inner.hash(key), out)? {
            Found::Mapped { start, len } => {
                out.clear();
                out.extend_from_slice(
                    inner
                        .log
                        .inner
                        .map
                        .bytes()
                        .get(start..start + len)
                        .unwrap_or(&[]),
                );
                Ok(true)
            }
            Found::Scratch => Ok(true),
            Found::Absent => {
                out.clear();
                Ok(false)
            }
        }
    }

    /// Looks `key` up without copying from an uncompressed log: the value borrows the
    /// memory map (uncompressed logs) or `scratch` (compressed logs).
    pub fn get_ref<'a>(&'a self, key: &[u8], scratch: &'a mut Vec<u8>) -> Result<Option<&'a [u8]>> {
        let hash = self.inner.hash(key);
        self.inner.lookup(key, hash, scratch)
    }

    /// True if `key` is present.
    pub fn contains(&self, key: &[u8]) -> Result<bool> {
        let mut scratch = Vec::new();
        Ok(self.get_ref(key, &mut scratch)?.is_some())
    }

    /// Looks up many keys, overlapping their memory misses. A software pipeline runs over
    /// the keys: the home slot of key `i + 32` is prefetched; for key `i + 16`, whose slots
    /// have arrived by then, the probe path is walked to the first slot with its hash and
    /// every cache line its log entry can span is prefetched; key `i` is resolved. About
    /// thirty misses are in flight instead of one. Calls `f(i, value)` for `keys[i]` in
    /// order; `value` is `None` for an absent key.
    ///
    /// # Errors
    /// As [`Reader::get`]: I/O errors and corruption of the pair; `f` has then been called
    /// for the keys before the one that failed.
    ///
    /// ```
    /// use cairn::hash::{write_index, IndexOptions, LogOptions, LogWriter, Reader};
    ///
    /// # fn main() -> cairn::Result<()> {
    /// # let dir = tempfile::tempdir().map_err(|e| cairn::Error::InvalidArgument(e.to_string()))?;
    /// let (log, index) = (dir.path().join("n.spl"), dir.path().join("n.spi"));
    /// let mut writer = LogWriter::create(&log, &LogOptions::default())?;
    /// for i in 0..1000u32 {
    ///     writer.put(format!("k{i}").as_bytes(), &i.to_le_bytes())?;
    /// }
    /// writer.close()?;
    /// write_index(&index, &log, &IndexOptions::default())?;
    /// let reader = Reader::open(&index, &log)?;
    ///
    /// let keys = ["k7", "missing", "k999"];
    /// let mut found = vec![None; keys.len()];
    /// reader.get_many(&keys, |i, value| {
    ///     found[i] = value.map(|v| v.to_vec());
    /// })?;
    /// let value = |i: u32| Some(i.to_le_bytes().to_vec());
    /// assert_eq!(found, [value(7), None, value(999)]);
    /// # Ok(())
    /// # }
    /// ```
    pub fn get_many<K: AsRef<[u8]>>(
        &self,
        keys: &[K],
        mut f: impl FnMut(usize, Option<&[u8]>),
    ) -> Result<()> {
        self.get_many_while(keys, |i, v| {
            f(i, v);
            true
        })
        .map(|_| ())
    }

    /// As [`Reader::get_many`], but stops after the first call of `f` that returns false
    /// (e.g. when the caller's buffer is full). Returns how many keys were passed to `f`:
    /// `keys.len()` unless `f` stopped it.
    ///
    /// # Errors
    /// As [`Reader::get_many`].
    pub fn get_many_while<K: AsRef<[u8]>>(
        &self,
        keys: &[K],
        mut f: impl FnMut(usize, Option<&[u8]>) -> bool,
    ) -> Result<usize> {
        const SLOT_AHEAD: usize = 32;
        const ENTRY_AHEAD: usize = 16;
        // Hashes of keys `i ..= i + SLOT_AHEAD`, each computed once when its slot is
        // prefetched, at `ring[j % RING]`.
        const RING: usize = 64;
        let inner = &*self.inner;
        let mut ring = [0u64; RING];
        let mut ahead = keys.iter().enumerate();
        let fetch_slot = |ring: &mut [u64; RING], (j, k): (usize, &K)| {
            let h = inner.hash(k.as_ref());
            inner.prefetch_slot(inner.modulus.rem(h));
            if let Some(r) = ring.get_mut(j % RING) {
                *r = h;
            }
        };
        for next in ahead.by_ref().take(SLOT_AHEAD) {
            fetch_slot(&mut ring, next);
        }
        let mut scratch = Vec::new();
        for (i, key) in keys.iter().enumerate() {
            if let Some(next) = ahead.next() {
                fetch_slot(&mut ring, next);
            }
            if inner.plain && i + ENTRY_AHEAD < keys.len() {
                if let Some(&h) = ring.get((i + ENTRY_AHEAD) % RING) {
                    inner.prefetch_entry(h);
                }
            }
            let key = key.as_ref();
            let h = match ring.get(i % RING) {
                Some(&h) => h,
                None => inner.hash(key),
            };
            let v = inner.lookup(key, h, &mut scratch)?;
            if !f(i, v) {
                return Ok(i + 1);
            }
        }
        Ok(keys.len())
    }

    /// Iterates live entries as `(key, value)` in the order of their PUTs in the log.
    pub fn iter(&self) -> HashIter {
        HashIter {
            reader: self.clone(),
            raw: RawIter::new(
                Arc::clone(&self.inner.log.inner),
                self.inner.header.data_end,
            ),
        }
    }

    /// Whether the PUT at `address` is the live entry for a key with hash `hash`.
    pub(crate) fn is_live(&self, hash: u64, address: u64) -> bool {
        let inner = &*self.inner;
        let mut slot = inner.modulus.rem(hash);
        for d in 0..inner.cap {
            let (sh, sa) = inner.slot(slot);
            if sa == 0 {
                return false;
            }
            if sa == address {
                return true;
            }
            if d > inner.displacement(slot, sh) {
                return false;
            }
            slot = if slot + 1 == inner.cap { 0 } else { slot + 1 };
        }
        false
    }

    /// Calls `f` with the address of each slot on `hash`'s probe path whose stored hash is
    /// `hash`, in probe order, until `f` returns true (then returns true) or the path ends
    /// (then returns false). Bounded by the capacity. Errors from `f` are pointed at the
    /// slot being visited.
    pub(crate) fn probe(&self, hash: u64, mut f: impl FnMut(u64) -> Result<bool>) -> Result<bool> {
        let inner = &*self.inner;
        let mut slot = inner.modulus.rem(hash);
        for d in 0..inner.cap {
            let (sh, sa) = inner.slot(slot);
            if sa == 0 {
                return Ok(false);
            }
            if sh == hash && f(sa).map_err(|e| inner.at_slot(e, slot))? {
                return Ok(true);
            }
            if d > inner.displacement(slot, sh) {
                return Ok(false);
            }
            slot = if slot + 1 == inner.cap { 0 } else { slot + 1 };
        }
        Ok(false)
    }

    /// Bits of in-block entry index in this index's addresses (0 for uncompressed logs).
    pub(crate) fn address_bits(&self) -> u32 {
        if self.inner.plain {
            0
        } else {
            self.inner.bits
        }
    }

    /// Raw slot `i` as `(hash, address)`; `None` past the table.
    pub(crate) fn slot(&self, i: u64) -> Option<(u64, u64)> {
        (i < self.inner.cap).then(|| self.inner.slot(i))
    }

    /// Hash of `key` under this index's hash function and seed.
    pub(crate) fn hash_key(&self, key: &[u8]) -> u64 {
        self.inner.hash(key)
    }

    /// Reads the PUT at a slot address; returns its key and value.
    pub(crate) fn entry_at(&self, address: u64) -> Result<(Vec<u8>, Vec<u8>)> {
        let inner = &*self.inner;
        let log = &*inner.log.inner;
        let located = log.locate(
            address,
            inner.bits,
            inner.header.data_end,
            true,
            &inner.index_path,
        )?;
        let head = located.head();
        let mut key = Vec::new();
        let mut value = Vec::new();
        match located {
            Located::Plain { key_offset, .. } => {
                let bytes = log.map.bytes();
                let ks = key_offset as usize;
                let ke = ks + head.key_len as usize;
                key.extend_from_slice(bytes.get(ks..ke).unwrap_or(&[]));
                value.extend_from_slice(bytes.get(ke..ke + head.value_len as usize).unwrap_or(&[]));
            }
            Located::Stream { mut stream, .. } => {
                stream.read_into(log, head.key_len, &mut key)?;
                stream.read_into(log, head.value_len, &mut value)?;
            }
        }
        Ok((key, value))
    }
}

impl Inner {
    #[inline]
    fn hash(&self, key: &[u8]) -> u64 {
        match self.layout {
            Layout::H4A4 | Layout::H4A8 => u64::from(murmur3_x86_32(key, self.header.hash_seed)),
            Layout::H8A4 | Layout::H8A8 => murmur3_x64_128_h1(key, self.header.hash_seed),
        }
    }

    #[inline]
    fn slot_offset(&self, i: u64) -> usize {
        INDEX_HEADER_LEN as usize + i as usize * self.slot_len
    }

    #[inline]
    fn prefetch_slot(&self, i: u64) {
        prefetch(self.map.bytes(), self.slot_offset(i));
    }

    /// Prefetches the log entry of the first slot on `hash`'s probe path that carries
    /// `hash` (uncompressed logs): every cache line from its start to the longest PUT the
    /// log can hold, at most [`ENTRY_PREFETCH_MAX`] bytes. The walk stops where a lookup
    /// would: an empty slot, or one nearer its home than the probe is to `hash`'s. A hint
    /// only: the address comes from the file and is checked by the lookup, so nothing here
    /// may fail or overflow.
    #[inline]
    fn prefetch_entry(&self, hash: u64) {
        let mut slot = self.modulus.rem(hash);
        for d in 0..PROBE_PREFETCH_MAX.min(self.cap) {
            let (sh, sa) = self.slot(slot);
            if sa == 0 {
                return;
            }
            if sh == hash {
                self.prefetch_put(sa);
                return;
            }
            if d > self.displacement(slot, sh) {
                return;
            }
            slot = if slot + 1 == self.cap { 0 } else { slot + 1 };
        }
    }

    /// Prefetches every cache line from `address` to the end of the longest PUT the log
    /// can hold there (`entry_span` bytes), so that the lines of an entry's head, key and
    /// value are fetched together rather than one after another as they are read. A hint
    /// only: `address` comes from the file, so nothing here may fail or overflow.
    #[inline]
    fn prefetch_put(&self, address: u64) {
        let bytes = self.log.inner.map.bytes();
        let at = usize::try_from(address).unwrap_or(usize::MAX);
        let end = at.saturating_add(self.entry_span);
        let mut line = at & !63;
        while line < end {
            prefetch(bytes, line.max(at));
            line = line.saturating_add(64);
        }
    }

    /// Slot `i` (< capacity, so in bounds of the map: checked when opening).
    #[inline]
    fn slot(&self, i: u64) -> (u64, u64) {
        let b = self.map.bytes();
        let off = self.slot_offset(i);
        match self.layout {
            Layout::H4A4 => {
                let w = get_u64_le(b, off).unwrap_or(0);
                (w & 0xFFFF_FFFF, w >> 32)
            }
            Layout::H4A8 => (
                u64::from(get_u32_le(b, off).unwrap_or(0)),
                get_u64_le(b, off + 4).unwrap_or(0),
            ),
            Layout::H8A4 => (
                get_u64_le(b, off).unwrap_or(0),
                u64::from(get_u32_le(b, off + 8).unwrap_or(0)),
            ),
            Layout::H8A8 => (
                get_u64_le(b, off).unwrap_or(0),
                get_u64_le(b, off + 8).unwrap_or(0),
            ),
        }
    }

    #[inline]
    fn displacement(&self, slot: u64, hash: u64) -> u64 {
        let home = self.modulus.rem(hash);
        if slot >= home {
            slot - home
        } else {
            self.cap - home + slot
        }
    }

    fn corrupt(&self, reason: &'static str) -> Error {
        Error::corruption(
            FileKind::SparkeyIndex,
            &self.index_path,
            0,
            Reason::BadEntry(reason),
        )
    }

    /// Points an index corruption found through slot `slot` at that slot's bytes.
    #[cold]
    fn at_slot(&self, err: Error, slot: u64) -> Error {
        match err {
            Error::Corruption(mut c) if c.file == FileKind::SparkeyIndex && c.offset == 0 => {
                c.offset = self.slot_offset(slot) as u64;
                Error::Corruption(c)
            }
            other => other,
        }
    }

    /// Probes for `key` (with precomputed `hash`); the value borrows the map or `scratch`.
    #[inline]
    fn lookup<'a>(
        &'a self,
        key: &[u8],
        hash: u64,
        scratch: &'a mut Vec<u8>,
    ) -> Result<Option<&'a [u8]>> {
        Ok(match self.find(key, hash, scratch)? {
            Found::Mapped { start, len } => self.log.inner.map.bytes().get(start..start + len),
            Found::Scratch => Some(scratch.as_slice()),
            Found::Absent => None,
        })
    }

    /// Probes for `key` (with precomputed `hash`): where its value is.
    #[inline]
    fn find(&self, key: &[u8], hash: u64, scratch: &mut Vec<u8>) -> Result<Found> {
        let cap = self.cap;
        let mut slot = self.modulus.rem(hash);
        for d in 0..cap {
            let (sh, sa) = self.slot(slot);
            if sa == 0 {
                return Ok(Found::Absent);
            }
            if sh == hash {
                if self.plain {
                    let m = self
                        .plain_match(sa, key)
                        .map_err(|e| self.at_slot(e, slot))?;
                    if let Some((start, len)) = m {
                        return Ok(Found::Mapped { start, len });
                    }
                } else if self
                    .stream_match(sa, key, scratch)
                    .map_err(|e| self.at_slot(e, slot))?
                {
                    return Ok(Found::Scratch);
                }
            }
            if d > self.displacement(slot, sh) {
                return Ok(Found::Absent);
            }
            slot = if slot + 1 == cap { 0 } else { slot + 1 };
        }
        Ok(Found::Absent)
    }

    /// Uncompressed log: if the PUT at `addr` has `key`, the value's byte range.
    #[inline]
    fn plain_match(&self, addr: u64, key: &[u8]) -> Result<Option<(usize, usize)>> {
        let log = &*self.log.inner;
        if addr < super::header::LOG_HEADER_LEN || addr >= self.header.data_end {
            return Err(self.corrupt("a slot address points outside the log data it covers"));
        }
        let head = log.plain_head(addr, log.header.data_end)?;
        if head.kind != EntryKind::Put {
            return Err(self.corrupt("a slot points at a DELETE entry"));
        }
        if head.key_len != key.len() as u64 {
            return Ok(None);
        }
        let ks = (addr + head.head_len) as usize;
        let ke = ks + key.len();
        if log.map.bytes().get(ks..ke) != Some(key) {
            return Ok(None);
        }
        Ok(Some((ke, head.value_len as usize)))
    }

    /// Compressed log: if the PUT at `addr` has `key`, decode its value into `scratch`.
    fn stream_match(&self, addr: u64, key: &[u8], scratch: &mut Vec<u8>) -> Result<bool> {
        let log = &*self.log.inner;
        let located = log.locate(
            addr,
            self.bits,
            self.header.data_end,
            true,
            &self.index_path,
        )?;
        let head = located.head();
        if head.key_len != key.len() as u64 {
            return Ok(false);
        }
        let Located::Stream { mut stream, .. } = located else {
            return Err(self.corrupt("unexpected uncompressed entry"));
        };
        if !stream.consume_eq(log, key)? {
            return Ok(false);
        }
        scratch.clear();
        stream.read_into(log, head.value_len, scratch)?;
        Ok(true)
    }
}

/// Iterator over the live entries of a [`Reader`], in log order.
#[derive(Debug)]
pub struct HashIter {
    reader: Reader,
    raw: RawIter,
}

impl Iterator for HashIter {
    type Item = Result<(Vec<u8>, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let e = match self.raw.next_raw(true) {
                Ok(Some(e)) => e,
                Ok(None) => return None,
                Err(err) => return Some(Err(err)),
            };
            if e.kind != EntryKind::Put {
                continue;
            }
            let inner = &*self.reader.inner;
            let hash = inner.hash(&self.raw.key);
            let bits = if inner.plain { 0 } else { inner.bits };
            if self.reader.is_live(hash, e.address(bits)) {
                return Some(Ok((
                    std::mem::take(&mut self.raw.key),
                    std::mem::take(&mut self.raw.value),
                )));
            }
        }
    }
}
