//! # Cairn
//!
//! An embedded key-value storage engine. This release provides the **constant store**
//! ([`hash`]): build-once, read-many files in the Sparkey format (a log plus a hash index),
//! read and written byte-compatibly with the reference Sparkey implementation.
//! [`inspect`] decodes the ordered store's raw files (write-ahead log, write batches) for
//! tools; the ordered store itself is being built on those formats.
//!
//! ```
//! use cairn::hash::{write_index, IndexOptions, LogOptions, LogWriter, Reader, ReadOptions};
//!
//! # fn main() -> cairn::Result<()> {
//! let dir = tempfile::tempdir().map_err(|e| cairn::Error::InvalidArgument(e.to_string()))?;
//! let log = dir.path().join("fruit.spl");
//! let index = dir.path().join("fruit.spi");
//!
//! let mut writer = LogWriter::create(&log, &LogOptions::default())?;
//! writer.put(b"apple", b"red")?;
//! writer.put(b"banana", b"yellow")?;
//! writer.delete(b"apple")?;
//! writer.close()?;
//! write_index(&index, &log, &IndexOptions::default())?;
//!
//! let reader = Reader::open_with(&index, &log, &ReadOptions::default())?;
//! assert_eq!(reader.get(b"banana")?, Some(b"yellow".to_vec()));
//! assert_eq!(reader.get(b"apple")?, None);
//! # Ok(())
//! # }
//! ```

mod atomic;
mod batch;
mod checksum;
mod coding;
mod compaction;
#[allow(dead_code)] // implemented by the table and memtable cursors as they land
mod cursor;
mod db;
mod error;
mod fs;
pub mod hash;
pub mod inspect;
mod iter;
mod key;
mod memtable;
mod mmap;
mod options;
mod snapshot;
mod table;
#[doc(hidden)]
pub mod testing;
mod version;
mod wal;

pub use db::{Batch, Db, Iter, Keyspace, Stats, DEFAULT_KEYSPACE, MAX_KEYSPACE_NAME_LEN};
pub use error::{Corruption, Error, FileKind, Reason, Result};
pub use options::{Compression, Durability, Options};
pub use snapshot::Snapshot;
