//! Range deletes end to end: `remove_prefix` and `remove_range` hide keys at once, keep
//! them for older snapshots, and compaction reclaims the space they held; they hide keys
//! from every kind of read (gets, heads, counts, scans of values, heads and entries),
//! combine with expiry, restart counters, survive in-place expiry rewrites, and tables
//! holding them verify and back up like any other.

#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

mod ordered_common;

use std::time::Duration;

use cairn::Readable;
use cairn::{Clock, Compression, Db, FileKind, Keyspace, Options, Snapshot};

use ordered_common::mem_tempdir;

/// Bytes of every table file in `dir`.
fn table_bytes(dir: &std::path::Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".sst"))
        .map(|e| e.metadata().unwrap().len())
        .sum()
}

fn options() -> Options {
    Options::default()
        .memtable_size(64 << 10)
        .l0_compaction_trigger(2)
        // Everything stays in level 1, which is then the bottom of the tree.
        .level1_size(256 << 20)
        .compression(Compression::None)
}

#[test]
fn remove_prefix_then_compaction_reclaims_the_space() {
    let dir = mem_tempdir();
    let db = Db::open(dir.path(), options()).unwrap();
    let ks = db.keyspace("data").unwrap();
    for i in 0..3000u32 {
        ks.insert(format!("p/{i:05}"), vec![i as u8; 200]).unwrap();
    }
    for i in 0..10u32 {
        ks.insert(format!("q/{i}"), b"keep").unwrap();
    }
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    let before = table_bytes(dir.path());
    assert!(before > 500_000, "the data is in tables: {before} bytes");

    let snap = db.snapshot();
    ks.remove_prefix("p/").unwrap();
    assert_eq!(db.last_seqno(), snap.seqno() + 1, "one write for 3000 keys");
    assert_eq!(ks.prefix("p/").count(), 0);
    assert_eq!(ks.get("p/00042").unwrap(), None);
    assert_eq!(
        snap.prefix(&ks, "p/").count(),
        3000,
        "the snapshot keeps them"
    );
    drop(snap);

    // A second level-0 table triggers a compaction into level 1, which holds the data.
    db.flush().unwrap();
    ks.insert("r", b"x").unwrap();
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    let after = table_bytes(dir.path());
    assert!(
        after * 20 < before,
        "compaction dropped the removed keys: {before} -> {after} bytes"
    );
    let left: Vec<_> = ks.iter().map(|r| r.unwrap().0).collect();
    assert_eq!(left.len(), 11);
    assert!(left.iter().all(|k| !k.starts_with(b"p/")));
    drop(ks);
    db.close().unwrap();

    let db = Db::open(dir.path(), options()).unwrap();
    let ks = db.keyspace("data").unwrap();
    assert_eq!(ks.iter().count(), 11);
    assert_eq!(ks.get("q/3").unwrap(), Some(b"keep".to_vec()));
}

#[test]
fn range_bounds_of_every_kind() {
    let dir = mem_tempdir();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    let ks = db.keyspace("k").unwrap();
    let fill = || {
        for k in ["a", "b", "c", "d", "e"] {
            ks.insert(k, k).unwrap();
        }
    };
    let keys = || -> Vec<Vec<u8>> { ks.iter().map(|r| r.unwrap().0).collect() };
    let ks_of = |v: &[&str]| -> Vec<Vec<u8>> { v.iter().map(|s| s.as_bytes().to_vec()).collect() };

    fill();
    ks.remove_range("b".."d").unwrap();
    assert_eq!(keys(), ks_of(&["a", "d", "e"]));
    fill();
    ks.remove_range("b"..="d").unwrap();
    assert_eq!(keys(), ks_of(&["a", "e"]));
    fill();
    ks.remove_range::<&str, _>((
        std::ops::Bound::Excluded("b"),
        std::ops::Bound::Included("d"),
    ))
    .unwrap();
    assert_eq!(keys(), ks_of(&["a", "b", "e"]));
    fill();
    ks.remove_range("c"..).unwrap();
    assert_eq!(keys(), ks_of(&["a", "b"]));
    fill();
    ks.remove_range(.."c").unwrap();
    assert_eq!(keys(), ks_of(&["c", "d", "e"]));
    let seqno = db.last_seqno();
    ks.remove_range("d".."b").unwrap();
    assert_eq!(db.last_seqno(), seqno, "an empty range writes nothing");
    fill();
    let mut batch = db.batch();
    batch.remove_range::<&[u8], _>(&ks, ..);
    batch.insert(&ks, "z", "after");
    batch.commit().unwrap();
    assert_eq!(keys(), ks_of(&["z"]));
    assert_eq!(ks.iter().rev().count(), 1);
    db.flush().unwrap();
    assert_eq!(keys(), ks_of(&["z"]));
    assert!(ks.remove_range(..=vec![0u8; 65_535]).is_err());
}

const START: u64 = 1_700_000_000_000;

fn clocked(clock: &Clock) -> Options {
    options()
        .clock(clock.clone())
        // Expired data is reclaimed only when a test asks (`compact_expired`).
        .expiry_check_interval(Duration::from_secs(3600))
}

/// Every read of the keyspace agrees that exactly `want` (ascending) are live, now or at
/// `snap`: gets, heads, `len`, value, head and entry scans in both directions.
fn check_reads(db: &Db, ks: &Keyspace, snap: Option<&Snapshot>, probe: &[&str], want: &[&str]) {
    let live = |k: &str| want.contains(&k);
    for k in probe {
        let (got, head) = match snap {
            Some(s) => (s.get(ks, k).unwrap(), s.head(ks, k).unwrap()),
            None => (ks.get(k).unwrap(), ks.head(k).unwrap()),
        };
        assert_eq!(got.is_some(), live(k), "get {k}");
        assert_eq!(head.is_some(), live(k), "head {k}");
    }
    let want: Vec<Vec<u8>> = want.iter().map(|k| k.as_bytes().to_vec()).collect();
    let mut rev = want.clone();
    rev.reverse();
    let (keys, back, heads, entries, len) = match snap {
        Some(s) => (
            s.iter(ks).map(|r| r.unwrap().0).collect::<Vec<_>>(),
            s.iter(ks).rev().map(|r| r.unwrap().0).collect::<Vec<_>>(),
            s.range_heads::<&str, _>(ks, ..)
                .map(|r| r.unwrap().0)
                .collect::<Vec<_>>(),
            s.range_entries::<&str, _>(ks, ..)
                .map(|r| r.unwrap().0)
                .collect::<Vec<_>>(),
            s.len(ks).unwrap(),
        ),
        None => {
            let s = db.snapshot();
            (
                ks.iter().map(|r| r.unwrap().0).collect(),
                ks.iter().rev().map(|r| r.unwrap().0).collect(),
                ks.range_heads::<&str, _>(..)
                    .rev()
                    .map(|r| r.unwrap().0)
                    .rev()
                    .collect(),
                s.range_entries::<&str, _>(ks, ..)
                    .map(|r| r.unwrap().0)
                    .collect(),
                ks.len().unwrap(),
            )
        }
    };
    assert_eq!(keys, want, "forward scan");
    assert_eq!(back, rev, "backward scan");
    assert_eq!(heads, want, "head scan");
    assert_eq!(entries, want, "entry scan");
    assert_eq!(len, want.len() as u64, "len");
}

#[test]
fn range_tombstones_hide_keys_from_every_read_in_memory_in_tables_and_after_reopen() {
    let dir = mem_tempdir();
    let db = Db::open(dir.path(), options()).unwrap();
    let ks = db.keyspace("k").unwrap();
    let probe = ["a", "b", "c", "d", "e", "f"];
    for k in probe {
        ks.insert(k, k).unwrap();
    }
    db.flush().unwrap();
    let snap = db.snapshot();
    ks.remove_range("b".."e").unwrap();
    ks.insert("c", "again").unwrap();
    ks.remove_prefix("f").unwrap();
    let want = ["a", "c", "e"];
    check_reads(&db, &ks, None, &probe, &want);
    check_reads(&db, &ks, Some(&snap), &probe, &probe);
    db.flush().unwrap();
    check_reads(&db, &ks, None, &probe, &want);
    check_reads(&db, &ks, Some(&snap), &probe, &probe);
    drop(snap);
    db.flush().unwrap();
    ks.insert("z", "z").unwrap();
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    let want = ["a", "c", "e", "z"];
    check_reads(&db, &ks, None, &["b", "d", "f", "z"], &want);
    drop(ks);
    db.close().unwrap();
    let db = Db::open(dir.path(), options()).unwrap();
    let ks = db.keyspace("k").unwrap();
    check_reads(&db, &ks, None, &["b", "d", "f", "z"], &want);
}

#[test]
fn expiry_and_range_tombstones_each_hide_older_versions() {
    let dir = mem_tempdir();
    let clock = Clock::manual(START);
    let db = Db::open(dir.path(), clocked(&clock)).unwrap();
    let ks = db.keyspace("k").unwrap();
    let probe = ["a", "b", "c", "d"];
    for k in probe {
        ks.insert(k, "old").unwrap();
    }
    db.flush().unwrap();
    // a: a newer version that expires; b: range-deleted, then written again with a TTL;
    // c: a TTL version that a later range delete covers; d: untouched.
    ks.insert_ttl("a", "new", Duration::from_secs(1)).unwrap();
    ks.insert_ttl("c", "ttl", Duration::from_secs(10)).unwrap();
    ks.remove_range("b"..="c").unwrap();
    ks.insert_ttl("b", "again", Duration::from_secs(1)).unwrap();
    check_reads(&db, &ks, None, &probe, &["a", "b", "d"]);
    assert_eq!(ks.get("b").unwrap(), Some(b"again".to_vec()));
    let snap = db.snapshot();
    clock.advance(Duration::from_secs(1));
    // Expired: "a" does not fall back to "old", nor "b" to the range-deleted "old".
    check_reads(&db, &ks, None, &probe, &["d"]);
    check_reads(&db, &ks, Some(&snap), &probe, &["d"]);
    db.flush().unwrap();
    check_reads(&db, &ks, None, &probe, &["d"]);
    drop(snap);
    db.compact_expired().unwrap();
    db.wait_for_compactions().unwrap();
    check_reads(&db, &ks, None, &probe, &["d"]);
    drop(ks);
    db.close().unwrap();
    let db = Db::open(dir.path(), clocked(&clock)).unwrap();
    check_reads(&db, &db.keyspace("k").unwrap(), None, &probe, &["d"]);
}

#[test]
fn counters_restart_from_zero_after_a_range_delete() {
    let dir = mem_tempdir();
    let db = Db::open(dir.path(), options()).unwrap();
    let ks = db.keyspace("hits").unwrap();
    assert_eq!(ks.incr("/a", 5).unwrap(), 5);
    assert_eq!(ks.incr("/b", 7).unwrap(), 7);
    db.flush().unwrap();
    ks.remove_prefix("/a").unwrap();
    assert_eq!(
        ks.incr("/a", 1).unwrap(),
        1,
        "the removed counter counts as 0"
    );
    assert_eq!(ks.incr("/b", 1).unwrap(), 8, "outside the range");
    ks.remove_range::<&str, _>(..).unwrap();
    db.flush().unwrap();
    assert_eq!(ks.decr("/b", 2).unwrap(), -2);
    assert_eq!(ks.len().unwrap(), 1);
}

#[test]
fn an_in_place_expiry_rewrite_keeps_the_range_tombstones_a_snapshot_needs() {
    let dir = mem_tempdir();
    let clock = Clock::manual(START);
    let o = clocked(&clock).l0_compaction_trigger(1);
    let db = Db::open(dir.path(), o.clone()).unwrap();
    let ks = db.keyspace("k").unwrap();
    let keys: Vec<String> = (0..100).map(|i| format!("k{i:03}")).collect();
    for k in &keys {
        ks.insert(k, "old").unwrap();
    }
    let snap = db.snapshot();
    ks.remove_range("k000".."k050").unwrap();
    ks.insert_ttl("k060", "brief", Duration::from_secs(1))
        .unwrap();
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    let levels = db.stats().tables_per_level;
    assert_eq!(levels[0], 0, "{levels:?}");
    assert!(levels[1] >= 1, "{levels:?}");
    let now: Vec<&str> = keys[50..].iter().map(String::as_str).collect();
    let probe: Vec<&str> = keys.iter().map(String::as_str).collect();
    check_reads(&db, &ks, None, &probe, &now);
    clock.advance(Duration::from_secs(2));
    // The level-1 table is rewritten in place; its tombstone stays for the snapshot's
    // old versions, which the rewrite keeps.
    assert!(db.compact_expired().unwrap() > 0);
    assert_eq!(db.stats().tables_per_level[0], 0);
    let now: Vec<&str> = now.into_iter().filter(|k| *k != "k060").collect();
    check_reads(&db, &ks, None, &probe, &now);
    // The snapshot predates the expiring version of k060: it reads the old one.
    check_reads(&db, &ks, Some(&snap), &probe, &probe);
    let entries = |db: &Db| -> u64 {
        let report = db.verify().unwrap();
        report
            .files
            .iter()
            .filter(|f| f.kind == FileKind::Table)
            .map(|f| f.items)
            .sum()
    };
    assert!(entries(&db) >= 100, "the snapshot's versions are kept");
    drop(ks);
    db.close().unwrap();
    let db = Db::open(dir.path(), o.clone()).unwrap();
    let ks = db.keyspace("k").unwrap();
    check_reads(&db, &ks, None, &probe, &now);
    // Without the snapshot, the next compaction of that range drops the tombstone and
    // what it covers.
    ks.insert_ttl("k070", "brief", Duration::from_secs(1))
        .unwrap();
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    clock.advance(Duration::from_secs(2));
    db.compact_expired().unwrap();
    let now: Vec<&str> = now.into_iter().filter(|k| *k != "k070").collect();
    check_reads(&db, &ks, None, &probe, &now);
    assert_eq!(entries(&db), now.len() as u64, "only the live keys remain");
}

#[test]
fn tables_with_range_tombstones_verify_and_back_up() {
    let tmp = mem_tempdir();
    let dir = tmp.path().join("db");
    let db = Db::open(&dir, options()).unwrap();
    let ks = db.keyspace("k").unwrap();
    for i in 0..500u32 {
        ks.insert(format!("x/{i:04}"), format!("v{i}")).unwrap();
    }
    db.flush().unwrap();
    ks.remove_prefix("x/01").unwrap();
    ks.remove_range("x/03".."x/04").unwrap();
    db.flush().unwrap();
    let live = ks.len().unwrap();
    assert_eq!(live, 300);
    db.verify().unwrap();
    let bk = tmp.path().join("bk");
    db.backup(&bk).unwrap();
    drop(ks);
    db.close().unwrap();
    cairn::verify(&dir).unwrap();
    cairn::verify(&bk).unwrap();
    let copy = Db::open(&bk, options()).unwrap();
    let ks = copy.keyspace("k").unwrap();
    assert_eq!(ks.len().unwrap(), live);
    assert_eq!(ks.get("x/0150").unwrap(), None);
    assert_eq!(ks.get("x/0350").unwrap(), None);
    assert_eq!(ks.get("x/0250").unwrap(), Some(b"v250".to_vec()));
    drop(ks);
    copy.close().unwrap();

    // Every byte of the table holding only the tombstones is checked by verify.
    let newest = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "sst"))
        .max()
        .unwrap();
    let clean = std::fs::read(&newest).unwrap();
    for at in 0..clean.len() {
        let mut bad = clean.clone();
        bad[at] ^= 0x20;
        std::fs::write(&newest, &bad).unwrap();
        match cairn::verify(&dir) {
            Err(cairn::Error::Corruption(c)) => {
                assert_eq!(c.file, FileKind::Table, "byte {at}: {c}");
                assert_eq!(c.path, newest, "byte {at}: {c}");
            }
            other => panic!("byte {at} of {}: {other:?}", newest.display()),
        }
    }
    std::fs::write(&newest, &clean).unwrap();
    cairn::verify(&dir).unwrap();
}
