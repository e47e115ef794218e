//! Helpers shared by the ordered-store integration tests: scratch directories, option
//! sets that make flushes and compactions run constantly, and result shorthands.
#![allow(
    dead_code,
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use std::path::Path;

use cairn::{Compression, Durability, Error, Iter, Options};

/// A scratch directory on a memory file system when one is available (`/dev/shm`), so
/// that fsync costs nothing and thousands of stores can be opened per run; otherwise in
/// the default temporary directory. Use it only where durability is not under test.
pub fn mem_tempdir() -> tempfile::TempDir {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        if let Ok(dir) = tempfile::Builder::new()
            .prefix("cairn-test-")
            .tempdir_in(shm)
        {
            return dir;
        }
    }
    disk_tempdir()
}

/// A scratch directory on the default (disk-backed) temporary file system.
pub fn disk_tempdir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("cairn-test-")
        .tempdir()
        .unwrap()
}

/// Options with a memtable of `memtable` bytes, blocks of `block` bytes and levels small
/// enough that every few kilobytes of writes cause a flush and a compaction.
pub fn tiny(memtable: usize, block: usize) -> Options {
    Options::default()
        .durability(Durability::Buffered)
        .memtable_size(memtable)
        .block_size(block)
        .restart_interval(1)
        .l0_compaction_trigger(2)
        .level1_size(4 << 10)
        .level_size_multiplier(2)
        .table_size(4 << 10)
        .block_cache_size(64 << 10)
        .compression(Compression::Lz4)
        .bloom_bits_per_key(10)
}

/// Every pair an iterator yields, failing the test on an error.
pub fn collect(it: Iter) -> Vec<(Vec<u8>, Vec<u8>)> {
    it.map(|r| r.unwrap()).collect()
}

/// Asserts that `result` is `Err(InvalidArgument)` whose message contains `needle`.
#[track_caller]
pub fn assert_invalid<T: std::fmt::Debug>(result: cairn::Result<T>, needle: &str) {
    match result {
        Err(Error::InvalidArgument(msg)) => {
            assert!(msg.contains(needle), "{msg:?} should mention {needle:?}");
        }
        other => panic!("expected InvalidArgument mentioning {needle:?}, got {other:?}"),
    }
}

/// The names of the files in `dir` whose names end with `suffix`.
pub fn files_ending(dir: &Path, suffix: &str) -> std::collections::BTreeSet<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(suffix))
        .collect()
}

/// The names of the table files in `dir`.
pub fn table_files(dir: &Path) -> std::collections::BTreeSet<String> {
    files_ending(dir, ".sst")
}

/// The names of the log (WAL) files in `dir`.
pub fn wal_files(dir: &Path) -> std::collections::BTreeSet<String> {
    files_ending(dir, ".wal")
}
