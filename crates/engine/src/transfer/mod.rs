//! Moving data in and out of the ordered store: [`dump`] / [`restore`] in JSON lines or
//! CBOR, and [`export`] / [`import`] to and from the constant store's Sparkey files.
//!
//! Everything streams: a dump reads one snapshot through a scan and writes entry by entry;
//! a restore or import reads one record at a time and commits bounded batches. Memory use
//! is bounded by one batch plus one entry, whatever the size of the store or the input.
//!
//! Formats (byte layouts and worked examples in `FORMAT.md` beside this file):
//! * JSON lines: `{"key":"k","value":"v"}` per entry, `key_b64`/`value_b64` for bytes
//!   that are not UTF-8, optional `keyspace`, `tag`, `meta_b64`, `expires_at`. For
//!   people and tools such as `jq`; no header, no checksum.
//! * CBOR: a header record, one map per entry with byte strings, and a trailer with the
//!   entry count and a CRC32C of everything before it, so truncation and damage are
//!   detected. For backups and transfers.
//!
//! Keyspaces: a dump of one keyspace writes no `keyspace` field (it restores into any
//! keyspace); a dump of every keyspace writes the field on entries of every keyspace but
//! `default`. A restore sends an entry without the field to its target keyspace
//! ([`RestoreOptions::keyspace`], `default` unless set), and creates keyspaces as needed.
//!
//! Invariants:
//! 1. A dump holds exactly the entries visible at its snapshot (keyspaces as listed when
//!    the dump starts), in keyspace-name then key order.
//! 2. [`restore`], [`import`] return only after everything they wrote is durable (the log
//!    is fsynced at the end). They are not atomic: after an error the batches committed
//!    before it stay.
//! 3. An export appears at its final names only complete and synced (see [`export`]).
//! 4. Every write goes through `stage`, the one place that turns an entry (with its tag,
//!    metadata and expiry) into a write.

mod cbor;
mod entry;
mod jsonl;
mod sparkey;

use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::path::Path;

use crate::attrs::{EntryOptions, Meta};
use crate::checksum::Checksum;
use crate::db::{Batch, Db, Keyspace, DEFAULT_KEYSPACE};
use crate::error::{Error, Result};
use crate::options::Durability;
use crate::snapshot::Snapshot;

pub use entry::{Entry, EntryRef, MAX_META_LEN, MAX_RECORD_BYTES};
pub use sparkey::{export, import, ExportOptions, ImportOptions, ImportStats};

/// The CBOR header's `format` text and `version`.
pub const CBOR_MAGIC: &str = cbor::MAGIC;
/// The CBOR format version this build writes and reads.
pub const CBOR_VERSION: u64 = cbor::VERSION;

/// A dump format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// One JSON object per line.
    Jsonl,
    /// A CBOR sequence with header and checksummed trailer.
    Cbor,
}

/// How far a transfer has come: entries and bytes (of output for a dump or export, of
/// input for a restore or import).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Progress {
    /// Entries written or applied.
    pub entries: u64,
    /// Bytes written or read.
    pub bytes: u64,
}

/// Entries between two calls of a progress callback (a final call always follows).
pub(crate) const PROGRESS_EVERY: u64 = 1024;

/// Writes a dump entry by entry. Output is buffered internally; [`DumpWriter::finish`]
/// writes the CBOR trailer and flushes.
pub struct DumpWriter<W: Write> {
    out: W,
    format: Format,
    buf: Vec<u8>,
    crc: Checksum,
    progress: Progress,
}

const WRITE_CHUNK: usize = 64 << 10;

fn write_failed(e: std::io::Error) -> Error {
    Error::io(Path::new("<dump output>"), "write", e)
}

impl<W: Write> DumpWriter<W> {
    /// Starts a dump on `out` (the CBOR header is written at once).
    ///
    /// # Errors
    /// `Io` if writing fails.
    pub fn new(out: W, format: Format) -> Result<DumpWriter<W>> {
        let mut w = DumpWriter {
            out,
            format,
            buf: Vec::with_capacity(WRITE_CHUNK * 2),
            crc: Checksum::of(&[]),
            progress: Progress::default(),
        };
        if format == Format::Cbor {
            cbor::encode_header(&mut w.buf);
            w.drain(0)?;
        }
        Ok(w)
    }

    /// Writes the buffer out once it holds more than `keep` bytes.
    fn drain(&mut self, keep: usize) -> Result<()> {
        if self.buf.len() > keep {
            self.crc = self.crc.extend(&self.buf);
            self.progress.bytes += self.buf.len() as u64;
            self.out.write_all(&self.buf).map_err(write_failed)?;
            self.buf.clear();
        }
        Ok(())
    }

    /// Appends one entry.
    ///
    /// # Errors
    /// `Io` if writing fails.
    pub fn write(&mut self, entry: &EntryRef<'_>) -> Result<()> {
        match self.format {
            Format::Jsonl => jsonl::encode(entry, &mut self.buf),
            Format::Cbor => cbor::encode_entry(entry, &mut self.buf),
        }
        self.progress.entries += 1;
        self.drain(WRITE_CHUNK)
    }

    /// Entries written and bytes handed to the output so far.
    pub fn progress(&self) -> Progress {
        self.progress
    }

    /// Writes what is buffered without ending the dump (for a reader following along).
    ///
    /// # Errors
    /// `Io` if writing fails.
    pub fn flush(&mut self) -> Result<()> {
        self.drain(0)?;
        self.out.flush().map_err(write_failed)
    }

    /// Ends the dump (the CBOR trailer), flushes, and returns the output and the totals.
    ///
    /// # Errors
    /// `Io` if writing fails.
    pub fn finish(mut self) -> Result<(W, Progress)> {
        self.drain(0)?;
        if self.format == Format::Cbor {
            cbor::encode_trailer(self.progress.entries, self.crc, &mut self.buf);
            self.drain(0)?;
        }
        self.out.flush().map_err(write_failed)?;
        Ok((self.out, self.progress))
    }
}

enum ReaderKind<R: BufRead> {
    Jsonl(jsonl::Reader<R>),
    Cbor(Box<cbor::Reader<R>>),
}

/// Reads a dump entry by entry, validating as it goes.
pub struct DumpReader<R: BufRead> {
    kind: ReaderKind<R>,
}

impl<R: BufRead> DumpReader<R> {
    /// Starts reading `input` (a CBOR dump's header is checked at once).
    ///
    /// # Errors
    /// `BadInput` for a CBOR input without a valid header; `Io`.
    pub fn new(input: R, format: Format) -> Result<DumpReader<R>> {
        let kind = match format {
            Format::Jsonl => ReaderKind::Jsonl(jsonl::Reader::new(input)),
            Format::Cbor => ReaderKind::Cbor(Box::new(cbor::Reader::new(input)?)),
        };
        Ok(DumpReader { kind })
    }

    /// The next entry; `None` at the end (for CBOR, after a valid trailer).
    ///
    /// # Errors
    /// `BadInput` naming the line or record of malformed input (see `FORMAT.md` for
    /// everything checked); `Io` if reading fails.
    pub fn next_entry(&mut self) -> Result<Option<Entry>> {
        match &mut self.kind {
            ReaderKind::Jsonl(r) => r.next_entry(),
            ReaderKind::Cbor(r) => r.next_entry(),
        }
    }

    /// Bytes consumed so far.
    pub fn offset(&self) -> u64 {
        match &self.kind {
            ReaderKind::Jsonl(r) => r.offset(),
            ReaderKind::Cbor(r) => r.offset(),
        }
    }

    /// Number of the line (JSON lines) or record (CBOR) read last.
    pub fn record(&self) -> u64 {
        match &self.kind {
            ReaderKind::Jsonl(r) => r.record(),
            ReaderKind::Cbor(r) => r.record(),
        }
    }
}

/// Dumps the entries visible at `snapshot` to `out`: of the keyspace named `keyspace`, or
/// of every keyspace (`None`). Calls `progress` every few thousand entries and at the
/// end; returns the totals.
///
/// # Errors
/// `InvalidArgument` if the named keyspace does not exist; `Corruption` if a table is
/// damaged; `Io` if reading or writing fails (the output is then incomplete: a CBOR dump
/// lacks its trailer, so a restore refuses it).
pub fn dump<W: Write>(
    db: &Db,
    snapshot: &Snapshot,
    keyspace: Option<&str>,
    format: Format,
    out: W,
    progress: &mut dyn FnMut(Progress),
) -> Result<Progress> {
    let sources: Vec<(Keyspace, Option<String>)> = match keyspace {
        Some(name) => vec![(find_keyspace(db, name)?, None)],
        None => db
            .keyspace_names()
            .into_iter()
            .filter_map(|name| {
                let ks = db.get_keyspace(&name)?;
                let field = (name != DEFAULT_KEYSPACE).then_some(name);
                Some((ks, field))
            })
            .collect(),
    };
    let mut writer = DumpWriter::new(out, format)?;
    for (ks, field) in &sources {
        for item in ks.range_entries_at::<&[u8], _>(.., snapshot) {
            let (key, value, head) = item?;
            writer.write(&EntryRef {
                keyspace: field.as_deref(),
                tag: head.tag,
                meta: &head.meta,
                expires_at: head.expires_at,
                ..EntryRef::pair(&key, &value)
            })?;
            if writer.progress().entries.is_multiple_of(PROGRESS_EVERY) {
                progress(writer.progress());
            }
        }
    }
    let (_, total) = writer.finish()?;
    progress(total);
    Ok(total)
}

/// The existing keyspace `name`.
pub(crate) fn find_keyspace(db: &Db, name: &str) -> Result<Keyspace> {
    db.get_keyspace(name)
        .ok_or_else(|| Error::invalid(format!("no keyspace named {name:?}")))
}

/// Options of [`restore`] and [`import`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct RestoreOptions {
    /// Where entries without a `keyspace` field go (created if missing). Default
    /// `default`.
    pub keyspace: String,
    /// Entries per committed batch. Default 4096.
    pub batch_entries: usize,
    /// Key and value bytes per committed batch (a batch is committed once it reaches
    /// this). Default 4 MiB.
    pub batch_bytes: usize,
}

impl Default for RestoreOptions {
    fn default() -> RestoreOptions {
        RestoreOptions {
            keyspace: DEFAULT_KEYSPACE.to_string(),
            batch_entries: 4096,
            batch_bytes: 4 << 20,
        }
    }
}

impl RestoreOptions {
    /// Sets the target keyspace.
    pub fn keyspace(mut self, name: impl Into<String>) -> Self {
        self.keyspace = name.into();
        self
    }

    /// Sets the batch bounds.
    pub fn batch(mut self, entries: usize, bytes: usize) -> Self {
        self.batch_entries = entries.max(1);
        self.batch_bytes = bytes.max(1);
        self
    }
}

/// Writes bounded batches: commits each once it reaches the options' bounds, with
/// `Buffered` durability, and fsyncs the log at the end.
pub(crate) struct Batcher<'a> {
    db: &'a Db,
    batch: Batch,
    bytes: usize,
    max_entries: usize,
    max_bytes: usize,
}

impl<'a> Batcher<'a> {
    pub(crate) fn new(db: &'a Db, options: &RestoreOptions) -> Batcher<'a> {
        Batcher {
            db,
            batch: db.batch(),
            bytes: 0,
            max_entries: options.batch_entries.max(1),
            max_bytes: options.batch_bytes.max(1),
        }
    }

    /// Counts `bytes` into the open batch and commits it if it is full.
    pub(crate) fn added(&mut self, bytes: usize) -> Result<()> {
        self.bytes += bytes;
        if self.batch.len() >= self.max_entries || self.bytes >= self.max_bytes {
            self.commit()?;
        }
        Ok(())
    }

    pub(crate) fn batch(&mut self) -> &mut Batch {
        &mut self.batch
    }

    fn commit(&mut self) -> Result<()> {
        let full = std::mem::replace(&mut self.batch, self.db.batch());
        self.bytes = 0;
        if full.is_empty() {
            return Ok(());
        }
        full.commit_with(Some(Durability::Buffered))
    }

    /// Commits the last batch and makes everything durable.
    pub(crate) fn finish(mut self) -> Result<()> {
        self.commit()?;
        self.db.flush_wal(true)
    }
}

/// Adds `entry` (line or record `record` of the input) to `batch` for `keyspace`: the one
/// place where restored entries are written.
///
/// An entry's tag, metadata and expiry are written with it (an expiry already in the past
/// is kept too: the entry is invisible at once, exactly as in the dumped store).
pub(crate) fn stage(
    batch: &mut Batch,
    keyspace: &Keyspace,
    entry: &Entry,
    record: u64,
) -> Result<()> {
    if !entry.has_attrs() {
        batch.insert(keyspace, &entry.key, &entry.value);
        return Ok(());
    }
    let mut options = EntryOptions::new();
    if entry.tag != 0 || !entry.meta.is_empty() {
        options = options.meta(Meta::new(entry.tag, entry.meta.clone()));
    }
    if let Some(ms) = entry.expires_at {
        let at = std::time::UNIX_EPOCH
            .checked_add(std::time::Duration::from_millis(ms))
            .ok_or_else(|| {
                Error::invalid(format!("record {record}: expires_at {ms} is out of range"))
            })?;
        options = options.expires_at(at);
    }
    batch.insert_entry(keyspace, &entry.key, &entry.value, &options);
    Ok(())
}

/// Restores a dump from `input` into `db`: every entry is put into its keyspace (the
/// `keyspace` field, else `options.keyspace`), created if missing, in bounded batches.
/// Existing keys are overwritten; other keys are kept. Calls `progress` every few
/// thousand entries and at the end; returns the totals (bytes: input consumed).
///
/// # Errors
/// `BadInput` naming the line or record of malformed input; `InvalidArgument` for an
/// entry with attributes (see `stage`) or one the store refuses (a value too large);
/// `Io`, `Poisoned`, `Stopped` from the writes. Batches committed before the error stay.
pub fn restore<R: BufRead>(
    db: &Db,
    input: R,
    format: Format,
    options: &RestoreOptions,
    progress: &mut dyn FnMut(Progress),
) -> Result<Progress> {
    let mut reader = DumpReader::new(input, format)?;
    let mut handles: HashMap<String, Keyspace> = HashMap::new();
    let mut batcher = Batcher::new(db, options);
    let mut done = Progress::default();
    while let Some(entry) = reader.next_entry()? {
        let name = entry.keyspace.as_deref().unwrap_or(&options.keyspace);
        let ks = match handles.get(name) {
            Some(ks) => ks.clone(),
            None => {
                let ks = db.keyspace(name)?;
                handles.insert(name.to_string(), ks.clone());
                ks
            }
        };
        stage(batcher.batch(), &ks, &entry, reader.record())?;
        batcher.added(entry.key.len() + entry.value.len())?;
        done.entries += 1;
        if done.entries.is_multiple_of(PROGRESS_EVERY) {
            done.bytes = reader.offset();
            progress(done);
        }
    }
    batcher.finish()?;
    done.bytes = reader.offset();
    progress(done);
    Ok(done)
}

#[cfg(test)]
mod tests;
