//! Reclaiming expired data without writes: [`pick_expired`] chooses a compaction for a
//! table whose earliest expiry (table properties, `table/FORMAT.md` §4.5) has passed, so
//! its expired entries become tombstones (or vanish at the bottom) even when nothing else
//! would compact it.
//!
//! The choice: a level-0 table goes down with the rest of level 0, as any level-0
//! compaction; a table of level 1 or deeper is rewritten into its own level
//! (`Choice::in_place`), which touches no other table. Compaction rewrites every expired
//! entry, so the output's earliest expiry is in the future and the same table is not
//! picked again.

use std::sync::Arc;

use super::{choose, nothing_below, range_of, Choice};
use crate::key::KeyspaceId;
use crate::table::TableMeta;
use crate::version::Version;

/// A compaction reclaiming expired entries in a keyspace not in `busy`, if some table's
/// earliest expiry is at or before `now_ms`. `earliest` gives a table's earliest expiry
/// (`None` if it has no expiring entry or is not known yet).
pub(crate) fn pick_expired(
    version: &Version,
    busy: &[KeyspaceId],
    now_ms: u64,
    mut earliest: impl FnMut(&TableMeta) -> Option<u64>,
) -> Option<Choice> {
    for (id, ks) in version.keyspaces() {
        if busy.contains(&id) {
            continue;
        }
        for (level, files) in ks.levels.iter().enumerate() {
            let Some(table) = files
                .iter()
                .find(|t| earliest(t).is_some_and(|at| at <= now_ms))
            else {
                continue;
            };
            if level == 0 {
                // Rewritten, never moved: the point is to drop the expired entries.
                return choose(id, ks, 0, u64::MAX);
            }
            let (lo, hi) = range_of(std::iter::once(table))?;
            let bottommost = nothing_below(ks, level, &lo, &hi);
            return Some(Choice {
                keyspace: id,
                level,
                inputs: vec![Arc::clone(table)],
                overlaps: Vec::new(),
                bottommost,
                trivial_move: false,
                in_place: true,
                relocate: Vec::new(),
            });
        }
    }
    None
}
