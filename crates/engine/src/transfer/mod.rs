//! Moving data in and out of the ordered store: [`dump`] / [`restore`] in JSON lines or
//! CBOR, and [`export`] / [`import`] to and from the constant store's Sparkey files.
//!
//! Everything streams: a dump reads one snapshot through a scan and writes entry by entry;
//! a restore reads one record at a time into a spool on disk (`spool.rs`), and an import
//! commits bounded batches. Memory use is bounded by one batch plus one entry (a CBOR
//! value, whatever its size, is copied through a bounded buffer), whatever the size of the
//! store or the input.
//!
//! Formats (byte layouts and worked examples in `FORMAT.md` beside this file):
//! * JSON lines: `{"key":"k","value":"v"}` per entry, `key_b64`/`value_b64` for bytes
//!   that are not UTF-8, optional `keyspace`, `tag`, `meta_b64`, `expires_at`. For
//!   people and tools such as `jq`; no header, no checksum; lines of at most 256 MiB.
//! * CBOR: a header record, one map per entry with byte strings, and a trailer with the
//!   entry count and a CRC32C of everything before it, so truncation and damage are
//!   detected. For backups and transfers; values up to 4 GiB.
//!
//! Both carry a keyspace record (`{"keyspace":…,"blob_threshold":…}`) before the entries
//! of a keyspace that separates values into the value log, so a restore creates it
//! separating them again (a value over 32 MiB can only be stored that way).
//!
//! Keyspaces: a dump of one keyspace writes no `keyspace` field (it restores into any
//! keyspace); a dump of every keyspace writes the field on entries of every keyspace but
//! `default`. A restore sends an entry without the field to its target keyspace
//! ([`RestoreOptions::keyspace`], `default` unless set), and creates keyspaces as needed.
//!
//! Invariants:
//! 1. A dump holds exactly the entries visible at its snapshot (keyspaces as listed when
//!    the dump starts), in keyspace-name then key order, and only what a restore accepts
//!    (a JSON-lines dump refuses an entry whose line would pass the readers' limit).
//! 2. [`restore`] writes nothing (no entry, no keyspace) unless the whole input was
//!    accepted (`restore.rs`).
//! 3. [`restore`], [`import`] return only after everything they wrote is durable (the log
//!    is fsynced at the end). An import is not atomic, nor is a restore against a store
//!    error while it writes: the batches committed before the error stay.
//! 4. An export appears at its final names only complete and synced (see [`export`]).
//! 5. Every batched write goes through `restore::stage`, the one place that turns an
//!    entry (with its tag, metadata and expiry) into a write.

mod cbor;
mod entry;
mod jsonl;
mod restore;
mod sparkey;
mod spool;

use std::io::{BufRead, Write};
use std::path::Path;

use crate::checksum::Checksum;
use crate::db::{Db, Keyspace, DEFAULT_KEYSPACE};
use crate::db::{Readable, Snapshot};
use crate::error::{Error, Result};
use crate::options::KeyspaceOptions;
use entry::{Item, Thresholds};

pub use entry::{Entry, EntryRef, MAX_DUMP_VALUE_LEN, MAX_META_LEN, MAX_RECORD_BYTES};
pub use restore::{restore, RestoreOptions};
pub(crate) use restore::{stage, Batcher};
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
    /// `Io` if writing fails; `InvalidArgument` (nothing written) for a JSON-lines entry
    /// whose line would be longer than [`MAX_RECORD_BYTES`], which no reader accepts (CBOR
    /// carries it).
    pub fn write(&mut self, entry: &EntryRef<'_>) -> Result<()> {
        match self.format {
            Format::Jsonl => {
                let before = self.buf.len();
                let value_len = entry.value.map_or(0, <[u8]>::len);
                if value_len <= MAX_RECORD_BYTES {
                    jsonl::encode(entry, &mut self.buf);
                }
                let line_len = self.buf.len() - before;
                if value_len > MAX_RECORD_BYTES || line_len > MAX_RECORD_BYTES {
                    self.buf.truncate(before);
                    return Err(Error::invalid(format!(
                        "a value of {value_len} bytes does not fit a JSON line of at most \
                         {MAX_RECORD_BYTES} bytes (what a restore reads): dump in CBOR \
                         (--format cbor), which carries values up to {MAX_DUMP_VALUE_LEN} bytes"
                    )));
                }
            }
            Format::Cbor => cbor::encode_entry(entry, &mut self.buf),
        }
        self.progress.entries += 1;
        self.drain(WRITE_CHUNK)
    }

    /// Writes a keyspace record: keyspace `keyspace` (`None`: the one entries without a
    /// keyspace field restore into) has `options`; a restore creates it with them. Writes
    /// nothing for options without a blob threshold. Call it before the keyspace's
    /// entries; at most once per keyspace (readers refuse a second).
    ///
    /// # Errors
    /// `Io` if writing fails.
    pub fn write_keyspace(
        &mut self,
        keyspace: Option<&str>,
        options: &KeyspaceOptions,
    ) -> Result<()> {
        let Some(threshold) = options.blob_threshold else {
            return Ok(());
        };
        let threshold = threshold as u64;
        match self.format {
            Format::Jsonl => jsonl::encode_keyspace(keyspace, threshold, &mut self.buf),
            Format::Cbor => cbor::encode_keyspace(keyspace, threshold, &mut self.buf),
        }
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

/// Reads a dump entry by entry, validating as it goes; keyspace records are taken in
/// passing ([`DumpReader::keyspace_options`]).
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

    /// The next entry; `None` at the end (for CBOR, after a valid trailer). A CBOR value
    /// (up to 4 GiB) is read into memory whole; a restore streams it instead.
    ///
    /// # Errors
    /// `BadInput` naming the line or record of malformed input (see `FORMAT.md` for
    /// everything checked); `Io` if reading fails.
    pub fn next_entry(&mut self) -> Result<Option<Entry>> {
        loop {
            let item = match &mut self.kind {
                ReaderKind::Jsonl(r) => r.next_item()?,
                ReaderKind::Cbor(r) => {
                    let mut value = Vec::new();
                    r.next_item(&mut value)?.map(|item| match item {
                        Item::Entry {
                            mut entry,
                            value_len,
                        } => {
                            entry.value = value;
                            Item::Entry { entry, value_len }
                        }
                        other => other,
                    })
                }
            };
            match item {
                None => return Ok(None),
                Some(Item::Entry { entry, .. }) => return Ok(Some(entry)),
                Some(Item::Keyspace { .. }) => {}
            }
        }
    }

    /// The next entry or keyspace record; an entry's value bytes are written to
    /// `values` (the returned entry's `value` is empty).
    ///
    /// # Errors
    /// As [`DumpReader::next_entry`]; `Io` if writing to `values` fails.
    pub(crate) fn next_spooled(&mut self, values: &mut dyn Write) -> Result<Option<Item>> {
        match &mut self.kind {
            ReaderKind::Cbor(r) => r.next_item(values),
            ReaderKind::Jsonl(r) => {
                let mut item = r.next_item()?;
                if let Some(Item::Entry { entry, .. }) = &mut item {
                    values
                        .write_all(&entry.value)
                        .map_err(|e| Error::io(Path::new("<dump value output>"), "write", e))?;
                    entry.value = Vec::new();
                }
                Ok(item)
            }
        }
    }

    /// The options the keyspace records read so far give keyspace `keyspace` (`None`:
    /// the one entries without a keyspace field restore into), if a record named it.
    pub fn keyspace_options(&self, keyspace: Option<&str>) -> Option<KeyspaceOptions> {
        let threshold = self.thresholds().get(keyspace)?;
        Some(KeyspaceOptions::separated(
            usize::try_from(threshold).unwrap_or(usize::MAX),
        ))
    }

    pub(crate) fn thresholds(&self) -> &Thresholds {
        match &self.kind {
            ReaderKind::Jsonl(r) => r.thresholds(),
            ReaderKind::Cbor(r) => r.thresholds(),
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
/// of every keyspace (`None`). A keyspace that separates values gets a keyspace record
/// with its blob threshold (its own, else the store's) before its entries. Calls
/// `progress` every few thousand entries and at the end; returns the totals.
///
/// # Errors
/// `InvalidArgument` if the named keyspace does not exist, or (JSON lines) for a value too
/// long for a JSON line (over about 192 MiB of binary, 256 MiB of text: dump those in
/// CBOR); `Corruption` if a table is damaged; `Io` if reading or writing fails (the output
/// is then incomplete: a CBOR dump lacks its trailer, so a restore refuses it).
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
        if let Some(threshold) = ks.blob_threshold() {
            let options =
                KeyspaceOptions::separated(usize::try_from(threshold).unwrap_or(usize::MAX));
            writer.write_keyspace(field.as_deref(), &options)?;
        }
        for item in snapshot.range_entries::<&[u8], _>(ks, ..) {
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

#[cfg(test)]
mod tests;
