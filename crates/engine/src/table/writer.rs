//! [`Writer`]: builds one table file from entries given in order.
//!
//! Grammar of what it writes (FORMAT.md §3):
//!
//! ```text
//! file        := data_block+ range_block? filter_block? index_block properties_block footer
//! *_block     := body trailer          body: the raw block, or VLQ(raw_len) ++ codec output
//! trailer     := compression:u8 crc:u32   masked CRC32C of body ++ compression
//! footer      := filter_handle index_handle properties_handle (u64 offset, u64 size each)
//!                version:u32 footer_crc:u32 magic:"CAIRNSST"
//! ```
//!
//! A data block is cut once its estimated size reaches `block_size`. Its index entry is
//! written when the next key arrives, so the separator can be shortened to the shortest
//! key between the block's last key and the next block's first key (leveldb's trick);
//! the last block's separator is its last key.
//!
//! Buffering: stored blocks collect in a 64 KiB buffer that reaches the file when full and
//! in [`Writer::finish`], which ends with `sync_all`. The caller syncs the directory and
//! records the table in the manifest; a table is not part of the store before that, so a
//! crash at any point leaves at worst an unreferenced file for the store to delete.
//!
//! Errors make the writer unusable: after a refused argument every later call fails with
//! `InvalidArgument`, after a failed write with `Poisoned`. The caller deletes the file.
//!
//! Thread-safety: `Send`, one owner.

use std::cmp::Ordering;
use std::fmt;
use std::path::{Path, PathBuf};

use super::blob_refs::BlobRefs;
use super::block::BlockBuilder;
use super::compression::Compressor;
use super::filter::FilterBuilder;
use super::footer::{BlockHandle, Footer};
use super::properties::Properties;
use super::range_block;
use super::{
    Layout, TableMeta, TableOptions, FORMAT_VERSION, FORMAT_VERSION_PLAIN, FORMAT_VERSION_RANGES,
    MAX_BLOCK_LEN, MAX_INLINE_VALUE_LEN,
};
use crate::error::{Error, Result};
use crate::files::TableId;
use crate::fs::{FileSystem, WritableFile};
use crate::key::{check_key_len, compare_encoded, split_encoded, InternalKey, Kind, SeqNo};
use crate::rangedel::RangeTombstone;

/// Buffered bytes that trigger a write to the file (64 KiB).
const BUFFER_LEN: usize = 64 << 10;

/// A data block starts a restart point at least every `block_size / RESTART_SPACING`
/// bytes of entries, as well as every `restart_interval` entries. Blocks of large
/// entries then keep short walks for point lookups (an entry of 120 bytes gets a restart
/// every few entries instead of every 16). This rule adds at most about this many
/// restart points to a block of the target size, well within what its header's guide
/// holds (`fences::GUIDE_MAX`); blocks of entries under about 16 bytes get more from
/// `restart_interval` alone, as they always did.
const RESTART_SPACING: usize = 8;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Open,
    /// An argument was refused; the entry stream is not what the caller meant.
    Refused,
    /// A write failed; the file's contents are unknown.
    Poisoned,
}

/// Writes one table; see the module documentation.
pub(crate) struct Writer {
    file: Box<dyn WritableFile>,
    path: PathBuf,
    id: TableId,
    options: TableOptions,
    compressor: Compressor,
    data: BlockBuilder,
    index: BlockBuilder,
    filter: Option<FilterBuilder>,
    /// The last finished data block, waiting for its index entry.
    pending: Option<BlockHandle>,
    buf: Vec<u8>,
    /// Bytes of finished blocks (written or buffered).
    offset: u64,
    last_key: Vec<u8>,
    smallest: Vec<u8>,
    entries: u64,
    tombstones: u64,
    /// Entries with an expiry, and the earliest one (properties tags 11 and 12).
    expiring: u64,
    earliest_expiry: Option<u64>,
    raw_bytes: u64,
    min_seqno: SeqNo,
    max_seqno: SeqNo,
    data_blocks: u64,
    /// Entries whose user key is the previous entry's (properties tag 15).
    repeats: u64,
    /// Range tombstones to store in the range-tombstone block.
    range_tombstones: Vec<RangeTombstone>,
    blob_refs: BlobRefs,
    state: State,
}

impl fmt::Debug for Writer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Writer")
            .field("path", &self.path)
            .field("entries", &self.entries)
            .field("offset", &self.offset)
            .field("state", &self.state)
            .finish()
    }
}

/// The shortest encoded key `s` with `a <= s < b`, or `a` itself. When the user keys
/// differ at a byte that can be incremented without reaching `b`'s, `s` is `a`'s user key
/// up to that byte, incremented, with a maximal trailer; the user key alone then orders it.
fn separator(a: &[u8], b: &[u8]) -> Vec<u8> {
    if let (Some((ua, _)), Some((ub, _))) = (split_encoded(a), split_encoded(b)) {
        let diff = ua.iter().zip(ub).take_while(|(x, y)| x == y).count();
        if let (Some(&x), Some(&y)) = (ua.get(diff), ub.get(diff)) {
            if x < 0xff && x + 1 < y && diff + 1 < ua.len() {
                let mut s = ua.get(..=diff).unwrap_or_default().to_vec();
                if let Some(last) = s.last_mut() {
                    *last = x + 1;
                }
                let trailer = (SeqNo::MAX.0 << 8) | u64::from(Kind::Put.as_u8());
                s.extend_from_slice(&trailer.to_le_bytes());
                debug_assert_eq!(compare_encoded(a, &s), Ordering::Less);
                debug_assert_eq!(compare_encoded(&s, b), Ordering::Less);
                return s;
            }
        }
    }
    a.to_vec()
}

impl Writer {
    /// Creates the table file at `path` (normally `dir/FileType::Table.name(id)`); nothing is synced
    /// until [`Writer::finish`].
    ///
    /// # Errors
    /// `InvalidArgument` for options out of range; `Error::Io` if the file exists or cannot
    /// be created.
    pub(crate) fn create(
        fs: &dyn FileSystem,
        path: &Path,
        id: TableId,
        options: &TableOptions,
    ) -> Result<Writer> {
        options.validate()?;
        let compressor = Compressor::new(options.compression, options.zstd_level, path)?;
        let file = fs.create(path)?;
        Ok(Writer {
            file,
            path: path.to_path_buf(),
            id,
            options: options.clone(),
            compressor,
            data: BlockBuilder::new(options.restart_interval)
                .restart_every_bytes(options.block_size / RESTART_SPACING),
            index: BlockBuilder::new(1),
            filter: (options.bloom_bits_per_key > 0)
                .then(|| FilterBuilder::new(options.bloom_bits_per_key)),
            pending: None,
            buf: Vec::with_capacity(BUFFER_LEN),
            offset: 0,
            last_key: Vec::new(),
            smallest: Vec::new(),
            entries: 0,
            tombstones: 0,
            expiring: 0,
            earliest_expiry: None,
            raw_bytes: 0,
            min_seqno: SeqNo::MAX,
            max_seqno: SeqNo::ZERO,
            data_blocks: 0,
            repeats: 0,
            range_tombstones: Vec::new(),
            blob_refs: BlobRefs::default(),
            state: State::Open,
        })
    }

    /// Adds an entry: `key` is an encoded internal key (see `key.rs`) that sorts strictly
    /// after the previous one by `compare_encoded`.
    ///
    /// # Errors
    /// `InvalidArgument` for a key out of order, a malformed key (shorter than its trailer,
    /// an unknown kind, a user key over `MAX_KEY_LEN`) or a value over
    /// [`MAX_INLINE_VALUE_LEN`]; `Error::Io` if writing a full buffer fails. Either way the writer
    /// is unusable afterwards.
    pub(crate) fn add(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        self.check_open()?;
        let refuse = |w: &mut Writer, msg: String| {
            w.state = State::Refused;
            Err(Error::invalid(msg))
        };
        let Some((user_key, trailer)) = split_encoded(key) else {
            return refuse(
                self,
                "table key is shorter than an internal-key trailer".into(),
            );
        };
        let Some(kind) = Kind::from_u8(trailer as u8).filter(|k| *k != Kind::RangeDelete) else {
            return refuse(
                self,
                format!("table key has unknown kind {}", trailer as u8),
            );
        };
        if let Err(e) = check_key_len(user_key) {
            self.state = State::Refused;
            return Err(e);
        }
        if value.len() > MAX_INLINE_VALUE_LEN {
            return refuse(
                self,
                format!(
                    "value of {} bytes exceeds the table limit of {MAX_INLINE_VALUE_LEN} bytes",
                    value.len()
                ),
            );
        }
        let expiry = match crate::entry::expiry_of(kind, value) {
            Ok(expiry) => expiry,
            Err(reason) => {
                return refuse(
                    self,
                    format!("table value has damaged attributes: {reason}"),
                )
            }
        };
        // A separated value is counted for the table's `blob_refs` (value-log GC).
        let blob_ref = if kind == Kind::ValueHandle {
            match crate::entry::view(kind, value) {
                Ok(Some(crate::entry::EntryView {
                    body: crate::entry::Body::Handle(h),
                    ..
                })) => Some((h.file_id, h.value_len)),
                _ => return refuse(self, "table value holds a damaged value handle".into()),
            }
        } else {
            None
        };
        if self.entries > 0 && compare_encoded(&self.last_key, key) != Ordering::Less {
            return refuse(
                self,
                "table keys must be strictly increasing by compare_encoded".into(),
            );
        }
        let repeat = self.entries > 0
            && split_encoded(&self.last_key).is_some_and(|(last, _)| last == user_key);
        if let Some(handle) = self.pending.take() {
            self.add_index_entry(&separator(&self.last_key, key), handle);
        }
        if let Some(filter) = self.filter.as_mut() {
            filter.add(user_key);
        }
        self.data.add(key, value);
        let seqno = SeqNo(trailer >> 8);
        if self.entries == 0 {
            self.smallest = key.to_vec();
        }
        self.entries += 1;
        self.repeats += u64::from(repeat);
        self.tombstones += u64::from(kind == Kind::Delete);
        if let Some((file_id, value_len)) = blob_ref {
            self.blob_refs.add(file_id.0, value_len);
        }
        if let Some(at) = expiry {
            self.expiring += 1;
            self.earliest_expiry = Some(self.earliest_expiry.map_or(at, |e| e.min(at)));
        }
        self.raw_bytes += (user_key.len() + value.len()) as u64;
        self.min_seqno = self.min_seqno.min(seqno);
        self.max_seqno = self.max_seqno.max(seqno);
        self.last_key.clear();
        self.last_key.extend_from_slice(key);
        if self.data.estimated_len() >= self.options.block_size {
            self.finish_data_block()?;
        }
        Ok(())
    }

    /// Adds a range tombstone (any order); they are stored in the range-tombstone block
    /// and make the table format version 2.
    pub(crate) fn add_range_tombstone(&mut self, tombstone: RangeTombstone) {
        self.range_tombstones.push(tombstone);
    }

    /// Counts a value handle into blob file `file_id` for a value of `value_len` bytes, for
    /// the table's `blob_refs` property. [`Writer::add`] counts every `ValueHandle` entry
    /// itself; this is for tests of the property alone.
    #[cfg(test)]
    pub(crate) fn add_blob_ref(&mut self, file_id: u64, value_len: u32) {
        self.blob_refs.add(file_id, value_len);
    }

    /// Entries added so far.
    #[cfg(test)]
    pub(crate) fn entries(&self) -> u64 {
        self.entries
    }

    /// Bytes written or buffered so far plus the pending data block's estimated size: about
    /// the file size if the table were finished now (the filter, index, properties and
    /// footer add a little).
    pub(crate) fn estimated_size(&self) -> u64 {
        let pending = if self.data.is_empty() {
            0
        } else {
            self.data.estimated_len() as u64
        };
        self.offset + pending
    }

    /// Writes the last data block, the filter, the index, the properties block and the
    /// footer, then syncs the file (`sync_all`). The caller syncs the directory and
    /// records the table in the manifest.
    ///
    /// # Errors
    /// `InvalidArgument` for a table with no entries (nothing is written; the caller
    /// removes the empty file) or an index larger than `MAX_BLOCK_LEN`; `Error::Io` if a
    /// write or the sync fails; the state error of an earlier failure.
    pub(crate) fn finish(mut self) -> Result<TableMeta> {
        self.check_open()?;
        range_block::sort(&mut self.range_tombstones);
        if self.entries == 0 {
            // A table of range tombstones only gets one point tombstone at the first
            // tombstone's start and seqno, which that tombstone already implies; so every
            // table keeps at least one entry (FORMAT.md §4.7).
            let Some(first) = self.range_tombstones.first() else {
                return Err(Error::invalid("a table must hold at least one entry"));
            };
            let anchor =
                InternalKey::new(first.start.clone(), first.seqno, Kind::Delete).encode()?;
            self.add(&anchor, &[])?;
        }
        if !self.data.is_empty() {
            self.finish_data_block()?;
        }
        let range_tombstones = if self.range_tombstones.is_empty() {
            None
        } else {
            let raw = range_block::encode(&self.range_tombstones);
            if raw.len() > MAX_BLOCK_LEN {
                return Err(Error::invalid("a table's range tombstones exceed 64 MiB"));
            }
            Some(self.write_block(&raw)?)
        };
        let largest = std::mem::take(&mut self.last_key);
        if let Some(handle) = self.pending.take() {
            self.add_index_entry(&largest, handle);
        }
        let filter = match self.filter.take() {
            Some(f) => self.write_block(&f.finish(self.options.filter_layout))?,
            None => BlockHandle::default(),
        };
        let index_raw = self.index.finish();
        if index_raw.len() > MAX_BLOCK_LEN {
            return Err(Error::invalid(
                "table index exceeds 64 MiB; cut tables smaller (see estimated_size)",
            ));
        }
        let index = self.write_block(&index_raw)?;
        let props = Properties {
            entries: self.entries,
            tombstones: self.tombstones,
            raw_bytes: self.raw_bytes,
            min_seqno: self.min_seqno,
            max_seqno: self.max_seqno,
            smallest: std::mem::take(&mut self.smallest),
            largest,
            data_blocks: self.data_blocks,
            compression: self.options.compression,
            format_version: match self.options.filter_layout {
                Layout::Local => FORMAT_VERSION,
                Layout::Spread if range_tombstones.is_some() => FORMAT_VERSION_RANGES,
                Layout::Spread => FORMAT_VERSION_PLAIN,
            },
            expiring: self.expiring,
            earliest_expiry: self.earliest_expiry,
            range_tombstones,
            blob_refs: std::mem::take(&mut self.blob_refs),
            // The version-1 layout writes tables as builds before tag 15 did.
            repeats: match self.options.filter_layout {
                Layout::Local => Some(self.repeats),
                Layout::Spread => None,
            },
        };
        let properties = self.write_block(&props.encode())?;
        let footer = Footer {
            filter,
            index,
            properties,
            version: props.format_version,
        };
        self.buf.extend_from_slice(&footer.encode());
        self.offset += super::FOOTER_LEN as u64;
        self.flush_buf()?;
        if let Err(e) = self.file.sync_all() {
            self.state = State::Poisoned;
            return Err(e);
        }
        let mut meta = props.meta(self.id, self.offset);
        meta.extend_for_range_tombstones(&self.range_tombstones);
        Ok(meta)
    }

    fn check_open(&self) -> Result<()> {
        match self.state {
            State::Open => Ok(()),
            State::Refused => Err(Error::invalid(
                "the table writer refused an earlier argument and cannot continue",
            )),
            State::Poisoned => Err(Error::Poisoned),
        }
    }

    fn add_index_entry(&mut self, separator: &[u8], handle: BlockHandle) {
        let mut value = Vec::with_capacity(20);
        handle.encode_into(&mut value);
        self.index.add(separator, &value);
    }

    fn finish_data_block(&mut self) -> Result<()> {
        let raw = self.data.finish();
        let handle = self.write_block(&raw)?;
        self.pending = Some(handle);
        self.data_blocks += 1;
        Ok(())
    }

    /// Appends the stored form of `raw` to the buffer and returns its handle.
    fn write_block(&mut self, raw: &[u8]) -> Result<BlockHandle> {
        debug_assert!(raw.len() <= MAX_BLOCK_LEN);
        let start = self.buf.len();
        let size = match self.compressor.seal(raw, &mut self.buf, &self.path) {
            Ok(size) => size,
            Err(e) => {
                self.state = State::Poisoned;
                return Err(e);
            }
        };
        let handle = BlockHandle {
            offset: self.offset,
            size: size as u64,
        };
        self.offset += (self.buf.len() - start) as u64;
        if self.buf.len() >= BUFFER_LEN {
            self.flush_buf()?;
        }
        Ok(handle)
    }

    fn flush_buf(&mut self) -> Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        if let Err(e) = self.file.append(&self.buf) {
            self.state = State::Poisoned;
            return Err(e);
        }
        self.buf.clear();
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]
mod tests {
    use super::*;
    use crate::fs::{Fault, FaultKind, MemFs, Op};
    use crate::key::InternalKey;
    use crate::table::{Compression, MAX_BLOCK_SIZE};

    fn ik(user: &[u8], seqno: u64) -> Vec<u8> {
        InternalKey::new(user, SeqNo(seqno), Kind::Put)
            .encode()
            .unwrap()
    }

    #[test]
    fn separators_are_short_and_between_their_keys() {
        type Case<'a> = (&'a [u8], &'a [u8], Option<&'a [u8]>);
        let cases: [Case; 6] = [
            (b"abcdef", b"abzz", Some(b"abd")),
            (b"abc", b"abd", None),     // no byte between c and d
            (b"ab", b"abc", None),      // a prefix of the next key
            (b"a\xff\xff", b"b", None), // 0xff cannot be incremented
            (b"apple", b"apple", None), // versions of one key
            (b"a", b"c", None),         // already as short as it gets
        ];
        for (a, b, short) in cases {
            let (ka, kb) = (ik(a, 5), ik(b, 3));
            let s = separator(&ka, &kb);
            assert_eq!(
                compare_encoded(&ka, &s),
                if short.is_some() {
                    Ordering::Less
                } else {
                    Ordering::Equal
                }
            );
            assert_eq!(compare_encoded(&s, &kb), Ordering::Less);
            if let Some(user) = short {
                assert_eq!(split_encoded(&s).unwrap().0, user);
            }
        }
    }

    #[test]
    fn writer_refuses_bad_keys_options_and_empty_tables() {
        let fs = MemFs::new();
        let opts = TableOptions::default();
        let w = Writer::create(&fs, Path::new("/t.sst"), TableId(7), &opts).unwrap();
        assert!(matches!(w.finish(), Err(Error::InvalidArgument(_))));
        assert!(
            Writer::create(&fs, Path::new("/t.sst"), TableId(7), &opts).is_err(),
            "file exists"
        );

        let bad_keys: [&[u8]; 3] = [b"short", b"k\x03\0\0\0\0\0\0\0", b"k\0\0\0\0\0\0\0\0"];
        for (i, bad) in bad_keys.iter().enumerate() {
            let path = PathBuf::from(format!("/bad-{i}.sst"));
            let mut w = Writer::create(&fs, &path, TableId(7), &opts).unwrap();
            assert!(
                matches!(w.add(bad, b""), Err(Error::InvalidArgument(_))),
                "key {i}"
            );
        }
        for (i, second) in [ik(b"a", 5), ik(b"a", 6), ik(b"", 1)].iter().enumerate() {
            let path = PathBuf::from(format!("/order-{i}.sst"));
            let mut w = Writer::create(&fs, &path, TableId(7), &opts).unwrap();
            w.add(&ik(b"a", 5), b"v").unwrap();
            assert!(
                matches!(w.add(second, b"v"), Err(Error::InvalidArgument(_))),
                "case {i}"
            );
            // Unusable afterwards, even for a key that would have been fine.
            assert!(matches!(
                w.add(&ik(b"z", 1), b"v"),
                Err(Error::InvalidArgument(_))
            ));
            assert!(w.finish().is_err());
        }
        let mut w = Writer::create(&fs, Path::new("/big.sst"), TableId(7), &opts).unwrap();
        let big = vec![0u8; MAX_INLINE_VALUE_LEN + 1];
        assert!(matches!(
            w.add(&ik(b"a", 1), &big),
            Err(Error::InvalidArgument(_))
        ));

        let edits: [fn(&mut TableOptions); 5] = [
            |o| o.block_size = 0,
            |o| o.block_size = MAX_BLOCK_SIZE + 1,
            |o| o.restart_interval = 0,
            |o| o.bloom_bits_per_key = 65,
            |o| (o.compression, o.zstd_level) = (Compression::Zstd, 99),
        ];
        for edit in edits {
            let mut bad = TableOptions::default();
            edit(&mut bad);
            let err = Writer::create(&fs, Path::new("/opts.sst"), TableId(7), &bad).unwrap_err();
            assert!(matches!(err, Error::InvalidArgument(_)), "{bad:?}");
        }
    }

    #[test]
    fn failed_writes_and_syncs_poison() {
        for op in [Op::Write, Op::Sync] {
            let fs = MemFs::new();
            let path = Path::new("/t.sst");
            let mut w = Writer::create(&fs, path, TableId(7), &TableOptions::default()).unwrap();
            fs.inject(Fault {
                op,
                nth: fs.op_count(op) + 1,
                kind: FaultKind::Eio,
                forever: false,
            });
            let value = vec![7u8; 40 << 10];
            let mut failed = false;
            for i in 0..4 {
                match w.add(&ik(format!("k{i}").as_bytes(), 1), &value) {
                    Ok(()) => {}
                    Err(Error::Io { .. }) => failed = true,
                    Err(e) => panic!("unexpected {e}"),
                }
                if failed {
                    break;
                }
            }
            if op == Op::Write {
                assert!(failed, "a full buffer reaches the file during add");
                let later = w.add(&ik(b"z", 1), b"v");
                assert!(matches!(later, Err(Error::Poisoned)), "{later:?}");
                assert!(matches!(w.finish(), Err(Error::Poisoned)));
            } else {
                assert!(!failed);
                assert!(matches!(w.finish(), Err(Error::Io { .. })));
            }
        }
    }
}
