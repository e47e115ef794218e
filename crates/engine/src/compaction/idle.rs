//! Settling level 0 once writes pause: [`pick_idle`] chooses the compaction of a
//! keyspace's level 0 into level 1 when level 0 is large next to the level-1 tables it
//! overlaps, even though level 0 has fewer tables than `l0_compaction_trigger`.
//!
//! Why: level 0 is compacted when it reaches `l0_compaction_trigger` tables, so a store
//! whose writes stop with fewer level-0 tables keeps them above level 1 for as long as it
//! is idle. When those writes overwrote keys, level 1 still holds the versions they
//! replaced, and the store takes up to twice the space of its live data (a store whose
//! keys were all overwritten once holds both copies); every point read and every scan also
//! merges the level-0 tables. Merging level 0 into level 1 then drops the replaced
//! versions and leaves one sorted run to read.
//!
//! When: the store runs it only once writes have paused (no memtable sealed for
//! `db::background::IDLE_FLUSH_AFTER`, nothing left to flush) and no other compaction is
//! due, so it never competes with a write load. It is chosen only if the level-0 bytes
//! are at least `Options::idle_compaction_percent` of the level-1 bytes they overlap, which
//! bounds what it rewrites per level-0 byte (at the default 25: at most four level-1 bytes
//! plus the level-0 byte itself, about what a compaction at the count trigger costs). So a
//! trickle of writes between pauses, whose small level-0 tables overlap a large level 1,
//! never makes it rewrite level 1 over and over: those tables wait for the count trigger.
//!
//! It adds no work in the end, only moves it earlier: every level-0 table is merged into
//! level 1 at some point. After it runs, level 0 is empty, so it is not chosen again until
//! new tables are flushed.

use super::{choose, range_of, Choice};
use crate::key::KeyspaceId;
use crate::options::Options;
use crate::version::{KeyspaceTables, Version};

/// Level-0 bytes of `ks` and the bytes of the level-1 tables they overlap.
fn level0_against_level1(ks: &KeyspaceTables) -> Option<(u64, u64)> {
    let level0 = ks.levels.first().filter(|l0| !l0.is_empty())?;
    let (lo, hi) = range_of(level0.iter())?;
    let l0_bytes: u64 = level0.iter().map(|t| t.file_size).sum();
    let l1_bytes: u64 = ks
        .overlapping(1, Some(&lo), Some(&hi))
        .iter()
        .map(|t| t.file_size)
        .sum();
    Some((l0_bytes, l1_bytes))
}

/// True if `l0_bytes` of level 0 are worth merging into `l1_bytes` at `percent`.
fn large_enough(l0_bytes: u64, l1_bytes: u64, percent: u8) -> bool {
    percent > 0 && u128::from(l0_bytes) * 100 >= u128::from(l1_bytes) * u128::from(percent)
}

/// The level-0 compaction of the keyspace (not in `busy`) whose level 0 is largest next
/// to the level-1 bytes it overlaps, if one reaches `Options::idle_compaction_percent`.
/// The caller runs it only while writes are paused (see the module documentation).
pub(crate) fn pick_idle(
    version: &Version,
    options: &Options,
    busy: &[KeyspaceId],
) -> Option<Choice> {
    let percent = options.idle_compaction_percent;
    if percent == 0 {
        return None;
    }
    let mut best: Option<(f64, KeyspaceId)> = None;
    for (id, ks) in version.keyspaces() {
        if busy.contains(&id) {
            continue;
        }
        let Some((l0_bytes, l1_bytes)) = level0_against_level1(ks) else {
            continue;
        };
        if !large_enough(l0_bytes, l1_bytes, percent) {
            continue;
        }
        let ratio = l0_bytes as f64 / l1_bytes.max(1) as f64;
        if best.is_none_or(|(r, _)| ratio > r) {
            best = Some((ratio, id));
        }
    }
    let (_, id) = best?;
    choose(id, version.keyspace(id)?, 0, options.table_size / 4)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]
mod tests {
    use std::path::Path;
    use std::sync::Arc;

    use super::*;
    use crate::files::TableId;
    use crate::table::TableMeta;
    use crate::version::workload::table;
    use crate::version::Edit;

    /// A table of user keys `lo..=hi` of `bytes` bytes, without tombstones.
    fn meta(id: u64, lo: u64, hi: u64, bytes: u64) -> TableMeta {
        let mut t = table(id, lo, hi, id * 10, id * 10 + 5);
        t.tombstones = 0;
        t.file_size = bytes;
        t
    }

    /// A version whose keyspaces 0 and 1 hold `tables` (keyspace, level, table).
    fn version(tables: Vec<(u32, usize, TableMeta)>) -> Version {
        let e = Edit {
            created_keyspaces: vec![
                (KeyspaceId(0), "default".into()),
                (KeyspaceId(1), "other".into()),
            ],
            next_keyspace_id: Some(2),
            next_file_id: Some(1000),
            added_tables: tables
                .into_iter()
                .map(|(k, l, t)| (KeyspaceId(k), l, t))
                .collect(),
            ..Edit::default()
        };
        Version::empty().apply(&e, Path::new("test"), 0).unwrap()
    }

    fn ids(tables: &[Arc<TableMeta>]) -> Vec<TableId> {
        tables.iter().map(|t| t.id).collect()
    }

    #[test]
    fn overwrites_in_level0_below_the_count_trigger_are_merged_into_level1() {
        // Two level-0 tables (the overwrites, 44 MB) over a level 1 of 49 MB: under the
        // count trigger of 4, so the size policy leaves them.
        let v = version(vec![
            (0, 0, meta(3, 0, 999, 22_000_000)),
            (0, 0, meta(4, 0, 999, 22_000_000)),
            (0, 1, meta(1, 0, 499, 24_000_000)),
            (0, 1, meta(2, 500, 999, 25_000_000)),
        ]);
        let options = Options::default();
        assert!(super::super::pick(&v, &options, &[]).is_none());
        let choice = pick_idle(&v, &options, &[]).unwrap();
        assert_eq!(choice.keyspace, KeyspaceId(0));
        assert_eq!(choice.level, 0);
        // All of level 0, newest first.
        assert_eq!(ids(&choice.inputs), vec![TableId(4), TableId(3)]);
        assert_eq!(ids(&choice.overlaps), vec![TableId(1), TableId(2)]);
        assert!(!choice.trivial_move && !choice.in_place);
        // A busy keyspace is left alone; 0 turns it off.
        assert!(pick_idle(&v, &options, &[KeyspaceId(0)]).is_none());
        assert!(pick_idle(&v, &options.clone().idle_compaction_percent(0), &[]).is_none());
    }

    #[test]
    fn a_small_level0_over_a_large_level1_waits_for_the_count_trigger() {
        // 1 MB of level 0 over the 100 MB of level 1 it overlaps: 1 % < 25 %.
        let v = version(vec![
            (0, 0, meta(3, 0, 999, 1_000_000)),
            (0, 1, meta(1, 0, 999, 100_000_000)),
        ]);
        assert!(pick_idle(&v, &Options::default(), &[]).is_none());
        // It is reached at a lower threshold, and the bound is inclusive.
        assert!(pick_idle(&v, &Options::default().idle_compaction_percent(1), &[]).is_some());
        // Only the level-1 tables level 0 overlaps count.
        let v = version(vec![
            (0, 0, meta(3, 0, 99, 1_000_000)),
            (0, 1, meta(1, 0, 99, 4_000_000)),
            (0, 1, meta(2, 100, 999, 96_000_000)),
        ]);
        let choice = pick_idle(&v, &Options::default(), &[]).unwrap();
        assert_eq!(ids(&choice.overlaps), vec![TableId(1)]);
    }

    #[test]
    fn an_empty_level0_yields_no_choice() {
        let v = version(vec![(0, 1, meta(1, 0, 999, 1_000_000))]);
        assert!(pick_idle(&v, &Options::default(), &[]).is_none());
    }

    #[test]
    fn the_keyspace_with_the_largest_level0_share_wins() {
        let v = version(vec![
            (0, 0, meta(3, 0, 999, 30)),
            (0, 1, meta(1, 0, 999, 100)),
            (1, 0, meta(4, 0, 999, 80)),
            (1, 1, meta(2, 0, 999, 100)),
        ]);
        let choice = pick_idle(&v, &Options::default(), &[]).unwrap();
        assert_eq!(choice.keyspace, KeyspaceId(1));
        assert_eq!(ids(&choice.inputs), vec![TableId(4)]);
        // With keyspace 1 busy, keyspace 0's 30 % still qualifies.
        let choice = pick_idle(&v, &Options::default(), &[KeyspaceId(1)]).unwrap();
        assert_eq!(choice.keyspace, KeyspaceId(0));
    }
}
