//! The value log of the ordered store: values at or above a keyspace's separation threshold
//! are written to blob files, and the tree (WAL, memtable, tables) carries a small
//! [`ValueHandle`] in their place (key-value separation, as in WiscKey). Byte layout:
//! [`FORMAT.md`](FORMAT.md).
//!
//! Owns:
//! * the blob file naming (`<id:020>.blob`) and format: file header, records with
//!   position-bound, per-64-KiB-chunk checksums, the footer of a sealed file (`format.rs`);
//! * [`ValueHandle`] and its encoding inside a `ValueHandle` entry (`handle.rs`);
//! * [`Writer`]: appends records to the active blob file, rotates at a size limit, syncs,
//!   poisons itself after a failed write or fsync (`writer.rs`);
//! * [`Reader`]: reads a value by handle with verification, streams one through
//!   [`ValueReader`] without holding it whole, validates a handle during WAL replay, and
//!   keeps a bounded cache of open files (`reader.rs`, `value_reader.rs`);
//! * [`scan()`]: decodes a whole blob file record by record, finding a sealed file's footer
//!   or an unsealed file's valid prefix (`scan.rs`);
//! * the garbage-collection *policy* (`gc.rs`): which files to rewrite, given their total
//!   and live bytes.
//!
//! It does not own: when to separate a value (the `Db`, by the keyspace threshold), the
//! file-id counter (the `Db` hands the writer a source of ids), which blob files are live
//! (the manifest, `version/`), how many bytes of each file tables still reference (table
//! properties, `table/blob_refs.rs`), or running GC and deleting files (the `Db`).
//!
//! Invariants:
//! 1. A blob file is written by one [`Writer`] from creation until it is sealed or
//!    abandoned, and never appended to after that or after a crash: recovery starts a new
//!    file, so a torn tail is never followed by valid records.
//! 2. Every record is bound to its place: its header checksum covers the file id and the
//!    record's offset, and each chunk checksum covers the header checksum and the chunk's
//!    index. A reader therefore never accepts bytes that were written for another place.
//! 3. **Ordering (the WAL relies on it):** a record is handed to the OS before any WAL
//!    record referencing it is ([`Writer::append`] returns only after that; records of
//!    [`Writer::append_gathered`] go at [`Writer::hand_over`], which the `Db` calls before
//!    writing the group's WAL records), and a blob file is fsynced up to a record before
//!    any WAL fsync that covers a WAL record referencing it. So a WAL record that survived a crash
//!    but whose value did not is always in the WAL's unsynced tail, and
//!    [`Reader::validate_handle`] returning `false` marks the end of the recoverable log.
//! 4. Nothing here panics or sizes a buffer from an unchecked length on any input; memory
//!    per streamed value is one chunk.
//!
//! Thread-safety: a [`Writer`] has one owner; a [`Reader`] is `Send + Sync` and shared.

// A few helpers (record encoding for tools and tests, stream positions) are used only by
// tests, the fuzz targets and `inspect`.

pub(crate) mod format;
pub(crate) mod gc;
pub(crate) mod handle;
mod reader;
pub(crate) mod scan;
mod value_reader;
mod writer;

#[cfg(test)]
mod crash_tests;
#[cfg(test)]
mod large_value_tests;

pub(crate) use format::FOOTER_LEN;
pub(crate) use handle::{decode_entry_value, ValueHandle, MAX_HANDLE_LEN};
pub(crate) use reader::Reader;
pub(crate) use scan::scan_path;
pub(crate) use value_reader::ValueReader;
#[cfg(test)]
pub(crate) use writer::DEFAULT_MAX_FILE_LEN;
pub(crate) use writer::{Writer, WriterOptions};

use crate::files::BlobId;

/// What the manifest records about one blob file (FORMAT.md §4, `version/FORMAT.md` §5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct BlobFileMeta {
    /// The file id (from the store's shared file-id counter).
    pub(crate) id: BlobId,
    /// Bytes of the file as written (header, records, footer if sealed).
    pub(crate) file_size: u64,
    /// Records in the file.
    pub(crate) record_count: u64,
    /// Sum of the records' value lengths: the total against which GC measures live bytes.
    pub(crate) value_bytes: u64,
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    #[test]
    fn readers_are_shared_across_threads_and_writers_can_move() {
        fn send_sync<T: Send + Sync>() {}
        fn send<T: Send>() {}
        send_sync::<Reader>();
        send::<Writer>();
        send::<ValueReader>();
        assert_eq!(DEFAULT_MAX_FILE_LEN, 256 << 20);
    }
}
