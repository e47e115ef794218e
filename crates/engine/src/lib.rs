//! # Cairn
//!
//! An embedded key-value storage engine with two stores:
//!
//! * the **ordered store**, [`Db`]: an LSM tree with named [`Keyspace`]s sharing one
//!   write-ahead log, atomic [`Batch`]es across keyspaces, forward and reverse scans,
//!   O(1) [`Snapshot`]s and a [`Durability`] mode per store and per write;
//! * the **constant store**, [`hash`]: build-once, read-many files in the Sparkey format (a
//!   log plus a hash index), read and written byte-compatibly with the reference Sparkey.
//!
//! [`transfer`] moves data in and out of the ordered store: dump and restore in JSON
//! lines or CBOR, export to and import from the constant store's files (Cargo feature
//! `transfer`).
//!
//! [`inspect`] decodes the ordered store's raw files (WAL, batches, tables, manifests) for
//! tools.
//!
//! ## What is public
//!
//! Everything re-exported at the crate root, [`hash`] (but [`hash::raw`]), [`transfer`] and
//! [`pack`] is the supported API: it follows semantic versioning, and the option structs
//! and enums that may grow are `#[non_exhaustive]` (build [`Options`] and
//! [`KeyspaceOptions`] from `default()` and their setters; match [`Error`],
//! [`Durability`] and [`Compression`] with a wildcard arm). Two modules are for tools, with
//! weaker promises stated in their documentation: [`inspect`] (ordered-store file images;
//! its types mirror the formats) and [`hash::raw`] (constant-store headers, hash functions
//! and slot access; no stability promise). `docs/DESIGN.md` (section "Public API") gives
//! the reasons.
//!
//! ## Cargo features
//!
//! Both are on by default; turn them off with `default-features = false` to build less.
//!
//! * `zstd`: Zstandard compression through the C libzstd, for ordered-store tables
//!   ([`Compression::Zstd`]) and Sparkey logs ([`hash::Compression::Zstd`]). Without it,
//!   [`Options::validate`] refuses `Compression::Zstd` with [`Error::InvalidArgument`],
//!   and reading or writing a Zstandard-compressed table block or Sparkey log fails with
//!   [`Error::FeatureDisabled`]. LZ4, Snappy and uncompressed files work either way.
//! * `transfer`: the [`transfer`] module (dump, restore, export, import) and its
//!   dependencies (`serde_json`, `base64`, `ciborium`, `tempfile`).
//!
//! ```
//! use cairn::{Db, Durability, Options, Readable};
//!
//! # fn main() -> cairn::Result<()> {
//! # let dir = tempfile::tempdir().map_err(|e| cairn::Error::InvalidArgument(e.to_string()))?;
//! let db = Db::open(dir.path().join("store"), Options::default())?;
//! let users = db.keyspace("users")?;
//! let emails = db.keyspace("emails")?;
//! users.insert("u:42", "Ada")?;
//! let mut batch = db.batch();
//! batch.insert(&users, "u:43", "Grace");
//! batch.insert(&emails, "grace@example.com", "u:43");
//! batch.commit()?;
//! users.insert_with("u:44", "Edsger", Some(Durability::Buffered))?;
//!
//! let snapshot = db.snapshot();
//! users.remove("u:42")?;
//! assert_eq!(snapshot.get(&users, "u:42")?, Some(b"Ada".to_vec()));
//! assert_eq!(users.get("u:42")?, None);
//! let keys: Vec<Vec<u8>> = users.prefix("u:").rev().map(|p| p.map(|(k, _)| k)).collect::<cairn::Result<_>>()?;
//! assert_eq!(keys, vec![b"u:44".to_vec(), b"u:43".to_vec()]);
//! db.close()?;
//! # Ok(())
//! # }
//! ```
//!
//! The constant store:
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
//!
// Without the `transfer` feature the module does not exist: its links lead to the feature list.
#![cfg_attr(feature = "transfer", doc = "[`transfer`]: crate::transfer")]
#![cfg_attr(not(feature = "transfer"), doc = "[`transfer`]: #cargo-features")]

mod atomic;
mod attrs;
mod batch;
mod budget;
mod cache;
mod checksum;
mod clock;
mod coding;
mod compaction;
mod cursor;
mod db;
mod entry;
mod error;
mod files;
mod fs;
pub mod hash;
pub mod inspect;
mod iter;
mod key;
mod memtable;
mod merge;
mod mmap;
mod options;
pub mod pack;
mod rangedel;
mod reach;
mod snapshot;
mod table;
// Crash-test hooks (`testing::open_simulating_power_loss`, for `tests/kill9.rs`). Public
// only because integration tests are separate crates that see nothing else; hidden from
// the documentation and outside semantic versioning. A `testing` Cargo feature was
// considered and not taken: with `required-features` a plain `cargo test` would silently
// skip the kill -9 tests, and enabling it otherwise needs the crate to depend on itself.
// See docs/DESIGN.md, "Public API".
#[doc(hidden)]
pub mod testing;
#[cfg(feature = "transfer")]
pub mod transfer;
mod version;
mod vlog;
mod wal;

pub use attrs::{EntryOptions, Head, Meta, MAX_META_LEN};
pub use clock::Clock;
pub use db::{
    verify, verify_report, BackupInfo, Batch, BlobFileSpace, Committed, CompareAndSwapError, Db,
    EntryIter, HeadIter, Isolation, Iter, Keyspace, Loss, LossCause, Readable, RecoveryReport,
    ScanCursor, Snapshot, SpaceStats, Stats, Transaction, TransactionIter, TransactionOptions,
    ValueReader, VerifiedFile, VerifyReport, DEFAULT_KEYSPACE, MAX_KEYSPACE_NAME_LEN,
};
pub use error::{Corruption, Error, FileKind, Reason, Result};
pub use merge::{builtin_merge_operator, AddI64, Append, MergeOperator};
pub use options::{Compression, Durability, KeyspaceOptions, Options, MIN_MEMORY_BUDGET};
pub use reach::InMemory;
