//! Counters, exact counts and on-disk sizes of the ordered store under concurrency:
//! increments from many threads in every durability mode, mixed with plain writes to the
//! same keys, are exact and linearizable; `len_at` agrees with a scan at the same
//! snapshot while writers run; `disk_size` follows what the store holds.

#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

mod ordered_common;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::thread;
use std::time::{Duration, Instant};

use cairn::Readable;
use cairn::{Db, Durability, Error, Options};

use ordered_common::{disk_tempdir, mem_tempdir, tiny};

const THREADS: u64 = 8;
const OPS: u64 = 10_000;
/// Keys updated with mixed deltas; the final value of each is the sum of its deltas.
const MIXED: u64 = 4;
/// The value the resetting thread writes to `epoch` at its `e`-th reset.
const EPOCH: i64 = 1_000_000_000;
/// Ops between two resets of `epoch` by thread 0.
const RESET_EVERY: u64 = 700;

const MODES: [Option<Durability>; 6] = [
    None,
    Some(Durability::Sync),
    Some(Durability::Buffered),
    Some(Durability::Async { queue_depth: 8 }),
    Some(Durability::None),
    Some(Durability::Periodic(Duration::from_millis(1))),
];

/// A small deterministic generator per thread.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// What one thread did and saw.
#[derive(Default)]
struct Seen {
    /// Values `incr("up", 1)` returned.
    up: Vec<i64>,
    /// Values `incr("epoch", 1)` returned.
    epoch: Vec<i64>,
    /// Sum of the deltas applied to each mixed key.
    mixed: [i128; MIXED as usize],
    resets: i64,
}

#[test]
fn concurrent_increments_are_exact_and_linearizable_with_plain_writes_mixed_in() {
    let dir = mem_tempdir();
    // Small memtables: counters are read back from memtables, sealed memtables and tables
    // while flushes and compactions run.
    let options = tiny(32 << 10, 512);
    let db = Db::open(dir.path(), options.clone()).unwrap();
    let ks = db.keyspace("counters").unwrap();
    ks.insert("bad", "12 apples").unwrap();

    let seen: Vec<Seen> = thread::scope(|s| {
        let handles: Vec<_> = (0..THREADS)
            .map(|t| {
                let ks = ks.clone();
                s.spawn(move || {
                    let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ (t + 1));
                    let mut seen = Seen::default();
                    let mode = MODES[t as usize % MODES.len()];
                    for i in 0..OPS {
                        if t == 0 && i % RESET_EVERY == RESET_EVERY - 1 {
                            seen.resets += 1;
                            let value = (seen.resets * EPOCH).to_string();
                            ks.insert_with("epoch", value, mode).unwrap();
                            continue;
                        }
                        match rng.next() % 8 {
                            0 | 1 => seen.up.push(ks.incr_with("up", 1, mode).unwrap()),
                            2 | 3 => seen.epoch.push(ks.incr_with("epoch", 1, mode).unwrap()),
                            4 | 5 => {
                                let key = rng.next() % MIXED;
                                let delta = (rng.next() % 2001) as i64 - 1000;
                                let name = format!("mixed{key}");
                                if rng.next().is_multiple_of(2) {
                                    ks.incr_with(&name, delta, mode).unwrap();
                                    seen.mixed[key as usize] += i128::from(delta);
                                } else {
                                    ks.decr_with(&name, delta, mode).unwrap();
                                    seen.mixed[key as usize] -= i128::from(delta);
                                }
                            }
                            6 => {
                                let got = ks.incr_with("bad", 1, mode);
                                assert!(matches!(got, Err(Error::NotACounter { .. })), "{got:?}");
                            }
                            _ => ks
                                .insert_with(format!("plain{t}/{i}"), format!("{t}-{i}"), mode)
                                .unwrap(),
                        }
                    }
                    seen
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });

    // `up` only ever grows by one: its results are exactly 1..=n, each once.
    let mut up: Vec<i64> = seen.iter().flat_map(|s| s.up.iter().copied()).collect();
    up.sort_unstable();
    let n = up.len() as i64;
    assert_eq!(up, (1..=n).collect::<Vec<_>>());
    assert_eq!(ks.get("up").unwrap(), Some(n.to_string().into_bytes()));

    // `epoch` is reset to e * EPOCH by plain inserts; between two resets, the increments
    // must have returned exactly e * EPOCH + 1 ..= e * EPOCH + k for some k.
    let mut by_epoch: BTreeMap<i64, Vec<i64>> = BTreeMap::new();
    for v in seen.iter().flat_map(|s| s.epoch.iter().copied()) {
        by_epoch.entry(v / EPOCH).or_default().push(v % EPOCH);
    }
    for (e, offsets) in &mut by_epoch {
        offsets.sort_unstable();
        let k = offsets.len() as i64;
        assert_eq!(*offsets, (1..=k).collect::<Vec<_>>(), "epoch {e}");
    }
    let resets = seen[0].resets;
    let last = by_epoch.get(&resets).map_or(0, Vec::len) as i64;
    assert_eq!(
        ks.get("epoch").unwrap(),
        Some((resets * EPOCH + last).to_string().into_bytes())
    );

    let mut mixed = [0i128; MIXED as usize];
    for s in &seen {
        for (sum, d) in mixed.iter_mut().zip(s.mixed) {
            *sum += d;
        }
    }
    let expect_mixed = |ks: &cairn::Keyspace| {
        for (k, sum) in mixed.iter().enumerate() {
            let got = ks.get(format!("mixed{k}")).unwrap();
            // A key never touched reads as absent, which incr treats as 0.
            let got = got.map_or(0, |v| {
                String::from_utf8(v).unwrap().parse::<i128>().unwrap()
            });
            assert_eq!(got, *sum, "mixed{k}");
        }
    };
    expect_mixed(&ks);
    assert_eq!(ks.get("bad").unwrap(), Some(b"12 apples".to_vec()));

    // Everything acknowledged survives a close and reopen.
    let plain = ks.len().unwrap();
    drop(ks);
    db.close().unwrap();
    let db = Db::open(dir.path(), options).unwrap();
    let ks = db.keyspace("counters").unwrap();
    assert_eq!(ks.get("up").unwrap(), Some(n.to_string().into_bytes()));
    expect_mixed(&ks);
    assert_eq!(ks.len().unwrap(), plain);
    assert_eq!(ks.incr("up", 1).unwrap(), n + 1);
}

#[test]
fn refused_increments_leave_the_value_and_the_seqno_alone() {
    let dir = mem_tempdir();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    let ks = db.keyspace("c").unwrap();
    for bad in [
        "",
        "+1",
        "01",
        "-0",
        " 1",
        "1.0",
        "9223372036854775808",
        "\u{ff}",
    ] {
        ks.insert("k", bad).unwrap();
        let before = db.last_seqno();
        let err = ks.incr("k", 1).unwrap_err();
        assert!(matches!(err, Error::NotACounter { .. }), "{bad:?}: {err:?}");
        assert_eq!(ks.get("k").unwrap(), Some(bad.as_bytes().to_vec()));
        assert_eq!(db.last_seqno(), before);
    }
    ks.insert("k", i64::MAX.to_string()).unwrap();
    let before = db.last_seqno();
    let err = ks.incr("k", 1).unwrap_err();
    assert!(matches!(
        err,
        Error::CounterOverflow {
            current: i64::MAX,
            delta: 1,
            ..
        }
    ));
    assert!(matches!(
        ks.decr("k", -1),
        Err(Error::CounterOverflow { .. })
    ));
    assert_eq!(
        ks.get("k").unwrap(),
        Some(i64::MAX.to_string().into_bytes())
    );
    assert_eq!(db.last_seqno(), before);

    // decr by i64::MIN adds 2^63: only a negative counter can take it.
    assert!(matches!(
        ks.decr("zero", i64::MIN),
        Err(Error::CounterOverflow { current: 0, .. })
    ));
    assert_eq!(ks.get("zero").unwrap(), None);
    assert_eq!(ks.incr("neg", i64::MIN).unwrap(), i64::MIN);
    assert_eq!(ks.decr("neg", i64::MIN).unwrap(), 0);
    assert_eq!(ks.decr("neg", 1).unwrap(), -1);
    assert_eq!(ks.decr("neg", i64::MIN).unwrap(), i64::MAX);
    assert_eq!(
        ks.get("neg").unwrap(),
        Some(i64::MAX.to_string().into_bytes())
    );

    // A counter can be set, read and removed like any value.
    ks.insert("n", "-40").unwrap();
    assert_eq!(ks.incr("n", 2).unwrap(), -38);
    ks.remove("n").unwrap();
    assert_eq!(ks.incr("n", 2).unwrap(), 2);

    // A dropped keyspace refuses increments.
    db.drop_keyspace("c").unwrap();
    assert!(matches!(ks.incr("n", 1), Err(Error::InvalidArgument(_))));
}

#[test]
fn len_at_a_snapshot_agrees_with_a_scan_at_it_while_writers_run() {
    let dir = mem_tempdir();
    let db = Db::open(dir.path(), tiny(16 << 10, 256)).unwrap();
    let ks = db.keyspace("c").unwrap();
    let stop = AtomicBool::new(false);
    let checks = Mutex::new(0u32);
    thread::scope(|s| {
        for t in 0..2u64 {
            let (ks, stop) = (ks.clone(), &stop);
            s.spawn(move || {
                let mut rng = Rng(t + 7);
                while !stop.load(Ordering::Relaxed) {
                    let key = format!("k{:04}", rng.next() % 3000);
                    if rng.next().is_multiple_of(3) {
                        ks.remove(&key).unwrap();
                    } else {
                        ks.insert(&key, [b'v'; 40]).unwrap();
                    }
                }
            });
        }
        let deadline = Instant::now() + Duration::from_secs(3);
        while Instant::now() < deadline {
            let snap = db.snapshot();
            let len = snap.len(&ks).unwrap();
            let scanned = snap.iter(&ks).count() as u64;
            assert_eq!(len, scanned);
            *checks.lock().unwrap() += 1;
        }
        stop.store(true, Ordering::Relaxed);
    });
    assert!(*checks.lock().unwrap() > 3);
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    assert_eq!(ks.len().unwrap(), ks.iter().count() as u64);
    assert_eq!(ks.is_empty().unwrap(), ks.len().unwrap() == 0);
}

#[test]
fn len_counts_live_keys_through_overwrites_deletes_flushes_and_compactions() {
    let dir = mem_tempdir();
    let db = Db::open(dir.path(), tiny(8 << 10, 256)).unwrap();
    let ks = db.keyspace("c").unwrap();
    let other = db.keyspace("other").unwrap();
    assert_eq!(ks.len().unwrap(), 0);
    assert!(ks.is_empty().unwrap());
    for i in 0..2000u32 {
        ks.insert(format!("{i:05}"), "v").unwrap();
        other.insert(format!("{i:05}"), "w").unwrap();
    }
    let full = db.snapshot();
    for i in 0..2000u32 {
        match i % 4 {
            0 => ks.remove(format!("{i:05}")).unwrap(),
            1 => ks.insert(format!("{i:05}"), "again").unwrap(),
            _ => {}
        }
    }
    ks.remove("absent").unwrap();
    assert_eq!(ks.len().unwrap(), 1500);
    db.flush().unwrap();
    assert_eq!(ks.len().unwrap(), 1500);
    db.wait_for_compactions().unwrap();
    assert_eq!(ks.len().unwrap(), 1500);
    assert_eq!(full.len(&ks).unwrap(), 2000);
    assert_eq!(other.len().unwrap(), 2000);
    for i in 0..2000u32 {
        ks.remove(format!("{i:05}")).unwrap();
    }
    assert_eq!(ks.len().unwrap(), 0);
    assert!(ks.is_empty().unwrap());
    assert_eq!(full.len(&ks).unwrap(), 2000);
}

fn dir_bytes(dir: &std::path::Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .sum()
}

#[test]
fn disk_size_follows_the_files_and_each_keyspace_its_share() {
    let dir = disk_tempdir();
    let options = Options::default().memtable_size(1 << 20);
    let db = Db::open(dir.path(), options).unwrap();
    let a = db.keyspace("a").unwrap();
    let b = db.keyspace("b").unwrap();
    let empty = db.disk_size().unwrap();
    assert!(empty > 0, "a new store has a manifest and CURRENT");
    assert_eq!(a.disk_size(), 0);

    const N: u64 = 2000;
    const VALUE: usize = 200;
    for i in 0..N {
        a.insert(format!("key{i:06}"), vec![b'x'; VALUE]).unwrap();
    }
    // Unflushed: the keyspace's share of the log, close to its encoded writes.
    let user = N * (9 + VALUE as u64);
    let logged = a.disk_size();
    assert!(
        logged >= user && logged < user + N * 8,
        "{logged} vs {user}"
    );
    assert_eq!(b.disk_size(), 0);
    db.flush_wal(true).unwrap();
    let with_log = db.disk_size().unwrap();
    assert!(with_log >= empty + user, "{with_log}");
    assert_eq!(with_log, dir_bytes(dir.path()));

    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    let tables = db.stats().table_bytes;
    assert!(tables > 0);
    assert_eq!(a.disk_size(), tables, "all of a is in tables, b has none");
    assert_eq!(b.disk_size(), 0);
    b.insert("x", "y").unwrap();
    assert!(b.disk_size() > 0);
    assert_eq!(a.disk_size(), tables);
    assert_eq!(db.disk_size().unwrap(), dir_bytes(dir.path()));

    // Dropping the keyspace deletes its tables: the store shrinks.
    let before = db.disk_size().unwrap();
    db.drop_keyspace("a").unwrap();
    assert_eq!(a.disk_size(), 0);
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut after = db.disk_size().unwrap();
    while after + tables / 2 > before && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(20));
        db.wait_for_compactions().unwrap();
        after = db.disk_size().unwrap();
    }
    assert!(
        after + tables / 2 <= before,
        "{after} after dropping, {before} before"
    );
}

/// An incr changes the number, not what the application attached to the entry: the tag,
/// the metadata and the expiry carry over, and once the expiry passes the counter is gone
/// (a later incr starts again from 0, with no attributes).
#[test]
fn incr_keeps_tag_metadata_and_expiry() {
    let dir = mem_tempdir();
    let clock = cairn::Clock::manual(1_000_000);
    let options = Options::default().clock(clock.clone());
    let db = Db::open(dir.path().join("db"), options).unwrap();
    let ks = db.keyspace("c").unwrap();
    let opts = cairn::EntryOptions::new()
        .meta(cairn::Meta::new(9, b"hits".to_vec()))
        .ttl(Duration::from_secs(10));
    ks.insert_entry("n", "40", &opts).unwrap();
    assert_eq!(ks.incr("n", 2).unwrap(), 42);
    let head = ks.head("n").unwrap().unwrap();
    assert_eq!((head.tag, head.meta.as_slice()), (9, &b"hits"[..]));
    assert_eq!(head.expires_at, Some(1_010_000));
    assert_eq!(head.value_len, 2);
    db.flush().unwrap();
    assert_eq!(ks.decr("n", 1).unwrap(), 41);
    assert_eq!(ks.head("n").unwrap().unwrap().expires_at, Some(1_010_000));
    clock.advance(Duration::from_secs(10));
    assert_eq!(ks.get("n").unwrap(), None);
    assert_eq!(ks.incr("n", 1).unwrap(), 1);
    let fresh = ks.head("n").unwrap().unwrap();
    assert_eq!(
        (fresh.tag, fresh.meta.len(), fresh.expires_at),
        (0, 0, None)
    );
}
