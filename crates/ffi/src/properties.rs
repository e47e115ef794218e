//! A store's numbers by name, as C monitoring code wants them: `cairn_db_property_int`
//! reads one (`"stats.flushes"`, `"space.garbage_blob_bytes"`, `"recovery.losses"`, ...),
//! `cairn_db_property_names` lists every name, and `cairn_db_recovery_loss` describes
//! each range the open's recovery left out.
//!
//! Names, not a struct: a name added later breaks no compiled program, and a program
//! asking for a name this version lacks gets `CAIRN_NOT_FOUND`, not a wrong offset.
//!
//! Invariant: every name `cairn_db_property_names` lists is answered by
//! `cairn_db_property_int` (the list and the lookup are built from one table).
//!
//! Thread-safety: any number of threads may read properties at once, beside any other
//! call on the store.

use std::ffi::c_char;

use crate::args;
use crate::db::{cairn_db_t, live};
use crate::guard::run;
use crate::status::{cairn_status_t, Failure, CAIRN_NOT_FOUND, CAIRN_OK};

/// Where a property's value comes from; each source is read once per call.
#[derive(Clone, Copy)]
enum Source {
    Stats(fn(&engine::Stats) -> u64),
    Space(fn(&engine::SpaceStats) -> u64),
    Recovery(fn(&engine::RecoveryReport) -> u64),
}

fn count(n: usize) -> u64 {
    u64::try_from(n).unwrap_or(u64::MAX)
}

/// Every scalar property, by name. `stats.tables_at_level.N` (N from 0 to
/// `stats.levels` - 1) is answered apart.
const PROPERTIES: &[(&str, Source)] = &[
    ("stats.last_seqno", Source::Stats(|s| s.last_seqno)),
    ("stats.durable_seqno", Source::Stats(|s| s.durable_seqno)),
    (
        "stats.levels",
        Source::Stats(|s| count(s.tables_per_level.len())),
    ),
    (
        "stats.tables",
        Source::Stats(|s| count(s.tables_per_level.iter().sum())),
    ),
    ("stats.table_bytes", Source::Stats(|s| s.table_bytes)),
    ("stats.memtable_bytes", Source::Stats(|s| s.memtable_bytes)),
    (
        "stats.wal_bytes_written",
        Source::Stats(|s| s.wal_bytes_written),
    ),
    ("stats.wal_syncs", Source::Stats(|s| s.wal_syncs)),
    (
        "stats.flush_bytes_written",
        Source::Stats(|s| s.flush_bytes_written),
    ),
    (
        "stats.compaction_bytes_written",
        Source::Stats(|s| s.compaction_bytes_written),
    ),
    (
        "stats.blob_bytes_written",
        Source::Stats(|s| s.blob_bytes_written),
    ),
    ("stats.blob_bytes", Source::Stats(|s| s.blob_bytes)),
    (
        "stats.user_bytes_written",
        Source::Stats(|s| s.user_bytes_written),
    ),
    ("stats.flushes", Source::Stats(|s| s.flushes)),
    ("stats.compactions", Source::Stats(|s| s.compactions)),
    ("stats.cache_hits", Source::Stats(|s| s.cache_hits)),
    ("stats.cache_misses", Source::Stats(|s| s.cache_misses)),
    ("stats.cache_refused", Source::Stats(|s| s.cache_refused)),
    ("stats.write_stalls", Source::Stats(|s| s.write_stalls)),
    // The memory budget and its shares; 0 where the store has no budget.
    (
        "stats.memory_budget",
        Source::Stats(|s| s.memory_budget.unwrap_or(0)),
    ),
    (
        "stats.memtable_limit",
        Source::Stats(|s| s.memtable_limit.unwrap_or(0)),
    ),
    (
        "stats.block_cache_bytes",
        Source::Stats(|s| s.block_cache_bytes),
    ),
    (
        "stats.block_cache_capacity",
        Source::Stats(|s| s.block_cache_capacity),
    ),
    // The row cache; 0 where the store has none.
    (
        "stats.row_cache_bytes",
        Source::Stats(|s| s.row_cache_bytes),
    ),
    (
        "stats.row_cache_capacity",
        Source::Stats(|s| s.row_cache_capacity),
    ),
    ("stats.row_cache_hits", Source::Stats(|s| s.row_cache_hits)),
    (
        "stats.row_cache_misses",
        Source::Stats(|s| s.row_cache_misses),
    ),
    (
        "stats.index_filter_bytes",
        Source::Stats(|s| s.index_filter_bytes),
    ),
    (
        "stats.index_filter_limit",
        Source::Stats(|s| s.index_filter_limit.unwrap_or(0)),
    ),
    (
        "space.blob_files",
        Source::Space(|s| count(s.blob_files.len())),
    ),
    ("space.blob_bytes", Source::Space(|s| s.blob_bytes)),
    (
        "space.live_blob_bytes",
        Source::Space(|s| s.live_blob_bytes),
    ),
    (
        "space.garbage_blob_bytes",
        Source::Space(|s| s.garbage_blob_bytes),
    ),
    (
        "space.unflushed_blob_files",
        Source::Space(|s| count(s.unflushed_blob_files)),
    ),
    (
        "space.unflushed_blob_bytes",
        Source::Space(|s| s.unflushed_blob_bytes),
    ),
    ("space.table_bytes", Source::Space(|s| s.table_bytes)),
    ("space.wal_bytes", Source::Space(|s| s.wal_bytes)),
    ("recovery.log_files", Source::Recovery(|r| r.log_files)),
    (
        "recovery.replayed_records",
        Source::Recovery(|r| r.replayed_records),
    ),
    ("recovery.last_seqno", Source::Recovery(|r| r.last_seqno)),
    (
        "recovery.losses",
        Source::Recovery(|r| count(r.losses.len())),
    ),
    (
        "recovery.lost_durable_writes",
        Source::Recovery(|r| u64::from(r.lost_durable_writes())),
    ),
];

/// The prefix of the per-level table counts.
const TABLES_AT_LEVEL: &str = "stats.tables_at_level.";

/// The value of property `name`, or `None` for a name this version does not know.
fn property(db: &engine::Db, name: &str) -> Result<Option<u64>, Failure> {
    if let Some(level) = name.strip_prefix(TABLES_AT_LEVEL) {
        let Ok(level) = level.parse::<usize>() else {
            return Ok(None);
        };
        return Ok(db.stats().tables_per_level.get(level).map(|n| count(*n)));
    }
    let Some((_, source)) = PROPERTIES.iter().find(|(n, _)| *n == name) else {
        return Ok(None);
    };
    Ok(Some(match source {
        Source::Stats(f) => f(&db.stats()),
        Source::Space(f) => f(&db.space_stats()?),
        Source::Recovery(f) => f(db.recovery_report()),
    }))
}

/// Stores in `*value` the store's property `name` (a NUL-terminated name that
/// `cairn_db_property_names` lists, e.g. `"stats.flushes"`, `"space.garbage_blob_bytes"`,
/// `"stats.tables_at_level.0"`). `CAIRN_NOT_FOUND` for a name this version does not know
/// (`*value` 0).
///
/// # Safety
/// `name` must be NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn cairn_db_property_int(
    db: Option<&cairn_db_t>,
    name: *const c_char,
    value: Option<&mut u64>,
    errptr: Option<&mut *mut c_char>,
) -> cairn_status_t {
    run(errptr, || {
        let out = value.ok_or_else(|| Failure::invalid("value is NULL"))?;
        *out = 0;
        let db = live(db)?;
        // SAFETY: the caller guarantees `name` is NULL or NUL-terminated.
        let name = unsafe { args::text(name, "name") }?;
        match property(db, name)? {
            Some(v) => {
                *out = v;
                Ok(CAIRN_OK)
            }
            None => Ok(CAIRN_NOT_FOUND),
        }
    })
}

/// Stores in `*names` a `malloc`ed array of the `*count` property names the store answers
/// now (the per-level names for each of its levels); free it with `cairn_names_free`.
#[no_mangle]
pub extern "C" fn cairn_db_property_names(
    db: Option<&cairn_db_t>,
    names: Option<&mut *mut *mut c_char>,
    count: Option<&mut usize>,
    errptr: Option<&mut *mut c_char>,
) -> cairn_status_t {
    run(errptr, || {
        let (names, count) = names
            .zip(count)
            .ok_or_else(|| Failure::invalid("names or count is NULL"))?;
        *names = std::ptr::null_mut();
        *count = 0;
        let db = live(db)?;
        let mut list: Vec<String> = PROPERTIES.iter().map(|(n, _)| (*n).to_string()).collect();
        let levels = db.stats().tables_per_level.len();
        list.extend((0..levels).map(|l| format!("{TABLES_AT_LEVEL}{l}")));
        (*names, *count) = args::malloc_strings(&list)?;
        Ok(CAIRN_OK)
    })
}

/// Describes range `index` (from 0 to `recovery.losses` - 1) that the open's recovery
/// left out: `*text` receives a `malloc`ed, NUL-terminated description naming the cause,
/// the file, the offset and length and the seqnos lost (free it with `cairn_free`);
/// `*offset` and `*len` (each may be NULL) the range in that file. `CAIRN_NOT_FOUND` past
/// the last loss.
#[no_mangle]
pub extern "C" fn cairn_db_recovery_loss(
    db: Option<&cairn_db_t>,
    index: usize,
    offset: Option<&mut u64>,
    len: Option<&mut u64>,
    text: Option<&mut *mut c_char>,
    errptr: Option<&mut *mut c_char>,
) -> cairn_status_t {
    run(errptr, || {
        let text = text.ok_or_else(|| Failure::invalid("text is NULL"))?;
        *text = std::ptr::null_mut();
        let db = live(db)?;
        let Some(loss) = db.recovery_report().losses.get(index) else {
            return Ok(CAIRN_NOT_FOUND);
        };
        if let Some(offset) = offset {
            *offset = loss.offset;
        }
        if let Some(len) = len {
            *len = loss.len;
        }
        *text = args::malloc_copy(loss.to_string().as_bytes())?;
        Ok(CAIRN_OK)
    })
}
