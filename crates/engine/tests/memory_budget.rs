//! `Options::memory_budget`: the split `Stats` reports is the documented one, each share
//! stays within its bound under a write-heavy and a read-heavy workload over many tables,
//! sizes the budget replaces are not recorded in the store, and budgets too small to run
//! with are refused.
#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

mod ordered_common;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use cairn::{Db, Durability, Options, Stats, MIN_MEMORY_BUDGET};
use ordered_common::{assert_invalid, disk_tempdir};

/// The smallest budget: 4 MiB of memtables, 2 MiB of index and filter, 10 MiB of cache.
const BUDGET: usize = MIN_MEMORY_BUDGET;

/// Options that make many small tables whose index and filter blocks are large next to
/// their data (256-byte blocks, a restart point per key, 64 bloom bits per key), so a few
/// MiB of data fill the index and filter share.
fn many_tables() -> Options {
    Options::default()
        .durability(Durability::None)
        .block_size(256)
        .restart_interval(1)
        .bloom_bits_per_key(64)
        .table_size(128 << 10)
        .level1_size(1 << 20)
        .background_threads(2)
}

fn key(i: u64) -> String {
    format!("key{i:08}")
}

fn value(i: u64) -> String {
    format!("value-{i:010}-{}", "x".repeat(i as usize % 40))
}

/// Asserts every share of `s` is within its bound (`what` names the moment).
fn assert_within(s: &Stats, what: &str) {
    let budget = s.memory_budget.unwrap();
    assert!(
        s.memtable_bytes <= s.memtable_limit.unwrap(),
        "{what}: memtables {} over {:?}",
        s.memtable_bytes,
        s.memtable_limit
    );
    assert!(
        s.block_cache_bytes <= s.block_cache_capacity,
        "{what}: block cache {} over {}",
        s.block_cache_bytes,
        s.block_cache_capacity
    );
    assert!(
        s.index_filter_bytes <= s.index_filter_limit.unwrap(),
        "{what}: index and filter {} over {:?}",
        s.index_filter_bytes,
        s.index_filter_limit
    );
    assert!(
        s.memtable_limit.unwrap() + s.block_cache_capacity + s.index_filter_limit.unwrap()
            <= budget
    );
}

/// The shares `Stats` reports are the documented fractions of the budget; an explicit
/// block cache size is replaced by the cache's share, and the memtable size the budget
/// caps is the running one but not the recorded one.
#[test]
fn stats_report_the_documented_split() {
    let dir = disk_tempdir();
    let budget = 64usize << 20;
    let options = Options::default()
        .memory_budget(Some(budget))
        .block_cache_size(1 << 30)
        .memtable_size(32 << 20);
    let db = Db::open(dir.path(), options).unwrap();
    let s = db.stats();
    assert_eq!(s.memory_budget, Some(budget as u64));
    assert_eq!(s.memtable_limit, Some(budget as u64 / 4));
    assert_eq!(s.index_filter_limit, Some(budget as u64 / 8));
    assert_eq!(
        s.block_cache_capacity,
        (budget - budget / 4 - budget / 8) as u64
    );
    assert_eq!(s.block_cache_bytes, 0);
    assert_eq!(s.index_filter_bytes, 0);
    db.close().unwrap();
    // The manifest keeps the memtable size as given and no budget.
    let stored = Options::from_store(dir.path()).unwrap();
    assert_eq!(stored.memtable_size, 32 << 20);
    assert_eq!(stored.memory_budget, None);

    // Without a budget nothing is bounded by bytes but the cache.
    let db = Db::open(dir.path(), Options::default().block_cache_size(3 << 20)).unwrap();
    let s = db.stats();
    assert_eq!(s.memory_budget, None);
    assert_eq!(s.memtable_limit, None);
    assert_eq!(s.index_filter_limit, None);
    assert_eq!(s.block_cache_capacity, 3 << 20);
}

/// A budget below the minimum is refused by every open, before any file is created.
#[test]
fn budgets_too_small_are_refused() {
    let dir = disk_tempdir();
    let path = dir.path().join("store");
    for budget in [0, 1, 1 << 20, MIN_MEMORY_BUDGET - 1] {
        let options = Options::default().memory_budget(Some(budget));
        assert_invalid(options.validate(), "memory_budget");
        assert_invalid(Db::open(&path, options.clone()), "memory_budget");
        assert!(!path.exists());
        assert_invalid(Db::open_read_only(&path, options), "memory_budget");
    }
    let db = Db::open(&path, Options::default().memory_budget(Some(BUDGET))).unwrap();
    db.close().unwrap();
}

/// Two writers fill the store as fast as they can while a third thread reads `Stats`
/// throughout: the memtables never pass their share though flushes wait for 8 sealed
/// memtables unless pressed (without the budget they would hold up to 9 of 1 MiB, more
/// than twice the share), and the block cache never passes its capacity. The index and
/// filter share holds whenever background work is idle; while a compaction runs, the
/// tables it reads count too (see `Stats::index_filter_limit`).
#[test]
fn write_heavy_load_keeps_each_share() {
    let dir = disk_tempdir();
    let options = many_tables()
        .memory_budget(Some(BUDGET))
        .memtables_per_flush(8)
        .max_immutable_memtables(8);
    let db = Db::open(dir.path(), options).unwrap();
    let ks = db.keyspace("k").unwrap();
    let done = Arc::new(AtomicBool::new(false));
    let most_memtable = Arc::new(AtomicU64::new(0));
    let sampler = {
        let (db, done, most) = (db.clone(), Arc::clone(&done), Arc::clone(&most_memtable));
        std::thread::spawn(move || {
            let mut samples = 0u64;
            while !done.load(Ordering::Relaxed) {
                let s = db.stats();
                assert!(s.memtable_bytes <= s.memtable_limit.unwrap(), "{s:?}");
                assert!(s.block_cache_bytes <= s.block_cache_capacity, "{s:?}");
                most.fetch_max(s.memtable_bytes, Ordering::Relaxed);
                samples += 1;
            }
            samples
        })
    };
    const PER_WRITER: u64 = 60_000;
    let writers: Vec<_> = (0..2u64)
        .map(|w| {
            let ks = ks.clone();
            std::thread::spawn(move || {
                for i in 0..PER_WRITER {
                    // Interleaved keys, so flushes overlap and compactions run.
                    let k = i * 2 + w;
                    ks.insert(key(k), value(k)).unwrap();
                }
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    done.store(true, Ordering::Relaxed);
    let samples = sampler.join().unwrap();
    assert!(samples > 0);
    db.wait_for_compactions().unwrap();
    let s = db.stats();
    assert_within(&s, "after the writes");
    // The load reached the share: the bound did the holding back, not a light load.
    let limit = s.memtable_limit.unwrap();
    assert!(
        most_memtable.load(Ordering::Relaxed) > limit / 2,
        "{} of {limit}",
        most_memtable.load(Ordering::Relaxed)
    );
    assert!(s.tables_per_level.iter().sum::<usize>() > 10, "{s:?}");
    // Every write is there.
    for k in (0..2 * PER_WRITER).step_by(997) {
        assert_eq!(ks.get(key(k)).unwrap(), Some(value(k).into_bytes()));
    }
    assert_within(&db.stats(), "after reads");
}

/// A store whose tables' index and filter blocks together are larger than the share:
/// open without a budget, reading every table keeps them all (past the share); with the
/// budget, reads over all tables keep the held index and filter bytes within the share
/// after every read, the cache within its capacity, and every value is found.
#[test]
fn read_heavy_load_keeps_the_index_and_filter_share() {
    let dir = disk_tempdir();
    const KEYS: u64 = 400_000;
    {
        // Small memtables: many flushes, compacted into many tables.
        let db = Db::open(dir.path(), many_tables().memtable_size(256 << 10)).unwrap();
        let ks = db.keyspace("k").unwrap();
        let mut batch = db.batch();
        for i in 0..KEYS {
            batch.insert(&ks, key(i), value(i));
            if i % 1000 == 999 {
                batch.commit().unwrap();
                batch = db.batch();
            }
        }
        db.flush().unwrap();
        db.wait_for_compactions().unwrap();
        db.close().unwrap();
    }
    let limit = (BUDGET / 8) as u64;
    let step = 97;
    {
        let db = Db::open(dir.path(), many_tables()).unwrap();
        let ks = db.keyspace("k").unwrap();
        for i in (0..KEYS).step_by(step) {
            assert_eq!(ks.get(key(i)).unwrap(), Some(value(i).into_bytes()));
        }
        let s = db.stats();
        assert!(s.tables_per_level.iter().sum::<usize>() > 20, "{s:?}");
        assert!(
            s.index_filter_bytes > 2 * limit,
            "the tables must need more than the share: {s:?}"
        );
    }
    let db = Db::open(dir.path(), many_tables().memory_budget(Some(BUDGET))).unwrap();
    let ks = db.keyspace("k").unwrap();
    let mut most = 0;
    for round in 0..2u64 {
        for i in (round..KEYS).step_by(step) {
            assert_eq!(ks.get(key(i)).unwrap(), Some(value(i).into_bytes()));
            let s = db.stats();
            assert_within(&s, "during reads");
            most = most.max(s.index_filter_bytes);
        }
        // Absent keys probe every level's filter.
        for i in (0..KEYS).step_by(step * 10) {
            assert_eq!(ks.get(format!("{}-absent", key(i))).unwrap(), None);
            assert_within(&db.stats(), "absent-key reads");
        }
    }
    // The share was used, not left empty.
    assert!(most > limit / 2, "{most} of {limit}");
    let s = db.stats();
    assert!(s.block_cache_bytes > 0, "{s:?}");
    assert!(s.cache_hits + s.cache_misses > 0, "{s:?}");
    db.close().unwrap();

    // A read-only open holds every file of its view; under the budget it still closes
    // table readers (reopening them from the files it holds) and finds every value.
    let ro = Db::open_read_only(dir.path(), many_tables().memory_budget(Some(BUDGET))).unwrap();
    let ks = ro.get_keyspace("k").unwrap();
    assert_within(&ro.stats(), "after the read-only open");
    for i in (7..KEYS).step_by(step) {
        assert_eq!(ks.get(key(i)).unwrap(), Some(value(i).into_bytes()));
        assert_within(&ro.stats(), "read-only reads");
    }
}
