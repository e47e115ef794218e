//! Hooks for crash testing, not part of the supported API: they exist so that a test
//! process (the kill -9 harness in `tests/kill9.rs`) can run a store in ways a user never
//! should. Nothing here is covered by semantic versioning.

use std::path::Path;
use std::sync::Arc;

use crate::db::Db;
use crate::error::Result;
use crate::fs::LossyFs;
use crate::options::Options;

/// Opens the store in `dir` on a file system that keeps every unsynced append in this
/// process's memory until the file is synced. Killing the process then loses exactly the
/// unsynced bytes, as a power loss would; while the process runs, the store behaves as if
/// opened with [`Db::open`]. Directory changes reach the disk at once (see the `LossyFs`
/// documentation).
///
/// For crash testing only: unsynced appends are held in memory until the store syncs
/// them (every `Sync` write, a log rotation, a finished table, [`Db::close`]), and are
/// lost if the process dies first.
///
/// # Errors
/// As [`Db::open`].
pub fn open_simulating_power_loss(dir: &Path, options: Options) -> Result<Db> {
    Db::open_with_fs(Arc::new(LossyFs::new()), dir, options)
}

/// How many times longer the long-running tests run than their bounded default: the
/// whole number in `CAIRN_SOAK` (at least 1; 1 when it is unset or not a number). CI runs
/// the bounded suite; `CAIRN_SOAK=10 bash scripts/test.sh` is a soak of the same tests.
/// The kill -9 cycles, the model tests' cases, the concurrency stress batches, the
/// multi-process run time and the fuzz smoke run scale with it.
pub fn soak_factor() -> u64 {
    std::env::var("CAIRN_SOAK")
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .unwrap_or(1)
        .max(1)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]
mod tests {
    use super::*;
    use crate::options::Durability;

    /// Through `LossyFs` the store works as usual (flushes and compactions read back the
    /// tables they wrote, some still unsynced in memory), and a clean close leaves every
    /// write on disk for a plain open.
    #[test]
    fn a_store_on_lossy_fs_behaves_normally_and_close_persists_it() {
        let tmp = tempfile::tempdir().unwrap();
        let options = Options {
            durability: Durability::Buffered,
            memtable_size: 16 << 10,
            l0_compaction_trigger: 2,
            level1_size: 32 << 10,
            table_size: 16 << 10,
            block_size: 512,
            ..Options::default()
        };
        let key = |i: u32| format!("key{i:05}");
        let db = open_simulating_power_loss(tmp.path(), options.clone()).unwrap();
        let ks = db.keyspace("k").unwrap();
        for i in 0..3000u32 {
            ks.insert(key(i % 1000), format!("value {i} {}", "x".repeat(40)))
                .unwrap();
            if i % 7 == 0 {
                ks.remove(key((i * 13) % 1000)).unwrap();
            }
        }
        db.flush().unwrap();
        db.wait_for_compactions().unwrap();
        assert!(db.stats().compactions > 0, "the workload should compact");
        let before: Vec<_> = ks.iter().map(|kv| kv.unwrap()).collect();
        assert!(!before.is_empty());
        drop(ks);
        db.close().unwrap();

        let db = Db::open(tmp.path(), options).unwrap();
        let ks = db.keyspace("k").unwrap();
        let after: Vec<_> = ks.iter().map(|kv| kv.unwrap()).collect();
        assert_eq!(before, after);
    }
}
