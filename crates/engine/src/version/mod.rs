//! Versions and the manifest of the ordered store: which tables form the store, per
//! keyspace and level, and the durable log of changes to that set. Byte layout:
//! [`FORMAT.md`](FORMAT.md).
//!
//! Owns:
//! * [`Edit`]: one change (keyspaces created or dropped, tables added or removed, counters
//!   advanced) and its encoding (`edit.rs`).
//! * [`Version`]: an immutable snapshot of the table set, the result of applying edits in
//!   order to [`Version::empty`], with the lookups the read path and compaction need
//!   (`version.rs`).
//! * [`Manifest`]: the append-only `MANIFEST-<id>` file of edits, its rotation, and
//!   recovery ([`Manifest::recover`]) (`manifest.rs`); the `CURRENT` file that names the
//!   live manifest (`current.rs`).
//!
//! It does not own the current version pointer, the choice of what to flush or compact,
//! or deleting obsolete files: the `Db` does those. The `Db`'s protocol for one change:
//! build the [`Edit`], compute `version.apply(&edit, &manifest.path(), manifest.len())`
//! (which validates it), [`Manifest::append`] the edit (durable when it returns `Ok`), then
//! install the new version. Past a size limit the `Db` rotates: [`Manifest::create`] with
//! a fresh file id and the current version.
//!
//! Invariants:
//! 1. Every keyspace has [`NUM_LEVELS`] levels. L0 tables may overlap and are ordered
//!    newest first (by `max_seqno`, then id, both descending); the tables of each level
//!    L1.. are sorted by `smallest` and their user-key ranges do not overlap.
//! 2. A table id appears at most once in a version, across all keyspaces and levels.
//! 3. The counters (`next_file_id`, `wal_min_id`, `flushed_seqno`, `next_keyspace_id`)
//!    never go backwards; every table id is below `next_file_id`, every keyspace id below
//!    `next_keyspace_id`, and `wal_min_id <= next_file_id`. A file id taken from
//!    `next_file_id` therefore never names a live file.
//! 4. Recovery reads; it never writes. The `Db` never appends to a recovered manifest: it
//!    starts a new one, so a torn tail is never followed by new records.
//!
//! Thread-safety: a [`Version`] is immutable once built and is shared through `Arc` by
//! readers; a [`Manifest`] has one owner (`&mut self` to append), and the `Db` serializes
//! changes to the version.

mod current;
mod edit;
mod manifest;
#[allow(clippy::module_inception)]
// `version::version` holds the `Version` type, as STYLE.md lays out
mod version;
#[cfg(test)]
pub(crate) mod workload;

pub(crate) use current::{decode_current, encode_current, MAX_CURRENT_LEN};
pub(crate) use edit::{
    check_keyspace_name, Edit, StoreOptions, MAX_KEYSPACE_NAME_LEN, MAX_MERGE_OPERATOR_NAME_LEN,
};
pub(crate) use manifest::{
    decode_image, encode_file_header, encode_record, Manifest, MAX_RECORD_LEN,
};

pub(crate) use version::{KeyspaceTables, TablePos, Version};

/// Levels per keyspace: L0 (overlapping tables, straight from flushes) and L1..L6.
pub(crate) const NUM_LEVELS: usize = 7;
