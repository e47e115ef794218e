//! Tests of the readers a super version pins (`pinned.rs`): reads through pins find what
//! the tables hold, each slot holds the reader of the table at its position, a version
//! with more tables than the table cache keeps pins nothing (the cache's bound holds), and
//! pinned readers close with their super version.
#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

use std::path::Path;
use std::sync::{Arc, Weak};

use crate::db::Db;
use crate::fs::MemFs;
use crate::options::{Durability, Options};
use crate::table::Reader;

fn options(max_open_tables: usize) -> Options {
    Options {
        durability: Durability::Buffered,
        memtable_size: 8 << 10,
        table_size: 8 << 10,
        level1_size: 16 << 10,
        max_open_tables,
        ..Options::default()
    }
}

fn key(i: u32) -> String {
    format!("key{i:05}")
}

/// A store with 2,000 keys (`round` in every value) compacted into tables of 8 KiB, and
/// 100 more keys flushed into level 0 on top.
fn store(max_open_tables: usize) -> Db {
    let db = Db::open_with_fs(Arc::new(MemFs::new()), Path::new("/db"), {
        options(max_open_tables)
    })
    .unwrap();
    let ks = db.keyspace("k").unwrap();
    for i in 0..2000 {
        ks.insert(key(i), format!("value {i} round 0")).unwrap();
    }
    db.flush().unwrap();
    db.compact().unwrap();
    for i in 2000..2100 {
        ks.insert(key(i), format!("value {i} round 0")).unwrap();
    }
    db.flush().unwrap();
    db
}

/// Reads every key of [`store`] and checks it (`round` in the values), and that absent
/// keys stay absent.
fn read_all(db: &Db, round: u32) {
    let ks = db.keyspace("k").unwrap();
    for i in 0..2100 {
        let want = format!("value {i} round {round}").into_bytes();
        assert_eq!(ks.get(key(i)).unwrap(), Some(want), "key {i}");
    }
    for i in 2100..2200 {
        assert_eq!(ks.get(key(i)).unwrap(), None, "key {i}");
    }
    assert_eq!(ks.get("a").unwrap(), None);
    assert_eq!(ks.get("zzz").unwrap(), None);
}

/// Tables the current super version lists.
fn table_count(db: &Db) -> usize {
    let (sv, _) = db.inner.reads.acquire(None);
    let n = sv
        .version
        .keyspaces()
        .map(|(_, ks)| ks.levels.iter().flatten().count());
    n.sum()
}

/// Point reads pin every table they probe in the current super version, each slot holds
/// the reader of the table at its position, and the answers are the tables' contents.
#[test]
fn point_reads_pin_the_tables_they_probe() {
    let db = store(500);
    let tables = table_count(&db);
    assert!(tables >= 4, "{tables} tables");
    read_all(&db, 0);
    // Read twice: the second pass goes through the filled slots.
    read_all(&db, 0);
    let (sv, _) = db.inner.reads.acquire(None);
    let pinned = sv.pins.pinned();
    // Every key has one version, so every table answers some read and is pinned.
    assert_eq!(pinned.len(), tables);
    for (ks, pos, reader) in &pinned {
        let listed = &sv.version.keyspace(*ks).unwrap().level(pos.level)[pos.index];
        assert_eq!(reader.meta().id, listed.id, "slot {pos:?}");
    }
    drop(sv);
    db.close().unwrap();
}

/// With fewer open tables allowed than the version lists, nothing is pinned: every probe
/// goes through the cache, which keeps its bound, and the reads stay right.
#[test]
fn more_tables_than_the_cache_keeps_pins_none() {
    let db = store(2);
    assert!(table_count(&db) > 2);
    read_all(&db, 0);
    let (sv, _) = db.inner.reads.acquire(None);
    assert!(sv.pins.pinned().is_empty());
    assert!(db.inner.tables_open().len() <= 2);
    drop(sv);
    db.close().unwrap();
}

/// Pinned readers live as long as their super version: once every key is rewritten and
/// compacted, the first super version is gone and so is every reader it pinned (their
/// files were deleted, and no descriptor of them stays open).
#[test]
fn pinned_readers_close_with_their_super_version() {
    let db = store(500);
    read_all(&db, 0);
    let first: Vec<Weak<Reader>> = {
        let (sv, _) = db.inner.reads.acquire(None);
        sv.pins
            .pinned()
            .iter()
            .map(|(_, _, r)| Arc::downgrade(r))
            .collect()
    };
    assert!(!first.is_empty());
    let ks = db.keyspace("k").unwrap();
    for i in 0..2100 {
        ks.insert(key(i), format!("value {i} round 1")).unwrap();
    }
    db.flush().unwrap();
    db.compact().unwrap();
    read_all(&db, 1);
    // `compact` deleted the old tables once no super version listed them.
    let alive = first.iter().filter(|w| w.upgrade().is_some()).count();
    assert_eq!(alive, 0, "readers of the first super version still open");
    let (sv, _) = db.inner.reads.acquire(None);
    assert_eq!(sv.pins.pinned().len(), table_count(&db));
    drop(sv);
    db.close().unwrap();
}
