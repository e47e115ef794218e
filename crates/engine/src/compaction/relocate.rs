//! Value-log GC through compaction: [`pick_relocation`] chooses a compaction of a table
//! that references blob files picked for rewriting (`vlog/gc.rs`), with
//! `Choice::relocate` naming them; `db/compact.rs` then copies each value the output keeps out of
//! those files into a new blob file and writes the new handle (RocksDB's integrated
//! BlobDB approach). The compaction decides which versions survive as any other would,
//! so snapshots need no lookups; once no table references a file, GC removes it.
//!
//! The choice: a level-0 table goes down with the rest of level 0; a table of level 1 or
//! deeper is rewritten into its own level (`Choice::in_place`), touching no other table.

use std::sync::Arc;

use super::{choose, nothing_below, range_of, Choice};
use crate::files::BlobId;
use crate::key::KeyspaceId;
use crate::table::TableMeta;
use crate::version::Version;

/// A compaction of the first table (in a keyspace not in `busy`) for which `references`
/// says it points into one of `files`, moving those values; `None` if there is none.
pub(crate) fn pick_relocation(
    version: &Version,
    busy: &[KeyspaceId],
    files: &[BlobId],
    mut references: impl FnMut(&TableMeta) -> bool,
) -> Option<Choice> {
    for (id, ks) in version.keyspaces() {
        if busy.contains(&id) {
            continue;
        }
        for (level, tables) in ks.levels.iter().enumerate() {
            let Some(table) = tables.iter().find(|t| references(t)) else {
                continue;
            };
            let mut choice = if level == 0 {
                choose(id, ks, 0, u64::MAX)?
            } else {
                let (lo, hi) = range_of(std::iter::once(table))?;
                let bottommost = nothing_below(ks, level, &lo, &hi);
                Choice {
                    keyspace: id,
                    level,
                    inputs: vec![Arc::clone(table)],
                    overlaps: Vec::new(),
                    bottommost,
                    trivial_move: false,
                    in_place: true,
                    relocate: Vec::new(),
                }
            };
            // A moved table would keep its handles: the values must be copied.
            choice.trivial_move = false;
            choice.relocate = files.to_vec();
            return Some(choice);
        }
    }
    None
}
