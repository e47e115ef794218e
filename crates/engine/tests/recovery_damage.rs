//! Damage to bytes that were durable is never mistaken for a crash's torn tail: `Db::open`
//! refuses it with a typed `Corruption` error, `cairn::verify` agrees, and under
//! `salvage_wal` the open drops only what is damaged and says exactly what it dropped.
#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

use std::path::{Path, PathBuf};

use cairn::{Db, Durability, FileKind, KeyspaceOptions, LossCause, Options};

fn options() -> Options {
    Options::default().durability(Durability::Sync)
}

fn salvage() -> Options {
    options().salvage_wal(true)
}

fn files_with(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(suffix))
        .collect();
    out.sort();
    out
}

fn zero(path: &Path, at: usize, len: usize) {
    let mut bytes = std::fs::read(path).unwrap();
    bytes[at..at + len].fill(0);
    std::fs::write(path, bytes).unwrap();
}

fn big() -> Vec<u8> {
    (0..200_000u32).map(|i| (i % 251) as u8).collect()
}

/// One large separated value, then 50 small keys, every write `Sync`; closed (so nothing
/// is flushed: the blob file is not in the manifest yet).
fn store_with_a_logged_value(dir: &Path) {
    let db = Db::open(dir, options()).unwrap();
    let ks = db
        .keyspace_with("ks", KeyspaceOptions::separated(4096))
        .unwrap();
    ks.insert("large", big()).unwrap();
    for i in 0..50 {
        ks.insert(format!("small{i:02}"), format!("v{i}")).unwrap();
    }
    drop(ks);
    db.close().unwrap();
}

fn small_keys(db: &Db) -> usize {
    let ks = db.keyspace("ks").unwrap();
    (0..50)
        .filter(|i| ks.get(format!("small{i:02}")).unwrap().is_some())
        .count()
}

#[test]
fn a_damaged_value_of_a_synced_write_refuses_the_open_and_verify_agrees() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    store_with_a_logged_value(&store);
    let blobs = files_with(&store, ".blob");
    assert_eq!(blobs.len(), 1, "{blobs:?}");
    let len = std::fs::metadata(&blobs[0]).unwrap().len() as usize;
    zero(&blobs[0], len / 2, 512);

    let before: Vec<(String, u64)> = std::fs::read_dir(&store)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                e.metadata().unwrap().len(),
            )
        })
        .collect();
    let err = Db::open(&store, options()).unwrap_err();
    assert!(err.is_corruption(), "{err}");
    let c = err.as_corruption().unwrap();
    assert_eq!(c.file, FileKind::Wal, "{err}");
    assert!(err.to_string().contains("salvage_wal"), "{err}");
    // The refused open deleted nothing: every acknowledged write is still on disk.
    let after: Vec<(String, u64)> = std::fs::read_dir(&store)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                e.metadata().unwrap().len(),
            )
        })
        .filter(|(n, _)| n != "LOCK")
        .collect();
    let before: Vec<_> = before.into_iter().filter(|(n, _)| n != "LOCK").collect();
    assert_eq!(
        {
            let mut b = before.clone();
            b.sort();
            b
        },
        {
            let mut a = after.clone();
            a.sort();
            a
        }
    );

    let report = cairn::verify_report(&store).unwrap();
    assert!(
        !report.is_clean(),
        "verify must agree with open: {report:?}"
    );
    assert!(report.problems.iter().any(|p| p.is_corruption()));

    // Salvage drops the one damaged write, keeps the 50 after it, and says so.
    let db = Db::open(&store, salvage()).unwrap();
    assert_eq!(small_keys(&db), 50);
    assert_eq!(db.keyspace("ks").unwrap().get("large").unwrap(), None);
    let rec = db.recovery_report();
    assert!(rec.lost_durable_writes(), "{rec:?}");
    let lost: Vec<_> = rec
        .losses
        .iter()
        .filter(|l| l.cause == LossCause::DamagedValue)
        .collect();
    assert_eq!(lost.len(), 1, "{rec:?}");
    assert_eq!(lost[0].seqnos, Some((1, 1)), "{}", lost[0]);
    assert_eq!(rec.last_seqno, 51);
    db.close().unwrap();
    // What salvage kept is a clean store from then on.
    let db = Db::open(&store, options()).unwrap();
    assert_eq!(small_keys(&db), 50);
    assert!(
        db.recovery_report().is_clean(),
        "{:?}",
        db.recovery_report()
    );
    db.close().unwrap();
    assert!(cairn::verify(&store).is_ok());
}

#[test]
fn a_deleted_blob_file_of_the_log_refuses_the_open() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    store_with_a_logged_value(&store);
    for b in files_with(&store, ".blob") {
        std::fs::remove_file(b).unwrap();
    }
    let err = Db::open(&store, options()).unwrap_err();
    assert!(err.is_corruption(), "{err}");
    assert!(!cairn::verify_report(&store).unwrap().is_clean());
}

#[test]
fn a_deleted_blob_file_the_manifest_lists_is_corruption_not_an_io_error() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    let db = Db::open(&store, options()).unwrap();
    let ks = db
        .keyspace_with("ks", KeyspaceOptions::separated(4096))
        .unwrap();
    ks.insert("large", big()).unwrap();
    db.flush().unwrap();
    drop(ks);
    db.close().unwrap();
    for b in files_with(&store, ".blob") {
        std::fs::remove_file(b).unwrap();
    }
    let err = Db::open(&store, options()).unwrap_err();
    assert!(err.is_corruption(), "{err}");
    assert!(err.to_string().contains(".blob"), "{err}");
    let report = cairn::verify_report(&store).unwrap();
    assert!(report.problems.iter().all(|p| p.is_corruption()));
    assert!(!report.is_clean());
}

#[test]
fn salvage_reports_the_damaged_log_range_and_the_seqnos_lost() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    let db = Db::open(&store, options()).unwrap();
    let ks = db.keyspace("ks").unwrap();
    for i in 0..100 {
        ks.insert(format!("k{i:03}"), "x".repeat(40)).unwrap();
    }
    drop(ks);
    db.close().unwrap();
    let wal = files_with(&store, ".wal");
    let wal = wal.last().unwrap();
    // The batch records (kind 1; sync marks are kind 2), by walking the framing of
    // wal/FORMAT.md §3: a 20-byte file header, then 24-byte record headers.
    let bytes = std::fs::read(wal).unwrap();
    let mut batches = Vec::new();
    let mut at = 20;
    while at + 24 <= bytes.len() {
        let len = u32::from_le_bytes(bytes[at + 8..at + 12].try_into().unwrap()) as usize;
        if bytes[at + 12] == 1 {
            batches.push(at);
        }
        at += 24 + len;
    }
    assert_eq!(batches.len(), 100);
    let damaged = batches[50];
    zero(wal, damaged + 24, 8); // inside the payload of one record in the middle

    let err = Db::open(&store, options()).unwrap_err();
    assert!(err.is_corruption(), "{err}");
    assert!(!cairn::verify_report(&store).unwrap().is_clean());

    let db = Db::open(&store, salvage()).unwrap();
    let rec = db.recovery_report().clone();
    let salvaged: Vec<_> = rec
        .losses
        .iter()
        .filter(|l| l.cause == LossCause::Salvaged)
        .collect();
    assert_eq!(salvaged.len(), 1, "{rec:?}");
    let (first, last) = salvaged[0].seqnos.unwrap();
    assert!(
        first == last,
        "one record of one write was damaged: {}",
        salvaged[0]
    );
    assert_eq!(salvaged[0].offset as usize, damaged);
    let ks = db.keyspace("ks").unwrap();
    let present = (0..100)
        .filter(|i| ks.get(format!("k{i:03}")).unwrap().is_some())
        .count();
    assert_eq!(present, 99);
    assert_eq!(
        ks.get(format!("k{:03}", first - 1)).unwrap(),
        None,
        "the key of the lost seqno is the one missing"
    );
    drop(ks);
    db.close().unwrap();
}

#[test]
fn a_torn_tail_is_reported_as_such_and_loses_nothing_durable() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    let db = Db::open(&store, options()).unwrap();
    let ks = db.keyspace("ks").unwrap();
    for i in 0..10 {
        ks.insert(format!("k{i}"), "v").unwrap();
    }
    drop(ks);
    db.close().unwrap();
    let wal = files_with(&store, ".wal");
    let wal = wal.last().unwrap();
    // A record that was being appended when the process died.
    let mut f = std::fs::OpenOptions::new().append(true).open(wal).unwrap();
    std::io::Write::write_all(&mut f, &[0xAB; 30]).unwrap();
    drop(f);
    let db = Db::open(&store, options()).unwrap();
    let rec = db.recovery_report();
    assert!(!rec.lost_durable_writes());
    assert_eq!(rec.losses.len(), 1, "{rec:?}");
    assert_eq!(rec.losses[0].cause, LossCause::TornTail);
    assert_eq!(rec.losses[0].len, 30);
    assert_eq!(rec.last_seqno, 10);
    db.close().unwrap();
}
