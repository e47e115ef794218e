//! [`ValueReader`]: one separated value as a [`std::io::Read`] + [`std::io::Seek`] stream
//! that checks each 64 KiB chunk before yielding any of its bytes (FORMAT.md §6).
//!
//! Memory: one chunk buffer (64 KiB + 4 bytes), whatever the value's size. A seek costs
//! nothing until the next read, which loads and checks the chunk holding the new position;
//! so a random read of a few bytes verifies exactly one chunk.
//!
//! Errors from the store travel inside the `io::Error` ([`io::Error::get_ref`] gives the
//! `cairn::Error`): damage is `io::ErrorKind::InvalidData`, a failed read keeps its kind.
//!
//! Thread-safety: `Send`, one owner; it holds the blob file open until dropped.

use std::fmt;
use std::io::{self, Read, Seek, SeekFrom};
use std::sync::Arc;

use super::format::{RecordRef, CHUNK_LEN};
use super::scan::read_chunk;
use crate::error::{Error, FileKind};
use crate::fs::ReadableFile;

/// A verified stream over one value; see the module documentation.
pub(crate) struct ValueReader {
    file: Arc<dyn ReadableFile>,
    record: RecordRef,
    /// Position in the value.
    pos: u64,
    /// The loaded chunk followed by its checksum.
    chunk: Vec<u8>,
    loaded: Option<u64>,
}

impl fmt::Debug for ValueReader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ValueReader")
            .field("path", &self.file.path())
            .field("record", &self.record)
            .field("pos", &self.pos)
            .finish()
    }
}

fn to_io(e: Error) -> io::Error {
    let kind = match &e {
        Error::Io { source, .. } => source.kind(),
        _ => io::ErrorKind::InvalidData,
    };
    io::Error::new(kind, e)
}

impl ValueReader {
    /// A stream over the value of `record` (whose header the caller checked) in `file`.
    pub(crate) fn new(file: Arc<dyn ReadableFile>, record: RecordRef) -> ValueReader {
        ValueReader {
            file,
            record,
            pos: 0,
            chunk: Vec::new(),
            loaded: None,
        }
    }

    /// Bytes of the value.
    pub(crate) fn len(&self) -> u64 {
        u64::from(self.record.value_len)
    }

    /// The position of the next read in the value.
    #[cfg(test)]
    pub(crate) fn position(&self) -> u64 {
        self.pos
    }

    /// Capacity of the chunk buffer (bounded by one chunk and its checksum).
    #[cfg(test)]
    pub(crate) fn buffer_capacity(&self) -> usize {
        self.chunk.capacity()
    }

    fn load(&mut self, index: u64) -> io::Result<()> {
        if self.loaded == Some(index) {
            return Ok(());
        }
        self.loaded = None;
        let checked =
            read_chunk(self.file.as_ref(), &self.record, index, &mut self.chunk).map_err(to_io)?;
        if let Err((at, reason)) = checked {
            return Err(to_io(Error::corruption(
                FileKind::Blob,
                self.file.path(),
                at,
                reason,
            )));
        }
        self.loaded = Some(index);
        Ok(())
    }
}

impl Read for ValueReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.pos >= self.len() || buf.is_empty() {
            return Ok(0);
        }
        let index = self.pos / CHUNK_LEN;
        self.load(index)?;
        let within = (self.pos - index * CHUNK_LEN) as usize;
        let end = self.record.chunk_len(index) as usize;
        let available = self.chunk.get(within..end).unwrap_or_default();
        let n = available.len().min(buf.len());
        if let (Some(dst), Some(src)) = (buf.get_mut(..n), available.get(..n)) {
            dst.copy_from_slice(src);
        }
        self.pos += n as u64;
        Ok(n)
    }
}

impl Seek for ValueReader {
    /// Moves the position; past the end is allowed (reads there return 0 bytes).
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        let (base, delta) = match to {
            SeekFrom::Start(p) => (p, 0i64),
            SeekFrom::End(d) => (self.len(), d),
            SeekFrom::Current(d) => (self.pos, d),
        };
        let next = base.checked_add_signed(delta).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "seek before the start of the value",
            )
        })?;
        self.pos = next;
        Ok(next)
    }
}
