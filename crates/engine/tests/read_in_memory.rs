//! Reads that may not do I/O (`Keyspace::get_with_in_memory`, `contains_key_in_memory`
//! and their `Readable` twins): they answer from the memtables, open tables and cached
//! blocks exactly as the full read does, and say `NeedsIo` where the full read would open
//! a table, read a block or a separated value, or merge operands. Every case compares the
//! memory read with the full read at the same point; the model test
//! (`ordered_model.rs`) does the same for random operation sequences.
#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

mod ordered_common;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use cairn::{
    AddI64, Clock, Db, Durability, EntryOptions, InMemory, Keyspace, KeyspaceOptions, Options,
    Readable,
};
use ordered_common::{mem_tempdir, tiny};

fn mem_get(ks: &Keyspace, key: &[u8]) -> InMemory<Option<Vec<u8>>> {
    ks.get_with_in_memory(key, <[u8]>::to_vec).unwrap()
}

fn options() -> Options {
    Options::default().durability(Durability::Buffered)
}

#[test]
fn memtable_reads_answer_like_the_full_read() {
    let dir = mem_tempdir();
    let db = Db::open(dir.path(), options()).unwrap();
    let ks = db.keyspace("k").unwrap();
    ks.insert("a", "1").unwrap();
    ks.insert("gone", "x").unwrap();
    ks.remove("gone").unwrap();
    assert_eq!(mem_get(&ks, b"a"), InMemory::Answer(Some(b"1".to_vec())));
    assert_eq!(mem_get(&ks, b"gone"), InMemory::Answer(None), "tombstone");
    assert_eq!(mem_get(&ks, b"never"), InMemory::Answer(None));
    assert_eq!(
        ks.contains_key_in_memory("a").unwrap(),
        InMemory::Answer(true)
    );
    assert_eq!(
        ks.contains_key_in_memory("gone").unwrap(),
        InMemory::Answer(false)
    );
    // `f` sees the value in place and its result is returned.
    assert_eq!(
        ks.get_with_in_memory("a", <[u8]>::len).unwrap(),
        InMemory::Answer(Some(1))
    );
    drop(ks);
    db.close().unwrap();
}

/// A key in a table whose block is not cached needs I/O; once a full read has cached
/// the block (and opened the table), the memory read answers, counting a cache hit; a
/// memory read that stops counts no miss and caches nothing.
#[test]
fn table_reads_need_io_until_the_block_is_cached() {
    let dir = mem_tempdir();
    let db = Db::open(dir.path(), options()).unwrap();
    let ks = db.keyspace("k").unwrap();
    for i in 0..100u32 {
        ks.insert(format!("key{i:03}"), format!("value{i}"))
            .unwrap();
    }
    ks.remove("key050").unwrap();
    db.flush().unwrap();
    // A compaction running meanwhile would rewrite the table, uncached.
    db.wait_for_compactions().unwrap();
    drop(ks);
    db.close().unwrap();

    let db = Db::open(dir.path(), options()).unwrap();
    db.wait_for_compactions().unwrap();
    let ks = db.keyspace("k").unwrap();
    assert_eq!(db.stats().memtable_bytes, 0, "the writes are in a table");
    let before = db.stats();
    assert_eq!(mem_get(&ks, b"key007"), InMemory::NeedsIo);
    assert_eq!(
        ks.contains_key_in_memory("key007").unwrap(),
        InMemory::NeedsIo
    );
    let after = db.stats();
    assert_eq!(
        after.cache_misses, before.cache_misses,
        "a stop is not a miss"
    );
    assert_eq!(after.cache_hits, before.cache_hits);
    // Still not cached: the memory read inserted nothing.
    assert_eq!(mem_get(&ks, b"key007"), InMemory::NeedsIo);

    assert_eq!(ks.get("key007").unwrap(), Some(b"value7".to_vec()));
    let hits = db.stats().cache_hits;
    assert_eq!(
        mem_get(&ks, b"key007"),
        InMemory::Answer(Some(b"value7".to_vec()))
    );
    assert!(
        db.stats().cache_hits > hits,
        "an answer from a cached block is a hit"
    );
    // The same block holds the tombstone and absent keys around it.
    assert_eq!(ks.get("key050").unwrap(), None);
    assert_eq!(mem_get(&ks, b"key050"), InMemory::Answer(None), "tombstone");
    assert_eq!(
        ks.contains_key_in_memory("key050").unwrap(),
        InMemory::Answer(false)
    );
    assert_eq!(
        ks.contains_key_in_memory("key007").unwrap(),
        InMemory::Answer(true)
    );
    // A key the table's filter rules out needs no block.
    assert_eq!(mem_get(&ks, b"zzz-absent"), InMemory::Answer(None));
    drop(ks);
    db.close().unwrap();
}

#[test]
fn without_a_block_cache_table_reads_always_need_io() {
    let dir = mem_tempdir();
    let db = Db::open(dir.path(), options().block_cache_size(0)).unwrap();
    let ks = db.keyspace("k").unwrap();
    ks.insert("old", "1").unwrap();
    db.flush().unwrap();
    // A compaction running meanwhile would rewrite the table, uncached.
    db.wait_for_compactions().unwrap();
    ks.insert("new", "2").unwrap();
    for _ in 0..3 {
        assert_eq!(ks.get("old").unwrap(), Some(b"1".to_vec()));
        assert_eq!(mem_get(&ks, b"old"), InMemory::NeedsIo);
        assert_eq!(mem_get(&ks, b"new"), InMemory::Answer(Some(b"2".to_vec())));
    }
    drop(ks);
    db.close().unwrap();
}

#[test]
fn expired_entries_read_as_absent_from_memory_and_tables() {
    let dir = mem_tempdir();
    let clock = Clock::manual(1_000_000);
    let db = Db::open(dir.path(), options().clock(clock.clone())).unwrap();
    let ks = db.keyspace("k").unwrap();
    let ttl = EntryOptions::new().ttl(Duration::from_secs(10));
    ks.insert_entry("short", "v", &ttl).unwrap();
    assert_eq!(
        mem_get(&ks, b"short"),
        InMemory::Answer(Some(b"v".to_vec()))
    );
    clock.advance(Duration::from_secs(11));
    assert_eq!(ks.get("short").unwrap(), None);
    assert_eq!(
        mem_get(&ks, b"short"),
        InMemory::Answer(None),
        "expired in memtable"
    );

    ks.insert_entry("table", "t", &ttl).unwrap();
    db.flush().unwrap();
    // A compaction running meanwhile would rewrite the table, uncached.
    db.wait_for_compactions().unwrap();
    assert_eq!(ks.get("table").unwrap(), Some(b"t".to_vec()));
    assert_eq!(
        mem_get(&ks, b"table"),
        InMemory::Answer(Some(b"t".to_vec()))
    );
    clock.advance(Duration::from_secs(11));
    assert_eq!(ks.get("table").unwrap(), None);
    assert_eq!(
        mem_get(&ks, b"table"),
        InMemory::Answer(None),
        "expired in a table"
    );
    assert_eq!(
        ks.contains_key_in_memory("table").unwrap(),
        InMemory::Answer(false)
    );
    drop(ks);
    db.close().unwrap();
}

#[test]
fn merge_operands_and_separated_values_need_io() {
    let dir = mem_tempdir();
    let db = Db::open(dir.path(), options()).unwrap();
    let counts = db
        .keyspace_with(
            "counts",
            KeyspaceOptions::default().merge_operator(Arc::new(AddI64)),
        )
        .unwrap();
    counts.merge("n", "5").unwrap();
    counts.merge("n", "2").unwrap();
    assert_eq!(mem_get(&counts, b"n"), InMemory::NeedsIo);
    assert_eq!(
        counts.contains_key_in_memory("n").unwrap(),
        InMemory::NeedsIo
    );
    assert_eq!(counts.get("n").unwrap(), Some(b"7".to_vec()));
    // A plain value over the operands answers again.
    counts.insert("n", "1").unwrap();
    assert_eq!(
        mem_get(&counts, b"n"),
        InMemory::Answer(Some(b"1".to_vec()))
    );

    let media = db
        .keyspace_with("media", KeyspaceOptions::separated(64))
        .unwrap();
    media.insert("big", vec![7u8; 1000]).unwrap();
    media.insert("small", "s").unwrap();
    assert!(media.head("big").unwrap().unwrap().separated);
    assert_eq!(
        mem_get(&media, b"big"),
        InMemory::NeedsIo,
        "a blob read is I/O"
    );
    assert_eq!(media.get("big").unwrap(), Some(vec![7u8; 1000]));
    assert_eq!(
        mem_get(&media, b"big"),
        InMemory::NeedsIo,
        "blobs are not cached"
    );
    // Presence needs no value.
    assert_eq!(
        media.contains_key_in_memory("big").unwrap(),
        InMemory::Answer(true)
    );
    assert_eq!(
        mem_get(&media, b"small"),
        InMemory::Answer(Some(b"s".to_vec()))
    );
    drop((counts, media));
    db.close().unwrap();
}

#[test]
fn snapshots_read_their_own_point_from_memory() {
    let dir = mem_tempdir();
    let db = Db::open(dir.path(), options()).unwrap();
    let ks = db.keyspace("k").unwrap();
    ks.insert("a", "old").unwrap();
    let snap = db.snapshot();
    ks.insert("a", "new").unwrap();
    ks.remove("b").unwrap();
    assert_eq!(
        snap.get_with_in_memory(&ks, "a", <[u8]>::to_vec).unwrap(),
        InMemory::Answer(Some(b"old".to_vec()))
    );
    assert_eq!(
        db.get_with_in_memory(&ks, "a", <[u8]>::to_vec).unwrap(),
        InMemory::Answer(Some(b"new".to_vec()))
    );
    db.flush().unwrap();
    // A compaction running meanwhile would rewrite the table, uncached.
    db.wait_for_compactions().unwrap();
    // Both versions are in a table now; once its block is cached, both points answer.
    assert_eq!(snap.get(&ks, "a").unwrap(), Some(b"old".to_vec()));
    assert_eq!(
        snap.get_with_in_memory(&ks, "a", <[u8]>::to_vec).unwrap(),
        InMemory::Answer(Some(b"old".to_vec()))
    );
    assert_eq!(mem_get(&ks, b"a"), InMemory::Answer(Some(b"new".to_vec())));
    assert_eq!(
        snap.contains_key_in_memory(&ks, "a").unwrap(),
        InMemory::Answer(true)
    );
    // A snapshot of another store is refused, as by the full read.
    let other_dir = mem_tempdir();
    let other = Db::open(other_dir.path(), options()).unwrap();
    assert!(other
        .snapshot()
        .get_with_in_memory(&ks, "a", <[u8]>::len)
        .is_err());
    drop(ks);
    drop(snap);
    db.close().unwrap();
    other.close().unwrap();
}

#[test]
fn range_tombstones_apply_and_need_their_tables_open() {
    let dir = mem_tempdir();
    let db = Db::open(dir.path(), options()).unwrap();
    let ks = db.keyspace("k").unwrap();
    for key in ["a", "b", "c", "d"] {
        ks.insert(key, key).unwrap();
    }
    ks.remove_range("b".."d").unwrap();
    assert_eq!(
        mem_get(&ks, b"b"),
        InMemory::Answer(None),
        "hidden in memtable"
    );
    assert_eq!(mem_get(&ks, b"a"), InMemory::Answer(Some(b"a".to_vec())));
    db.flush().unwrap();
    // A compaction running meanwhile would rewrite the table, uncached.
    db.wait_for_compactions().unwrap();
    drop(ks);
    db.close().unwrap();

    let db = Db::open(dir.path(), options()).unwrap();
    db.wait_for_compactions().unwrap();
    let ks = db.keyspace("k").unwrap();
    assert_eq!(mem_get(&ks, b"c"), InMemory::NeedsIo);
    for key in ["a", "b", "c", "d"] {
        let full = ks.get(key).unwrap();
        assert_eq!(
            mem_get(&ks, key.as_bytes()),
            InMemory::Answer(full),
            "{key}"
        );
    }
    assert_eq!(mem_get(&ks, b"c"), InMemory::Answer(None));
    drop(ks);
    db.close().unwrap();
}

#[test]
fn dropped_keyspaces_are_refused() {
    let dir = mem_tempdir();
    let db = Db::open(dir.path(), options()).unwrap();
    let ks = db.keyspace("k").unwrap();
    ks.insert("a", "1").unwrap();
    db.drop_keyspace("k").unwrap();
    assert!(ks.get_with_in_memory("a", <[u8]>::len).is_err());
    assert!(ks.contains_key_in_memory("a").is_err());
    drop(ks);
    db.close().unwrap();
}

/// Readers making memory reads while a writer forces flushes and compactions (new super
/// versions, tables opened and deleted, blocks evicted): every answer is the key's one
/// value, and every key is answered once its block is cached again.
#[test]
fn memory_reads_race_flushes_and_compactions() {
    let dir = mem_tempdir();
    let db = Db::open(dir.path(), tiny(8 << 10, 256).block_cache_size(1 << 20)).unwrap();
    let ks = db.keyspace("k").unwrap();
    let fixed = |i: u32| format!("fixed{i:04}").into_bytes();
    for i in 0..500u32 {
        ks.insert(fixed(i), i.to_le_bytes()).unwrap();
    }
    let stop = Arc::new(AtomicBool::new(false));
    let answered = Arc::new(AtomicU64::new(0));
    let writer = {
        let (ks, stop) = (ks.clone(), Arc::clone(&stop));
        thread::spawn(move || {
            let mut n = 0u32;
            while !stop.load(Ordering::Relaxed) {
                ks.insert(format!("churn{:06}", n % 3000), vec![n as u8; 64])
                    .unwrap();
                n += 1;
            }
        })
    };
    let readers: Vec<_> = (0..3u32)
        .map(|r| {
            let (ks, answered) = (ks.clone(), Arc::clone(&answered));
            thread::spawn(move || {
                for round in 0..20u32 {
                    for i in (r..500).step_by(3) {
                        let key = fixed(i);
                        let want = Some(i.to_le_bytes().to_vec());
                        match ks.get_with_in_memory(&key, <[u8]>::to_vec).unwrap() {
                            InMemory::Answer(v) => {
                                assert_eq!(v, want, "key {i}, round {round}");
                                answered.fetch_add(1, Ordering::Relaxed);
                            }
                            InMemory::NeedsIo => {
                                assert_eq!(ks.get(&key).unwrap(), want, "key {i}");
                            }
                        }
                        let present = ks.contains_key_in_memory(&key).unwrap();
                        assert_ne!(present, InMemory::Answer(false), "key {i}");
                    }
                }
            })
        })
        .collect();
    for r in readers {
        r.join().unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
    assert!(db.stats().flushes > 0, "the writer forced flushes");
    assert!(
        answered.load(Ordering::Relaxed) > 0,
        "memory reads answered"
    );
    drop(ks);
    db.close().unwrap();
}
