//! Writing a log file: create or reopen for append, put, delete, flush, close.
//!
//! Entries are encoded as in `hash/FORMAT.md` (§ Entries) and, for compressed logs, packed
//! into blocks by the reference writer's rules, so block boundaries, entry addresses and
//! header counters match the reference byte for byte.
//!
//! Crash safety: a new log is created as a temporary file holding the empty header, synced
//! and renamed into place. Entry bytes are written before the header that makes them
//! visible (the header's `data_end`); readers ignore any bytes past `data_end`.
//! * After a process crash, readers see the state of the last completed
//!   [`LogWriter::flush`], [`LogWriter::sync`] or [`LogWriter::close`] (the OS holds the
//!   written bytes).
//! * After a power loss, only the state of the last completed `sync` or `close` is
//!   guaranteed: they fsync the data before rewriting the header and fsync again. A plain
//!   `flush` orders nothing on disk, so its header may reach the disk before its data.
//!
//! A failed write or fsync poisons the writer: every later call returns
//! [`Error::Poisoned`] and the file keeps its last durable header.
//!
//! Thread-safety: a `LogWriter` is owned by one thread at a time (`Send`, not shared).

use std::fs::{File, OpenOptions};
use std::io::{Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use crate::atomic;
use crate::coding::{put_vlq, vlq_len};
use crate::error::{Error, Result};

use super::header::{random_u32, Compression, LogHeader, MAX_BLOCK_SIZE, MIN_BLOCK_SIZE};
use super::log_reader::read_log_header;

const WRITE_BUFFER: usize = 1 << 20;

/// Options for creating a log.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct LogOptions {
    /// Block compression (default none).
    pub compression: Compression,
    /// Uncompressed bytes per block for compressed logs (default 4096; 10 ..= 2^30).
    pub block_size: u32,
    /// The log's file identifier; random when `None`. Set it only to reproduce a file
    /// byte for byte: indexes are matched to logs by this value.
    pub file_identifier: Option<u32>,
}

impl Default for LogOptions {
    fn default() -> Self {
        LogOptions {
            compression: Compression::None,
            block_size: 4096,
            file_identifier: None,
        }
    }
}

impl LogOptions {
    /// Sets the compression and block size.
    pub fn compression(mut self, compression: Compression, block_size: u32) -> Self {
        self.compression = compression;
        self.block_size = block_size;
        self
    }

    /// Sets the file identifier.
    pub fn file_identifier(mut self, id: u32) -> Self {
        self.file_identifier = Some(id);
        self
    }
}

enum Codec {
    None,
    Snappy(Box<snap::raw::Encoder>),
    #[cfg(feature = "zstd")]
    Zstd(Box<zstd::bulk::Compressor<'static>>),
}

/// Appends entries to a log file.
///
/// Entries become visible to readers opened afterwards at [`LogWriter::flush`],
/// [`LogWriter::sync`] or [`LogWriter::close`]; an index ([`super::write_index`]) makes
/// them available to lookups.
///
/// ```
/// use cairn::hash::{Compression, EntryKind, LogOptions, LogReader, LogWriter};
///
/// # fn main() -> cairn::Result<()> {
/// # let dir = tempfile::tempdir().map_err(|e| cairn::Error::InvalidArgument(e.to_string()))?;
/// let path = dir.path().join("events.spl");
/// // Snappy-compressed blocks of 4 KiB (the default is uncompressed).
/// let options = LogOptions::default().compression(Compression::Snappy, 4096);
/// let mut log = LogWriter::create(&path, &options)?;
/// log.put(b"user:1", b"signed up")?;
/// log.put(b"user:2", b"signed up")?;
/// log.delete(b"user:1")?;
/// let header = log.close()?; // fsynced; the header counts what was written
/// assert_eq!((header.num_puts, header.num_deletes), (2, 1));
///
/// // Reopen to append: the earlier entries stay.
/// let mut log = LogWriter::append(&path)?;
/// log.put(b"user:3", b"signed up")?;
/// log.close()?;
///
/// // Every entry, in the order written.
/// let entries = LogReader::open(&path)?.iter().collect::<cairn::Result<Vec<_>>>()?;
/// let kinds: Vec<EntryKind> = entries.iter().map(|e| e.kind).collect();
/// assert_eq!(kinds, [EntryKind::Put, EntryKind::Put, EntryKind::Delete, EntryKind::Put]);
/// assert_eq!(entries[3].key, b"user:3");
/// # Ok(())
/// # }
/// ```
pub struct LogWriter {
    path: PathBuf,
    file: File,
    header: LogHeader,
    /// Encoded bytes not yet written to the file (they start at `written_end`).
    pending: Vec<u8>,
    /// File offset up to which bytes have been written.
    written_end: u64,
    /// The open (not yet compressed) block of a compressed log.
    block: Vec<u8>,
    block_entries: u32,
    codec: Codec,
    compressed: Vec<u8>,
    poisoned: bool,
    /// Set by [`LogWriter::close`]: everything is written and synced, `Drop` has no work.
    closed: bool,
}

impl std::fmt::Debug for LogWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogWriter")
            .field("path", &self.path)
            .field("header", &self.header)
            .finish()
    }
}

/// Writes the VLQ of `v` into `buf` at `at`; returns the bytes written.
#[inline]
fn encode_vlq(buf: &mut [u8], at: usize, mut v: u64) -> usize {
    let mut n = 0;
    loop {
        let byte = if v >= 0x80 { (v as u8) | 0x80 } else { v as u8 };
        if let Some(slot) = buf.get_mut(at + n) {
            *slot = byte;
        }
        n += 1;
        if v < 0x80 {
            return n;
        }
        v >>= 7;
    }
}

fn codec_for(compression: Compression, path: &Path) -> Result<Codec> {
    Ok(match compression {
        Compression::None => Codec::None,
        Compression::Snappy => Codec::Snappy(Box::new(snap::raw::Encoder::new())),
        #[cfg(feature = "zstd")]
        Compression::Zstd => Codec::Zstd(Box::new(
            zstd::bulk::Compressor::new(3).map_err(|e| Error::io(path, "zstd init", e))?,
        )),
        #[cfg(not(feature = "zstd"))]
        Compression::Zstd => {
            return Err(Error::zstd_disabled(format!(
                "writing Zstandard-compressed log file {}",
                path.display()
            )))
        }
    })
}

impl LogWriter {
    /// Creates a new, empty log at `path`, replacing any existing file atomically.
    ///
    /// # Errors
    /// `InvalidArgument` for a block size outside 10 ..= 2^30 with compression;
    /// `FeatureDisabled` for Zstandard in a build without the `zstd` feature (no file is
    /// created); I/O errors.
    pub fn create(path: impl AsRef<Path>, options: &LogOptions) -> Result<LogWriter> {
        let path = path.as_ref();
        if options.compression != Compression::None
            && !(MIN_BLOCK_SIZE..=MAX_BLOCK_SIZE).contains(&options.block_size)
        {
            return Err(Error::invalid(format!(
                "compression block size {} is outside {MIN_BLOCK_SIZE}..={MAX_BLOCK_SIZE}",
                options.block_size
            )));
        }
        let codec = codec_for(options.compression, path)?;
        let id = options.file_identifier.unwrap_or_else(random_u32);
        let header = LogHeader::new(id, options.compression, options.block_size);
        let (tmp, mut file) = atomic::temp_file(path)?;
        let setup = (|| {
            file.write_all(&header.encode())
                .map_err(|e| Error::io(&tmp, "write", e))?;
            file.sync_all().map_err(|e| Error::io(&tmp, "fsync", e))?;
            atomic::commit(&tmp, path)
        })();
        if let Err(e) = setup {
            let _ = std::fs::remove_file(&tmp);
            return Err(e);
        }
        LogWriter::from_parts(path, file, header, codec)
    }

    /// Reopens an existing log to append after its last flushed entry. Bytes past the
    /// header's `data_end` (left by a crash) are overwritten. Compressed logs continue in
    /// a new block.
    pub fn append(path: impl AsRef<Path>) -> Result<LogWriter> {
        let path = path.as_ref();
        let (_, header) = read_log_header(path)?;
        if header.compression != Compression::None && header.block_size < MIN_BLOCK_SIZE {
            return Err(Error::invalid(format!(
                "log {} has block size {}, below the minimum {MIN_BLOCK_SIZE}",
                path.display(),
                header.block_size
            )));
        }
        let codec = codec_for(header.compression, path)?;
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .map_err(|e| Error::io(path, "open", e))?;
        LogWriter::from_parts(path, file, header, codec)
    }

    fn from_parts(
        path: &Path,
        mut file: File,
        header: LogHeader,
        codec: Codec,
    ) -> Result<LogWriter> {
        file.seek(SeekFrom::Start(header.data_end))
            .map_err(|e| Error::io(path, "seek", e))?;
        Ok(LogWriter {
            path: path.to_path_buf(),
            written_end: header.data_end,
            block: Vec::with_capacity(if header.compression == Compression::None {
                0
            } else {
                header.block_size.min(1 << 20) as usize
            }),
            file,
            header,
            pending: Vec::with_capacity(WRITE_BUFFER),
            block_entries: 0,
            codec,
            compressed: Vec::new(),
            poisoned: false,
            closed: false,
        })
    }

    /// The header as it will be written at the next flush.
    pub fn header(&self) -> &LogHeader {
        &self.header
    }

    /// The log's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends a PUT of `key` → `value`.
    pub fn put(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        self.check()?;
        let a = key.len() as u64 + 1;
        let b = value.len() as u64;
        let head_len = (vlq_len(a) + vlq_len(b)) as u64;
        let encoded = head_len + a - 1 + b;
        self.append_entry(a, b, &[key, value], head_len, encoded)?;
        let h = &mut self.header;
        h.num_puts += 1;
        h.put_size += encoded;
        h.max_key_len = h.max_key_len.max(key.len() as u64);
        h.max_value_len = h.max_value_len.max(value.len() as u64);
        Ok(())
    }

    /// Appends a DELETE of `key` (whether or not the key exists).
    pub fn delete(&mut self, key: &[u8]) -> Result<()> {
        self.check()?;
        let b = key.len() as u64;
        let head_len = (1 + vlq_len(b)) as u64;
        let encoded = head_len + b;
        self.append_entry(0, b, &[key], head_len, encoded)?;
        self.header.num_deletes += 1;
        self.header.delete_size += encoded;
        Ok(())
    }

    fn check(&self) -> Result<()> {
        if self.poisoned {
            Err(Error::Poisoned)
        } else {
            Ok(())
        }
    }

    fn append_entry(
        &mut self,
        a: u64,
        b: u64,
        parts: &[&[u8]],
        head_len: u64,
        encoded: u64,
    ) -> Result<()> {
        let mut head_buf = [0u8; 2 * crate::coding::MAX_VLQ_LEN];
        let n1 = encode_vlq(&mut head_buf, 0, a);
        let n2 = encode_vlq(&mut head_buf, n1, b);
        let head = head_buf.get(..n1 + n2).unwrap_or(&[]);
        if self.header.compression == Compression::None {
            self.pending.extend_from_slice(head);
            for part in parts {
                if part.len() >= WRITE_BUFFER {
                    self.write_pending()?;
                    self.write_raw(part)?;
                } else {
                    self.pending.extend_from_slice(part);
                }
            }
            self.header.data_end += encoded;
            if self.pending.len() >= WRITE_BUFFER {
                self.write_pending()?;
            }
            return Ok(());
        }
        let size = u64::from(self.header.block_size);
        let room = size - self.block.len() as u64;
        if !self.block.is_empty() && (room < head_len || (encoded <= size && encoded > room)) {
            self.emit_block()?;
        }
        if size < head_len {
            return Err(Error::invalid(format!(
                "an entry header of {head_len} bytes does not fit in a block of {size} bytes"
            )));
        }
        self.block_entries += 1;
        let mut spanned = false;
        self.push_block_bytes(head, &mut spanned)?;
        for part in parts {
            self.push_block_bytes(part, &mut spanned)?;
        }
        if spanned {
            self.emit_block()?;
        }
        Ok(())
    }

    fn push_block_bytes(&mut self, mut data: &[u8], spanned: &mut bool) -> Result<()> {
        let size = self.header.block_size as usize;
        while !data.is_empty() {
            if self.block.len() >= size {
                self.emit_block()?;
                *spanned = true;
            }
            let take = (size - self.block.len()).min(data.len());
            let (now, rest) = data.split_at(take);
            self.block.extend_from_slice(now);
            data = rest;
        }
        Ok(())
    }

    fn emit_block(&mut self) -> Result<()> {
        if self.block.is_empty() {
            return Ok(());
        }
        self.compressed.clear();
        match &mut self.codec {
            Codec::None => {}
            Codec::Snappy(enc) => {
                self.compressed
                    .resize(snap::raw::max_compress_len(self.block.len()), 0);
                let n = enc
                    .compress(&self.block, &mut self.compressed)
                    .map_err(|e| {
                        Error::io(&self.path, "snappy compress", std::io::Error::other(e))
                    })?;
                self.compressed.truncate(n);
            }
            #[cfg(feature = "zstd")]
            Codec::Zstd(c) => {
                self.compressed = c
                    .compress(&self.block)
                    .map_err(|e| Error::io(&self.path, "zstd compress", e))?;
            }
        }
        let before = self.pending.len();
        put_vlq(&mut self.pending, self.compressed.len() as u64);
        self.pending.extend_from_slice(&self.compressed);
        self.header.data_end += (self.pending.len() - before) as u64;
        self.header.max_entries_per_block =
            self.header.max_entries_per_block.max(self.block_entries);
        self.block.clear();
        self.block_entries = 0;
        if self.pending.len() >= WRITE_BUFFER {
            self.write_pending()?;
        }
        Ok(())
    }

    fn write_raw(&mut self, bytes: &[u8]) -> Result<()> {
        if let Err(e) = self.file.write_all(bytes) {
            self.poisoned = true;
            return Err(Error::io(&self.path, "write", e));
        }
        self.written_end += bytes.len() as u64;
        Ok(())
    }

    fn write_pending(&mut self) -> Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let pending = std::mem::take(&mut self.pending);
        let r = self.write_raw(&pending);
        self.pending = pending;
        self.pending.clear();
        r
    }

    fn flush_inner(&mut self, sync: bool) -> Result<()> {
        self.check()?;
        self.emit_block()?;
        self.write_pending()?;
        debug_assert_eq!(self.written_end, self.header.data_end);
        if sync {
            if let Err(e) = self.file.sync_data() {
                self.poisoned = true;
                return Err(Error::io(&self.path, "fsync", e));
            }
        }
        if let Err(e) = self.file.write_all_at(&self.header.encode(), 0) {
            self.poisoned = true;
            return Err(Error::io(&self.path, "write header", e));
        }
        if sync {
            if let Err(e) = self.file.sync_data() {
                self.poisoned = true;
                return Err(Error::io(&self.path, "fsync", e));
            }
        }
        Ok(())
    }

    /// Writes buffered entries (closing the open block) and the header, making them
    /// visible to readers opened afterwards. Does not fsync.
    pub fn flush(&mut self) -> Result<()> {
        self.flush_inner(false)
    }

    /// Like [`LogWriter::flush`], and makes the entries durable (fsync data, then header).
    pub fn sync(&mut self) -> Result<()> {
        self.flush_inner(true)
    }

    /// Flushes, fsyncs and closes the log. Returns the final header.
    pub fn close(mut self) -> Result<LogHeader> {
        self.flush_inner(true)?;
        self.closed = true;
        Ok(self.header.clone())
    }
}

impl Drop for LogWriter {
    fn drop(&mut self) {
        if !self.poisoned && !self.closed {
            // Best effort, like a buffered file: make written entries visible. Errors
            // cannot be reported from drop; call close() to see them.
            let _ = self.flush_inner(false);
        }
    }
}
