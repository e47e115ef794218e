//! The garbage-collection policy of the value log (FORMAT.md §11): given each live blob
//! file's total value bytes and the bytes still referenced by live tables, which files to
//! delete outright and which to rewrite. Pure functions; running GC is the `Db`'s job.
//!
//! Accounting: a blob file's *total* is the sum of its records' value lengths (the
//! manifest records it, [`BlobFileMeta::value_bytes`]); its *live* bytes are the sum, over
//! every table of the current version, of the bytes that table's value handles reference
//! in it (table properties, `table/blob_refs.rs`). Compaction drops shadowed versions and
//! tombstoned keys, so live bytes only fall as the tree is compacted; a file nobody
//! references is garbage in full and is deleted without a rewrite.
//!
//! Policy: a file whose garbage ratio `(total - live) / total` is at least the threshold is
//! rewritten (its live values move to a new file, the tables' handles are updated), most
//! garbage first, at most `max_files` per run.
//!
//! **Space bound.** Once every sealed file with a ratio at or above threshold `t` has been
//! collected, every remaining file has `total < live / (1 - t)`, so the blob files hold
//! less than `live_total / (1 - t)` bytes of values: a space amplification of at most
//! `1 / (1 - t)` over the referenced bytes (2x at the default `t` = 0.5, 1.33x at 0.25).
//! Two caveats, both documented for users: "live" means *referenced by a table*, which
//! includes versions kept for snapshots and shadowed versions not yet compacted away, so
//! the bound is over referenced bytes, not over the newest values only; and the active file
//! and files written since the last flush are not counted until a flush records them.
//! A lower threshold tightens the bound at the cost of rewriting more (each rewrite copies
//! `live` bytes to reclaim `total - live`, a write amplification of `(1 - r) / r` per
//! reclaimed byte for a file at ratio `r`, at most `(1 - t) / t`).
//!
//! Thread-safety: plain values and pure functions.

use std::collections::BTreeMap;

use super::BlobFileMeta;
use crate::files::BlobId;

/// Bytes of one blob file: total and still referenced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FileUsage {
    /// The blob file's id.
    pub(crate) id: BlobId,
    /// Sum of the value lengths of its records.
    pub(crate) total_bytes: u64,
    /// Bytes of those values that live tables reference (capped at `total_bytes`).
    pub(crate) live_bytes: u64,
}

impl FileUsage {
    /// Bytes no table references.
    pub(crate) fn garbage_bytes(&self) -> u64 {
        self.total_bytes.saturating_sub(self.live_bytes)
    }
}

/// When a file is worth rewriting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Policy {
    /// Rewrite a file once at least this percentage of its bytes is garbage (1..=100).
    pub(crate) min_garbage_percent: u8,
    /// At most this many files per run.
    pub(crate) max_files: usize,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            min_garbage_percent: 50,
            max_files: 4,
        }
    }
}

/// What one GC run should do.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Plan {
    /// Files no table references: delete (after the manifest records their removal).
    pub(crate) delete: Vec<BlobId>,
    /// Files to rewrite, most garbage first.
    pub(crate) rewrite: Vec<BlobId>,
}

/// The usage of each blob file in `files`, given `(blob file id, referenced bytes)` pairs
/// from the tables' properties. References to files not in `files` are ignored (they are
/// a bug elsewhere, reported by the `Db`'s consistency checks, not here).
pub(crate) fn usage(
    files: &BTreeMap<BlobId, BlobFileMeta>,
    refs: impl IntoIterator<Item = (u64, u64)>,
) -> Vec<FileUsage> {
    let mut live: BTreeMap<BlobId, u64> = BTreeMap::new();
    for (id, bytes) in refs {
        let id = BlobId(id);
        if files.contains_key(&id) {
            let slot = live.entry(id).or_default();
            *slot = slot.saturating_add(bytes);
        }
    }
    files
        .values()
        .map(|f| FileUsage {
            id: f.id,
            total_bytes: f.value_bytes,
            live_bytes: live.get(&f.id).copied().unwrap_or(0).min(f.value_bytes),
        })
        .collect()
}

/// True if `u`'s garbage ratio is at least `percent` %.
fn over_threshold(u: &FileUsage, percent: u8) -> bool {
    u128::from(u.garbage_bytes()) * 100 >= u128::from(u.total_bytes) * u128::from(percent)
}

/// The plan for `files` under `policy`: every file with no live bytes is deleted (no
/// limit: deleting costs no writes); files at or over the threshold that still hold live
/// bytes are rewritten, most garbage bytes first (ties: lower id), at most
/// `policy.max_files`.
pub(crate) fn plan(files: &[FileUsage], policy: &Policy) -> Plan {
    let percent = policy.min_garbage_percent.clamp(1, 100);
    let mut plan = Plan::default();
    let mut candidates = Vec::new();
    for u in files {
        if u.live_bytes == 0 {
            plan.delete.push(u.id);
        } else if over_threshold(u, percent) {
            candidates.push(*u);
        }
    }
    candidates.sort_by(|a, b| {
        b.garbage_bytes()
            .cmp(&a.garbage_bytes())
            .then(a.id.cmp(&b.id))
    });
    plan.rewrite = candidates
        .into_iter()
        .take(policy.max_files)
        .map(|u| u.id)
        .collect();
    plan
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn meta(id: u64, value_bytes: u64) -> BlobFileMeta {
        BlobFileMeta {
            id: BlobId(id),
            file_size: value_bytes + 100,
            record_count: 1,
            value_bytes,
        }
    }

    #[test]
    fn usage_sums_references_per_file() {
        let files: BTreeMap<BlobId, BlobFileMeta> = [meta(1, 1000), meta(2, 500), meta(3, 0)]
            .into_iter()
            .map(|m| (m.id, m))
            .collect();
        let u = usage(&files, [(1, 300), (2, 100), (1, 200), (9, 50), (2, 1000)]);
        assert_eq!(
            u,
            vec![
                FileUsage {
                    id: BlobId(1),
                    total_bytes: 1000,
                    live_bytes: 500
                },
                FileUsage {
                    id: BlobId(2),
                    total_bytes: 500,
                    live_bytes: 500
                }, // capped
                FileUsage {
                    id: BlobId(3),
                    total_bytes: 0,
                    live_bytes: 0
                },
            ]
        );
    }

    #[test]
    fn plan_deletes_dead_files_and_rewrites_the_most_garbage_first() {
        let f = |id, total, live| FileUsage {
            id: BlobId(id),
            total_bytes: total,
            live_bytes: live,
        };
        let files = [
            f(1, 1000, 0),   // dead
            f(2, 1000, 500), // exactly 50 %
            f(3, 1000, 501), // just under
            f(4, 4000, 100), // most garbage
            f(5, 1000, 100),
            f(6, 0, 0), // empty: dead
        ];
        let p = plan(
            &files,
            &Policy {
                min_garbage_percent: 50,
                max_files: 2,
            },
        );
        assert_eq!(p.delete, vec![BlobId(1), BlobId(6)]);
        assert_eq!(p.rewrite, vec![BlobId(4), BlobId(5)]);
        let p = plan(
            &files,
            &Policy {
                min_garbage_percent: 50,
                max_files: 10,
            },
        );
        assert_eq!(p.rewrite, vec![BlobId(4), BlobId(5), BlobId(2)]);
        let p = plan(
            &files,
            &Policy {
                min_garbage_percent: 100,
                max_files: 10,
            },
        );
        assert!(p.rewrite.is_empty());
    }

    proptest! {
        /// The space bound: after collecting every file the plan picks (and with no limit
        /// on files per run), total bytes < live bytes / (1 - t) for each remaining file,
        /// hence for their sum.
        #[test]
        fn remaining_files_respect_the_space_bound(
            raw in prop::collection::vec((1u64..1_000_000, 0u64..=100), 1..40),
            percent in 1u8..=99,
        ) {
            let files: Vec<FileUsage> = raw
                .iter()
                .enumerate()
                .map(|(i, (total, live_pct))| FileUsage {
                    id: BlobId(i as u64),
                    total_bytes: *total,
                    live_bytes: total * live_pct / 100,
                })
                .collect();
            let p = plan(&files, &Policy { min_garbage_percent: percent, max_files: usize::MAX });
            let gone: std::collections::BTreeSet<BlobId> =
                p.delete.iter().chain(&p.rewrite).copied().collect();
            let (mut total, mut live) = (0u128, 0u128);
            for u in files.iter().filter(|u| !gone.contains(&u.id)) {
                total += u128::from(u.total_bytes);
                live += u128::from(u.live_bytes);
            }
            // total * (100 - t) < live * 100, or nothing remains.
            prop_assert!(total == 0 || total * u128::from(100 - percent) < live * 100);
            for u in &files {
                let picked = gone.contains(&u.id);
                prop_assert_eq!(picked, u.live_bytes == 0 || over_threshold(u, percent));
            }
        }
    }
}
