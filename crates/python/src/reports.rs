//! The engine's reports as Python dicts: statistics, space, recovery, backup and verify.
//!
//! Plain data, built with the GIL held after the engine call returned; keys are the
//! engine's field names, so the documentation of `cairn::Stats`, `SpaceStats`,
//! `RecoveryReport`, `BackupInfo` and `VerifyReport` describes them.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

/// `Db.stats()`.
pub(crate) fn stats<'py>(py: Python<'py>, s: &cairn::Stats) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("last_seqno", s.last_seqno)?;
    d.set_item("durable_seqno", s.durable_seqno)?;
    d.set_item("tables_per_level", s.tables_per_level.clone())?;
    d.set_item("table_bytes", s.table_bytes)?;
    d.set_item("memtable_bytes", s.memtable_bytes)?;
    d.set_item("wal_bytes_written", s.wal_bytes_written)?;
    d.set_item("wal_syncs", s.wal_syncs)?;
    d.set_item("flush_bytes_written", s.flush_bytes_written)?;
    d.set_item("compaction_bytes_written", s.compaction_bytes_written)?;
    d.set_item("blob_bytes_written", s.blob_bytes_written)?;
    d.set_item("blob_bytes", s.blob_bytes)?;
    d.set_item("user_bytes_written", s.user_bytes_written)?;
    d.set_item("flushes", s.flushes)?;
    d.set_item("compactions", s.compactions)?;
    d.set_item("cache_hits", s.cache_hits)?;
    d.set_item("cache_misses", s.cache_misses)?;
    d.set_item("cache_refused", s.cache_refused)?;
    d.set_item("write_stalls", s.write_stalls)?;
    d.set_item("memory_budget", s.memory_budget)?;
    d.set_item("memtable_limit", s.memtable_limit)?;
    d.set_item("block_cache_bytes", s.block_cache_bytes)?;
    d.set_item("block_cache_capacity", s.block_cache_capacity)?;
    d.set_item("row_cache_bytes", s.row_cache_bytes)?;
    d.set_item("row_cache_capacity", s.row_cache_capacity)?;
    d.set_item("row_cache_hits", s.row_cache_hits)?;
    d.set_item("row_cache_misses", s.row_cache_misses)?;
    d.set_item("index_filter_bytes", s.index_filter_bytes)?;
    d.set_item("index_filter_limit", s.index_filter_limit)?;
    Ok(d)
}

/// `Db.space_stats()`; `blob_files` is a list of dicts.
pub(crate) fn space<'py>(py: Python<'py>, s: &cairn::SpaceStats) -> PyResult<Bound<'py, PyDict>> {
    let files = PyList::empty(py);
    for f in &s.blob_files {
        let d = PyDict::new(py);
        d.set_item("id", f.id)?;
        d.set_item("file_bytes", f.file_bytes)?;
        d.set_item("value_bytes", f.value_bytes)?;
        d.set_item("live_bytes", f.live_bytes)?;
        d.set_item("garbage_bytes", f.garbage_bytes)?;
        files.append(d)?;
    }
    let d = PyDict::new(py);
    d.set_item("blob_files", files)?;
    d.set_item("blob_bytes", s.blob_bytes)?;
    d.set_item("live_blob_bytes", s.live_blob_bytes)?;
    d.set_item("garbage_blob_bytes", s.garbage_blob_bytes)?;
    d.set_item("unflushed_blob_files", s.unflushed_blob_files)?;
    d.set_item("unflushed_blob_bytes", s.unflushed_blob_bytes)?;
    d.set_item("table_bytes", s.table_bytes)?;
    d.set_item("wal_bytes", s.wal_bytes)?;
    Ok(d)
}

/// `Db.recovery_report()`; `losses` is a list of dicts.
pub(crate) fn recovery<'py>(
    py: Python<'py>,
    r: &cairn::RecoveryReport,
) -> PyResult<Bound<'py, PyDict>> {
    let losses = PyList::empty(py);
    for l in &r.losses {
        let d = PyDict::new(py);
        let cause = match l.cause {
            cairn::LossCause::TornTail => "torn tail",
            cairn::LossCause::UnsyncedValue => "unsynced value",
            cairn::LossCause::Salvaged => "salvaged",
            cairn::LossCause::DamagedValue => "damaged value",
            _ => "other",
        };
        d.set_item("cause", cause)?;
        d.set_item("file", l.file.to_string())?;
        d.set_item("path", l.path.display().to_string())?;
        d.set_item("offset", l.offset)?;
        d.set_item("len", l.len)?;
        d.set_item("reason", l.reason.to_string())?;
        d.set_item("seqnos", l.seqnos)?;
        d.set_item("detail", l.detail.clone())?;
        losses.append(d)?;
    }
    let d = PyDict::new(py);
    d.set_item("log_files", r.log_files)?;
    d.set_item("replayed_records", r.replayed_records)?;
    d.set_item("last_seqno", r.last_seqno)?;
    d.set_item("clean", r.is_clean())?;
    d.set_item("lost_durable_writes", r.lost_durable_writes())?;
    d.set_item("losses", losses)?;
    Ok(d)
}

/// `Db.backup()`.
pub(crate) fn backup<'py>(py: Python<'py>, b: &cairn::BackupInfo) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("seqno", b.seqno)?;
    d.set_item("files_linked", b.files_linked)?;
    d.set_item("files_copied", b.files_copied)?;
    d.set_item("bytes_linked", b.bytes_linked)?;
    d.set_item("bytes_copied", b.bytes_copied)?;
    d.set_item("tables", b.tables)?;
    d.set_item("wal_files", b.wal_files)?;
    Ok(d)
}

/// `Db.verify()` and `cairn.verify()`: the files checked, unreferenced names and notes.
pub(crate) fn verify<'py>(
    py: Python<'py>,
    r: &cairn::VerifyReport,
) -> PyResult<Bound<'py, PyDict>> {
    let files = PyList::empty(py);
    for f in &r.files {
        let d = PyDict::new(py);
        d.set_item("name", f.name.clone())?;
        d.set_item("kind", f.kind.to_string())?;
        d.set_item("bytes", f.bytes)?;
        d.set_item("items", f.items)?;
        files.append(d)?;
    }
    let d = PyDict::new(py);
    d.set_item("files", files)?;
    d.set_item("unreferenced", r.unreferenced.clone())?;
    d.set_item("notes", r.notes.clone())?;
    Ok(d)
}
