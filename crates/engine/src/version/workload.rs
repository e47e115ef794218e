//! Test support: deterministic random sequences of valid edits (flushes, compactions,
//! trivial moves, keyspace creation and drops), shaped like the ones the `Db` writes, and
//! the in-memory store directory the manifest tests share.
#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{Edit, Version, NUM_LEVELS};
use crate::files::TableId;
use crate::fs::{FileSystem, MemFs};
use crate::key::{InternalKey, KeyspaceId, Kind, SeqNo};
use crate::table::TableMeta;

/// The store directory of the tests.
pub(crate) fn dir() -> PathBuf {
    PathBuf::from("/db")
}

/// A `MemFs` holding an empty, durable [`dir`].
pub(crate) fn new_fs() -> MemFs {
    let fs = MemFs::new();
    fs.create_dir(&dir()).unwrap();
    fs.sync_dir(Path::new("/")).unwrap();
    fs
}

/// `fs` as the shared handle `Manifest::create` takes.
pub(crate) fn shared(fs: &MemFs) -> Arc<dyn FileSystem> {
    Arc::new(fs.clone())
}

/// `v` with `next_file_id` one higher: what the `Db` installs before it takes a fresh id
/// for a new manifest.
pub(crate) fn bump(v: &Version) -> Version {
    let e = Edit {
        next_file_id: Some(v.next_file_id() + 1),
        ..Edit::default()
    };
    v.apply(&e, Path::new("bump"), 0).unwrap()
}

/// The user key numbered `n` (fixed width, so numeric order is byte order).
pub(crate) fn user(n: u64) -> Vec<u8> {
    format!("k{n:06}").into_bytes()
}

/// A table with user keys `lo..=hi` and seqnos `min..=max`.
pub(crate) fn table(id: u64, lo: u64, hi: u64, min: u64, max: u64) -> TableMeta {
    TableMeta {
        id: TableId(id),
        file_size: 1000 + id * 7 % 500,
        smallest: InternalKey::new(user(lo), SeqNo(max), Kind::Delete)
            .encode()
            .unwrap(),
        largest: InternalKey::new(user(hi), SeqNo(min), Kind::Put)
            .encode()
            .unwrap(),
        min_seqno: SeqNo(min),
        max_seqno: SeqNo(max),
        entries: hi - lo + 1,
        tombstones: 1,
        raw_bytes: (hi - lo + 1) * 20,
    }
}

/// The user-key number of an encoded boundary made by [`table`].
fn key_number(encoded: &[u8]) -> u64 {
    let (u, _) = crate::key::split_encoded(encoded).unwrap();
    std::str::from_utf8(&u[1..]).unwrap().parse().unwrap()
}

/// A deterministic generator of valid edits.
#[derive(Debug)]
pub(crate) struct Workload {
    rng: u64,
    seqno: u64,
}

impl Workload {
    /// A generator seeded with `seed`.
    pub(crate) fn new(seed: u64) -> Workload {
        Workload {
            rng: seed ^ 0x9e37_79b9_7f4a_7c15,
            seqno: 0,
        }
    }

    /// User keys are numbered `0..key_space()`.
    pub(crate) fn key_space(&self) -> u64 {
        100
    }

    fn next(&mut self) -> u64 {
        // splitmix64
        self.rng = self.rng.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.rng;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next() % n
        }
    }

    /// The edit a new store starts with: keyspace 0 "default".
    pub(crate) fn start_edit(&self) -> Edit {
        Edit {
            created_keyspaces: vec![(KeyspaceId(0), "default".into())],
            next_file_id: Some(2),
            ..Edit::default()
        }
    }

    /// [`Version::empty`] with [`Workload::start_edit`] applied.
    pub(crate) fn start(&self) -> Version {
        Version::empty()
            .apply(&self.start_edit(), Path::new("start"), 0)
            .unwrap()
    }

    /// A random edit that is valid against `v` and changes it (every edit advances
    /// `next_file_id`).
    pub(crate) fn next_edit(&mut self, v: &Version) -> Edit {
        let mut next_id = v.next_file_id();
        let mut e = Edit::default();
        let keyspaces: Vec<KeyspaceId> = v.keyspaces().map(|(id, _)| id).collect();
        match self.below(10) {
            0 if keyspaces.len() < 4 => {
                let id = v.next_keyspace_id();
                e.created_keyspaces
                    .push((KeyspaceId(id), format!("ks-{id}")));
                e.next_keyspace_id = Some(id + 1);
            }
            1 if keyspaces.len() > 1 => {
                let pick = keyspaces[1 + self.below(keyspaces.len() as u64 - 1) as usize];
                e.dropped_keyspaces.push(pick);
            }
            2..=4 => {
                // A flush: one L0 table per chosen keyspace, then a new WAL file.
                let count = 1 + self.below(5);
                let (min, max) = (self.seqno + 1, self.seqno + count);
                self.seqno = max;
                for ks in &keyspaces {
                    if self.below(2) == 0 && ks.0 != 0 {
                        continue;
                    }
                    let lo = self.below(self.key_space());
                    let hi = (lo + self.below(30)).min(self.key_space() - 1);
                    e.added_tables
                        .push((*ks, 0, table(next_id, lo, hi, min, max)));
                    next_id += 1;
                }
                e.wal_min_id = Some(next_id);
                e.flushed_seqno = Some(SeqNo(max));
                next_id += 1;
            }
            _ => self.compaction(v, &keyspaces, &mut next_id, &mut e),
        }
        e.next_file_id = Some(next_id + 1);
        e
    }

    /// A compaction from some level L into L+1, or a trivial move.
    fn compaction(
        &mut self,
        v: &Version,
        keyspaces: &[KeyspaceId],
        next_id: &mut u64,
        e: &mut Edit,
    ) {
        let ks_id = keyspaces[self.below(keyspaces.len() as u64) as usize];
        let ks = v.keyspace(ks_id).unwrap();
        let levels: Vec<usize> = (0..NUM_LEVELS - 1)
            .filter(|&l| !ks.level(l).is_empty())
            .collect();
        if levels.is_empty() {
            return;
        }
        let level = levels[self.below(levels.len() as u64) as usize];
        let inputs = if level == 0 {
            ks.level(0).to_vec()
        } else {
            let t = &ks.level(level)[self.below(ks.level(level).len() as u64) as usize];
            vec![t.clone()]
        };
        let lo = inputs
            .iter()
            .map(|t| key_number(&t.smallest))
            .min()
            .unwrap();
        let hi = inputs.iter().map(|t| key_number(&t.largest)).max().unwrap();
        let below = ks.overlapping(level + 1, Some(&user(lo)), Some(&user(hi)));
        if below.is_empty() && inputs.len() == 1 && self.below(2) == 0 {
            let t = &inputs[0];
            e.removed_tables.push((ks_id, level, t.id));
            e.added_tables.push((ks_id, level + 1, (**t).clone()));
            return;
        }
        let all: Vec<_> = inputs.iter().chain(&below).collect();
        let lo = all.iter().map(|t| key_number(&t.smallest)).min().unwrap();
        let hi = all.iter().map(|t| key_number(&t.largest)).max().unwrap();
        let min = all.iter().map(|t| t.min_seqno.0).min().unwrap();
        let max = all.iter().map(|t| t.max_seqno.0).max().unwrap();
        for t in &inputs {
            e.removed_tables.push((ks_id, level, t.id));
        }
        for t in &below {
            e.removed_tables.push((ks_id, level + 1, t.id));
        }
        let span = hi - lo + 1;
        let parts = (1 + self.below(3)).min(span);
        for i in 0..parts {
            let (a, b) = (lo + i * span / parts, lo + (i + 1) * span / parts - 1);
            e.added_tables
                .push((ks_id, level + 1, table(*next_id, a, b, min, max)));
            *next_id += 1;
        }
    }
}
