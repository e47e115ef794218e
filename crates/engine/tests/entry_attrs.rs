//! Entry attributes, HEAD requests and expiry (TTL) through the public API: metadata
//! limits, heads without values, an expired entry hiding older versions in snapshots and
//! tables, and expired data reclaimed from cold tables without further writes, by
//! `Db::compact_expired` and by the background check.

#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

mod ordered_common;

use std::time::{Duration, Instant, UNIX_EPOCH};

use cairn::Readable;
use cairn::{Clock, Db, EntryOptions, Error, Meta, Options, MAX_META_LEN};

use ordered_common::{mem_tempdir, tiny};

const START: u64 = 1_700_000_000_000;

fn options(clock: &Clock) -> Options {
    tiny(64 << 10, 1024).clock(clock.clone())
}

#[test]
fn heads_report_attributes_and_gets_return_plain_values() {
    let dir = mem_tempdir();
    let clock = Clock::manual(START);
    let db = Db::open(dir.path(), options(&clock)).unwrap();
    let ks = db.keyspace("files").unwrap();
    ks.insert("plain", "abc").unwrap();
    ks.insert_meta("typed", "hello", Meta::new(42, "text/plain"))
        .unwrap();
    ks.insert_ttl("short", "xy", Duration::from_secs(10))
        .unwrap();
    let mut batch = db.batch();
    let at = UNIX_EPOCH + Duration::from_millis(START + 5_000);
    batch.insert_entry(&ks, "batched", "v", &EntryOptions::new().expires_at(at));
    batch.commit().unwrap();

    assert_eq!(ks.get("typed").unwrap(), Some(b"hello".to_vec()));
    let h = ks.head("typed").unwrap().unwrap();
    assert_eq!(
        (
            h.value_len,
            h.tag,
            h.meta.as_slice(),
            h.expires_at,
            h.separated
        ),
        (5, 42, &b"text/plain"[..], None, false)
    );
    let plain = ks.head("plain").unwrap().unwrap();
    assert_eq!((plain.value_len, plain.tag, plain.meta.len()), (3, 0, 0));
    assert!(plain.seqno < h.seqno);
    assert_eq!(
        ks.head("short").unwrap().unwrap().expires_at,
        Some(START + 10_000)
    );
    assert_eq!(ks.head("missing").unwrap(), None);

    // Head scans agree with the value scans, in both directions, before and after a flush.
    for round in 0..2 {
        let keys: Vec<Vec<u8>> = ks.iter().map(|p| p.unwrap().0).collect();
        let heads: Vec<Vec<u8>> = ks
            .range_heads::<&[u8], _>(..)
            .map(|p| p.unwrap().0)
            .collect();
        let mut back: Vec<Vec<u8>> = ks.prefix_heads("").rev().map(|p| p.unwrap().0).collect();
        back.reverse();
        assert_eq!((&heads, &back), (&keys, &keys), "round {round}");
        assert_eq!(keys.len(), 4);
        db.flush().unwrap();
    }

    // The batched entry expires at +5 s, the ttl one at +10 s.
    clock.advance(Duration::from_secs(5));
    assert_eq!(ks.get("batched").unwrap(), None);
    assert_eq!(ks.get("short").unwrap(), Some(b"xy".to_vec()));
    clock.advance(Duration::from_secs(5));
    assert_eq!(ks.head("short").unwrap(), None);
    let left: Vec<Vec<u8>> = ks.prefix_heads("").map(|p| p.unwrap().0).collect();
    assert_eq!(left, [b"plain".to_vec(), b"typed".to_vec()]);
    drop(ks);
    db.close().unwrap();

    // Attributes survive a reopen (from tables and from the log).
    let db = Db::open(dir.path(), options(&clock)).unwrap();
    let ks = db.keyspace("files").unwrap();
    ks.insert_meta("logged", "z", Meta::new(1, "m")).unwrap();
    drop(ks);
    db.close().unwrap();
    let db = Db::open(dir.path(), options(&clock)).unwrap();
    let ks = db.keyspace("files").unwrap();
    assert_eq!(ks.head("typed").unwrap().unwrap().tag, 42);
    assert_eq!(ks.head("logged").unwrap().unwrap().meta, b"m");
    db.close().unwrap();
}

#[test]
fn invalid_attributes_are_refused() {
    let dir = mem_tempdir();
    let clock = Clock::manual(START);
    let db = Db::open(dir.path(), options(&clock)).unwrap();
    let ks = db.keyspace("k").unwrap();
    let too_big = Meta::new(1, vec![7u8; MAX_META_LEN + 1]);
    assert!(matches!(
        ks.insert_meta("a", "v", too_big.clone()),
        Err(Error::InvalidArgument(_))
    ));
    ks.insert_meta("a", "v", Meta::new(1, vec![7u8; MAX_META_LEN]))
        .unwrap();
    assert_eq!(ks.head("a").unwrap().unwrap().meta.len(), MAX_META_LEN);
    let both = EntryOptions::new()
        .ttl(Duration::from_secs(1))
        .expires_at(UNIX_EPOCH);
    assert!(matches!(
        ks.insert_entry("b", "v", &both),
        Err(Error::InvalidArgument(_))
    ));
    let mut batch = db.batch();
    batch.insert(&ks, "c", "v");
    batch.insert_entry(&ks, "d", "v", &EntryOptions::new().meta(too_big));
    assert!(matches!(batch.commit(), Err(Error::InvalidArgument(_))));
    assert_eq!(ks.get("c").unwrap(), None, "a refused batch writes nothing");
    db.close().unwrap();
}

#[test]
fn an_expired_entry_hides_older_versions_in_snapshots_and_after_compaction() {
    let dir = mem_tempdir();
    let clock = Clock::manual(START);
    let db = Db::open(dir.path(), options(&clock)).unwrap();
    let ks = db.keyspace("k").unwrap();
    ks.insert("key", "old").unwrap();
    db.flush().unwrap();
    ks.insert_ttl("key", "new", Duration::from_secs(1)).unwrap();
    let snap = db.snapshot();
    // An expiry in the past is allowed: invisible at once, and hides "new" and "old".
    ks.insert_entry("past", "p", &EntryOptions::new().expires_at(UNIX_EPOCH))
        .unwrap();
    assert_eq!(ks.get("past").unwrap(), None);
    assert_eq!(snap.get(&ks, "key").unwrap(), Some(b"new".to_vec()));
    clock.advance(Duration::from_secs(1));
    for _ in 0..2 {
        assert_eq!(ks.get("key").unwrap(), None);
        assert_eq!(snap.get(&ks, "key").unwrap(), None);
        assert_eq!(snap.head(&ks, "key").unwrap(), None);
        assert_eq!(snap.iter(&ks).count(), 0);
        db.flush().unwrap();
        db.compact_expired().unwrap();
    }
    drop(snap);
    db.close().unwrap();
}

/// Writes `n` entries expiring at `START + 1 s` and pushes them into tables below level 0.
fn cold_store(o: Options) -> (tempfile::TempDir, Db) {
    let dir = mem_tempdir();
    let db = Db::open(dir.path(), o).unwrap();
    let ks = db.keyspace("cold").unwrap();
    ks.insert("keep", "forever").unwrap();
    let mut x = 0x9e37_79b9u32;
    for i in 0..3000u32 {
        // Incompressible values, so the table bytes measure them.
        let value: Vec<u8> = (0..200)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                x as u8
            })
            .collect();
        ks.insert_ttl(format!("k{i:06}"), value, Duration::from_secs(1))
            .unwrap();
    }
    drop(ks);
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    (dir, db)
}

fn table_bytes(db: &Db) -> u64 {
    db.stats().table_bytes
}

#[test]
fn compact_expired_reclaims_cold_tables_without_writes() {
    let clock = Clock::manual(START);
    let o = options(&clock).expiry_check_interval(Duration::from_secs(3600));
    let (_dir, db) = cold_store(o);
    let before = table_bytes(&db);
    assert!(before > 300_000, "the data should be in tables: {before}");
    // Nothing has expired yet: nothing to do.
    assert_eq!(db.compact_expired().unwrap(), 0);
    assert_eq!(table_bytes(&db), before);
    clock.advance(Duration::from_secs(1));
    let runs = db.compact_expired().unwrap();
    assert!(runs > 0);
    let after = table_bytes(&db);
    assert!(after * 5 < before, "{before} -> {after} bytes");
    // The reclaimed tables are not picked again.
    assert_eq!(db.compact_expired().unwrap(), 0);
    let ks = db.keyspace("cold").unwrap();
    let left: Vec<_> = ks.iter().map(|p| p.unwrap()).collect();
    assert_eq!(left, [(b"keep".to_vec(), b"forever".to_vec())]);
    db.close().unwrap();
}

#[test]
fn the_background_check_reclaims_cold_tables_on_its_own() {
    let clock = Clock::manual(START);
    let o = options(&clock).expiry_check_interval(Duration::from_millis(20));
    let (_dir, db) = cold_store(o);
    let before = table_bytes(&db);
    clock.advance(Duration::from_secs(2));
    let deadline = Instant::now() + Duration::from_secs(30);
    while table_bytes(&db) * 5 >= before {
        assert!(
            Instant::now() < deadline,
            "still {} bytes",
            table_bytes(&db)
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let ks = db.keyspace("cold").unwrap();
    assert_eq!(ks.iter().count(), 1);
    db.close().unwrap();
}
