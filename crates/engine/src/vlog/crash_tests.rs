//! Crash simulation of the value log with `MemFs`: whatever a power loss or process crash
//! leaves of the blob files, a reader returns each value exactly as written or refuses it,
//! every value synced before the crash survives, and replaying a log of handles (as the WAL
//! will hold them) stops at the first handle whose value was lost, never after a synced one.

#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::scan::scan_path;
use super::{Reader, ValueHandle, Writer, WriterOptions};
use crate::files::BlobId;
use crate::files::FileType;
use crate::fs::{CrashOptions, FileSystem, MemFs};
use crate::key::KeyspaceId;

fn dir() -> PathBuf {
    PathBuf::from("/db")
}

fn value(i: u64) -> Vec<u8> {
    // Sizes from empty to several chunks, so tears land in headers, keys and chunks.
    let len = match i % 5 {
        0 => 0,
        1 => 100,
        2 => 4_000,
        3 => 70_000,
        _ => 140_000,
    };
    (0..len).map(|j| (i as usize * 17 + j * 3) as u8).collect()
}

struct Run {
    fs: MemFs,
    /// Handles in write order (the order a WAL would hold them), with their values.
    written: Vec<(ValueHandle, Vec<u8>)>,
    /// How many of `written` were synced (a WAL fsync could have covered them).
    synced: usize,
    files: Vec<u64>,
}

/// Writes 40 values with a small file limit (so rotations happen), syncing every 7th.
fn run() -> Run {
    let fs = MemFs::new();
    fs.create_dir(&dir()).unwrap();
    fs.sync_dir(Path::new("/")).unwrap();
    let next = Arc::new(AtomicU64::new(100));
    let ids = Arc::clone(&next);
    let mut w = Writer::new(
        Arc::new(fs.clone()),
        &dir(),
        WriterOptions {
            max_file_len: 300_000,
        },
        Box::new(move || ids.fetch_add(1, Ordering::SeqCst)),
    );
    let mut written = Vec::new();
    let mut synced = 0;
    for i in 0..40u64 {
        let v = value(i);
        let h = w
            .append(KeyspaceId(i as u32 % 3), &i.to_le_bytes(), &v)
            .unwrap();
        written.push((h, v));
        if i % 7 == 6 {
            w.sync().unwrap();
            synced = written.len();
        }
    }
    let files = (100..next.load(Ordering::SeqCst)).collect();
    Run {
        fs,
        written,
        synced,
        files,
    }
}

/// Checks a crashed image: no wrong value, every synced value present, replay prefix.
fn check(run: &Run, crashed: &MemFs, label: &str) -> usize {
    let reader = Reader::new(Arc::new(crashed.clone()), &dir(), 3);
    let mut replayed = 0;
    let mut ended = false;
    for (i, (h, v)) in run.written.iter().enumerate() {
        let valid = reader.validate_handle(h).unwrap();
        match reader.read(h) {
            Ok(got) => {
                assert_eq!(&got, v, "{label}: handle {i} returned other bytes");
                assert!(valid, "{label}: readable but not valid, handle {i}");
            }
            Err(e) => {
                assert!(
                    e.is_corruption() || matches!(e, crate::Error::Io { .. }),
                    "{label}: {e}"
                );
                assert!(!valid, "{label}: valid but unreadable, handle {i}");
                assert!(i >= run.synced, "{label}: synced handle {i} lost: {e}");
            }
        }
        if !ended && valid {
            replayed += 1;
        } else {
            ended = true;
        }
    }
    assert!(
        replayed >= run.synced,
        "{label}: replay stopped before a synced record"
    );
    // Every file that exists scans to a prefix of what was written to it, never an error.
    for id in &run.files {
        let path = dir().join(FileType::Blob.name(*id));
        if !crashed.exists(&path).unwrap() {
            continue;
        }
        let s = scan_path(crashed, &path, true)
            .unwrap_or_else(|e| panic!("{label}: file {id} does not scan: {e}"));
        let expected: Vec<&ValueHandle> = run
            .written
            .iter()
            .map(|(h, _)| h)
            .filter(|h| h.file_id.0 == *id)
            .collect();
        assert!(s.records.len() <= expected.len());
        for (r, h) in s.records.iter().zip(&expected) {
            assert_eq!(r.handle(BlobId(*id)), **h, "{label}: file {id}");
        }
    }
    replayed
}

#[test]
fn power_loss_keeps_exactly_the_synced_values() {
    let run = run();
    assert!(run.files.len() >= 3, "rotation happened: {:?}", run.files);
    let crashed = run.fs.crash();
    let replayed = check(&run, &crashed, "drop unsynced");
    // Files sealed by rotation were synced whole; only the active file's unsynced tail
    // is lost, so replay ends inside the last file.
    assert!(replayed < run.written.len());
    let last_file = run.written.last().unwrap().0.file_id;
    assert_eq!(run.written[replayed].0.file_id, last_file);
}

#[test]
fn process_crash_keeps_every_value() {
    let run = run();
    let crashed = run.fs.crash_with(CrashOptions::KeepAll);
    assert_eq!(check(&run, &crashed, "keep all"), run.written.len());
}

#[test]
fn random_torn_tails_never_return_wrong_data() {
    let run = run();
    let mut shortest = usize::MAX;
    for seed in 0..200 {
        let crashed = run.fs.crash_with(CrashOptions::Random { seed });
        shortest = shortest.min(check(&run, &crashed, &format!("seed {seed}")));
    }
    assert!(shortest >= run.synced);
}

/// A handle whose record lies past a torn tail is refused even if a later file (which a
/// reader could reach) holds other records: validation is per record, not per file order.
#[test]
fn lost_record_in_the_active_file_fails_validation_only_for_itself() {
    let run = run();
    let crashed = run.fs.crash();
    let reader = Reader::new(Arc::new(crashed), &dir(), 3);
    let results: Vec<bool> = run
        .written
        .iter()
        .map(|(h, _)| reader.validate_handle(h).unwrap())
        .collect();
    // A prefix of true, then false: nothing after the first lost record survived.
    let first_false = results.iter().position(|v| !v).unwrap();
    assert!(results[first_false..].iter().all(|v| !v), "{results:?}");
    assert!(first_false >= run.synced);
}
