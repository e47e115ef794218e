//! Flushes of several sealed memtables at once (`Options::memtables_per_flush`): how many
//! level-0 tables they write, that the merge keeps every version a reader can still ask
//! for, and when fewer sealed memtables are flushed anyway (`Db::flush`, idle writes).
#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

mod ordered_common;

use std::time::{Duration, Instant};

use cairn::Readable;
use cairn::{Db, Options};
use ordered_common::{collect, mem_tempdir, tiny, wal_files};

/// Small memtables, `per_flush` of them to a flush, and no compaction, so every flush's
/// tables stay in level 0 where they can be counted.
fn options(per_flush: usize) -> Options {
    tiny(4 << 10, 512)
        .memtables_per_flush(per_flush)
        .max_immutable_memtables(2 * per_flush)
        .l0_compaction_trigger(1000)
        .l0_slowdown_trigger(1000)
        .l0_stop_trigger(1000)
        // Flushed tables stay in level 0, where these tests count them: no level-0 merge
        // once writes pause either.
        .idle_compaction_percent(0)
}

/// Writes three versions of 300 keys and deletes every fifth key, one write at a time;
/// returns a snapshot taken after the first version.
fn write_versions(db: &Db) -> cairn::Snapshot {
    let ks = db.keyspace("k").unwrap();
    let mut first = None;
    for round in 0..3u32 {
        for i in 0..300u32 {
            ks.insert(format!("key{i:04}"), format!("r{round}-{i}"))
                .unwrap();
        }
        if round == 0 {
            first = Some(db.snapshot());
        }
    }
    for i in (0..300u32).step_by(5) {
        ks.remove(format!("key{i:04}")).unwrap();
    }
    first.unwrap()
}

#[test]
fn sealed_memtables_merge_into_one_table_per_flush() {
    // The same writes seal memtables at the same points whatever `memtables_per_flush`
    // is (a memtable seals when its own size reaches `memtable_size`), so one flush per
    // memtable counts the seals.
    let mut level0 = Vec::new();
    let mut contents = Vec::new();
    for per_flush in [1, 3] {
        let tmp = mem_tempdir();
        let db = Db::open(tmp.path(), options(per_flush)).unwrap();
        let snap = write_versions(&db);
        db.wait_for_compactions().unwrap();
        let stats = db.stats();
        assert_eq!(stats.tables_per_level[1..].iter().sum::<usize>(), 0);
        assert_eq!(stats.tables_per_level[0] as u64, stats.flushes, "{stats:?}");

        let ks = db.keyspace("k").unwrap();
        // The snapshot's versions survived the merge of their memtable with newer ones.
        for i in 0..300u32 {
            let key = format!("key{i:04}");
            let old = snap.get(&ks, &key).unwrap();
            assert_eq!(old.as_deref(), Some(format!("r0-{i}").as_bytes()), "{key}");
            let now = ks.get(&key).unwrap();
            let want = (i % 5 != 0).then(|| format!("r2-{i}").into_bytes());
            assert_eq!(now, want, "{key}");
        }
        level0.push(stats.tables_per_level[0]);
        contents.push(collect(ks.iter()));
        drop(ks);
        drop(snap);
        db.close().unwrap();

        // And the tables alone, after a reopen, hold the same.
        let db = Db::open(tmp.path(), options(per_flush)).unwrap();
        let ks = db.keyspace("k").unwrap();
        assert_eq!(&collect(ks.iter()), contents.last().unwrap());
    }
    let (seals, merged) = (level0[0], level0[1]);
    assert!(
        seals >= 9,
        "the writes should seal many memtables, sealed {seals}"
    );
    assert_eq!(merged, seals.div_ceil(3), "{seals} memtables, 3 per flush");
    assert_eq!(contents[0], contents[1]);
}

#[test]
fn flush_writes_fewer_sealed_memtables_than_a_flush_waits_for() {
    let tmp = mem_tempdir();
    let db = Db::open(tmp.path(), options(50)).unwrap();
    let ks = db.keyspace("k").unwrap();
    for i in 0..400u32 {
        ks.insert(format!("key{i:04}"), "v".repeat(40)).unwrap();
    }
    db.flush().unwrap();
    let stats = db.stats();
    assert_eq!(stats.flushes, 1, "{stats:?}");
    assert_eq!(stats.tables_per_level[0], 1);
    assert_eq!(ks.len().unwrap(), 400);
}

#[test]
fn sealed_memtables_are_flushed_once_writes_pause() {
    let tmp = mem_tempdir();
    let db = Db::open(tmp.path(), options(50)).unwrap();
    let ks = db.keyspace("k").unwrap();
    // Every seal happens after `start`, so no idle flush can begin before `start + 1 s`.
    let start = Instant::now();
    for i in 0..400u32 {
        ks.insert(format!("key{i:04}"), "v".repeat(40)).unwrap();
    }
    let deadline = start + Duration::from_secs(30);
    while db.stats().flushes == 0 {
        assert!(
            Instant::now() < deadline,
            "sealed memtables were never flushed"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(
        start.elapsed() >= Duration::from_secs(1),
        "{:?}",
        start.elapsed()
    );
    // One flush took every sealed memtable; the active one stays.
    let stats = db.stats();
    assert_eq!(stats.tables_per_level[0], 1, "{stats:?}");
    assert!(stats.memtable_bytes > 0);
    assert_eq!(ks.len().unwrap(), 400);
}

/// With `Buffered` writes nothing fsyncs the log before the memtable switch, but once the
/// active memtable holds seven eighths of its size the log thread fsyncs the log file
/// ahead of the switch (so the switch's own fsync, which writers wait for, finds little
/// left): the durable seqno catches up while the same memtable and log file stay active.
/// In `Sync` mode every commit fsyncs the log itself, so the log thread's background
/// fsyncs (every 4 MiB of log, and the one asked for ahead of a memtable switch) find
/// nothing left to make durable: a commit costs one fsync and the log thread none.
#[test]
fn sync_commits_leave_the_log_thread_no_fsync() {
    let dir = mem_tempdir();
    let path = dir.path().join("db");
    let memtable: u64 = 1 << 20;
    let db = Db::open(
        &path,
        Options::default()
            .durability(cairn::Durability::Sync)
            .memtable_size(memtable as usize),
    )
    .unwrap();
    let ks = db.keyspace("k").unwrap();
    let value = vec![b'v'; 1000];
    let before = db.stats().wal_syncs;
    // Past seven eighths of the memtable (its entries: `memtable_bytes` also counts the
    // point index, a sixteenth), where the sync ahead is asked for, and short of a switch.
    let mut puts = 0u64;
    while db.stats().memtable_bytes < memtable * 31 / 32 {
        ks.insert(format!("key{puts:08}"), &value).unwrap();
        puts += 1;
    }
    std::thread::sleep(Duration::from_millis(200));
    let stats = db.stats();
    assert_eq!(wal_files(&path).len(), 1, "the log file was not switched");
    assert_eq!(stats.flushes, 0);
    assert_eq!(stats.durable_seqno, stats.last_seqno);
    assert_eq!(
        stats.wal_syncs - before,
        puts,
        "one fsync per commit and none from the log thread"
    );
}

#[test]
fn the_log_is_synced_ahead_of_a_memtable_switch() {
    let dir = mem_tempdir();
    let path = dir.path().join("db");
    let memtable = 1 << 20;
    let db = Db::open(
        &path,
        Options::default()
            .durability(cairn::Durability::Buffered)
            .memtable_size(memtable),
    )
    .unwrap();
    let ks = db.keyspace("k").unwrap();
    let value = vec![b'v'; 1000];
    // Three quarters of the memtable's entries (each charges more than its 1,000-byte
    // value): no sync is asked for yet.
    let mut written = 0;
    while written < memtable * 3 / 4 / 1016 {
        ks.insert(format!("key{written:08}"), &value).unwrap();
        written += 1;
    }
    std::thread::sleep(Duration::from_millis(100));
    let last = db.last_seqno();
    assert!(
        db.durable_seqno() < last,
        "nothing fsyncs buffered writes yet"
    );
    // On toward seven eighths and past, polling the durable seqno after each write.
    let deadline = Instant::now() + Duration::from_secs(20);
    while db.durable_seqno() < db.last_seqno() - 1 {
        assert!(Instant::now() < deadline, "no sync ahead of the switch");
        assert!(
            written < memtable / 1016,
            "the memtable filled before the log was synced"
        );
        ks.insert(format!("key{written:08}"), &value).unwrap();
        written += 1;
        std::thread::sleep(Duration::from_millis(2));
    }
    assert_eq!(wal_files(&path).len(), 1, "the log file was not switched");
    assert_eq!(db.stats().flushes, 0);
    // Every key written reads back, and survives a reopen.
    drop(ks);
    drop(db);
    let db = Db::open(&path, Options::default()).unwrap();
    let ks = db.keyspace("k").unwrap();
    for i in 0..written {
        assert_eq!(
            ks.get(format!("key{i:08}")).unwrap(),
            Some(value.clone()),
            "{i}"
        );
    }
}
