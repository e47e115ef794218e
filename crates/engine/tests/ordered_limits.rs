//! Limits and argument checks of the ordered store: key and value sizes at and just past
//! their limits, empty keys and values, keyspace names, the default keyspace, handles to
//! dropped keyspaces, option validation, writes after `close`, and a value of tens of
//! megabytes through memtable, flush, compaction and reopen.
//!
//! Every refusal must be `Error::InvalidArgument` and must leave the store working.

#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

mod ordered_common;

use std::time::Duration;

use cairn::Readable;
use cairn::{Compression, Db, Durability, Error, Options, DEFAULT_KEYSPACE};

use ordered_common::{assert_invalid, collect, mem_tempdir, tiny};

/// Longest key accepted.
const MAX_KEY: usize = 65_535;

/// Longest value accepted (the table format's per-value limit).
const MAX_VALUE: usize = 32 << 20;

/// Asserts that the store still takes writes and serves reads.
#[track_caller]
fn assert_working(db: &Db) {
    let ks = db.keyspace(DEFAULT_KEYSPACE).unwrap();
    ks.insert("still", "working").unwrap();
    assert_eq!(ks.get("still").unwrap(), Some(b"working".to_vec()));
}

#[test]
fn keys_up_to_65535_bytes_are_accepted_and_longer_ones_refused() {
    let dir = mem_tempdir();
    let db = Db::open(dir.path(), tiny(4 << 10, 256)).unwrap();
    let ks = db.keyspace("keys").unwrap();
    let longest = vec![b'k'; MAX_KEY];
    let mut longest_ff = vec![0xffu8; MAX_KEY];
    longest_ff[0] = b'z';
    ks.insert(&longest, "a").unwrap();
    ks.insert(&longest_ff, "b").unwrap();
    ks.insert("short", "c").unwrap();

    let too_long = vec![b'k'; MAX_KEY + 1];
    assert_invalid(ks.insert(&too_long, "x"), "key of 65536 bytes");
    assert_invalid(ks.remove(&too_long), "key of 65536 bytes");
    let mut batch = db.batch();
    batch.insert(&ks, "fine", "1");
    batch.insert(&ks, &too_long, "x");
    batch.insert(&ks, "also fine", "2");
    assert_invalid(batch.commit(), "key of 65536 bytes");
    let mut batch = db.batch();
    batch.remove(&ks, &too_long);
    assert_invalid(batch.commit(), "key of 65536 bytes");
    // The refused batch wrote nothing, and lookups of an over-long key find nothing.
    assert_eq!(ks.get("fine").unwrap(), None);
    assert_eq!(ks.get(&too_long).unwrap(), None);

    for round in 0..3 {
        assert_eq!(ks.get(&longest).unwrap(), Some(b"a".to_vec()), "{round}");
        assert_eq!(ks.get(&longest_ff).unwrap(), Some(b"b".to_vec()), "{round}");
        let keys: Vec<_> = collect(ks.iter()).into_iter().map(|p| p.0).collect();
        assert_eq!(
            keys,
            vec![longest.clone(), b"short".to_vec(), longest_ff.clone()]
        );
        let back: Vec<_> = collect(ks.range(longest.clone()..)).into_iter().collect();
        assert_eq!(back.len(), 3);
        match round {
            0 => db.flush().unwrap(),
            _ => {
                ks.insert(&longest, "a").unwrap();
                db.flush().unwrap();
                db.wait_for_compactions().unwrap();
            }
        }
    }
    assert_working(&db);
    drop(ks);
    db.close().unwrap();

    let db = Db::open(dir.path(), tiny(4 << 10, 256)).unwrap();
    let ks = db.keyspace("keys").unwrap();
    assert_eq!(ks.get(&longest).unwrap(), Some(b"a".to_vec()));
    assert_eq!(ks.get(&longest_ff).unwrap(), Some(b"b".to_vec()));
}

#[test]
fn empty_key_and_empty_value_are_ordinary() {
    let dir = mem_tempdir();
    let db = Db::open(dir.path(), tiny(2 << 10, 64)).unwrap();
    let ks = db.keyspace(DEFAULT_KEYSPACE).unwrap();
    ks.insert("", "").unwrap();
    ks.insert("a", "").unwrap();
    ks.insert("b", "x").unwrap();
    let check = |ks: &cairn::Keyspace| {
        assert_eq!(ks.get("").unwrap(), Some(Vec::new()));
        assert!(ks.contains_key("").unwrap());
        assert_eq!(ks.get("a").unwrap(), Some(Vec::new()));
        assert_eq!(
            ks.first_key_value().unwrap(),
            Some((Vec::new(), Vec::new()))
        );
        assert_eq!(
            collect(ks.iter()),
            vec![
                (Vec::new(), Vec::new()),
                (b"a".to_vec(), Vec::new()),
                (b"b".to_vec(), b"x".to_vec())
            ]
        );
        assert_eq!(collect(ks.prefix("")).len(), 3);
        assert_eq!(collect(ks.range::<&[u8], _>(..=&b""[..])).len(), 1);
        assert_eq!(
            collect(ks.range::<&[u8], _>((
                std::ops::Bound::Excluded(&b""[..]),
                std::ops::Bound::Unbounded
            )))
            .len(),
            2
        );
    };
    check(&ks);
    db.flush().unwrap();
    check(&ks);
    drop(ks);
    db.close().unwrap();

    let db = Db::open(dir.path(), tiny(2 << 10, 64)).unwrap();
    let ks = db.keyspace(DEFAULT_KEYSPACE).unwrap();
    check(&ks);
    ks.remove("").unwrap();
    assert_eq!(ks.get("").unwrap(), None);
    assert!(!ks.contains_key("").unwrap());
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    assert_eq!(ks.get("").unwrap(), None);
    assert_eq!(
        ks.first_key_value().unwrap(),
        Some((b"a".to_vec(), Vec::new()))
    );
}

#[test]
fn values_over_the_limit_are_refused_and_the_store_keeps_working() {
    let dir = mem_tempdir();
    let options = Options::default().durability(Durability::Buffered);
    let db = Db::open(dir.path(), options.clone()).unwrap();
    let ks = db.keyspace(DEFAULT_KEYSPACE).unwrap();
    let other = db.keyspace("other").unwrap();
    let mut value = vec![7u8; MAX_VALUE + 1];
    let needle = format!("value of {} bytes", MAX_VALUE + 1);
    assert_invalid(ks.insert("big", &value), &needle);
    let mut batch = db.batch();
    batch.insert(&other, "small", "1");
    batch.insert(&ks, "big", &value);
    assert_invalid(batch.commit(), &needle);
    assert_eq!(ks.get("big").unwrap(), None);
    assert_eq!(other.get("small").unwrap(), None);
    assert_working(&db);

    // Exactly at the limit: accepted, flushed into a table, recovered.
    value.pop();
    value[0] = 1;
    *value.last_mut().unwrap() = 2;
    ks.insert("big", &value).unwrap();
    assert!(ks.get("big").unwrap() == Some(value.clone()));
    db.flush().unwrap();
    assert!(ks.get("big").unwrap() == Some(value.clone()));
    assert_working(&db);
    drop((ks, other));
    db.close().unwrap();
    let db = Db::open(dir.path(), options).unwrap();
    let ks = db.keyspace(DEFAULT_KEYSPACE).unwrap();
    assert!(ks.get("big").unwrap() == Some(value));
    assert_eq!(ks.get("still").unwrap(), Some(b"working".to_vec()));
}

#[test]
fn a_20_mb_value_round_trips_through_memtable_flush_compaction_and_reopen() {
    let dir = mem_tempdir();
    // Zstandard where this build has it: its output buffer grows with the real output.
    let compression = if cfg!(feature = "zstd") {
        Compression::Zstd(1)
    } else {
        Compression::Lz4
    };
    let options = tiny(64 << 10, 4 << 10).compression(compression);
    let db = Db::open(dir.path(), options.clone()).unwrap();
    let ks = db.keyspace("blobs").unwrap();
    let mut x = 0x9e37_79b9u32;
    let big: Vec<u8> = (0..20_000_000u32)
        .map(|i| {
            // Half incompressible, half runs: exercises both compressed and raw blocks.
            if i % 2_000_000 < 1_000_000 {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                x as u8
            } else {
                (i / 1000) as u8
            }
        })
        .collect();
    ks.insert("a", "before").unwrap();
    ks.insert("big", &big).unwrap();
    ks.insert("z", "after").unwrap();
    let same = |got: Option<Vec<u8>>| got.is_some_and(|g| g == big);
    assert!(same(ks.get("big").unwrap()), "from the memtable");
    db.flush().unwrap();
    assert!(same(ks.get("big").unwrap()), "from a level-0 table");

    // More tables over the same keys start a compaction (trigger: 2 level-0 tables).
    let snap = db.snapshot();
    ks.insert("a", "again").unwrap();
    ks.insert("big2", &big[..1000]).unwrap();
    db.flush().unwrap();
    // Overlapping level-0 tables, so compaction rewrites rather than moves them.
    ks.insert("a", "once more").unwrap();
    ks.insert("zz", "last").unwrap();
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    assert!(db.stats().compactions > 0, "{:?}", db.stats());
    assert!(same(ks.get("big").unwrap()), "after compaction");
    assert!(same(snap.get(&ks, "big").unwrap()), "at a snapshot");
    let scanned = collect(ks.range("b".."c"));
    assert_eq!(scanned.len(), 2);
    assert!(scanned[0].0 == b"big" && scanned[0].1 == big);
    let reversed: Vec<_> = ks.iter().rev().map(|r| r.unwrap().0).collect();
    assert_eq!(reversed, vec![&b"zz"[..], b"z", b"big2", b"big", b"a"]);
    drop((ks, snap));
    db.close().unwrap();

    let db = Db::open(dir.path(), options).unwrap();
    let ks = db.keyspace("blobs").unwrap();
    assert!(same(ks.get("big").unwrap()), "after reopen");
    ks.remove("big").unwrap();
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    assert_eq!(ks.get("big").unwrap(), None);
    assert_eq!(ks.get("big2").unwrap().map(|v| v.len()), Some(1000));
}

#[test]
fn keyspace_names_must_be_1_to_255_bytes() {
    let dir = mem_tempdir();
    let db = Db::open(dir.path(), tiny(4 << 10, 256)).unwrap();
    assert_invalid(db.keyspace(""), "1 to 255 bytes");
    assert_invalid(db.keyspace(&"n".repeat(256)), "got 256 bytes");
    // The limit counts bytes, not characters: 128 two-byte characters are too many.
    assert_invalid(db.keyspace(&"é".repeat(128)), "got 256 bytes");
    assert!(db.get_keyspace("").is_none());

    let longest = "n".repeat(255);
    let unicode = format!("{}a", "é".repeat(127));
    db.keyspace(&longest).unwrap().insert("k", "1").unwrap();
    db.keyspace(&unicode).unwrap().insert("k", "2").unwrap();
    db.keyspace("\0 \u{ff} /..")
        .unwrap()
        .insert("k", "3")
        .unwrap();
    assert_eq!(db.keyspace_names().len(), 4);
    db.close().unwrap();

    let db = Db::open(dir.path(), tiny(4 << 10, 256)).unwrap();
    let mut names = vec![
        DEFAULT_KEYSPACE.to_string(),
        longest.clone(),
        unicode.clone(),
        "\0 \u{ff} /..".to_string(),
    ];
    names.sort();
    assert_eq!(db.keyspace_names(), names);
    let ks = db.get_keyspace(&longest).unwrap();
    assert_eq!(ks.get("k").unwrap(), Some(b"1".to_vec()));
    assert_eq!(
        db.get_keyspace(&unicode).unwrap().get("k").unwrap(),
        Some(b"2".to_vec())
    );
}

#[test]
fn the_default_keyspace_cannot_be_dropped_nor_a_missing_one() {
    let dir = mem_tempdir();
    let db = Db::open(dir.path(), tiny(4 << 10, 256)).unwrap();
    assert_eq!(db.keyspace_names(), vec![DEFAULT_KEYSPACE.to_string()]);
    db.keyspace(DEFAULT_KEYSPACE)
        .unwrap()
        .insert("k", "v")
        .unwrap();
    assert_invalid(db.drop_keyspace(DEFAULT_KEYSPACE), "default");
    assert_invalid(db.drop_keyspace("missing"), "missing");
    db.keyspace("gone").unwrap();
    db.drop_keyspace("gone").unwrap();
    assert_invalid(db.drop_keyspace("gone"), "gone");
    assert_eq!(
        db.get_keyspace(DEFAULT_KEYSPACE).unwrap().get("k").unwrap(),
        Some(b"v".to_vec())
    );
    assert_working(&db);
}

#[test]
fn a_handle_to_a_dropped_keyspace_refuses_writes_and_reads() {
    let dir = mem_tempdir();
    let db = Db::open(dir.path(), tiny(2 << 10, 128)).unwrap();
    let old = db.keyspace("temp").unwrap();
    for i in 0..200u32 {
        old.insert(format!("k{i:03}"), "old").unwrap();
    }
    db.flush().unwrap();
    old.insert("in-memtable", "old").unwrap();
    let default = db.keyspace(DEFAULT_KEYSPACE).unwrap();
    db.drop_keyspace("temp").unwrap();

    assert_invalid(old.insert("k", "v"), "dropped");
    assert_invalid(old.remove("k000"), "dropped");
    let mut batch = db.batch();
    batch.insert(&default, "from-batch", "1");
    batch.insert(&old, "k", "v");
    assert_invalid(batch.commit(), "dropped");
    assert_eq!(
        default.get("from-batch").unwrap(),
        None,
        "batch is all or nothing"
    );

    // Reads through the old handle fail too, whether the data was in tables or in the
    // memtable; a scan yields one error and ends.
    let snap = db.snapshot();
    let assert_refused = |old: &cairn::Keyspace| {
        assert_invalid(old.get("in-memtable"), "dropped");
        assert_invalid(old.get("k000"), "dropped");
        assert_invalid(snap.get(old, "k000"), "dropped");
        assert_invalid(old.contains_key("k000"), "dropped");
        assert_invalid(old.first_key_value(), "dropped");
        assert_invalid(old.last_key_value(), "dropped");
        for mut it in [
            old.iter(),
            old.range("k".."l"),
            snap.iter(old),
            old.prefix("k"),
            snap.prefix(old, "k"),
        ] {
            assert_invalid(it.next_back().unwrap(), "dropped");
            assert!(it.next().is_none() && it.next_back().is_none());
        }
    };
    assert_refused(&old);

    // A keyspace created under the same name is new and empty, and the old handle
    // neither writes to it nor reads from it.
    let new = db.keyspace("temp").unwrap();
    assert_eq!(collect(new.iter()), Vec::new());
    assert_eq!(new.get("k000").unwrap(), None);
    assert_eq!(new.get("in-memtable").unwrap(), None);
    new.insert("fresh", "new").unwrap();
    assert_invalid(old.insert("k", "v"), "dropped");
    assert_refused(&old);
    assert_invalid(old.get("fresh"), "dropped");
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    assert_eq!(
        collect(new.iter()),
        vec![(b"fresh".to_vec(), b"new".to_vec())]
    );
    drop((old, new, default, snap));
    db.close().unwrap();

    let db = Db::open(dir.path(), tiny(2 << 10, 128)).unwrap();
    let new = db.get_keyspace("temp").unwrap();
    assert_eq!(
        collect(new.iter()),
        vec![(b"fresh".to_vec(), b"new".to_vec())]
    );
}

/// Sets one option to a value `Options::validate` refuses.
type Spoil = fn(&mut Options);

#[test]
fn option_errors_are_invalid_argument_naming_the_field() {
    let cases: Vec<(&str, Spoil)> = vec![
        ("queue_depth", |o| {
            o.durability = Durability::Async { queue_depth: 0 }
        }),
        ("Periodic", |o| {
            o.durability = Durability::Periodic(Duration::ZERO)
        }),
        ("memtable_size", |o| o.memtable_size = 1023),
        ("max_immutable_memtables", |o| o.max_immutable_memtables = 0),
        ("memtables_per_flush", |o| o.memtables_per_flush = 0),
        ("max_wal_size", |o| o.max_wal_size = 4095),
        ("block_size", |o| o.block_size = 63),
        ("block_size", |o| o.block_size = (16 << 20) + 1),
        ("restart_interval", |o| o.restart_interval = 0),
        ("restart_interval", |o| o.restart_interval = 1025),
        ("zstd", |o| o.compression = Compression::Zstd(0)),
        ("zstd", |o| o.compression = Compression::Zstd(23)),
        ("bloom_bits_per_key", |o| o.bloom_bits_per_key = 65),
        ("l0_compaction_trigger", |o| o.l0_compaction_trigger = 0),
        ("l0_slowdown_trigger", |o| o.l0_slowdown_trigger = 3),
        ("l0_stop_trigger", |o| o.l0_stop_trigger = 11),
        ("level1_size", |o| o.level1_size = 4095),
        ("level_size_multiplier", |o| o.level_size_multiplier = 1),
        ("table_size", |o| o.table_size = 4095),
        ("background_threads", |o| o.background_threads = 0),
    ];
    let parent = mem_tempdir();
    for (needle, set) in &cases {
        let mut options = Options::default();
        set(&mut options);
        assert_invalid(options.validate(), needle);
        // Opening refuses the same options before touching the file system.
        let dir = parent.path().join("never-created");
        assert_invalid(Db::open(&dir, options), needle);
        assert!(!dir.exists(), "{needle}: open created the directory");
    }

    // The edges of every range are accepted.
    let edges = Options::default()
        .durability(Durability::Async { queue_depth: 1 })
        .memtable_size(1024)
        .max_immutable_memtables(1)
        .max_wal_size(4096)
        .block_size(64)
        .restart_interval(1024)
        .compression(if cfg!(feature = "zstd") {
            Compression::Zstd(22)
        } else {
            Compression::Lz4
        })
        .bloom_bits_per_key(64)
        .l0_compaction_trigger(1)
        .l0_slowdown_trigger(1)
        .l0_stop_trigger(1)
        .level1_size(4096)
        .level_size_multiplier(2)
        .table_size(4096)
        .background_threads(1);
    edges.validate().unwrap();
    let db = Db::open(parent.path().join("edges"), edges).unwrap();
    let ks = db.keyspace(DEFAULT_KEYSPACE).unwrap();
    for i in 0..300u32 {
        ks.insert(format!("{i:04}"), [b'v'; 40]).unwrap();
    }
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    assert_eq!(collect(ks.iter()).len(), 300);
    db.close().unwrap();

    // A store that does not exist is not created without create_if_missing.
    let missing = parent.path().join("missing");
    let err = Db::open(&missing, Options::default().create_if_missing(false)).unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)), "{err:?}");
    assert!(!missing.exists());
}

#[test]
fn writes_after_close_fail_through_every_clone() {
    let dir = mem_tempdir();
    let db = Db::open(dir.path(), tiny(4 << 10, 256)).unwrap();
    let clone = db.clone();
    let ks = db.keyspace(DEFAULT_KEYSPACE).unwrap();
    let other = db.keyspace("other").unwrap();
    ks.insert("a", "1").unwrap();
    db.close().unwrap();

    assert_invalid(ks.insert("b", "2"), "closed");
    assert_invalid(
        ks.insert_with("b", "2", Some(Durability::Async { queue_depth: 1 })),
        "closed",
    );
    assert_invalid(other.remove("a"), "closed");
    let mut batch = clone.batch();
    batch.insert(&ks, "c", "3");
    assert_invalid(batch.commit(), "closed");
    assert_invalid(clone.keyspace("new"), "closed");
    assert_invalid(clone.drop_keyspace("other"), "closed");
    assert!(clone.flush().is_err());
    // Reads through an open handle do not panic; a second close is a no-op.
    let _ = ks.get("a");
    clone.clone().close().unwrap();
    drop((ks, other));
    clone.close().unwrap();

    let db = Db::open(dir.path(), tiny(4 << 10, 256)).unwrap();
    let ks = db.keyspace(DEFAULT_KEYSPACE).unwrap();
    assert_eq!(collect(ks.iter()), vec![(b"a".to_vec(), b"1".to_vec())]);
    assert!(db.get_keyspace("new").is_none());
    assert!(db.get_keyspace("other").is_some());
}
