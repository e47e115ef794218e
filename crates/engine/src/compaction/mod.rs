//! Leveled compaction policy: [`pick`] chooses what to merge ([`Choice`]) and [`stream`]
//! decides which versions of each key survive. This module reads versions and writes
//! nothing; the store executes a choice (`db/compact.rs`).
//!
//! Shape of a keyspace's tree: level 0 holds flushed tables (overlapping, newest first);
//! levels 1–6 each hold sorted, non-overlapping tables, each level about
//! `level_size_multiplier` times larger than the one above. Compaction keeps level 0
//! below `l0_compaction_trigger` tables and every deeper level below its target size by
//! merging tables into the level below. When no level is over its trigger, a compaction
//! whose tombstones would free a large share of what it rewrites runs instead
//! (`tombstones.rs`), so deleted data is reclaimed without waiting for more writes. Once
//! writes pause, the store also merges a level 0 that is large next to the level-1 tables
//! it overlaps (`idle.rs`), so replaced versions are dropped and reads meet one sorted run.
//!
//! Invariants:
//! 1. A choice's inputs are all of level 0 (for a level-0 compaction) or one table of
//!    level n, plus every table of level n+1 whose user-key range overlaps them; so the
//!    output replaces them without breaking level n+1's non-overlap. The one exception is
//!    an in-place rewrite of one table of level n >= 1 into level n, which reclaims
//!    expired entries (`expiry.rs`) or moves separated values out of blob files picked
//!    by value-log GC (`relocate.rs`); its output covers a subset of the input's range.
//! 2. Output tables split only between different user keys, so all versions of a key live
//!    in one table of a level (reads and the level cursor rely on it).
//! 3. At most one compaction per keyspace runs at a time (the scheduler's rule).

mod expiry;
mod idle;
mod relocate;
pub(crate) mod stream;
mod tombstones;

use std::sync::Arc;

pub(crate) use expiry::pick_expired;
pub(crate) use idle::pick_idle;
pub(crate) use relocate::pick_relocation;
pub(crate) use tombstones::pick_tombstones;

use crate::key::{split_encoded, KeyspaceId};
use crate::options::Options;
use crate::table::TableMeta;
use crate::version::{KeyspaceTables, Version, NUM_LEVELS};

/// One compaction to run.
#[derive(Debug, Clone)]
pub(crate) struct Choice {
    pub(crate) keyspace: KeyspaceId,
    /// The level the inputs come from.
    pub(crate) level: usize,
    /// Tables of `level`.
    pub(crate) inputs: Vec<Arc<TableMeta>>,
    /// Tables of `level + 1` overlapping the inputs.
    pub(crate) overlaps: Vec<Arc<TableMeta>>,
    /// No deeper level holds any key of the inputs' range: tombstones may be dropped.
    pub(crate) bottommost: bool,
    /// The inputs can move down unchanged: they overlap neither each other nor anything in
    /// the level below (and no tombstone among them could be dropped at the bottom).
    pub(crate) trivial_move: bool,
    /// The inputs (one table of level 1 or deeper, no overlaps) are rewritten into their
    /// own level, to drop expired entries (see `expiry.rs`).
    pub(crate) in_place: bool,
    /// Blob files whose values the compaction moves to a new blob file (value-log GC,
    /// `relocate.rs`); empty for an ordinary compaction.
    pub(crate) relocate: Vec<crate::files::BlobId>,
}

impl Choice {
    /// The level the outputs go to.
    pub(crate) fn output_level(&self) -> usize {
        if self.in_place {
            self.level
        } else {
            self.level + 1
        }
    }
}

/// Target size of `level` (>= 1).
pub(crate) fn level_target(options: &Options, level: usize) -> u64 {
    let mut target = options.level1_size;
    for _ in 1..level {
        target = target.saturating_mul(options.level_size_multiplier);
    }
    target
}

fn user_key(encoded: &[u8]) -> &[u8] {
    split_encoded(encoded).map_or(encoded, |(u, _)| u)
}

/// The user-key range covered by `tables`.
fn range_of<'a>(tables: impl Iterator<Item = &'a Arc<TableMeta>>) -> Option<(Vec<u8>, Vec<u8>)> {
    let mut range: Option<(Vec<u8>, Vec<u8>)> = None;
    for t in tables {
        let (lo, hi) = (user_key(&t.smallest), user_key(&t.largest));
        range = Some(match range {
            None => (lo.to_vec(), hi.to_vec()),
            Some((a, b)) => (
                if lo < a.as_slice() { lo.to_vec() } else { a },
                if hi > b.as_slice() { hi.to_vec() } else { b },
            ),
        });
    }
    range
}

/// True if no two of `tables` share a user key (so they can sit side by side in a level
/// below 0). Level-0 tables from sequential writes usually are.
fn disjoint(tables: &[Arc<TableMeta>]) -> bool {
    let mut sorted: Vec<&Arc<TableMeta>> = tables.iter().collect();
    sorted.sort_by(|a, b| user_key(&a.smallest).cmp(user_key(&b.smallest)));
    sorted
        .windows(2)
        .all(|w| matches!(w, [a, b] if user_key(&a.largest) < user_key(&b.smallest)))
}

/// A step of a full compaction (`Db::compact`): in the first keyspace not in `busy` whose
/// data spans more than one level, a compaction (never a move) of its shallowest non-empty
/// level into the next; `None` once every keyspace's data is in a single level of 1 or
/// deeper. Repeated until `None`, it rewrites every table at least once, so every version
/// no snapshot needs, every tombstone at the bottom and every expired entry is dropped.
pub(crate) fn pick_full(version: &Version, busy: &[KeyspaceId]) -> Option<Choice> {
    for (id, ks) in version.keyspaces() {
        if busy.contains(&id) {
            continue;
        }
        let non_empty: Vec<usize> = (0..ks.levels.len())
            .filter(|&l| ks.levels.get(l).is_some_and(|t| !t.is_empty()))
            .collect();
        let (Some(&first), Some(&last)) = (non_empty.first(), non_empty.last()) else {
            continue;
        };
        if first == last && first > 0 {
            continue;
        }
        if first + 1 >= NUM_LEVELS {
            continue;
        }
        return choose(id, ks, first, u64::MAX);
    }
    None
}

/// The tables of `below` (a sorted, disjoint level) right before and right after the key
/// range `lo..=hi` that no table of `below` overlaps, if they are smaller than
/// `min_move_bytes`: merged with the inputs, they grow instead of staying tiny (sequential
/// writes from short-lived processes would otherwise leave one small table per flush).
/// No other table of `below` lies between them and the range, so the merged range
/// overlaps nothing else in `below`.
fn small_neighbours(
    below: &[Arc<TableMeta>],
    lo: &[u8],
    hi: &[u8],
    min_move_bytes: u64,
) -> Vec<Arc<TableMeta>> {
    let at = below.partition_point(|t| user_key(&t.largest) < lo);
    let before = at.checked_sub(1).and_then(|i| below.get(i));
    let after = below.get(at).filter(|t| user_key(&t.smallest) > hi);
    before
        .into_iter()
        .chain(after)
        .filter(|t| t.file_size < min_move_bytes)
        .cloned()
        .collect()
}

/// True if no level deeper than `output` holds a table overlapping user keys `lo..=hi`:
/// a compaction writing `lo..=hi` into `output` is the bottom for those keys, so it may
/// drop tombstones no snapshot needs.
fn nothing_below(ks: &KeyspaceTables, output: usize, lo: &[u8], hi: &[u8]) -> bool {
    (output + 1..NUM_LEVELS).all(|deeper| ks.overlapping(deeper, Some(lo), Some(hi)).is_empty())
}

/// How urgently each level of `ks` needs compaction (>= 1.0 means it does), by level.
fn scores(ks: &KeyspaceTables, options: &Options) -> Vec<(usize, f64)> {
    let mut out = Vec::new();
    let l0 = ks.levels.first().map_or(0, Vec::len);
    out.push((0, l0 as f64 / options.l0_compaction_trigger as f64));
    for level in 1..NUM_LEVELS - 1 {
        let size = ks.level_size(level);
        out.push((level, size as f64 / level_target(options, level) as f64));
    }
    out
}

/// The most urgent compaction among keyspaces not in `busy`, if any level needs one;
/// otherwise a compaction reclaiming deleted data (`tombstones.rs`), if one is worth it.
pub(crate) fn pick(version: &Version, options: &Options, busy: &[KeyspaceId]) -> Option<Choice> {
    pick_by_size(version, options, busy).or_else(|| pick_tombstones(version, options, busy))
}

/// The most urgent compaction by level size (level 0: table count), if any level needs one.
fn pick_by_size(version: &Version, options: &Options, busy: &[KeyspaceId]) -> Option<Choice> {
    let mut best: Option<(f64, KeyspaceId, usize)> = None;
    for (id, ks) in version.keyspaces() {
        if busy.contains(&id) {
            continue;
        }
        for (level, score) in scores(ks, options) {
            if score >= 1.0 && best.is_none_or(|(s, _, _)| score > s) {
                best = Some((score, id, level));
            }
        }
    }
    let (_, id, level) = best?;
    let ks = version.keyspace(id)?;
    choose(id, ks, level, options.table_size / 4)
}

/// The compaction of `level` of `ks`; input tables move down without a rewrite only if
/// each is at least `min_move_bytes`.
fn choose(
    id: KeyspaceId,
    ks: &KeyspaceTables,
    level: usize,
    min_move_bytes: u64,
) -> Option<Choice> {
    let files = ks.levels.get(level)?;
    let inputs: Vec<Arc<TableMeta>> = if level == 0 {
        files.clone()
    } else {
        // The table whose merge rewrites the fewest bytes of the next level per byte
        // moved down.
        let mut best: Option<(f64, &Arc<TableMeta>)> = None;
        for t in files {
            let below = ks.overlapping(
                level + 1,
                Some(user_key(&t.smallest)),
                Some(user_key(&t.largest)),
            );
            let bytes: u64 = below.iter().map(|b| b.file_size).sum();
            let ratio = bytes as f64 / t.file_size.max(1) as f64;
            if best.is_none_or(|(r, _)| ratio < r) {
                best = Some((ratio, t));
            }
        }
        vec![Arc::clone(best?.1)]
    };
    let (lo, hi) = range_of(inputs.iter())?;
    let mut overlaps = ks.overlapping(level + 1, Some(&lo), Some(&hi));
    if overlaps.is_empty() {
        overlaps = ks.levels.get(level + 1).map_or_else(Vec::new, |below| {
            small_neighbours(below, &lo, &hi, min_move_bytes)
        });
    }
    let (lo, hi) = range_of(inputs.iter().chain(overlaps.iter()))?;
    let bottommost = nothing_below(ks, level + 1, &lo, &hi);
    // Small tables (the flush of a short-lived process, a trickle of writes) are merged
    // rather than moved, so the levels below do not fill up with tiny files.
    let trivial_move = overlaps.is_empty()
        && disjoint(&inputs)
        && inputs.iter().all(|t| t.file_size >= min_move_bytes)
        && inputs
            .iter()
            .all(|t| (t.tombstones == 0 && !t.has_range_tombstones()) || !bottommost);
    Some(Choice {
        keyspace: id,
        level,
        inputs,
        overlaps,
        bottommost,
        trivial_move,
        in_place: false,
        relocate: Vec::new(),
    })
}
