//! Handles used where they do not belong, and paths a new user passes: each is refused
//! with a typed error and writes nothing.

#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

use cairn::Readable;
use cairn::{Db, Error, Options};

fn two_stores() -> (tempfile::TempDir, Db, Db) {
    let dir = tempfile::tempdir().unwrap();
    let a = Db::open(dir.path().join("a"), Options::default()).unwrap();
    let b = Db::open(dir.path().join("b"), Options::default()).unwrap();
    (dir, a, b)
}

fn pairs(ks: &cairn::Keyspace) -> Vec<(Vec<u8>, Vec<u8>)> {
    ks.iter().map(|r| r.unwrap()).collect()
}

fn is_invalid(e: &Error) -> bool {
    matches!(e, Error::InvalidArgument(_))
}

#[test]
fn a_batch_refuses_a_keyspace_of_another_store_and_writes_nothing() {
    let (_dir, a, b) = two_stores();
    // Both stores number their keyspaces alike: "x" in a and "y" in b share an id.
    let ax = a.keyspace("x").unwrap();
    let by = b.keyspace("y").unwrap();
    by.insert("keep", "1").unwrap();
    let bx = b.keyspace("x").unwrap();
    bx.insert("keep-too", "2").unwrap();

    for op in 0..4 {
        let mut batch = b.batch();
        batch.insert(&by, "ok", "v");
        match op {
            0 => batch.insert(&ax, "k", "v"),
            1 => batch.remove(&ax, "keep"),
            2 => batch.remove_prefix(&ax, ""),
            _ => batch.remove_range(&ax, "a".."z"),
        }
        let err = batch.commit().unwrap_err();
        assert!(is_invalid(&err), "op {op}: {err}");
        assert!(
            err.to_string().contains("another") || err.to_string().contains("was given to a batch"),
            "op {op}: {err}"
        );
    }
    // Nothing of any refused batch was written, in either store.
    assert_eq!(pairs(&by), vec![(b"keep".to_vec(), b"1".to_vec())]);
    assert_eq!(pairs(&bx), vec![(b"keep-too".to_vec(), b"2".to_vec())]);
    assert!(pairs(&ax).is_empty());
}

#[test]
fn a_snapshot_of_another_store_is_refused_by_every_read() {
    let (_dir, a, b) = two_stores();
    let ka = a.keyspace("default").unwrap();
    let kb = b.keyspace("default").unwrap();
    for i in 0..20 {
        ka.insert(format!("k{i:02}"), "a").unwrap();
    }
    kb.insert("only-in-b", "b").unwrap();
    let snap_a = a.snapshot();

    assert!(is_invalid(&snap_a.get(&kb, "k01").unwrap_err()));
    assert!(is_invalid(&snap_a.head(&kb, "k01").unwrap_err()));
    assert!(is_invalid(&snap_a.len(&kb).unwrap_err()));
    let first = |mut it: Box<dyn Iterator<Item = bool>>| it.next();
    for (name, got) in [
        (
            "range",
            first(Box::new(
                snap_a.range::<&[u8], _>(&kb, ..).map(|r| r.is_err()),
            )),
        ),
        (
            "prefix",
            first(Box::new(snap_a.prefix(&kb, "").map(|r| r.is_err()))),
        ),
        (
            "range_heads",
            first(Box::new(
                snap_a.range_heads::<&[u8], _>(&kb, ..).map(|r| r.is_err()),
            )),
        ),
        (
            "prefix_heads",
            first(Box::new(snap_a.prefix_heads(&kb, "").map(|r| r.is_err()))),
        ),
        (
            "range_entries",
            first(Box::new(
                snap_a
                    .range_entries::<&[u8], _>(&kb, ..)
                    .map(|r| r.is_err()),
            )),
        ),
        (
            "prefix_entries",
            first(Box::new(snap_a.prefix_entries(&kb, "").map(|r| r.is_err()))),
        ),
    ] {
        assert_eq!(got, Some(true), "{name} must yield the refusal first");
    }
    // An iterator ends after the refusal; reverse iteration is refused too.
    let mut it = snap_a.range::<&[u8], _>(&kb, ..);
    assert!(is_invalid(&it.next().unwrap().unwrap_err()));
    assert!(it.next().is_none());
    assert!(snap_a
        .range::<&[u8], _>(&kb, ..)
        .next_back()
        .unwrap()
        .is_err());

    // The store's own snapshot still works.
    let snap_b = b.snapshot();
    assert_eq!(snap_b.get(&kb, "only-in-b").unwrap(), Some(b"b".to_vec()));
    assert_eq!(snap_b.len(&kb).unwrap(), 1);
}

#[test]
fn the_latest_state_of_one_store_refuses_a_keyspace_of_another() {
    let (_dir, a, b) = two_stores();
    let ka = a.keyspace("default").unwrap();
    let kb = b.keyspace("default").unwrap();
    ka.insert("k", "a").unwrap();
    kb.insert("k", "b").unwrap();

    // Through its own store, `Readable` reads what the keyspace itself reads.
    assert_eq!(a.get(&ka, "k").unwrap(), ka.get("k").unwrap());
    assert_eq!(a.len(&ka).unwrap(), 1);
    assert_eq!(
        b.first_key_value(&kb).unwrap(),
        Some((b"k".to_vec(), b"b".to_vec()))
    );
    // Through another store, every read is refused, never answered from either store.
    assert!(is_invalid(&a.get(&kb, "k").unwrap_err()));
    let mut buf = b"stale".to_vec();
    assert!(is_invalid(&a.get_into(&kb, "k", &mut buf).unwrap_err()));
    assert!(buf.is_empty(), "a refused read leaves the buffer empty");
    let mut called = false;
    assert!(is_invalid(
        &a.get_with(&kb, "k", |_| called = true).unwrap_err()
    ));
    assert!(!called, "a refused read calls nothing");
    assert!(is_invalid(&a.head(&kb, "k").unwrap_err()));
    assert!(is_invalid(&a.contains_key(&kb, "k").unwrap_err()));
    assert!(is_invalid(&a.len(&kb).unwrap_err()));
    assert!(is_invalid(&a.is_empty(&kb).unwrap_err()));
    let mut scans: Vec<(&str, Box<dyn Iterator<Item = bool>>)> = vec![
        ("iter", Box::new(a.iter(&kb).map(|r| r.is_err()))),
        ("rev", Box::new(a.iter(&kb).rev().map(|r| r.is_err()))),
        ("prefix", Box::new(a.prefix(&kb, "k").map(|r| r.is_err()))),
        (
            "range_heads",
            Box::new(a.range_heads::<&[u8], _>(&kb, ..).map(|r| r.is_err())),
        ),
        (
            "prefix_heads",
            Box::new(a.prefix_heads(&kb, "").map(|r| r.is_err())),
        ),
        (
            "range_entries",
            Box::new(a.range_entries::<&[u8], _>(&kb, ..).map(|r| r.is_err())),
        ),
        (
            "prefix_entries",
            Box::new(a.prefix_entries(&kb, "").map(|r| r.is_err())),
        ),
    ];
    for (name, scan) in &mut scans {
        assert_eq!(
            scan.next(),
            Some(true),
            "{name} must yield the refusal first"
        );
        assert_eq!(scan.next(), None, "{name} must end after the refusal");
    }
}

#[test]
fn open_creates_missing_parent_directories() {
    let dir = tempfile::tempdir().unwrap();
    let deep = dir.path().join("a").join("b").join("store");
    let db = Db::open(&deep, Options::default()).unwrap();
    db.keyspace("default").unwrap().insert("k", "v").unwrap();
    db.close().unwrap();
    let db = Db::open(&deep, Options::default()).unwrap();
    assert_eq!(
        db.keyspace("default").unwrap().get("k").unwrap(),
        Some(b"v".to_vec())
    );
}

#[test]
fn open_without_create_if_missing_creates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let deep = dir.path().join("a").join("store");
    let opts = Options::default().create_if_missing(false);
    assert!(is_invalid(&Db::open(&deep, opts).unwrap_err()));
    assert!(!dir.path().join("a").exists());
}

#[test]
fn a_file_given_as_the_store_path_is_named_as_such() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("notes.txt");
    std::fs::write(&file, "hello").unwrap();
    let err = Db::open(&file, Options::default()).unwrap_err();
    assert!(is_invalid(&err), "{err}");
    assert!(err.to_string().contains("is a file"), "{err}");
    assert_eq!(std::fs::read(&file).unwrap(), b"hello");
}
