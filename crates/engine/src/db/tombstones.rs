//! The range tombstones a reader applies, gathered per super version: [`Cache`] holds,
//! per keyspace, the fragmented tombstones of the sealed memtables and of the tables of
//! the super version (all immutable, so built once, on the first read of the keyspace);
//! [`for_read`] adds the active memtable's, which grow while the super version lives.
//!
//! Cost: a store without range tombstones pays one flag test per read (`any` is computed
//! when the super version is installed). With some, the first read of a keyspace after a
//! flush or compaction opens the tables whose boundary marks a range-tombstone block
//! (`TableMeta::has_range_tombstones`) and fragments their tombstones
//! (`rangedel::Fragments`); later reads reuse the result. The active memtable's
//! tombstones are fragmented per read, which is cheap because they are few.
//!
//! A reader at seqno `r` sees every tombstone with seqno `<= r`: the write path inserts a
//! tombstone into the memtable before publishing its seqno, and the super version holds
//! the memtables and tables of one moment, so no tombstone a reader needs is missing.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::RwLock;

use super::read::SuperVersion;
use super::Inner;
use crate::error::Result;
use crate::key::KeyspaceId;
use crate::memtable::Memtable;
use crate::rangedel::{Fragments, RangeTombstone, ReadTombstones};
use crate::version::Version;

/// Per-keyspace fragments of the immutable sources of one super version.
#[derive(Debug, Default)]
pub(crate) struct Cache {
    /// False if no sealed memtable and no table holds a range tombstone.
    any: bool,
    built: RwLock<HashMap<KeyspaceId, Arc<Fragments>>>,
}

impl Cache {
    /// The cache for a super version of `imm` and `version`.
    pub(crate) fn new(imm: &[Arc<Memtable>], version: &Version) -> Cache {
        let any = imm.iter().any(|m| m.has_range_tombstones())
            || version
                .keyspaces()
                .any(|(_, ks)| ks.levels.iter().flatten().any(|t| t.has_range_tombstones()));
        Cache {
            any,
            built: RwLock::new(HashMap::new()),
        }
    }
}

/// The tombstones of `keyspace`'s sealed memtables and tables in `sv`, fragmented.
fn immutable(inner: &Inner, sv: &SuperVersion, keyspace: KeyspaceId) -> Result<Arc<Fragments>> {
    if let Some(f) = sv.range_dels.built.read().get(&keyspace) {
        return Ok(Arc::clone(f));
    }
    let mut all: Vec<RangeTombstone> = Vec::new();
    for m in &sv.imm {
        all.extend(m.range_tombstones(keyspace));
    }
    if let Some(tables) = sv.version.keyspace(keyspace) {
        for meta in tables.levels.iter().flatten() {
            if meta.has_range_tombstones() {
                let reader = inner.tables.get(inner, meta.id)?;
                all.extend_from_slice(reader.range_tombstones());
            }
        }
    }
    let built = Arc::new(Fragments::build(&all));
    sv.range_dels
        .built
        .write()
        .entry(keyspace)
        .or_insert_with(|| Arc::clone(&built));
    Ok(built)
}

/// Every range tombstone a reader of `keyspace` in `sv` must apply (it filters by its own
/// seqno).
///
/// # Errors
/// Opening a table that holds tombstones: `Corruption`, `Io`.
pub(crate) fn for_read(
    inner: &Inner,
    sv: &SuperVersion,
    keyspace: KeyspaceId,
) -> Result<ReadTombstones> {
    let mut sets = Vec::new();
    if sv.range_dels.any {
        sets.push(immutable(inner, sv, keyspace)?);
    }
    if sv.mem.has_range_tombstones() {
        let mem = sv.mem.range_tombstones(keyspace);
        sets.push(Arc::new(Fragments::build(&mem)));
    }
    Ok(ReadTombstones::new(sets))
}
