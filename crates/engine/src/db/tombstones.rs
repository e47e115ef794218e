//! The range tombstones a reader applies, cached per super version: [`Cache`] holds, per
//! keyspace, the fragmented tombstones of the sealed memtables and of the tables of one
//! super version (all immutable, so built once, on the first read of the keyspace); the
//! active memtable's, which grow while the super version lives, are added per read
//! (`SuperVersion::range_tombstones`).
//!
//! Cost: a store without range tombstones pays one flag test per read (`any` is computed
//! when the super version is built). With some, the first read of a keyspace after a
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

use crate::error::Result;
use crate::key::KeyspaceId;
use crate::memtable::Memtable;
use crate::rangedel::{Fragments, RangeTombstone};
use crate::reach::InMemory;
use crate::version::Version;

/// Per-keyspace fragments of the immutable sources of one super version.
#[derive(Debug, Default)]
pub(crate) struct Cache {
    /// False if no sealed memtable and no table holds a range tombstone.
    any: bool,
    built: RwLock<HashMap<KeyspaceId, Arc<Fragments>>>,
}

impl Cache {
    /// The cache for a super version of the sealed memtables `imm` and `version`.
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

    /// True if some immutable source holds a range tombstone.
    pub(crate) fn any(&self) -> bool {
        self.any
    }

    /// The fragments of `keyspace`, from `gather` (its immutable sources' tombstones) on
    /// first use. A `gather` that gives [`InMemory::NeedsIo`] (a read that may not open
    /// the tables holding them, `crate::reach`) leaves nothing built.
    ///
    /// # Errors
    /// `gather`'s.
    pub(crate) fn get_or_build(
        &self,
        keyspace: KeyspaceId,
        gather: impl FnOnce() -> Result<InMemory<Vec<RangeTombstone>>>,
    ) -> Result<InMemory<Arc<Fragments>>> {
        if let Some(f) = self.built.read().get(&keyspace) {
            return Ok(InMemory::Answer(Arc::clone(f)));
        }
        let InMemory::Answer(gathered) = gather()? else {
            return Ok(InMemory::NeedsIo);
        };
        let built = Arc::new(Fragments::build(&gathered));
        Ok(InMemory::Answer(Arc::clone(
            self.built.write().entry(keyspace).or_insert(built),
        )))
    }
}
