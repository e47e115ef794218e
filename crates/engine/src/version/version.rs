//! [`Version`]: an immutable view of which tables form the store, per keyspace and level,
//! plus the store-wide counters; built by applying [`Edit`]s in order to
//! [`Version::empty`].
//!
//! Sharing: a version is never changed after it is built. [`Version::apply`] returns a new
//! one and leaves the receiver alone, so readers hold an `Arc<Version>` for as long as they
//! need a consistent table set. Keyspaces are held behind `Arc`, so applying an edit copies
//! only the keyspaces it touches.
//!
//! Validation: edits come from disk, so [`Version::apply`] checks every rule of the module
//! invariants and reports a violation as corruption of the manifest at the offset the
//! caller names, never as a panic.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

use super::edit::{check_blob_file, check_table, keyspace_name_ok, Edit, StoreOptions};
use super::NUM_LEVELS;
use crate::error::{Error, FileKind, Reason, Result};
use crate::files::{BlobId, TableId};
use crate::key::{compare_encoded, user_key_of, KeyspaceId, SeqNo};
use crate::table::TableMeta;
use crate::vlog::BlobFileMeta;

/// Where a table sits in a keyspace's levels: `levels[level][index]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TablePos {
    pub(crate) level: usize,
    pub(crate) index: usize,
}

/// The tables of one keyspace, by level.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct KeyspaceTables {
    /// The keyspace's name (unique within the store).
    pub(crate) name: String,
    /// `levels[0]`: overlapping tables, newest first. `levels[1..]`: tables sorted by
    /// `smallest`, user-key ranges disjoint.
    pub(crate) levels: [Vec<Arc<TableMeta>>; NUM_LEVELS],
    /// Values of at least this many bytes are separated into the value log (`None`:
    /// never). Set with the keyspace's options and kept across reopens.
    pub(crate) blob_threshold: Option<u64>,
    /// The name of the merge operator the keyspace's operands were written for, once one
    /// was registered (`merge.rs` invariant 2). Kept across reopens.
    pub(crate) merge_operator: Option<String>,
}

/// The table set and counters of the store at one point; see the module documentation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Version {
    keyspaces: BTreeMap<KeyspaceId, Arc<KeyspaceTables>>,
    wal_min_id: u64,
    next_file_id: u64,
    flushed_seqno: SeqNo,
    next_keyspace_id: u32,
    /// The live blob files of the value log, by id (shared: most edits leave them alone).
    blob_files: Arc<BTreeMap<BlobId, BlobFileMeta>>,
    /// The store's file-shaping options as last recorded (`None` before any was).
    store_options: Option<StoreOptions>,
}

fn smallest_user(t: &TableMeta) -> &[u8] {
    user_key_of(&t.smallest)
}

fn largest_user(t: &TableMeta) -> &[u8] {
    user_key_of(&t.largest)
}

/// L0 order: newest first (larger `max_seqno`, then larger id).
fn l0_order(a: &Arc<TableMeta>, b: &Arc<TableMeta>) -> Ordering {
    b.max_seqno.cmp(&a.max_seqno).then(b.id.cmp(&a.id))
}

impl Version {
    /// The version of a store with nothing in it: no keyspace, `next_file_id` 1,
    /// `wal_min_id` 0, `flushed_seqno` 0, `next_keyspace_id` 1 (the `Db` creates keyspace 0,
    /// "default", with its first edit).
    pub(crate) fn empty() -> Version {
        Version {
            keyspaces: BTreeMap::new(),
            wal_min_id: 0,
            next_file_id: 1,
            flushed_seqno: SeqNo::ZERO,
            next_keyspace_id: 1,
            blob_files: Arc::new(BTreeMap::new()),
            store_options: None,
        }
    }

    /// A new version with `edit` applied; the receiver is unchanged.
    ///
    /// Order of application: counters; dropped keyspaces; created keyspaces; removed
    /// tables; added tables; removed blob files; added blob files. So a table can move
    /// between levels in one edit (remove, then add the same id), and a name can be dropped
    /// and reused in one edit.
    ///
    /// # Errors
    /// `Error::Corruption` (`FileKind::Manifest`, `path`, `offset`,
    /// `Reason::BadEntry(..)`) if the edit: moves a counter backwards; leaves
    /// `wal_min_id` above `next_file_id`; sets `flushed_seqno` above `SeqNo::MAX`; drops or
    /// touches a keyspace that does not exist; creates a keyspace whose id or name exists,
    /// whose name is invalid, or whose id is not below `next_keyspace_id`; names a level
    /// `>= NUM_LEVELS`; removes a table that is not at that level; adds a table that fails
    /// `check_table`, whose id is already present or not below `next_file_id`; leaves two
    /// tables of a level L1.. with overlapping user-key ranges; removes a blob file that is
    /// not live; or adds a blob file that fails `check_blob_file`, whose id is not below
    /// `next_file_id` or is already a blob file or table id.
    pub(crate) fn apply(&self, edit: &Edit, path: &Path, offset: u64) -> Result<Version> {
        let bad = |msg: &'static str| {
            Error::corruption(FileKind::Manifest, path, offset, Reason::BadEntry(msg))
        };
        let mut next = self.clone();

        if let Some(o) = &edit.store_options {
            next.store_options = Some(o.clone());
        }
        if let Some(v) = edit.wal_min_id {
            if v < self.wal_min_id {
                return Err(bad("edit moves wal_min_id backwards"));
            }
            next.wal_min_id = v;
        }
        if let Some(v) = edit.next_file_id {
            if v < self.next_file_id {
                return Err(bad("edit moves next_file_id backwards"));
            }
            next.next_file_id = v;
        }
        if let Some(v) = edit.flushed_seqno {
            if v < self.flushed_seqno {
                return Err(bad("edit moves flushed_seqno backwards"));
            }
            if v > SeqNo::MAX {
                return Err(bad("flushed_seqno exceeds the 56-bit limit"));
            }
            next.flushed_seqno = v;
        }
        if let Some(v) = edit.next_keyspace_id {
            if v < self.next_keyspace_id {
                return Err(bad("edit moves next_keyspace_id backwards"));
            }
            next.next_keyspace_id = v;
        }
        if next.wal_min_id > next.next_file_id {
            return Err(bad("wal_min_id is above next_file_id"));
        }

        for id in &edit.dropped_keyspaces {
            if next.keyspaces.remove(id).is_none() {
                return Err(bad("edit drops a keyspace that does not exist"));
            }
        }
        for (id, name) in &edit.created_keyspaces {
            if !keyspace_name_ok(name) {
                return Err(bad("keyspace name is not 1..=255 bytes"));
            }
            if id.0 >= next.next_keyspace_id {
                return Err(bad("created keyspace id is not below next_keyspace_id"));
            }
            if next.keyspaces.contains_key(id) {
                return Err(bad("edit creates a keyspace id that exists"));
            }
            if next.keyspace_by_name(name).is_some() {
                return Err(bad("edit creates a keyspace name that exists"));
            }
            let tables = KeyspaceTables {
                name: name.clone(),
                ..KeyspaceTables::default()
            };
            next.keyspaces.insert(*id, Arc::new(tables));
        }
        for (id, threshold) in &edit.blob_thresholds {
            let ks = next
                .keyspaces
                .get_mut(id)
                .ok_or_else(|| bad("edit sets the options of a keyspace that does not exist"))?;
            Arc::make_mut(ks).blob_threshold = *threshold;
        }
        for (id, name) in &edit.merge_operators {
            let ks = next.keyspaces.get_mut(id).ok_or_else(|| {
                bad("edit names the merge operator of a keyspace that does not exist")
            })?;
            Arc::make_mut(ks).merge_operator = Some(name.clone());
        }

        for (ks, level, table_id) in &edit.removed_tables {
            let tables = next.level_mut(*ks, *level).map_err(bad)?;
            let pos = tables
                .iter()
                .position(|t| t.id == *table_id)
                .ok_or_else(|| bad("edit removes a table that is not at that level"))?;
            tables.remove(pos);
        }

        if !edit.added_tables.is_empty() {
            let mut added_ids = BTreeSet::new();
            for (_, _, meta) in &edit.added_tables {
                if !added_ids.insert(meta.id) {
                    return Err(bad("edit adds the same table id twice"));
                }
                if meta.id.0 >= next.next_file_id {
                    return Err(bad("added table id is not below next_file_id"));
                }
                check_table(meta).map_err(|_| bad("added table fails its invariants"))?;
            }
            let present = next
                .keyspaces
                .values()
                .flat_map(|ks| ks.levels.iter().flatten())
                .any(|t| added_ids.contains(&t.id))
                || added_ids
                    .iter()
                    .any(|id: &TableId| next.blob_files.contains_key(&BlobId(id.0)));
            if present {
                return Err(bad("edit adds a table id that is already present"));
            }
            let mut touched = BTreeSet::new();
            for (ks, level, meta) in &edit.added_tables {
                next.level_mut(*ks, *level)
                    .map_err(bad)?
                    .push(Arc::new(meta.clone()));
                touched.insert((*ks, *level));
            }
            for (ks, level) in touched {
                let tables = next.level_mut(ks, level).map_err(bad)?;
                if level == 0 {
                    tables.sort_by(l0_order);
                } else {
                    tables.sort_by(|a, b| compare_encoded(&a.smallest, &b.smallest));
                    let overlap = tables
                        .windows(2)
                        .any(|w| matches!(w, [a, b] if largest_user(a) >= smallest_user(b)));
                    if overlap {
                        return Err(bad("tables of a level above L0 overlap"));
                    }
                }
            }
        }
        next.apply_blob_files(edit).map_err(bad)?;
        Ok(next)
    }

    /// Steps 6 and 7 of `apply`: removed, then added blob files.
    fn apply_blob_files(&mut self, edit: &Edit) -> std::result::Result<(), &'static str> {
        if edit.removed_blob_files.is_empty() && edit.added_blob_files.is_empty() {
            return Ok(());
        }
        let table_ids = self.live_table_ids();
        let next_file_id = self.next_file_id;
        let files = Arc::make_mut(&mut self.blob_files);
        for id in &edit.removed_blob_files {
            if files.remove(id).is_none() {
                return Err("edit removes a blob file that is not live");
            }
        }
        for meta in &edit.added_blob_files {
            if meta.id.0 >= next_file_id {
                return Err("added blob file id is not below next_file_id");
            }
            check_blob_file(meta).map_err(|_| "added blob file fails its invariants")?;
            if table_ids.contains(&TableId(meta.id.0)) || files.insert(meta.id, *meta).is_some() {
                return Err("edit adds a blob file id that is already present");
            }
        }
        Ok(())
    }

    /// The tables of `level` in keyspace `ks`, copied out of shared storage if needed.
    fn level_mut(
        &mut self,
        ks: KeyspaceId,
        level: usize,
    ) -> std::result::Result<&mut Vec<Arc<TableMeta>>, &'static str> {
        let tables = self
            .keyspaces
            .get_mut(&ks)
            .ok_or("edit touches a keyspace that does not exist")?;
        Arc::make_mut(tables)
            .levels
            .get_mut(level)
            .ok_or("table level out of range")
    }

    /// The tables of keyspace `id`, if it exists.
    pub(crate) fn keyspace(&self, id: KeyspaceId) -> Option<&KeyspaceTables> {
        self.keyspaces.get(&id).map(|ks| ks.as_ref())
    }

    /// As [`Version::keyspace`], shared: a holder keeps the keyspace's tables without the
    /// whole version.
    pub(crate) fn keyspace_shared(&self, id: KeyspaceId) -> Option<&Arc<KeyspaceTables>> {
        self.keyspaces.get(&id)
    }

    /// The keyspace named `name`, if it exists.
    pub(crate) fn keyspace_by_name(&self, name: &str) -> Option<(KeyspaceId, &KeyspaceTables)> {
        self.keyspaces().find(|(_, ks)| ks.name == name)
    }

    /// Every keyspace, by id.
    pub(crate) fn keyspaces(&self) -> impl Iterator<Item = (KeyspaceId, &KeyspaceTables)> {
        self.keyspaces.iter().map(|(id, ks)| (*id, ks.as_ref()))
    }

    /// WAL files with an id below this hold only data already in tables.
    pub(crate) fn wal_min_id(&self) -> u64 {
        self.wal_min_id
    }

    /// The next unused file id.
    pub(crate) fn next_file_id(&self) -> u64 {
        self.next_file_id
    }

    /// Every write with a seqno at or below this is in tables.
    pub(crate) fn flushed_seqno(&self) -> SeqNo {
        self.flushed_seqno
    }

    /// The next unused keyspace id.
    pub(crate) fn next_keyspace_id(&self) -> u32 {
        self.next_keyspace_id
    }

    /// Ids of every table in every keyspace (for deleting obsolete files).
    pub(crate) fn live_table_ids(&self) -> BTreeSet<TableId> {
        self.keyspaces
            .values()
            .flat_map(|ks| ks.levels.iter().flatten())
            .map(|t| t.id)
            .collect()
    }

    /// The live blob files of the value log, by id.
    pub(crate) fn blob_files(&self) -> &BTreeMap<BlobId, BlobFileMeta> {
        &self.blob_files
    }

    /// The store's file-shaping options as last recorded, if any was.
    pub(crate) fn store_options(&self) -> Option<&StoreOptions> {
        self.store_options.as_ref()
    }

    /// An edit that recreates this version from [`Version::empty`] (written first in every
    /// new manifest): every keyspace, every table, every blob file, every counter.
    pub(crate) fn snapshot_edit(&self) -> Edit {
        let mut edit = Edit {
            wal_min_id: Some(self.wal_min_id),
            next_file_id: Some(self.next_file_id),
            flushed_seqno: Some(self.flushed_seqno),
            next_keyspace_id: Some(self.next_keyspace_id),
            added_blob_files: self.blob_files.values().copied().collect(),
            store_options: self.store_options.clone(),
            ..Edit::default()
        };
        for (id, ks) in self.keyspaces() {
            edit.created_keyspaces.push((id, ks.name.clone()));
            if ks.blob_threshold.is_some() {
                edit.blob_thresholds.push((id, ks.blob_threshold));
            }
            if let Some(name) = &ks.merge_operator {
                edit.merge_operators.push((id, name.clone()));
            }
            for (level, tables) in ks.levels.iter().enumerate() {
                for t in tables {
                    edit.added_tables.push((id, level, TableMeta::clone(t)));
                }
            }
        }
        edit
    }
}

impl KeyspaceTables {
    /// The tables of `level` (empty for a level `>= NUM_LEVELS`).
    pub(crate) fn level(&self, level: usize) -> &[Arc<TableMeta>] {
        self.levels.get(level).map_or(&[], |v| v.as_slice())
    }

    /// Tables that may hold `user_key`, in the order a lookup must consult them: the L0
    /// tables whose user-key range contains it, newest first, then at most one table per
    /// level L1.. (found by binary search). Each comes with where it sits
    /// ([`TablePos`]). Allocates nothing: a point read walks it once per lookup.
    pub(crate) fn tables_for_key<'a>(
        &'a self,
        user_key: &'a [u8],
    ) -> impl Iterator<Item = (TablePos, &'a Arc<TableMeta>)> + 'a {
        let l0 = self
            .level(0)
            .iter()
            .enumerate()
            .filter(move |(_, t)| smallest_user(t) <= user_key && user_key <= largest_user(t))
            .map(|(index, t)| (TablePos { level: 0, index }, t));
        let deeper = self
            .levels
            .iter()
            .enumerate()
            .skip(1)
            .filter_map(move |(level, tables)| {
                let index = tables.partition_point(|t| largest_user(t) < user_key);
                let t = tables.get(index)?;
                (smallest_user(t) <= user_key).then_some((TablePos { level, index }, t))
            });
        l0.chain(deeper)
    }

    /// Tables of `level` whose user-key range overlaps `[lo, hi]` (inclusive user keys;
    /// `None` is unbounded), in level order. Empty for a level `>= NUM_LEVELS`.
    pub(crate) fn overlapping(
        &self,
        level: usize,
        lo: Option<&[u8]>,
        hi: Option<&[u8]>,
    ) -> Vec<Arc<TableMeta>> {
        let tables = self.level(level);
        let below_hi = |t: &Arc<TableMeta>| hi.is_none_or(|hi| smallest_user(t) <= hi);
        let above_lo = |t: &Arc<TableMeta>| lo.is_none_or(|lo| largest_user(t) >= lo);
        if level == 0 {
            return tables
                .iter()
                .filter(|t| below_hi(t) && above_lo(t))
                .cloned()
                .collect();
        }
        // Sorted and disjoint: both boundaries increase along the level.
        let start = tables.partition_point(|t| !above_lo(t));
        tables
            .get(start..)
            .unwrap_or_default()
            .iter()
            .take_while(|t| below_hi(t))
            .cloned()
            .collect()
    }

    /// Sum of the file sizes of the tables of `level`.
    pub(crate) fn level_size(&self, level: usize) -> u64 {
        self.level(level).iter().map(|t| t.file_size).sum()
    }

    /// Number of tables in all levels.
    #[cfg(test)]
    pub(crate) fn table_count(&self) -> usize {
        self.levels.iter().map(Vec::len).sum()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]
mod tests {
    use super::super::workload::{table, user, Workload};
    use super::*;

    const PATH: &str = "/db/MANIFEST-00000000000000000003";

    fn apply(v: &Version, e: &Edit) -> Result<Version> {
        v.apply(e, Path::new(PATH), 77)
    }

    fn rejects(v: &Version, e: &Edit, why: &str) {
        match apply(v, e) {
            Err(Error::Corruption(c)) => {
                assert_eq!(c.file, FileKind::Manifest);
                assert_eq!(c.path, Path::new(PATH));
                assert_eq!(c.offset, 77);
                match c.reason {
                    Reason::BadEntry(msg) => assert!(msg.contains(why), "{msg} vs {why}"),
                    other => panic!("unexpected reason {other:?}"),
                }
            }
            other => panic!("expected corruption ({why}), got {other:?}"),
        }
    }

    /// Keyspaces 0 "default" and 1 "users"; next_file_id 100.
    fn base() -> Version {
        let e = Edit {
            created_keyspaces: vec![
                (KeyspaceId(0), "default".into()),
                (KeyspaceId(1), "users".into()),
            ],
            next_keyspace_id: Some(2),
            next_file_id: Some(100),
            wal_min_id: Some(5),
            flushed_seqno: Some(SeqNo(50)),
            ..Edit::default()
        };
        apply(&Version::empty(), &e).unwrap()
    }

    fn add(ks: u32, level: usize, t: TableMeta) -> Edit {
        Edit {
            added_tables: vec![(KeyspaceId(ks), level, t)],
            ..Edit::default()
        }
    }

    #[test]
    fn empty_version_counters() {
        let v = Version::empty();
        assert_eq!(v.next_file_id(), 1);
        assert_eq!(v.wal_min_id(), 0);
        assert_eq!(v.flushed_seqno(), SeqNo(0));
        assert_eq!(v.next_keyspace_id(), 1);
        assert_eq!(v.keyspaces().count(), 0);
        assert!(v.live_table_ids().is_empty());
        assert_eq!(apply(&Version::empty(), &v.snapshot_edit()).unwrap(), v);
    }

    #[test]
    fn apply_leaves_the_receiver_unchanged_and_moves_tables() {
        let v = base();
        let v1 = apply(&v, &add(1, 0, table(10, 1, 5, 1, 9))).unwrap();
        assert_eq!(v.keyspace(KeyspaceId(1)).unwrap().table_count(), 0);
        assert_eq!(v1.keyspace(KeyspaceId(1)).unwrap().table_count(), 1);
        // A trivial move: the same id leaves L0 and enters L1 in one edit.
        let mv = Edit {
            removed_tables: vec![(KeyspaceId(1), 0, TableId(10))],
            added_tables: vec![(KeyspaceId(1), 1, table(10, 1, 5, 1, 9))],
            ..Edit::default()
        };
        let v2 = apply(&v1, &mv).unwrap();
        let ks = v2.keyspace(KeyspaceId(1)).unwrap();
        assert!(ks.level(0).is_empty());
        assert_eq!(ks.level(1).len(), 1);
        assert_eq!(ks.level_size(1), table(10, 1, 5, 1, 9).file_size);
        assert_eq!(v2.live_table_ids(), BTreeSet::from([TableId(10)]));
        assert_eq!(v2.keyspace_by_name("users").unwrap().0, KeyspaceId(1));
        assert!(v2.keyspace_by_name("nobody").is_none());
        // Keyspaces untouched by an edit are shared, not copied.
        assert!(Arc::ptr_eq(
            &v1.keyspaces[&KeyspaceId(0)],
            &v2.keyspaces[&KeyspaceId(0)]
        ));
    }

    #[test]
    fn l0_is_newest_first_and_l1_sorted() {
        let mut v = base();
        for (id, lo, hi, max_seqno) in [(10, 1, 5, 20), (11, 3, 9, 30), (12, 0, 2, 25)] {
            v = apply(&v, &add(0, 0, table(id, lo, hi, max_seqno - 5, max_seqno))).unwrap();
        }
        let e = Edit {
            added_tables: vec![
                (KeyspaceId(0), 1, table(13, 50, 60, 1, 2)),
                (KeyspaceId(0), 1, table(14, 10, 20, 1, 2)),
                (KeyspaceId(0), 1, table(15, 30, 40, 1, 2)),
            ],
            ..Edit::default()
        };
        v = apply(&v, &e).unwrap();
        let ks = v.keyspace(KeyspaceId(0)).unwrap();
        let ids = |level: usize| ks.level(level).iter().map(|t| t.id.0).collect::<Vec<_>>();
        assert_eq!(ids(0), vec![11, 12, 10]);
        assert_eq!(ids(1), vec![14, 15, 13]);
        // Equal max_seqno: the larger id is newer.
        let v = apply(&v, &add(0, 0, table(16, 1, 1, 30, 30))).unwrap();
        let ks = v.keyspace(KeyspaceId(0)).unwrap();
        assert_eq!(ks.level(0)[0].id, TableId(16));
        assert_eq!(ks.level(0)[1].id, TableId(11));
    }

    #[test]
    fn apply_rejects_every_invalid_edit() {
        let v = base();
        let v = apply(&v, &add(1, 1, table(10, 10, 20, 1, 2))).unwrap();
        let ks = |name: &str, id: u32| Edit {
            created_keyspaces: vec![(KeyspaceId(id), name.into())],
            next_keyspace_id: Some(9),
            ..Edit::default()
        };
        rejects(&v, &ks("other", 1), "keyspace id that exists");
        rejects(&v, &ks("users", 5), "keyspace name that exists");
        rejects(&v, &ks("", 5), "keyspace name");
        rejects(&v, &ks(&"x".repeat(256), 5), "keyspace name");
        let mut no_bump = ks("other", 2);
        no_bump.next_keyspace_id = None;
        rejects(&v, &no_bump, "not below next_keyspace_id");
        rejects(
            &v,
            &Edit {
                dropped_keyspaces: vec![KeyspaceId(7)],
                ..Edit::default()
            },
            "drops a keyspace that does not exist",
        );
        rejects(
            &v,
            &add(7, 0, table(11, 1, 2, 1, 2)),
            "keyspace that does not exist",
        );
        rejects(
            &v,
            &add(1, NUM_LEVELS, table(11, 1, 2, 1, 2)),
            "level out of range",
        );
        let remove = |level: usize, id: u64| Edit {
            removed_tables: vec![(KeyspaceId(1), level, TableId(id))],
            ..Edit::default()
        };
        rejects(&v, &remove(0, 10), "not at that level");
        rejects(&v, &remove(1, 11), "not at that level");
        rejects(&v, &remove(NUM_LEVELS, 10), "level out of range");
        // The id is present in another keyspace and level.
        rejects(&v, &add(0, 0, table(10, 1, 2, 1, 2)), "already present");
        let twice = Edit {
            added_tables: vec![
                (KeyspaceId(0), 0, table(11, 1, 2, 1, 2)),
                (KeyspaceId(1), 0, table(11, 1, 2, 1, 2)),
            ],
            ..Edit::default()
        };
        rejects(&v, &twice, "same table id twice");
        rejects(
            &v,
            &add(1, 0, table(100, 1, 2, 1, 2)),
            "not below next_file_id",
        );
        let mut inverted = table(11, 1, 2, 1, 2);
        std::mem::swap(&mut inverted.smallest, &mut inverted.largest);
        rejects(&v, &add(1, 0, inverted), "invariants");
        // Overlap in L1, including a shared boundary user key; L0 may overlap.
        rejects(&v, &add(1, 1, table(11, 15, 30, 1, 2)), "overlap");
        rejects(&v, &add(1, 1, table(11, 20, 30, 1, 2)), "overlap");
        rejects(&v, &add(1, 1, table(11, 0, 10, 1, 2)), "overlap");
        assert!(apply(&v, &add(1, 1, table(11, 21, 30, 1, 2))).is_ok());
        assert!(apply(&v, &add(1, 0, table(11, 15, 30, 1, 2))).is_ok());
        // Counters never go backwards; wal_min_id stays at or below next_file_id.
        for (e, why) in [
            (
                Edit {
                    wal_min_id: Some(4),
                    ..Edit::default()
                },
                "wal_min_id backwards",
            ),
            (
                Edit {
                    next_file_id: Some(99),
                    ..Edit::default()
                },
                "next_file_id backwards",
            ),
            (
                Edit {
                    flushed_seqno: Some(SeqNo(49)),
                    ..Edit::default()
                },
                "flushed_seqno backwards",
            ),
            (
                Edit {
                    next_keyspace_id: Some(1),
                    ..Edit::default()
                },
                "next_keyspace_id backwards",
            ),
            (
                Edit {
                    wal_min_id: Some(101),
                    ..Edit::default()
                },
                "above next_file_id",
            ),
            (
                Edit {
                    flushed_seqno: Some(SeqNo(SeqNo::MAX.0 + 1)),
                    ..Edit::default()
                },
                "56-bit",
            ),
        ] {
            rejects(&v, &e, why);
        }
        // Equal counters are fine.
        let same = Edit {
            wal_min_id: Some(5),
            next_file_id: Some(100),
            flushed_seqno: Some(SeqNo(50)),
            next_keyspace_id: Some(2),
            ..Edit::default()
        };
        assert_eq!(apply(&v, &same).unwrap(), v);
    }

    fn blob(id: u64) -> BlobFileMeta {
        BlobFileMeta {
            id: BlobId(id),
            file_size: 4096,
            record_count: 3,
            value_bytes: 3000,
        }
    }

    #[test]
    fn blob_files_are_added_removed_and_snapshotted() {
        let v = apply(&base(), &add(1, 0, table(10, 1, 5, 1, 9))).unwrap();
        let add_blobs = Edit {
            added_blob_files: vec![blob(20), blob(21)],
            ..Edit::default()
        };
        let v1 = apply(&v, &add_blobs).unwrap();
        assert!(v.blob_files().is_empty(), "the receiver is unchanged");
        assert_eq!(
            v1.blob_files().keys().map(|id| id.0).collect::<Vec<_>>(),
            vec![20, 21]
        );
        assert_eq!(v1.blob_files()[&BlobId(21)], blob(21));
        assert_eq!(apply(&Version::empty(), &v1.snapshot_edit()).unwrap(), v1);
        // An edit without blob changes shares the blob map.
        let v2 = apply(&v1, &add(0, 0, table(11, 1, 5, 1, 9))).unwrap();
        assert!(Arc::ptr_eq(&v1.blob_files, &v2.blob_files));
        // A GC rewrite: remove one file and add its replacement in one edit.
        let gc = Edit {
            removed_blob_files: vec![BlobId(20)],
            added_blob_files: vec![blob(22)],
            ..Edit::default()
        };
        let v3 = apply(&v2, &gc).unwrap();
        assert_eq!(
            v3.blob_files().keys().map(|id| id.0).collect::<Vec<_>>(),
            vec![21, 22]
        );

        let blobs = |added: Vec<BlobFileMeta>, removed: Vec<u64>| Edit {
            added_blob_files: added,
            removed_blob_files: removed.into_iter().map(BlobId).collect(),
            ..Edit::default()
        };
        rejects(&v3, &blobs(vec![], vec![20]), "not live");
        rejects(&v3, &blobs(vec![blob(21)], vec![]), "already present");
        rejects(&v3, &blobs(vec![blob(10)], vec![]), "already present"); // a table id
        rejects(
            &v3,
            &blobs(vec![blob(23), blob(23)], vec![]),
            "already present",
        );
        rejects(
            &v3,
            &blobs(vec![blob(100)], vec![]),
            "not below next_file_id",
        );
        let mut tiny = blob(23);
        tiny.file_size = 10;
        rejects(&v3, &blobs(vec![tiny], vec![]), "invariants");
        // A table may not take a blob file's id either.
        rejects(&v3, &add(0, 0, table(21, 1, 5, 1, 9)), "already present");
    }

    #[test]
    fn drop_and_recreate_a_name_in_one_edit() {
        let v = apply(&base(), &add(1, 2, table(10, 1, 2, 1, 2))).unwrap();
        let e = Edit {
            dropped_keyspaces: vec![KeyspaceId(1)],
            created_keyspaces: vec![(KeyspaceId(2), "users".into())],
            next_keyspace_id: Some(3),
            ..Edit::default()
        };
        let v = apply(&v, &e).unwrap();
        assert_eq!(v.keyspace_by_name("users").unwrap().0, KeyspaceId(2));
        assert!(v.keyspace(KeyspaceId(1)).is_none());
        assert!(
            v.live_table_ids().is_empty(),
            "the dropped keyspace's tables are gone"
        );
    }

    /// Brute force: every table of the keyspace whose range contains / overlaps.
    fn contains(t: &TableMeta, key: &[u8]) -> bool {
        smallest_user(t) <= key && key <= largest_user(t)
    }

    fn ids(tables: &[Arc<TableMeta>]) -> Vec<u64> {
        tables.iter().map(|t| t.id.0).collect()
    }

    #[test]
    fn lookups_agree_with_brute_force_on_random_versions() {
        let mut checked = 0;
        for seed in 0..40 {
            let mut w = Workload::new(seed);
            let mut v = w.start();
            for _ in 0..60 {
                let e = w.next_edit(&v);
                v = apply(&v, &e).unwrap();
            }
            for (_, ks) in v.keyspaces() {
                // L0 invariant, checked independently of the sort in apply.
                for pair in ks.level(0).windows(2) {
                    assert!((pair[0].max_seqno, pair[0].id) > (pair[1].max_seqno, pair[1].id));
                }
                for probe in 0..=w.key_space() + 1 {
                    let key = user(probe);
                    let mut expected: Vec<u64> = ks
                        .level(0)
                        .iter()
                        .filter(|t| contains(t, &key))
                        .map(|t| t.id.0)
                        .collect();
                    for level in 1..NUM_LEVELS {
                        let hits: Vec<u64> = ks
                            .level(level)
                            .iter()
                            .filter(|t| contains(t, &key))
                            .map(|t| t.id.0)
                            .collect();
                        assert!(hits.len() <= 1, "L{level} overlaps at {probe}");
                        expected.extend(hits);
                    }
                    let found: Vec<_> = ks.tables_for_key(&key).collect();
                    let found_ids: Vec<u64> = found.iter().map(|(_, t)| t.id.0).collect();
                    assert_eq!(found_ids, expected, "seed {seed} key {probe}");
                    // Each position names the table it comes with.
                    for (pos, t) in found {
                        assert_eq!(ks.level(pos.level)[pos.index].id, t.id);
                    }
                    checked += 1;
                }
                for (lo, hi) in [
                    (None, None),
                    (Some(3), Some(40)),
                    (Some(50), None),
                    (None, Some(7)),
                    (Some(20), Some(20)),
                ] {
                    let (lo, hi) = (lo.map(user), hi.map(user));
                    for level in 0..=NUM_LEVELS {
                        let expected: Vec<u64> = ks
                            .level(level)
                            .iter()
                            .filter(|t| {
                                lo.as_ref()
                                    .is_none_or(|lo| largest_user(t) >= lo.as_slice())
                                    && hi
                                        .as_ref()
                                        .is_none_or(|hi| smallest_user(t) <= hi.as_slice())
                            })
                            .map(|t| t.id.0)
                            .collect();
                        let got = ks.overlapping(level, lo.as_deref(), hi.as_deref());
                        assert_eq!(ids(&got), expected, "seed {seed} level {level}");
                    }
                }
            }
        }
        assert!(checked > 1000, "{checked}");
    }

    #[test]
    fn snapshot_edit_recreates_the_version() {
        for seed in 0..20 {
            let mut w = Workload::new(seed);
            let mut v = w.start();
            for _ in 0..40 {
                let e = w.next_edit(&v);
                v = apply(&v, &e).unwrap();
                let snap = v.snapshot_edit();
                assert_eq!(apply(&Version::empty(), &snap).unwrap(), v, "seed {seed}");
            }
        }
    }
}
