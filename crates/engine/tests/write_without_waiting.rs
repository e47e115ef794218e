//! Writes that may not wait (`Keyspace::try_insert_with`, `try_remove_with`): one that goes in is a write
//! like any other (read back, kept by a reopen, in seqno order with the rest); one that
//! would wait (for an fsync, the value log, a memtable switch, another writer) is
//! declined before anything is written, and the same write made the usual way then goes
//! in.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

mod ordered_common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use cairn::{Db, Durability, KeyspaceOptions, Options};
use ordered_common::{mem_tempdir, tiny};

fn options() -> Options {
    Options::default().durability(Durability::Buffered)
}

/// Makes a try that must go in on a store with room: a background thread (a flush, the
/// compaction scheduler) may hold the state lock for a moment, and a try declines then,
/// so it is made again (a declined try writes nothing) for up to ten seconds.
fn goes_in(mut attempt: impl FnMut() -> cairn::Result<bool>) -> bool {
    let started = Instant::now();
    loop {
        if attempt().unwrap() {
            return true;
        }
        if started.elapsed() > Duration::from_secs(10) {
            return false;
        }
        thread::sleep(Duration::from_millis(1));
    }
}

/// Whether a try keeps being declined for 50 ms (a decline that a moment's lock does not
/// explain).
fn keeps_declining(mut attempt: impl FnMut() -> cairn::Result<bool>) -> bool {
    for _ in 0..50 {
        if attempt().unwrap() {
            return false;
        }
        thread::sleep(Duration::from_millis(1));
    }
    true
}

#[test]
fn a_write_that_needs_no_wait_goes_in_like_any_other_and_survives_a_reopen() {
    let dir = mem_tempdir();
    let db = Db::open(dir.path(), options()).unwrap();
    let ks = db.keyspace("k").unwrap();
    ks.insert("a", "old").unwrap();
    let before = db.last_seqno();
    assert!(goes_in(|| ks.try_insert_with("b", "2", None)));
    assert!(goes_in(|| ks.try_insert_with("c", "3", None)));
    assert!(goes_in(|| ks.try_remove_with("c", None)));
    assert_eq!(ks.get("c").unwrap(), None);
    assert!(!ks.try_remove_with("b", Some(Durability::Sync)).unwrap());
    assert_eq!(
        ks.get("b").unwrap(),
        Some(b"2".to_vec()),
        "a declined removal removes nothing"
    );
    // Periodic last: its first write wakes the log thread, whose fsyncs hold the log's
    // lock, and a try that finds the lock held is declined.
    for durability in [
        None,
        Some(Durability::Buffered),
        Some(Durability::None),
        Some(Durability::Periodic(std::time::Duration::from_millis(50))),
    ] {
        assert!(
            goes_in(|| ks.try_insert_with("a", "new", durability)),
            "{durability:?}"
        );
    }
    assert_eq!(db.last_seqno(), before + 7, "one seqno per write, in order");
    assert_eq!(ks.get("a").unwrap(), Some(b"new".to_vec()));
    assert_eq!(ks.get("b").unwrap(), Some(b"2".to_vec()));
    drop(ks);
    db.close().unwrap();

    let db = Db::open(dir.path(), options()).unwrap();
    let ks = db.keyspace("k").unwrap();
    assert_eq!(ks.get("a").unwrap(), Some(b"new".to_vec()));
    assert_eq!(ks.get("b").unwrap(), Some(b"2".to_vec()));
    drop(ks);
    db.close().unwrap();
}

#[test]
fn a_sync_write_and_a_separated_value_are_declined_and_write_nothing() {
    let dir = mem_tempdir();
    let db = Db::open(dir.path(), options()).unwrap();
    let plain = db.keyspace("plain").unwrap();
    let blobs = db
        .keyspace_with("blobs", KeyspaceOptions::default().blob_threshold(Some(64)))
        .unwrap();
    let before = db.last_seqno();
    assert!(!plain
        .try_insert_with("k", "v", Some(Durability::Sync))
        .unwrap());
    assert!(!blobs.try_insert_with("big", [7u8; 64], None).unwrap());
    assert_eq!(db.last_seqno(), before, "a declined write takes no seqno");
    assert_eq!(plain.get("k").unwrap(), None);
    assert_eq!(blobs.get("big").unwrap(), None);
    // Below the threshold the value stays in the tree, and the write goes in.
    assert!(goes_in(|| blobs.try_insert_with("small", [7u8; 63], None)));
    assert_eq!(blobs.get("small").unwrap(), Some(vec![7u8; 63]));
    // Errors are errors, not declines.
    let too_long = vec![0u8; 70_000];
    assert!(plain.try_insert_with(&too_long, "v", None).is_err());
    drop((plain, blobs));
    db.close().unwrap();
}

/// A full memtable needs a switch (an fsync of the log and a new file), so writes are
/// declined until a write that may wait switches it; then they go in again.
#[test]
fn a_full_memtable_declines_until_a_waiting_write_switches_it() {
    let dir = mem_tempdir();
    let db = Db::open(dir.path(), tiny(4 << 10, 1 << 10)).unwrap();
    let ks = db.keyspace("k").unwrap();
    let mut declined = None;
    for i in 0..1_000u32 {
        let key = format!("key{i:05}");
        if keeps_declining(|| ks.try_insert_with(&key, [1u8; 100], None)) {
            declined = Some((i, key));
            break;
        }
    }
    let (i, key) = declined.expect("a 4 KiB memtable fills within 1,000 writes of 100 bytes");
    assert!(i > 10, "the memtable took writes before it filled ({i})");
    let before = db.last_seqno();
    assert_eq!(ks.get(&key).unwrap(), None);
    assert!(
        !ks.try_insert_with(&key, [1u8; 100], None).unwrap(),
        "still full"
    );
    assert_eq!(db.last_seqno(), before);
    ks.insert(&key, [1u8; 100]).unwrap();
    // The fresh memtable has room (the flush the switch started may hold the state lock
    // for a moment: `goes_in`).
    assert!(goes_in(|| ks.try_insert_with("after", "switch", None)));
    for j in 0..=i {
        let key = format!("key{j:05}");
        assert_eq!(ks.get(&key).unwrap(), Some(vec![1u8; 100]), "{key}");
    }
    assert_eq!(ks.get("after").unwrap(), Some(b"switch".to_vec()));
    drop(ks);
    db.close().unwrap();
}

/// Threads that try first and write the usual way when declined, beside threads that
/// only write the usual way, into memtables small enough to switch often: every write
/// is read back with its last value, before and after a reopen, and both ways were taken.
#[test]
fn tries_and_waiting_writes_mix_without_losing_a_write() {
    let dir = mem_tempdir();
    let db = Arc::new(Db::open(dir.path(), tiny(64 << 10, 4 << 10)).unwrap());
    let (taken, declined) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let threads: Vec<_> = (0..4u32)
        .map(|t| {
            let (db, taken, declined) =
                (Arc::clone(&db), Arc::clone(&taken), Arc::clone(&declined));
            thread::spawn(move || {
                let ks = db.keyspace("k").unwrap();
                for round in 0..3u32 {
                    for i in 0..1_500u32 {
                        let key = format!("t{t}-{i:05}");
                        let value = format!("{round}-{}", "v".repeat((i % 50) as usize));
                        if t % 2 == 1 {
                            ks.insert(&key, &value).unwrap();
                        } else if ks.try_insert_with(&key, &value, None).unwrap() {
                            taken.fetch_add(1, Ordering::Relaxed);
                        } else {
                            declined.fetch_add(1, Ordering::Relaxed);
                            ks.insert(&key, &value).unwrap();
                        }
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert!(taken.load(Ordering::Relaxed) > 0);
    assert!(
        declined.load(Ordering::Relaxed) > 0,
        "small memtables switch under the tries"
    );
    let check = |db: &Db| {
        let ks = db.keyspace("k").unwrap();
        for t in 0..4u32 {
            for i in 0..1_500u32 {
                let key = format!("t{t}-{i:05}");
                let value = format!("2-{}", "v".repeat((i % 50) as usize));
                assert_eq!(ks.get(&key).unwrap(), Some(value.into_bytes()), "{key}");
            }
        }
        assert_eq!(ks.len().unwrap(), 6_000);
    };
    check(&db);
    Arc::try_unwrap(db).ok().unwrap().close().unwrap();
    let db = Db::open(dir.path(), tiny(64 << 10, 4 << 10)).unwrap();
    check(&db);
    db.close().unwrap();
}
