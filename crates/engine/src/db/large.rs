//! Large values: streaming writes ([`Keyspace::insert_from`]) and reads
//! ([`Keyspace::get_reader`], [`ValueReader`]) that never hold a value in memory whole.
//!
//! A streamed write into a keyspace that separates values goes to a blob file of its own
//! (a fresh file id): the caller's thread copies the source into it through one bounded
//! buffer, seals it (footer, fsync) and only then logs a batch holding the value's handle,
//! with the file attached so the memtable's flush records it. So the value is durable
//! before any WAL record references it, and the write leader is never held up by it.
//! A value that fails to stream leaves nothing behind (its file is deleted).
//!
//! A streamed read pins a super version while it locates the value, then reads it through
//! an open file handle, verifying each 64 KiB chunk as it goes.

use std::fmt;
use std::io::{self, Read, Seek, SeekFrom};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::inner::Inner;
use super::read_path::ReadPath;
use super::{read, write};
use crate::attrs::EntryOptions;
use crate::batch::WriteBatch;
use crate::entry::encode_separated;
use crate::error::{Error, Result};
use crate::files::BlobId;
use crate::iter::visible::Lazy;
use crate::key::{check_key_len, KeyspaceId, Kind};
use crate::vlog;

/// A value being read: [`Read`] and [`Seek`] over its bytes, with its length known up
/// front. A separated value is read from its blob file chunk by chunk (memory stays at
/// one 64 KiB chunk whatever its size), each chunk verified; damage is reported as an
/// `io::ErrorKind::InvalidData` error wrapping the store's `Corruption`.
pub struct ValueReader {
    source: Source,
}

enum Source {
    Inline(io::Cursor<Vec<u8>>),
    Blob(vlog::ValueReader),
}

impl fmt::Debug for ValueReader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ValueReader")
            .field("len", &self.len())
            .field("separated", &self.is_separated())
            .finish()
    }
}

impl ValueReader {
    /// Bytes of the value.
    pub fn len(&self) -> u64 {
        match &self.source {
            Source::Inline(c) => c.get_ref().len() as u64,
            Source::Blob(r) => r.len(),
        }
    }

    /// True for an empty value.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// True if the value is read from a blob file of the value log.
    pub fn is_separated(&self) -> bool {
        matches!(self.source, Source::Blob(_))
    }
}

impl Read for ValueReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match &mut self.source {
            Source::Inline(c) => c.read(buf),
            Source::Blob(r) => r.read(buf),
        }
    }
}

impl Seek for ValueReader {
    fn seek(&mut self, pos: SeekFrom) -> io::Result<u64> {
        match &mut self.source {
            Source::Inline(c) => c.seek(pos),
            Source::Blob(r) => r.seek(pos),
        }
    }
}

/// A reader of the newest value of `key` in `keyspace`, or `None` if there is none.
pub(crate) fn get_reader(
    reads: &ReadPath,
    keyspace: KeyspaceId,
    key: &[u8],
) -> Result<Option<ValueReader>> {
    // The super version stays pinned until the file is open, so no GC deletes it between.
    let (sv, seqno) = reads.acquire(None);
    let found = read::find_at::<Lazy>(reads, &sv, keyspace, key, seqno)?;
    let source = match found {
        None => return Ok(None),
        Some(Lazy::Inline(v)) => Source::Inline(io::Cursor::new(v)),
        Some(Lazy::Handle(h)) => Source::Blob(reads.blobs.open_value(&h)?),
    };
    drop(sv);
    Ok(Some(ValueReader { source }))
}

/// Sets `key` to the next `len` bytes of `source`; see the module documentation.
pub(crate) fn insert_from(
    inner: &Inner,
    keyspace: KeyspaceId,
    key: &[u8],
    source: &mut dyn Read,
    len: u64,
    options: &EntryOptions,
) -> Result<()> {
    check_key_len(key)?;
    let value_len = u32::try_from(len).map_err(|_| {
        Error::invalid(format!(
            "value of {len} bytes exceeds the limit of {} bytes",
            u32::MAX
        ))
    })?;
    let attrs_now = inner.options.clock.now_ms();
    let attrs = options.attrs(attrs_now)?;
    let version = inner.reads.supers.version();
    let separates = inner
        .blob_threshold(&version, keyspace)
        .is_some_and(|t| len >= t);
    if !separates {
        // Small enough to keep in the tree (or the keyspace keeps values inline): read it
        // and write it as any other value; `write` refuses what is too long for the tree.
        if len > crate::table::MAX_INLINE_VALUE_LEN as u64 {
            return Err(Error::invalid(format!(
                "value of {len} bytes exceeds the limit of {} bytes for a keyspace that keeps \
                 values in the tree (see KeyspaceOptions::blob_threshold)",
                crate::table::MAX_INLINE_VALUE_LEN
            )));
        }
        let mut value = Vec::with_capacity(value_len as usize);
        source
            .take(len)
            .read_to_end(&mut value)
            .map_err(|e| Error::io(std::path::Path::new("<value source>"), "read value", e))?;
        if value.len() as u64 != len {
            return Err(Error::io(
                std::path::Path::new("<value source>"),
                "read value",
                io::Error::new(io::ErrorKind::UnexpectedEof, "the source ended early"),
            ));
        }
        let mut batch = WriteBatch::new();
        batch.put_attrs(keyspace, key, &attrs, &value)?;
        let durability = inner.durability(options.durability);
        return write::write(inner, batch, durability).map(|_| ());
    }
    inner.check_writable()?;
    let id = inner.next_file_id.fetch_add(1, Ordering::SeqCst);
    let mut writer = vlog::Writer::new(
        Arc::clone(&inner.fs),
        &inner.dir,
        vlog::WriterOptions {
            max_file_len: u64::MAX,
        },
        Box::new(move || id),
    );
    let written = writer
        .append_from(keyspace, key, value_len, source)
        .and_then(|handle| {
            writer.rotate()?;
            inner.stats.blob_bytes.fetch_add(
                key.len() as u64 + u64::from(value_len),
                std::sync::atomic::Ordering::Relaxed,
            );
            Ok(handle)
        });
    let handle = match written {
        Ok(h) => h,
        Err(e) => {
            let _ = inner.fs.remove(&inner.reads.blobs.path(BlobId(id)));
            return Err(e);
        }
    };
    let files = writer.take_sealed();
    let mut batch = WriteBatch::new();
    batch.push_stored(
        Kind::ValueHandle,
        keyspace,
        key,
        &encode_separated(&attrs, &handle),
    )?;
    let durability = inner.durability(options.durability);
    write::write_with_blobs(inner, batch, durability, files).map(|_| ())
}
