//! `cairn::verify` finds a flipped byte in every kind of file of a closed store, names the
//! file and an offset at or before the damage, passes on clean stores and backups, never
//! writes, and refuses a store that is open elsewhere.
#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

mod ordered_common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use cairn::{Db, Error, FileKind, Options};
use ordered_common::tiny;

fn options() -> Options {
    tiny(16 << 10, 512)
}

/// A closed store with tables on several levels and writes only in the WAL.
fn make_store(dir: &Path) {
    let db = Db::open(dir, options()).unwrap();
    let ks = db.keyspace("k").unwrap();
    for i in 0..3000u32 {
        ks.insert(
            format!("key{:05}", i % 1200),
            format!("value {i} {}", "x".repeat(20)),
        )
        .unwrap();
    }
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    for i in 0..100u32 {
        ks.insert(format!("wal{i:03}"), "in the log only").unwrap();
    }
    drop(ks);
    db.close().unwrap();
}

fn names(dir: &Path) -> Vec<String> {
    let mut n: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    n.sort();
    n
}

fn snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    names(dir)
        .into_iter()
        .map(|n| {
            let bytes = std::fs::read(dir.join(&n)).unwrap();
            (n, bytes)
        })
        .collect()
}

fn copy_store(from: &Path, to: &Path) {
    std::fs::create_dir(to).unwrap();
    for n in names(from) {
        std::fs::copy(from.join(&n), to.join(&n)).unwrap();
    }
}

fn flip(path: &Path, at: u64) {
    let mut bytes = std::fs::read(path).unwrap();
    bytes[at as usize] ^= 0x20;
    std::fs::write(path, bytes).unwrap();
}

fn first_with(dir: &Path, suffix: &str) -> PathBuf {
    let name = names(dir)
        .into_iter()
        .filter(|n| n.ends_with(suffix) || n.starts_with(suffix))
        .max_by_key(|n| std::fs::metadata(dir.join(n)).unwrap().len())
        .unwrap();
    dir.join(name)
}

/// Damages a copy of `clean` at `at` in the file `pick` chooses and checks what verify
/// says: the file, and an offset inside it; with `at_or_before`, at or before the damage
/// (the start of the damaged block or record; a damaged file header or `CURRENT` is
/// reported where its checksum field is).
fn expect_damage(
    clean: &Path,
    work: &Path,
    kind: FileKind,
    pick: &str,
    at: impl Fn(u64) -> u64,
    at_or_before: bool,
) {
    copy_store(clean, work);
    let file = first_with(work, pick);
    let len = std::fs::metadata(&file).unwrap().len();
    let pos = at(len);
    flip(&file, pos);
    match cairn::verify(work) {
        Err(Error::Corruption(c)) => {
            assert_eq!(c.file, kind, "{c}");
            assert_eq!(c.path, file, "{c}");
            assert!(c.offset < len, "{c}: offset outside the file");
            if at_or_before {
                assert!(c.offset <= pos, "{c}: offset after the damage at {pos}");
            }
        }
        other => panic!(
            "{} byte {pos}: expected corruption, got {other:?}",
            file.display()
        ),
    }
    let report = cairn::verify_report(work).unwrap();
    assert_eq!(report.problems.len(), 1, "{report:?}");
    assert!(!report.is_clean());
}

#[test]
fn a_clean_store_and_its_backup_pass() {
    let tmp = ordered_common::mem_tempdir();
    let dir = tmp.path().join("db");
    make_store(&dir);
    std::fs::write(dir.join("notes.txt"), b"not the store's").unwrap();
    let before = snapshot(&dir);
    let report = cairn::verify(&dir).unwrap();
    assert_eq!(snapshot(&dir), before, "verify writes nothing");
    assert!(report.count(FileKind::Table) >= 2, "{report:?}");
    assert!(report.count(FileKind::Wal) >= 1, "{report:?}");
    assert_eq!(
        report.count(FileKind::Manifest),
        2,
        "CURRENT and the manifest"
    );
    assert!(report.bytes(FileKind::Table) > 10_000, "{report:?}");
    assert_eq!(report.unreferenced, vec!["notes.txt".to_string()]);
    assert!(
        report.problems.is_empty() && report.notes.is_empty(),
        "{report:?}"
    );
    let entries: u64 = report
        .files
        .iter()
        .filter(|f| f.kind == FileKind::Table)
        .map(|f| f.items)
        .sum();
    assert!(entries >= 1200, "{entries}");

    let db = Db::open(&dir, options()).unwrap();
    // An open store is refused (it changes while read) and checked through the handle.
    match cairn::verify(&dir) {
        Err(Error::Io { source, .. }) => {
            assert_eq!(source.kind(), std::io::ErrorKind::WouldBlock);
        }
        other => panic!("expected a held lock, got {other:?}"),
    }
    let open = db.verify().unwrap();
    assert!(open.count(FileKind::Table) >= 2);
    let bk = tmp.path().join("bk");
    db.backup(&bk).unwrap();
    db.close().unwrap();
    let before = snapshot(&bk);
    cairn::verify(&bk).unwrap();
    assert_eq!(
        snapshot(&bk),
        before,
        "no LOCK or other file appears in a backup"
    );
}

#[test]
fn a_flipped_byte_in_each_kind_of_file_is_found_with_its_offset() {
    let tmp = ordered_common::mem_tempdir();
    let clean = tmp.path().join("clean");
    make_store(&clean);
    let mut n = 0;
    let mut work = || {
        n += 1;
        tmp.path().join(format!("case{n}"))
    };
    expect_damage(&clean, &work(), FileKind::Manifest, "CURRENT", |_| 3, false);
    // The manifest's header and its first (snapshot) record.
    expect_damage(
        &clean,
        &work(),
        FileKind::Manifest,
        "MANIFEST-",
        |_| 10,
        false,
    );
    expect_damage(
        &clean,
        &work(),
        FileKind::Manifest,
        "MANIFEST-",
        |l| l / 2,
        true,
    );
    // A table: a data block, the middle, the index/properties near the end, the footer.
    for at in [|_| 12, |l| l / 2, |l| l - 80] {
        expect_damage(&clean, &work(), FileKind::Table, ".sst", at, true);
    }
    expect_damage(&clean, &work(), FileKind::Table, ".sst", |l| l - 10, false);
    // A WAL: the header, and the first record's payload (valid records follow).
    expect_damage(&clean, &work(), FileKind::Wal, ".wal", |_| 5, false);
    expect_damage(
        &clean,
        &work(),
        FileKind::Wal,
        ".wal",
        |_| 20 + 24 + 3,
        true,
    );
}

#[test]
fn missing_files_are_problems_and_every_problem_is_listed() {
    let tmp = ordered_common::mem_tempdir();
    let clean = tmp.path().join("clean");
    make_store(&clean);

    let gone = tmp.path().join("gone");
    copy_store(&clean, &gone);
    let table = first_with(&gone, ".sst");
    std::fs::remove_file(&table).unwrap();
    match cairn::verify(&gone) {
        Err(Error::Corruption(c)) => assert_eq!(c.path, table, "{c}"),
        other => panic!("expected the missing table, got {other:?}"),
    }

    let both = tmp.path().join("both");
    copy_store(&clean, &both);
    flip(&first_with(&both, ".sst"), 12);
    flip(&first_with(&both, ".wal"), 20 + 24 + 3);
    let report = cairn::verify_report(&both).unwrap();
    assert_eq!(report.problems.len(), 2, "{report:?}");
    assert!(report.problems.iter().all(Error::is_corruption));

    let no_current = tmp.path().join("no-current");
    copy_store(&clean, &no_current);
    std::fs::remove_file(no_current.join("CURRENT")).unwrap();
    assert!(matches!(
        cairn::verify(&no_current),
        Err(Error::Corruption(_))
    ));
}

/// A torn tail (a record being written when the power went) is what a crash leaves: a
/// note, not a problem.
#[test]
fn a_torn_wal_tail_is_a_note() {
    let tmp = ordered_common::mem_tempdir();
    let dir = tmp.path().join("db");
    make_store(&dir);
    let wal = first_with(&dir, ".wal");
    let len = std::fs::metadata(&wal).unwrap().len();
    let file = std::fs::OpenOptions::new().write(true).open(&wal).unwrap();
    file.set_len(len - 5).unwrap();
    let report = cairn::verify(&dir).unwrap();
    assert_eq!(report.notes.len(), 1, "{report:?}");
    assert!(report.notes[0].contains("torn tail"), "{report:?}");
}

/// A manifest cut short before the edit of a flush whose table exists: open refuses (the
/// table holds writes recovery cannot place), and verify must say the same.
#[test]
fn a_manifest_cut_before_a_flush_is_a_problem_as_open_refuses_it() {
    let tmp = ordered_common::mem_tempdir();
    let dir = tmp.path().join("db");
    let db = Db::open(&dir, options()).unwrap();
    let ks = db.keyspace("k").unwrap();
    for i in 0..100u32 {
        ks.insert(format!("key{i:03}"), "value").unwrap();
    }
    db.flush().unwrap();
    drop(ks);
    db.close().unwrap();
    let manifest = first_with(&dir, "MANIFEST");
    let len = std::fs::metadata(&manifest).unwrap().len();
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(&manifest)
        .unwrap();
    file.set_len(len - 1).unwrap();
    drop(file);

    let opened = Db::open(&dir, options());
    assert!(
        matches!(&opened, Err(e) if e.is_corruption()),
        "open must refuse: {opened:?}"
    );
    let report = cairn::verify_report(&dir).unwrap();
    assert!(
        !report.is_clean(),
        "verify must agree with open: {report:?}"
    );
    assert!(matches!(cairn::verify(&dir), Err(Error::Corruption(_))));
}
