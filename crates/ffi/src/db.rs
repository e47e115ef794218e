//! `cairn_db_t`: an open ordered store ([`engine::Db`]) and its store-wide operations
//! (open, read-only and follower opens, refresh, close, flush, compaction, backup, verify,
//! sizes and seqnos).
//!
//! Invariants:
//! 1. A `cairn_db_t` owns one [`engine::Db`] and a `closed` flag shared with every handle
//!    made from it (keyspaces, batches, snapshots' users, iterators). `cairn_db_close`
//!    sets the flag and closes the engine store; from then on every call through any of
//!    those handles returns `CAIRN_CLOSED`. The handles stay valid memory until their own
//!    `*_destroy`.
//! 2. The directory lock is released once the `cairn_db_t` and every handle made from it
//!    are destroyed (each holds a reference to the store).
//!
//! Thread-safety: `cairn_db_t` is thread-safe (`Db` is `Send + Sync`); any function may
//! be called on it from any number of threads at once, except `cairn_db_destroy`, which
//! must be the last call.

use std::ffi::{c_char, c_int};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::args;
use crate::guard::run;
use crate::options::cairn_options_t;
use crate::status::{cairn_status_t, Failure, CAIRN_OK};

/// An open ordered store. Thread-safe.
#[allow(non_camel_case_types)]
pub struct cairn_db_t {
    pub(crate) db: engine::Db,
    pub(crate) closed: Arc<AtomicBool>,
}

/// A store that is not closed, or `CAIRN_INVALID_ARGUMENT`/`CAIRN_CLOSED`.
pub(crate) fn live(db: Option<&cairn_db_t>) -> Result<&engine::Db, Failure> {
    let db = db.ok_or_else(|| Failure::invalid("db is NULL"))?;
    check_open(&db.closed, "store")?;
    Ok(&db.db)
}

/// `CAIRN_CLOSED` once the store behind `closed` was closed.
pub(crate) fn check_open(closed: &AtomicBool, what: &str) -> Result<(), Failure> {
    if closed.load(Ordering::Acquire) {
        Err(Failure::closed(what))
    } else {
        Ok(())
    }
}

enum Mode {
    Write,
    ReadOnly,
    Follower,
}

/// The three opens share their argument handling.
///
/// # Safety
/// `path` must be NULL or a NUL-terminated string.
unsafe fn open(
    mode: Mode,
    options: Option<&cairn_options_t>,
    path: *const c_char,
    out: Option<&mut *mut cairn_db_t>,
    errptr: Option<&mut *mut c_char>,
) -> cairn_status_t {
    run(errptr, || {
        let out = out.ok_or_else(|| Failure::invalid("out is NULL"))?;
        *out = std::ptr::null_mut();
        // SAFETY: the caller guarantees `path` is NULL or NUL-terminated.
        let path = unsafe { args::path(path, "path") }?;
        let options = options.map(|o| o.options.clone()).unwrap_or_default();
        let db = match mode {
            Mode::Write => engine::Db::open(path, options),
            Mode::ReadOnly => engine::Db::open_read_only(path, options),
            Mode::Follower => engine::Db::open_follower(path, options),
        }?;
        *out = Box::into_raw(Box::new(cairn_db_t {
            db,
            closed: Arc::new(AtomicBool::new(false)),
        }));
        Ok(CAIRN_OK)
    })
}

/// Opens (or, with `create_if_missing`, creates) the store in directory `path` and stores
/// the handle in `*out` (NULL on failure). `options` may be NULL for the defaults.
///
/// # Safety
/// `path` must be a NUL-terminated string; `options` NULL or a live options object.
#[no_mangle]
pub unsafe extern "C" fn cairn_db_open(
    options: Option<&cairn_options_t>,
    path: *const c_char,
    out: Option<&mut *mut cairn_db_t>,
    errptr: Option<&mut *mut c_char>,
) -> cairn_status_t {
    // SAFETY: the caller's guarantee on `path`, passed on.
    unsafe { open(Mode::Write, options, path, out, errptr) }
}

/// Opens the store read-only at its current state, without a lock, while another
/// process may write it. Writes return `CAIRN_READ_ONLY`.
///
/// # Safety
/// As `cairn_db_open`.
#[no_mangle]
pub unsafe extern "C" fn cairn_db_open_read_only(
    options: Option<&cairn_options_t>,
    path: *const c_char,
    out: Option<&mut *mut cairn_db_t>,
    errptr: Option<&mut *mut c_char>,
) -> cairn_status_t {
    // SAFETY: the caller's guarantee on `path`, passed on.
    unsafe { open(Mode::ReadOnly, options, path, out, errptr) }
}

/// Opens the store as a read-only follower whose view moves forward with
/// `cairn_db_refresh` (or every refresh interval, see
/// `cairn_options_set_refresh_interval_ms`).
///
/// # Safety
/// As `cairn_db_open`.
#[no_mangle]
pub unsafe extern "C" fn cairn_db_open_follower(
    options: Option<&cairn_options_t>,
    path: *const c_char,
    out: Option<&mut *mut cairn_db_t>,
    errptr: Option<&mut *mut c_char>,
) -> cairn_status_t {
    // SAFETY: the caller's guarantee on `path`, passed on.
    unsafe { open(Mode::Follower, options, path, out, errptr) }
}

/// Moves a follower's view to the store's current state; `*changed` (may be NULL) is set
/// to 1 if anything changed. `CAIRN_INVALID_ARGUMENT` for a store not opened as follower.
#[no_mangle]
pub extern "C" fn cairn_db_refresh(
    db: Option<&cairn_db_t>,
    changed: Option<&mut u8>,
    errptr: Option<&mut *mut c_char>,
) -> cairn_status_t {
    run(errptr, || {
        let moved = live(db)?.refresh()?;
        if let Some(c) = changed {
            *c = u8::from(moved);
        }
        Ok(CAIRN_OK)
    })
}

/// Syncs the log, stops background work and marks the store and every handle made from
/// it closed (their calls return `CAIRN_CLOSED`). A second close returns `CAIRN_CLOSED`.
/// The handle must still be freed with `cairn_db_destroy`.
#[no_mangle]
pub extern "C" fn cairn_db_close(
    db: Option<&cairn_db_t>,
    errptr: Option<&mut *mut c_char>,
) -> cairn_status_t {
    run(errptr, || {
        let db = db.ok_or_else(|| Failure::invalid("db is NULL"))?;
        if db.closed.swap(true, Ordering::AcqRel) {
            return Err(Failure::closed("store"));
        }
        db.db.clone().close()?;
        Ok(CAIRN_OK)
    })
}

/// Frees the handle (NULL is ignored), closing the store first if `cairn_db_close` was
/// not called (errors of that close are not reported: call `cairn_db_close` to see
/// them). Handles made from it keep working until the store is closed.
#[no_mangle]
pub extern "C" fn cairn_db_destroy(db: Option<Box<cairn_db_t>>) {
    let _ = run(None, move || {
        drop(db);
        Ok(CAIRN_OK)
    });
}

/// Flushes every memtable into tables and waits for it.
#[no_mangle]
pub extern "C" fn cairn_db_flush(
    db: Option<&cairn_db_t>,
    errptr: Option<&mut *mut c_char>,
) -> cairn_status_t {
    run(errptr, || {
        live(db)?.flush()?;
        Ok(CAIRN_OK)
    })
}

/// Hands every logged write to the OS and, if `sync` is non-zero, fsyncs the log.
#[no_mangle]
pub extern "C" fn cairn_db_flush_wal(
    db: Option<&cairn_db_t>,
    sync: u8,
    errptr: Option<&mut *mut c_char>,
) -> cairn_status_t {
    run(errptr, || {
        live(db)?.flush_wal(sync != 0)?;
        Ok(CAIRN_OK)
    })
}

/// Compacts the whole store now; `*runs` (may be NULL) receives the number of
/// compactions run.
#[no_mangle]
pub extern "C" fn cairn_db_compact(
    db: Option<&cairn_db_t>,
    runs: Option<&mut usize>,
    errptr: Option<&mut *mut c_char>,
) -> cairn_status_t {
    run(errptr, || {
        let n = live(db)?.compact()?;
        if let Some(r) = runs {
            *r = n;
        }
        Ok(CAIRN_OK)
    })
}

/// Rewrites now the tables whose entries have expired (the background threads do it
/// when idle); `*runs` (may be NULL) receives the number of compactions run.
#[no_mangle]
pub extern "C" fn cairn_db_compact_expired(
    db: Option<&cairn_db_t>,
    runs: Option<&mut usize>,
    errptr: Option<&mut *mut c_char>,
) -> cairn_status_t {
    run(errptr, || {
        let n = live(db)?.compact_expired()?;
        if let Some(r) = runs {
            *r = n;
        }
        Ok(CAIRN_OK)
    })
}

/// Runs value-log garbage collection now: removes blob files no table references and
/// moves the live values out of those whose garbage share reached the store's threshold;
/// `*files` (may be NULL) receives the number of blob files removed.
#[no_mangle]
pub extern "C" fn cairn_db_collect_garbage(
    db: Option<&cairn_db_t>,
    files: Option<&mut usize>,
    errptr: Option<&mut *mut c_char>,
) -> cairn_status_t {
    run(errptr, || {
        let n = live(db)?.collect_garbage()?;
        if let Some(f) = files {
            *f = n;
        }
        Ok(CAIRN_OK)
    })
}

/// Flushes every sealed memtable (not the active one) and waits until no flush or
/// compaction is pending.
#[no_mangle]
pub extern "C" fn cairn_db_wait_for_compactions(
    db: Option<&cairn_db_t>,
    errptr: Option<&mut *mut c_char>,
) -> cairn_status_t {
    run(errptr, || {
        live(db)?.wait_for_compactions()?;
        Ok(CAIRN_OK)
    })
}

/// 1 if the store was opened read-only or as a follower (writes are refused), 0 if it
/// was opened for writing, -1 for a NULL or closed store.
#[no_mangle]
pub extern "C" fn cairn_db_is_read_only(db: Option<&cairn_db_t>) -> c_int {
    flag(db, engine::Db::is_read_only)
}

/// 1 if the store was opened as a follower (`cairn_db_refresh` moves it), 0 if not, -1
/// for a NULL or closed store.
#[no_mangle]
pub extern "C" fn cairn_db_is_follower(db: Option<&cairn_db_t>) -> c_int {
    flag(db, engine::Db::is_follower)
}

/// `1`/`0` for `test` of a live store, `-1` for a NULL or closed one (never a panic).
fn flag(db: Option<&cairn_db_t>, test: fn(&engine::Db) -> bool) -> c_int {
    let answer = run(None, || Ok(c_int::from(test(live(db)?))));
    if answer == 0 || answer == 1 {
        answer
    } else {
        -1
    }
}

/// Writes a consistent copy of the store into the new directory `dest` while writes
/// continue; `*seqno` (may be NULL) receives the last write the copy holds.
///
/// # Safety
/// `dest` must be a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn cairn_db_backup(
    db: Option<&cairn_db_t>,
    dest: *const c_char,
    seqno: Option<&mut u64>,
    errptr: Option<&mut *mut c_char>,
) -> cairn_status_t {
    run(errptr, || {
        let db = live(db)?;
        // SAFETY: the caller guarantees `dest` is NULL or NUL-terminated.
        let dest = unsafe { args::path(dest, "dest") }?;
        let info = db.backup(dest)?;
        if let Some(s) = seqno {
            *s = info.seqno;
        }
        Ok(CAIRN_OK)
    })
}

/// Checks every checksum of the open store's files; `CAIRN_CORRUPTION` names the first
/// damaged file.
#[no_mangle]
pub extern "C" fn cairn_db_verify(
    db: Option<&cairn_db_t>,
    errptr: Option<&mut *mut c_char>,
) -> cairn_status_t {
    run(errptr, || {
        live(db)?.verify()?;
        Ok(CAIRN_OK)
    })
}

/// Checks every checksum of the store in directory `path` without opening it for
/// writing.
///
/// # Safety
/// `path` must be a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn cairn_verify(
    path: *const c_char,
    errptr: Option<&mut *mut c_char>,
) -> cairn_status_t {
    run(errptr, || {
        // SAFETY: the caller guarantees `path` is NULL or NUL-terminated.
        let path = unsafe { args::path(path, "path") }?;
        engine::verify(path)?;
        Ok(CAIRN_OK)
    })
}

/// Stores in `*bytes` the bytes the store's files take on disk.
#[no_mangle]
pub extern "C" fn cairn_db_disk_size(
    db: Option<&cairn_db_t>,
    bytes: Option<&mut u64>,
    errptr: Option<&mut *mut c_char>,
) -> cairn_status_t {
    run(errptr, || {
        let db = live(db)?;
        let out = bytes.ok_or_else(|| Failure::invalid("bytes is NULL"))?;
        *out = db.disk_size()?;
        Ok(CAIRN_OK)
    })
}

/// Stores in `*seqno` the largest seqno known to survive a power loss.
#[no_mangle]
pub extern "C" fn cairn_db_durable_seqno(
    db: Option<&cairn_db_t>,
    seqno: Option<&mut u64>,
    errptr: Option<&mut *mut c_char>,
) -> cairn_status_t {
    run(errptr, || {
        let db = live(db)?;
        let out = seqno.ok_or_else(|| Failure::invalid("seqno is NULL"))?;
        *out = db.durable_seqno();
        Ok(CAIRN_OK)
    })
}

/// Stores in `*seqno` the seqno of the last acknowledged write.
#[no_mangle]
pub extern "C" fn cairn_db_last_seqno(
    db: Option<&cairn_db_t>,
    seqno: Option<&mut u64>,
    errptr: Option<&mut *mut c_char>,
) -> cairn_status_t {
    run(errptr, || {
        let db = live(db)?;
        let out = seqno.ok_or_else(|| Failure::invalid("seqno is NULL"))?;
        *out = db.last_seqno();
        Ok(CAIRN_OK)
    })
}
