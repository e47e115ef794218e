//! `cairn_snapshot_t`: a consistent read view of every keyspace of a store
//! ([`engine::Snapshot`]). Read functions take an optional snapshot; NULL reads the
//! latest state.
//!
//! Invariant: while a snapshot handle lives, compaction keeps the versions it sees, so
//! destroy snapshots promptly.
//!
//! Thread-safety: thread-safe (`Snapshot` is `Send + Sync`); it may be used by reads on
//! several threads at once.

use std::ffi::c_char;

use crate::db::{self, cairn_db_t};
use crate::guard::run;
use crate::status::{cairn_status_t, Failure, CAIRN_OK};

/// A read view of a store at one seqno. Thread-safe.
#[allow(non_camel_case_types)]
pub struct cairn_snapshot_t {
    pub(crate) snapshot: engine::Snapshot,
}

/// Takes a snapshot of the store now (O(1)) and stores it in `*out`.
#[no_mangle]
pub extern "C" fn cairn_snapshot_create(
    db: Option<&cairn_db_t>,
    out: Option<&mut *mut cairn_snapshot_t>,
    errptr: Option<&mut *mut c_char>,
) -> cairn_status_t {
    run(errptr, || {
        let out = out.ok_or_else(|| Failure::invalid("out is NULL"))?;
        *out = std::ptr::null_mut();
        let snapshot = db::live(db)?.snapshot();
        *out = Box::into_raw(Box::new(cairn_snapshot_t { snapshot }));
        Ok(CAIRN_OK)
    })
}

/// The seqno the snapshot reads at (0 for NULL).
#[no_mangle]
pub extern "C" fn cairn_snapshot_seqno(snapshot: Option<&cairn_snapshot_t>) -> u64 {
    snapshot.map_or(0, |s| s.snapshot.seqno())
}

/// Releases the snapshot (NULL is ignored).
#[no_mangle]
pub extern "C" fn cairn_snapshot_destroy(snapshot: Option<Box<cairn_snapshot_t>>) {
    let _ = run(None, move || {
        drop(snapshot);
        Ok(CAIRN_OK)
    });
}
