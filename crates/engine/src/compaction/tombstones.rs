//! Reclaiming deleted data without waiting for a size trigger: [`pick_tombstones`]
//! chooses a compaction whose tombstones are estimated to free a large share of what it
//! rewrites (RocksDB's deletion-triggered compaction and pebble's tombstone-density
//! compaction answer the same need).
//!
//! Without it, deletes only free space when their level reaches its size or count
//! trigger: a store that deletes most of its keys keeps the tombstones in level 0 (fewer
//! than `l0_compaction_trigger` tables) above the data they delete in a level far below its
//! target size, and takes more space after the deletes than before.
//!
//! The estimate, from table metadata only (`TableMeta::entries`, `TableMeta::tombstones`,
//! recorded by the table writer): a compaction over tables holding `E` entries, `T` of them
//! tombstones, frees about `2T` entries (each tombstone and the version it deletes; less
//! if it deletes nothing or must be kept, more if it deletes several versions). It is
//! chosen when `2T >= E * Options::tombstone_compaction_percent / 100`, so the bytes
//! rewritten per byte freed stay bounded by the option and a trickle of deletes over a
//! large level never triggers it.
//!
//! Candidates: for each table holding a tombstone, the compaction that would carry it
//! down one level — all of level 0 with the level-1 tables they overlap (a level-0
//! compaction, as `pick` would run), or for a table of level n >= 1 the table with the
//! tables of level n+1 it overlaps, only if there are some (with none, a rewrite could
//! only move the tombstones down or keep them, which frees nothing). Every choice moves
//! its tombstones at least one level down, so repeated picks end at the deepest level
//! holding their keys, where they are dropped unless a snapshot still needs them; a
//! tombstone kept for a snapshot at that level is not picked again (it overlaps nothing
//! below).

use std::sync::Arc;

use super::{choose, nothing_below, range_of, user_key, Choice};
use crate::key::KeyspaceId;
use crate::options::Options;
use crate::table::TableMeta;
use crate::version::{KeyspaceTables, Version, NUM_LEVELS};

/// True if tables holding `entries` entries, `tombstones` of them tombstones, are worth
/// compacting for their tombstones at `percent` (see the module documentation).
fn dense_enough(tombstones: u64, entries: u64, percent: u8) -> bool {
    percent > 0
        && tombstones > 0
        && u128::from(tombstones) * 2 * 100 >= u128::from(entries) * u128::from(percent)
}

fn counts<'a>(tables: impl Iterator<Item = &'a Arc<TableMeta>>) -> (u64, u64) {
    tables.fold((0, 0), |(t, e), m| {
        (t.saturating_add(m.tombstones), e.saturating_add(m.entries))
    })
}

/// The compaction that frees the largest estimated share of what it rewrites among the
/// keyspaces not in `busy`, if one reaches `Options::tombstone_compaction_percent`.
pub(crate) fn pick_tombstones(
    version: &Version,
    options: &Options,
    busy: &[KeyspaceId],
) -> Option<Choice> {
    let percent = options.tombstone_compaction_percent;
    if percent == 0 {
        return None;
    }
    let mut best: Option<(f64, Choice)> = None;
    for (id, ks) in version.keyspaces() {
        if busy.contains(&id) {
            continue;
        }
        for choice in candidates(id, ks, options) {
            let (tombstones, entries) = counts(choice.inputs.iter().chain(&choice.overlaps));
            if !dense_enough(tombstones, entries, percent) {
                continue;
            }
            let share = tombstones as f64 / entries.max(1) as f64;
            if best.as_ref().is_none_or(|(s, _)| share > *s) {
                best = Some((share, choice));
            }
        }
    }
    best.map(|(_, choice)| choice)
}

/// The compactions that would carry some tombstone of `ks` down a level.
fn candidates(id: KeyspaceId, ks: &KeyspaceTables, options: &Options) -> Vec<Choice> {
    let mut out = Vec::new();
    let min_move_bytes = options.table_size / 4;
    if ks
        .levels
        .first()
        .is_some_and(|l0| l0.iter().any(|t| t.tombstones > 0))
    {
        if let Some(mut choice) = choose(id, ks, 0, min_move_bytes) {
            // A move frees nothing; a rewrite at least drops what the tombstones delete.
            choice.trivial_move = false;
            out.push(choice);
        }
    }
    for level in 1..NUM_LEVELS - 1 {
        let Some(tables) = ks.levels.get(level) else {
            continue;
        };
        for t in tables.iter().filter(|t| t.tombstones > 0) {
            let overlaps = ks.overlapping(
                level + 1,
                Some(user_key(&t.smallest)),
                Some(user_key(&t.largest)),
            );
            if overlaps.is_empty() {
                continue;
            }
            let Some((lo, hi)) = range_of(std::iter::once(t).chain(&overlaps)) else {
                continue;
            };
            let bottommost = nothing_below(ks, level + 1, &lo, &hi);
            out.push(Choice {
                keyspace: id,
                level,
                inputs: vec![Arc::clone(t)],
                overlaps,
                bottommost,
                trivial_move: false,
                in_place: false,
                relocate: Vec::new(),
            });
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::files::TableId;
    use crate::version::workload::table;
    use crate::version::Edit;

    /// A table of user keys `lo..=hi` holding `tombstones` tombstones.
    fn meta(id: u64, lo: u64, hi: u64, tombstones: u64) -> TableMeta {
        let mut t = table(id, lo, hi, id * 10, id * 10 + 5);
        t.tombstones = tombstones;
        t
    }

    /// A version with keyspace 0 holding `tables` (level, table).
    fn version(tables: Vec<(usize, TableMeta)>) -> Version {
        let e = Edit {
            created_keyspaces: vec![(KeyspaceId(0), "default".into())],
            next_keyspace_id: Some(1),
            next_file_id: Some(1000),
            added_tables: tables
                .into_iter()
                .map(|(l, t)| (KeyspaceId(0), l, t))
                .collect(),
            ..Edit::default()
        };
        Version::empty().apply(&e, Path::new("test"), 0).unwrap()
    }

    fn ids(tables: &[Arc<TableMeta>]) -> Vec<TableId> {
        tables.iter().map(|t| t.id).collect()
    }

    #[test]
    fn a_tombstone_dense_level0_table_is_compacted_with_what_it_covers() {
        // Level 0 holds one table of 600 tombstones over keys 0..=999; level 1 holds the
        // 1000 keys. 2 * 600 >= 50% of 1600 entries.
        let v = version(vec![(0, meta(2, 0, 599, 600)), (1, meta(1, 0, 999, 0))]);
        let options = Options::default();
        // No level is over its trigger: the size/count policy alone leaves it.
        assert!(
            super::super::pick(&v, &Options::default().tombstone_compaction_percent(0), &[])
                .is_none()
        );
        let choice = pick_tombstones(&v, &options, &[]).unwrap();
        assert_eq!(choice.level, 0);
        assert_eq!(ids(&choice.inputs), vec![TableId(2)]);
        assert_eq!(ids(&choice.overlaps), vec![TableId(1)]);
        assert!(choice.bottommost);
        assert!(!choice.trivial_move && !choice.in_place);
        // `pick` falls back to it when no level is over its trigger.
        let picked = super::super::pick(&v, &options, &[]).unwrap();
        assert_eq!(ids(&picked.inputs), vec![TableId(2)]);
        // A busy keyspace is left alone.
        assert!(pick_tombstones(&v, &options, &[KeyspaceId(0)]).is_none());
    }

    #[test]
    fn a_clean_level_yields_no_choice() {
        let v = version(vec![(0, meta(2, 0, 599, 0)), (1, meta(1, 0, 999, 0))]);
        assert!(pick_tombstones(&v, &Options::default(), &[]).is_none());
        assert!(super::super::pick(&v, &Options::default(), &[]).is_none());
    }

    #[test]
    fn a_trickle_of_tombstones_over_a_large_level_yields_no_choice() {
        // 10 tombstones against 100,000 entries below: far under 50%.
        let v = version(vec![(0, meta(2, 5, 14, 10)), (1, meta(1, 0, 99_999, 0))]);
        assert!(pick_tombstones(&v, &Options::default(), &[]).is_none());
        // The same at a threshold of 0 (off) and at a low one that it reaches.
        let v = version(vec![(0, meta(2, 0, 99, 100)), (1, meta(1, 0, 999, 0))]);
        assert!(
            pick_tombstones(&v, &Options::default().tombstone_compaction_percent(0), &[]).is_none()
        );
        assert!(pick_tombstones(&v, &Options::default(), &[]).is_none());
        assert!(pick_tombstones(
            &v,
            &Options::default().tombstone_compaction_percent(10),
            &[]
        )
        .is_some());
    }

    #[test]
    fn a_dense_deeper_table_goes_down_with_its_overlaps_only_if_it_has_some() {
        // Level 1: a dense table over keys 0..=99 and a clean one over 200..=299; level 2
        // holds keys 0..=149 and 1000..=1999.
        let dense = meta(3, 0, 99, 90);
        let v = version(vec![
            (1, dense.clone()),
            (1, meta(4, 200, 299, 0)),
            (2, meta(1, 0, 149, 0)),
            (2, meta(2, 1000, 1999, 0)),
        ]);
        let choice = pick_tombstones(&v, &Options::default(), &[]).unwrap();
        assert_eq!(choice.level, 1);
        assert_eq!(choice.output_level(), 2);
        assert_eq!(ids(&choice.inputs), vec![TableId(3)]);
        assert_eq!(ids(&choice.overlaps), vec![TableId(1)]);
        assert!(choice.bottommost);
        assert!(!choice.trivial_move);
        // Alone at the deepest level holding its keys (nothing below to delete), it is
        // not picked: a rewrite would free nothing a compaction into it did not.
        let v = version(vec![
            (1, meta(4, 200, 299, 0)),
            (2, dense),
            (2, meta(2, 1000, 1999, 0)),
        ]);
        assert!(pick_tombstones(&v, &Options::default(), &[]).is_none());
    }

    #[test]
    fn the_densest_candidate_wins() {
        let v = version(vec![
            (1, meta(3, 0, 99, 60)),
            (1, meta(4, 200, 299, 100)),
            (2, meta(1, 0, 99, 0)),
            (2, meta(2, 200, 299, 0)),
        ]);
        let choice = pick_tombstones(&v, &Options::default(), &[]).unwrap();
        assert_eq!(ids(&choice.inputs), vec![TableId(4)]);
    }
}
