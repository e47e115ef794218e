//! [`Snapshot`]: a consistent view of every keyspace of a store at one seqno.
//!
//! Invariants:
//! 1. A snapshot's seqno is registered in its store's registry for its whole life
//!    (`crate::snapshot`), so the store's own compactions keep every version it can see.
//! 2. A follower's snapshot also holds the super version it was taken in: the writer's
//!    compactions know nothing of a follower's snapshots, so the follower reads a snapshot
//!    through the tables and memtables of its moment, which it keeps open, and never
//!    through a later view from which the versions it needs may be gone.

use std::sync::Arc;

use super::super_version::{ReadAt, SuperVersion};
use crate::key::SeqNo;
use crate::snapshot::Pin;

/// A consistent, read-only view of the whole store (every keyspace) at one point in time.
/// Cheap to take and to hold; while it lives, compaction keeps the versions it can see.
/// Long scans through a snapshot never block writers. A snapshot of a follower
/// ([`crate::Db::open_follower`]) stays at its point across refreshes.
#[derive(Clone)]
pub struct Snapshot {
    pub(crate) pin: Arc<Pin>,
    /// For a follower: the view the snapshot was taken in (invariant 2).
    pub(crate) view: Option<Arc<SuperVersion>>,
}

impl std::fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Snapshot")
            .field("seqno", &self.seqno())
            .field("pins_view", &self.view.is_some())
            .finish()
    }
}

impl Snapshot {
    /// The seqno the snapshot reads at: it sees every write numbered up to it.
    pub fn seqno(&self) -> u64 {
        self.pin.seqno().0
    }

    /// Where reads through the snapshot look.
    pub(crate) fn read_at(&self) -> ReadAt {
        ReadAt {
            seqno: SeqNo(self.seqno()),
            view: self.view.clone(),
        }
    }
}
