//! The row cache (`Options::row_cache_size`) through the public API: a key read again from
//! a table is answered by the cache (its counters show it) with the same answer the table
//! gives, for plain values, tombstones, expiring entries, merge operands, separated
//! values, `get_many` and HEAD; a read at a snapshot older than the cached version reads
//! the table, and a range removal hides a cached row from later reads only; transactions,
//! reads that may not wait for the disk and followers across a refresh read through it;
//! and the memory budget bounds the cache, and a size that cannot be allocated is refused
//! at open. The model tests
//! (`ordered_model.rs`) run whole random histories with it on.

#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

mod ordered_common;

use std::time::Duration;

use cairn::Readable;
use cairn::{
    AddI64, Clock, Db, Error, InMemory, Isolation, KeyspaceOptions, Options, TransactionOptions,
};

use ordered_common::{mem_tempdir, tiny};

const START: u64 = 1_700_000_000_000;

fn options(clock: &Clock) -> Options {
    tiny(64 << 10, 1024)
        .clock(clock.clone())
        .row_cache_size(1 << 20)
}

/// (hits, misses) of the row cache.
fn counts(db: &Db) -> (u64, u64) {
    let s = db.stats();
    (s.row_cache_hits, s.row_cache_misses)
}

#[test]
fn a_key_read_again_from_a_table_is_a_row_cache_hit() {
    let dir = mem_tempdir();
    let clock = Clock::manual(START);
    let db = Db::open(dir.path(), options(&clock)).unwrap();
    let ks = db.keyspace("default").unwrap();
    for i in 0..200u32 {
        ks.insert(format!("k{i:04}"), format!("v{i}")).unwrap();
    }
    db.flush().unwrap();
    assert_eq!(counts(&db), (0, 0));
    // The sets are charged from the open; the first read adds its row.
    let empty = db.stats().row_cache_bytes;
    assert_eq!(ks.get("k0007").unwrap(), Some(b"v7".to_vec()));
    assert_eq!(counts(&db), (0, 1));
    assert!(db.stats().row_cache_bytes > empty);
    for _ in 0..3 {
        assert_eq!(ks.get("k0007").unwrap(), Some(b"v7".to_vec()));
    }
    assert_eq!(counts(&db), (3, 1));
    let stats = db.stats();
    assert_eq!(stats.row_cache_capacity, 1 << 20);
    assert!(stats.row_cache_bytes <= 1 << 20);

    // A key the table's filter rules out never probes the cache; one a memtable holds
    // never reaches the tables.
    assert_eq!(ks.get("absent").unwrap(), None);
    ks.insert("k0007", "newer").unwrap();
    assert_eq!(ks.get("k0007").unwrap(), Some(b"newer".to_vec()));
    let (hits, misses) = counts(&db);
    assert_eq!(hits, 3);
    assert!(misses <= 2, "{misses}");

    // Batched reads and HEAD go through it too.
    let keys = ["k0001", "k0002", "absent", "k0001"];
    let want = [
        Some(b"v1".to_vec()),
        Some(b"v2".to_vec()),
        None,
        Some(b"v1".to_vec()),
    ];
    assert_eq!(ks.get_many(&keys).unwrap(), want);
    assert_eq!(ks.get_many(&keys).unwrap(), want);
    assert_eq!(ks.head("k0002").unwrap().unwrap().value_len, 2);
    assert!(counts(&db).0 >= hits + 4);
}

#[test]
fn a_snapshot_older_than_the_cached_version_reads_the_table() {
    let dir = mem_tempdir();
    let clock = Clock::manual(START);
    let db = Db::open(dir.path(), options(&clock)).unwrap();
    let ks = db.keyspace("default").unwrap();
    ks.insert("k", "old").unwrap();
    let snap = db.snapshot();
    ks.insert("k", "new").unwrap();
    // One table holding both versions (the snapshot keeps the old one).
    db.flush().unwrap();
    db.compact().unwrap();
    // The snapshot reads first: what it finds is not the table's newest version, so it
    // is not cached for the reads that follow.
    for _ in 0..3 {
        assert_eq!(snap.get(&ks, "k").unwrap(), Some(b"old".to_vec()));
        assert_eq!(ks.get("k").unwrap(), Some(b"new".to_vec()));
    }
    assert!(counts(&db).0 >= 2);
}

#[test]
fn cached_tombstones_expiry_and_operands_answer_as_the_table_does() {
    let dir = mem_tempdir();
    let clock = Clock::manual(START);
    let db = Db::open(dir.path(), options(&clock)).unwrap();
    let ks = db.keyspace("default").unwrap();
    let counters = db
        .keyspace_with(
            "counters",
            KeyspaceOptions::default().merge_operator(std::sync::Arc::new(AddI64)),
        )
        .unwrap();
    ks.insert("gone", "v").unwrap();
    db.flush().unwrap();
    ks.remove("gone").unwrap();
    ks.insert_ttl("brief", "here", Duration::from_secs(10))
        .unwrap();
    counters.insert("n", "5").unwrap();
    db.flush().unwrap();
    counters.merge("n", "2").unwrap();
    counters.merge("n", "3").unwrap();
    db.flush().unwrap();
    // A compaction between the reads below would give them new tables to miss in.
    db.wait_for_compactions().unwrap();
    for _ in 0..3 {
        assert_eq!(ks.get("gone").unwrap(), None);
        assert_eq!(ks.get("brief").unwrap(), Some(b"here".to_vec()));
        assert_eq!(counters.get("n").unwrap(), Some(b"10".to_vec()));
    }
    assert!(counts(&db).0 >= 4);
    // The expiry is judged at each read, after the cache.
    clock.advance(Duration::from_secs(10));
    assert_eq!(ks.get("brief").unwrap(), None);
    assert_eq!(ks.head("brief").unwrap(), None);
}

#[test]
fn separated_values_are_read_through_their_cached_handles() {
    let dir = mem_tempdir();
    let clock = Clock::manual(START);
    let db = Db::open(dir.path(), options(&clock).blob_threshold(Some(0))).unwrap();
    let ks = db.keyspace("default").unwrap();
    for i in 0..50u32 {
        ks.insert(format!("k{i:02}"), vec![i as u8; 100 + i as usize])
            .unwrap();
    }
    db.flush().unwrap();
    for _ in 0..3 {
        for i in 0..50u32 {
            assert_eq!(
                ks.get(format!("k{i:02}")).unwrap(),
                Some(vec![i as u8; 100 + i as usize])
            );
        }
    }
    assert!(counts(&db).0 >= 100);
}

#[test]
fn the_memory_budget_bounds_the_row_cache() {
    let dir = mem_tempdir();
    let budget = 64 << 20;
    let db = Db::open(
        dir.path(),
        Options::default()
            .memory_budget(Some(budget))
            .row_cache_size(usize::MAX),
    )
    .unwrap();
    let s = db.stats();
    // Half the block cache's share (5/8 of the budget), the block cache the rest.
    let share = (budget - budget / 4 - budget / 8) as u64;
    assert_eq!(s.row_cache_capacity, share / 2);
    assert_eq!(s.block_cache_capacity + s.row_cache_capacity, share);
    drop(db);
    let dir = mem_tempdir();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    let s = db.stats();
    assert_eq!((s.row_cache_capacity, s.row_cache_hits), (0, 0));
    drop(db);
    // A row cache whose sets cannot be allocated is refused at open, with nothing done.
    let dir = mem_tempdir();
    let err = Db::open(
        dir.path().join("store"),
        Options::default().row_cache_size(usize::MAX),
    )
    .unwrap_err();
    assert!(
        matches!(&err, cairn::Error::InvalidArgument(m) if m.contains("row_cache_size")),
        "{err}"
    );
    assert!(!dir.path().join("store").exists());
}

/// A range removal newer than a cached row hides it; a snapshot taken before the removal
/// still reads the row, from the cache.
#[test]
fn a_range_removal_hides_a_cached_row_from_later_reads_only() {
    let dir = mem_tempdir();
    let clock = Clock::manual(START);
    let db = Db::open(dir.path(), options(&clock)).unwrap();
    let ks = db.keyspace("default").unwrap();
    ks.insert("b", "v").unwrap();
    db.flush().unwrap();
    assert_eq!(ks.get("b").unwrap(), Some(b"v".to_vec()));
    let before = db.snapshot();
    ks.remove_range("a".."c").unwrap();
    let hits = counts(&db).0;
    assert_eq!(ks.get("b").unwrap(), None);
    assert_eq!(before.get(&ks, "b").unwrap(), Some(b"v".to_vec()));
    assert_eq!(counts(&db).0, hits + 2);
    db.flush().unwrap();
    assert_eq!(ks.get("b").unwrap(), None);
    assert_eq!(before.get(&ks, "b").unwrap(), Some(b"v".to_vec()));
}

/// Transactions read through the cache, and a serializable one that read a cached row
/// still fails when another writer changed that key.
#[test]
fn transactions_read_cached_rows_and_still_detect_conflicts() {
    let dir = mem_tempdir();
    let clock = Clock::manual(START);
    let db = Db::open(dir.path(), options(&clock)).unwrap();
    let ks = db.keyspace("default").unwrap();
    for k in ["a", "b", "c"] {
        ks.insert(k, format!("{k}0")).unwrap();
    }
    db.flush().unwrap();
    drop(ks.get_many(&["a", "b", "c"]).unwrap());
    let hits = counts(&db).0;
    let serializable = TransactionOptions::new().isolation(Isolation::Serializable);
    let mut tx = db.transaction_with(&serializable);
    assert_eq!(tx.get(&ks, "a").unwrap(), Some(b"a0".to_vec()));
    assert_eq!(
        tx.get_many(&ks, &["b", "c", "d"]).unwrap(),
        [Some(b"b0".to_vec()), Some(b"c0".to_vec()), None]
    );
    assert!(counts(&db).0 >= hits + 3);
    ks.insert("a", "a1").unwrap();
    tx.insert(&ks, "b", "b1");
    let err = tx.commit().unwrap_err();
    assert!(matches!(err, Error::Conflict { .. }), "{err}");
    assert_eq!(ks.get("a").unwrap(), Some(b"a1".to_vec()));
    assert_eq!(ks.get("b").unwrap(), Some(b"b0".to_vec()));
}

/// A read that may not wait for the disk answers from a cached row when the block is no
/// longer cached (here: no block cache at all).
#[test]
fn a_read_in_memory_answers_from_a_cached_row() {
    let dir = mem_tempdir();
    let clock = Clock::manual(START);
    let db = Db::open(dir.path(), options(&clock).block_cache_size(0)).unwrap();
    let ks = db.keyspace("default").unwrap();
    ks.insert("k", "v").unwrap();
    ks.insert("other", "w").unwrap();
    db.flush().unwrap();
    assert!(matches!(
        ks.get_with_in_memory("other", <[u8]>::to_vec).unwrap(),
        InMemory::NeedsIo
    ));
    assert_eq!(ks.get("k").unwrap(), Some(b"v".to_vec()));
    assert!(matches!(
        ks.get_with_in_memory("k", <[u8]>::to_vec).unwrap(),
        InMemory::Answer(Some(v)) if v == b"v"
    ));
}

/// A follower caches rows of the tables it sees; after the writer compacts them away and
/// the follower refreshes, it reads the new tables and the answers stay right.
#[test]
fn a_follower_reads_right_across_a_refresh_after_compaction() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Clock::manual(START);
    let db = Db::open(
        dir.path(),
        options(&clock).durability(cairn::Durability::Buffered),
    )
    .unwrap();
    let ks = db.keyspace("default").unwrap();
    for i in 0..100u32 {
        ks.insert(format!("k{i:03}"), "old").unwrap();
    }
    db.flush().unwrap();
    let follower = Db::open_follower(dir.path(), options(&clock)).unwrap();
    let fks = follower.keyspace("default").unwrap();
    for _ in 0..2 {
        assert_eq!(fks.get("k007").unwrap(), Some(b"old".to_vec()));
    }
    assert!(follower.stats().row_cache_hits >= 1);
    ks.insert("k007", "new").unwrap();
    ks.remove("k008").unwrap();
    db.flush().unwrap();
    db.compact().unwrap();
    follower.refresh().unwrap();
    for _ in 0..2 {
        assert_eq!(fks.get("k007").unwrap(), Some(b"new".to_vec()));
        assert_eq!(fks.get("k008").unwrap(), None);
        assert_eq!(fks.get("k009").unwrap(), Some(b"old".to_vec()));
    }
}
