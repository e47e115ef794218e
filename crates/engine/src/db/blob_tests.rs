//! Tests of separated values inside the store that need its internals: how many blob
//! records reads touch, and GC's deletion rules.
#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

use std::path::Path;
use std::sync::Arc;

use super::{Db, Readable};
use crate::fs::{CrashOptions, FileSystem, MemFs};
use crate::options::{Durability, KeyspaceOptions, Options};

fn open(fs: &MemFs, options: Options) -> Db {
    Db::open_with_fs(Arc::new(fs.clone()), Path::new("/db"), options).unwrap()
}

fn options() -> Options {
    Options {
        durability: Durability::Buffered,
        memtable_size: 8 << 10,
        l0_compaction_trigger: 2,
        level1_size: 16 << 10,
        table_size: 8 << 10,
        blob_file_size: 8 << 10,
        background_threads: 1,
        ..Options::default()
    }
}

fn value(i: u32) -> Vec<u8> {
    (0..100 + i).map(|j| (i * 7 + j) as u8).collect()
}

#[test]
fn heads_counts_and_key_checks_read_no_blob_and_scans_read_only_what_they_return() {
    let fs = MemFs::new();
    let db = open(&fs, options());
    let ks = db
        .keyspace_with("b", KeyspaceOptions::separated(50))
        .unwrap();
    for i in 0..60u32 {
        ks.insert(format!("k{i:03}"), value(i)).unwrap();
        if i == 30 {
            db.flush().unwrap(); // half in tables, half in the memtable
        }
    }
    let reads = || db.inner.reads.blobs.reads();
    let before = reads();
    let head = ks.head("k007").unwrap().unwrap();
    assert!(head.separated);
    assert_eq!(head.value_len, 107);
    assert_eq!(ks.head("k045").unwrap().unwrap().value_len, 145);
    let heads: Vec<_> = ks.range_heads::<&[u8], _>(..).map(|h| h.unwrap()).collect();
    assert_eq!(heads.len(), 60);
    assert!(heads.iter().all(|(_, h)| h.separated));
    assert_eq!(ks.prefix_heads("k01").rev().count(), 10);
    assert_eq!(ks.len().unwrap(), 60);
    assert!(ks.contains_key("k059").unwrap());
    assert!(!ks.contains_key("nope").unwrap());
    assert_eq!(reads(), before, "heads, counts and key checks read no blob");

    // A point read reads exactly its value; a scan reads the values it returns.
    assert_eq!(ks.get("k010").unwrap(), Some(value(10)));
    assert_eq!(reads(), before + 1);
    let first: Vec<_> = ks.iter().take(3).map(|r| r.unwrap()).collect();
    assert_eq!(first[2], (b"k002".to_vec(), value(2)));
    assert_eq!(reads(), before + 4);
    let last: Vec<_> = ks.iter().rev().take(2).map(|r| r.unwrap()).collect();
    assert_eq!(last[0], (b"k059".to_vec(), value(59)));
    assert_eq!(
        reads(),
        before + 6,
        "a backward scan reads only what it returns"
    );
    // Older versions a scan passes over are not read either.
    for i in 0..60u32 {
        ks.insert(format!("k{i:03}"), value(i + 1)).unwrap();
    }
    let before = reads();
    assert_eq!(ks.iter().rev().take(1).count(), 1);
    assert_eq!(ks.range("k000".."k002").count(), 2);
    assert_eq!(reads(), before + 3);
    db.close().unwrap();
}

#[test]
fn garbage_collection_moves_live_values_and_deletes_files_no_reader_needs() {
    let fs = MemFs::new();
    let db = open(&fs, options());
    let ks = db
        .keyspace_with("b", KeyspaceOptions::separated(0))
        .unwrap();
    for i in 0..40u32 {
        ks.insert(format!("k{i:02}"), value(i)).unwrap();
    }
    db.flush().unwrap();
    let first = db.space_stats().unwrap();
    assert!(!first.blob_files.is_empty(), "{first:?}");
    assert_eq!(first.garbage_blob_bytes, 0);
    assert_eq!(first.live_blob_bytes, (0..40).map(|i| 100 + i).sum::<u64>());
    let old: Vec<u64> = first.blob_files.iter().map(|f| f.id).collect();

    // A snapshot and an iterator taken now need the old values.
    let snap = db.snapshot();
    let mut it = ks.iter();
    assert_eq!(it.next().unwrap().unwrap().1, value(0));
    // Overwrite three keys in four: most of every old file becomes garbage once the old
    // versions are compacted away (after the snapshot goes).
    for i in (0..40u32).filter(|i| i % 4 != 0) {
        ks.insert(format!("k{i:02}"), b"new".repeat(40)).unwrap();
    }
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    db.collect_garbage().unwrap();
    for i in 0..40u32 {
        assert_eq!(snap.get(&ks, format!("k{i:02}")).unwrap(), Some(value(i)));
    }
    drop(snap);
    // More writes and flushes, so compactions drop the shadowed versions.
    for round in 0..4u32 {
        for i in (0..40u32).filter(|i| i % 4 != 0) {
            ks.insert(format!("k{i:02}"), format!("v{round}").repeat(30))
                .unwrap();
        }
        db.flush().unwrap();
        db.wait_for_compactions().unwrap();
    }
    db.collect_garbage().unwrap();
    let after = db.space_stats().unwrap();
    let listed: Vec<u64> = after.blob_files.iter().map(|f| f.id).collect();
    assert!(
        old.iter().all(|id| !listed.contains(id)),
        "the first files were rewritten or removed: {after:?}"
    );
    for f in &after.blob_files {
        assert!(
            f.garbage_bytes * 100 < f.value_bytes * 50 || f.live_bytes == 0,
            "{f:?}"
        );
    }
    // Every value reads back, the moved ones from their new files.
    for i in 0..40u32 {
        let want = if i % 4 == 0 {
            value(i)
        } else {
            b"v3".repeat(30)
        };
        assert_eq!(ks.get(format!("k{i:02}")).unwrap(), Some(want), "k{i:02}");
    }
    // The open iterator still reads the old values: their files wait for it.
    let names = fs.list_dir(Path::new("/db")).unwrap();
    assert!(old
        .iter()
        .all(|id| names.contains(&crate::files::FileType::Blob.name(*id))));
    let rest: Vec<_> = it.map(|r| r.unwrap()).collect();
    assert_eq!(rest.len(), 39);
    assert_eq!(rest[0].1, value(1));
    // Once it is gone, the next GC run deletes them.
    db.collect_garbage().unwrap();
    ks.insert("x", "y").unwrap();
    db.flush().unwrap();
    let names = fs.list_dir(Path::new("/db")).unwrap();
    assert!(
        old.iter()
            .all(|id| !names.contains(&crate::files::FileType::Blob.name(*id))),
        "{names:?}"
    );
    drop(ks);
    db.close().unwrap();
    // The store reopens with the moved values.
    let db = open(&fs, options());
    let ks = db.keyspace("b").unwrap();
    assert_eq!(ks.get("k00").unwrap(), Some(value(0)));
    assert_eq!(ks.get("k01").unwrap(), Some(b"v3".repeat(30)));
    db.close().unwrap();
}

#[test]
fn a_blob_file_of_empty_values_is_kept_while_referenced() {
    let fs = MemFs::new();
    let db = open(&fs, options());
    let ks = db
        .keyspace_with("b", KeyspaceOptions::separated(0))
        .unwrap();
    ks.insert("empty", "").unwrap();
    db.flush().unwrap();
    let stats = db.space_stats().unwrap();
    assert_eq!(stats.blob_files.len(), 1);
    assert_eq!(stats.blob_files[0].value_bytes, 0);
    assert_eq!(
        db.collect_garbage().unwrap(),
        0,
        "no live byte, but a live handle"
    );
    assert!(ks.head("empty").unwrap().unwrap().separated);
    assert_eq!(ks.get("empty").unwrap(), Some(Vec::new()));
    ks.remove("empty").unwrap();
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    drop(ks);
    db.close().unwrap();
}

#[test]
fn a_logged_write_whose_blob_was_lost_ends_the_log_and_later_writes_survive() {
    let fs = MemFs::new();
    let db = open(&fs, options());
    let ks = db
        .keyspace_with("b", KeyspaceOptions::separated(0))
        .unwrap();
    ks.insert_with("a", value(1), Some(Durability::Sync))
        .unwrap();
    db.flush().unwrap(); // "a" is in a table and a listed blob file
    ks.insert_with("a2", value(2), Some(Durability::Sync))
        .unwrap();
    ks.insert("b", value(3)).unwrap(); // Buffered: log and blob reach the OS only
    ks.insert("c", value(4)).unwrap();
    // A crash that kept the log but lost the unsynced end of the active blob file: the
    // records of "b" and "c" (16-byte header, 1-byte key, value, one chunk checksum).
    let image = fs.crash_with(CrashOptions::KeepAll);
    drop(ks);
    drop(db);
    let active = image
        .list_dir(Path::new("/db"))
        .unwrap()
        .into_iter()
        .filter_map(|n| crate::files::FileType::Blob.parse(&n))
        .max()
        .unwrap();
    let path = Path::new("/db").join(crate::files::FileType::Blob.name(active));
    let bytes = crate::fs::read_all(&image, &path).unwrap();
    let keep = bytes.len() - (16 + 1 + 103 + 4) - (16 + 1 + 104 + 4);
    image.remove(&path).unwrap();
    let mut f = image.create(&path).unwrap();
    f.append(&bytes[..keep]).unwrap();
    f.sync_data().unwrap();
    drop(f);

    let db = open(&image, options());
    // The replayed prefix was flushed before the open returned: the log it came from,
    // whose tail is discarded, is never read again.
    assert!(db.inner.state.lock().imm.is_empty());
    let ks = db.keyspace("b").unwrap();
    assert_eq!(ks.get("a").unwrap(), Some(value(1)));
    assert_eq!(ks.get("a2").unwrap(), Some(value(2)));
    assert_eq!(
        ks.get("b").unwrap(),
        None,
        "the log ends before the lost value"
    );
    assert_eq!(ks.get("c").unwrap(), None, "and nothing after it is kept");
    assert_eq!(db.last_seqno(), 2);
    // A write after that recovery survives a power loss.
    ks.insert_with("d", value(5), Some(Durability::Sync))
        .unwrap();
    let after = image.crash();
    drop(ks);
    drop(db);
    let db = open(&after, options());
    let ks = db.keyspace("b").unwrap();
    assert_eq!(ks.get("a2").unwrap(), Some(value(2)));
    assert_eq!(ks.get("b").unwrap(), None);
    assert_eq!(ks.get("d").unwrap(), Some(value(5)));
    assert_eq!(db.last_seqno(), 3);
    drop(ks);
    db.close().unwrap();
}

#[test]
fn a_damaged_value_reads_as_corruption_and_its_head_still_answers() {
    let fs = MemFs::new();
    let db = open(&fs, options());
    let ks = db
        .keyspace_with("b", KeyspaceOptions::separated(0))
        .unwrap();
    ks.insert("a", value(1)).unwrap();
    db.flush().unwrap();
    drop(ks);
    db.close().unwrap();
    let blob = fs
        .list_dir(Path::new("/db"))
        .unwrap()
        .into_iter()
        .find(|n| crate::files::FileType::Blob.parse(n).is_some())
        .unwrap();
    let path = Path::new("/db").join(&blob);
    let mut bytes = crate::fs::read_all(&fs, &path).unwrap();
    let at = bytes.len() - 50; // inside the record's value
    bytes[at] ^= 0x40;
    fs.remove(&path).unwrap();
    let mut f = fs.create(&path).unwrap();
    f.append(&bytes).unwrap();
    f.sync_data().unwrap();
    drop(f);
    let db = open(&fs, options());
    let ks = db.keyspace("b").unwrap();
    let err = ks.get("a").unwrap_err();
    assert!(err.is_corruption(), "{err}");
    assert_eq!(ks.head("a").unwrap().unwrap().value_len, 101);
    let report = db.verify_report().unwrap();
    assert!(!report.problems.is_empty(), "{report:?}");
}

/// The value a key holds in round `round`: its key and round, padded to a length that
/// varies with both, so a reader can check what it got without knowing the round.
fn round_value(key: u32, round: u32) -> Vec<u8> {
    let mut v = format!("{key}:{round}:").into_bytes();
    v.resize(60 + ((key * 13 + round * 7) % 90) as usize, b'.');
    v
}

#[test]
fn point_reads_racing_relocation_and_gc_always_find_their_value() {
    // A point read finds a handle, then reads the blob file it names. Value-log GC may
    // relocate that value and delete the file at any moment; the read must still answer.
    let fs = MemFs::new();
    let db = open(
        &fs,
        Options {
            blob_file_size: 4 << 10,
            blob_gc_garbage_percent: 10,
            background_threads: 2,
            ..options()
        },
    );
    let ks = db
        .keyspace_with("b", KeyspaceOptions::separated(0))
        .unwrap();
    const KEYS: u32 = 24;
    for k in 0..KEYS {
        ks.insert(format!("k{k:02}"), round_value(k, 0)).unwrap();
    }
    db.flush().unwrap();
    let blob_files = |fs: &MemFs| -> Vec<String> {
        fs.list_dir(Path::new("/db"))
            .unwrap()
            .into_iter()
            .filter(|n| n.ends_with(".blob"))
            .collect()
    };
    let first = blob_files(&fs);
    assert!(!first.is_empty());
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let readers: Vec<_> = (0..2)
        .map(|t| {
            let ks = ks.clone();
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                let mut reads = 0u64;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    for k in (0..KEYS).skip(t) {
                        let got = ks
                            .get(format!("k{k:02}"))
                            .unwrap_or_else(|e| panic!("get k{k:02} after {reads} reads: {e}"))
                            .unwrap_or_else(|| panic!("k{k:02} missing"));
                        let text = String::from_utf8_lossy(&got);
                        let round: u32 = text
                            .strip_prefix(&format!("{k}:"))
                            .and_then(|r| r.split(':').next())
                            .and_then(|r| r.parse().ok())
                            .unwrap_or_else(|| panic!("k{k:02} holds {text:?}"));
                        assert_eq!(got, round_value(k, round));
                        reads += 1;
                    }
                }
                reads
            })
        })
        .collect();
    for round in 1..=300u32 {
        for k in (0..KEYS).filter(|k| (k + round) % 3 != 0) {
            ks.insert(format!("k{k:02}"), round_value(k, round))
                .unwrap();
        }
        db.flush().unwrap();
        db.collect_garbage().unwrap();
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let reads: u64 = readers.into_iter().map(|r| r.join().unwrap()).sum();
    // GC (this thread's calls or the background's, whichever came first) deleted files
    // while the readers ran.
    let now = blob_files(&fs);
    assert!(
        first.iter().any(|n| !now.contains(n)),
        "GC removed no file while the readers ran"
    );
    assert!(reads > 0);
    drop(ks);
    db.close().unwrap();
}
