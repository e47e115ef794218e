//! `cairn.Db`: an ordered store, opened read-write, read-only or as a follower.
//!
//! A `Db` is a context manager that closes the store on exit. It may be shared by any
//! number of Python threads: every method that does I/O or long work (open, reads,
//! writes, flush, compact, backup, verify, close) releases the GIL, and the engine serves
//! concurrent callers (writers share fsyncs through group commit). `close()` waits for
//! calls in flight, drops every keyspace, snapshot, batch and iterator made from the
//! store, syncs the log and stops background threads; every later call raises
//! `cairn.ClosedError` (see `shared.rs`). A `Db` dropped without `close()` is closed
//! when its last keyspace, snapshot, batch or iterator is gone.

use std::path::PathBuf;
use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyType};

use crate::batch::Batch;
use crate::errors::{Fail, OrRaise};
use crate::keyspace::Keyspace;
use crate::options::DbOptions;
use crate::reports;
use crate::shared::Shared;
use crate::snapshot::Snapshot;
use crate::transaction::{self, Transaction};

/// How a store was opened.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    ReadWrite,
    ReadOnly,
    Follower,
}

/// An ordered key-value store with named keyspaces, opened (by default created) in the
/// directory `path`; a context manager that closes the store on exit.
///
/// Options left at None keep the engine's defaults. `durability` is the default of every
/// write: "sync" (the default; fsynced before the call returns, concurrent writers share
/// fsyncs), "buffered" (handed to the OS), "none" (memtable only until a flush),
/// "periodic[:<ms>]" (fsynced in the background every interval, 100 ms by default) or
/// "async[:<queue depth>]". `compression` of tables: "none", "lz4" (default), "snappy",
/// "zstd" or "zstd:<level>". Sizes are in bytes; `blob_threshold` keeps values of at least
/// that size in the value log. Errors: `InvalidArgumentError` for a bad option (or a
/// missing store with `create_if_missing=False`), `IOError` if the directory cannot be used
/// or another process has the store open, `CorruptionError` for damage recovery may not
/// repair.
#[pyclass(frozen, module = "cairn", name = "Db")]
pub(crate) struct Db {
    shared: Arc<Shared>,
    path: PathBuf,
}

impl Db {
    fn open(py: Python<'_>, path: PathBuf, options: cairn::Options, mode: Mode) -> PyResult<Db> {
        let db = py
            .allow_threads(|| match mode {
                Mode::ReadWrite => cairn::Db::open(&path, options),
                Mode::ReadOnly => cairn::Db::open_read_only(&path, options),
                Mode::Follower => cairn::Db::open_follower(&path, options),
            })
            .or_raise(py)?;
        Ok(Db {
            shared: Shared::new(db),
            path,
        })
    }

    /// Runs `f` on the engine store with the GIL released.
    fn with<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&cairn::Db) -> cairn::Result<T> + Send,
    ) -> PyResult<T> {
        let shared = &self.shared;
        py.allow_threads(|| shared.read(|open| Ok(f(&open.db)?)))
            .or_raise(py)
    }
}

#[pymethods]
impl Db {
    /// Opens (by default creating) the store in the directory `path`.
    #[new]
    #[pyo3(signature = (path, *, durability=None, create_if_missing=None, memtable_size=None,
        max_wal_size=None, block_cache_size=None, max_open_tables=None, block_size=None,
        compression=None, bloom_bits_per_key=None, table_size=None, blob_threshold=None,
        background_threads=None, salvage_wal=None, memory_budget=None,
        tombstone_compaction_percent=None, idle_compaction_percent=None,
        memtable_huge_pages=None, mmap_reads=None, row_cache_size=None))]
    #[allow(clippy::too_many_arguments)]
    fn py_new(
        py: Python<'_>,
        path: PathBuf,
        durability: Option<&str>,
        create_if_missing: Option<bool>,
        memtable_size: Option<usize>,
        max_wal_size: Option<u64>,
        block_cache_size: Option<usize>,
        max_open_tables: Option<usize>,
        block_size: Option<usize>,
        compression: Option<&str>,
        bloom_bits_per_key: Option<u32>,
        table_size: Option<u64>,
        blob_threshold: Option<usize>,
        background_threads: Option<usize>,
        salvage_wal: Option<bool>,
        memory_budget: Option<usize>,
        tombstone_compaction_percent: Option<u8>,
        idle_compaction_percent: Option<u8>,
        memtable_huge_pages: Option<bool>,
        mmap_reads: Option<bool>,
        row_cache_size: Option<usize>,
    ) -> PyResult<Db> {
        let options = DbOptions {
            durability,
            create_if_missing,
            memtable_size,
            max_wal_size,
            block_cache_size,
            max_open_tables,
            block_size,
            compression,
            bloom_bits_per_key,
            table_size,
            blob_threshold,
            background_threads,
            salvage_wal,
            refresh_interval: None,
            memory_budget,
            tombstone_compaction_percent,
            idle_compaction_percent,
            memtable_huge_pages,
            mmap_reads,
            row_cache_size,
        }
        .build(py)?;
        Db::open(py, path, options, Mode::ReadWrite)
    }

    /// Opens the store read-only, at the point it is in now (another process may have
    /// it open for writing). Writes raise `ReadOnlyError`.
    #[classmethod]
    #[pyo3(signature = (path, *, block_cache_size=None, max_open_tables=None, memory_budget=None,
        mmap_reads=None, row_cache_size=None))]
    #[allow(clippy::too_many_arguments)]
    fn open_read_only(
        _cls: &Bound<'_, PyType>,
        py: Python<'_>,
        path: PathBuf,
        block_cache_size: Option<usize>,
        max_open_tables: Option<usize>,
        memory_budget: Option<usize>,
        mmap_reads: Option<bool>,
        row_cache_size: Option<usize>,
    ) -> PyResult<Db> {
        let options = DbOptions {
            block_cache_size,
            max_open_tables,
            memory_budget,
            mmap_reads,
            row_cache_size,
            ..DbOptions::default()
        }
        .build(py)?;
        Db::open(py, path, options, Mode::ReadOnly)
    }

    /// Opens the store as a read-only follower of the process writing it: `refresh()`
    /// (or, with `refresh_interval` seconds, a background thread) moves its view forward.
    #[classmethod]
    #[pyo3(signature = (path, *, refresh_interval=None, block_cache_size=None, max_open_tables=None,
        memory_budget=None, mmap_reads=None, row_cache_size=None))]
    #[allow(clippy::too_many_arguments)]
    fn open_follower(
        _cls: &Bound<'_, PyType>,
        py: Python<'_>,
        path: PathBuf,
        refresh_interval: Option<f64>,
        block_cache_size: Option<usize>,
        max_open_tables: Option<usize>,
        memory_budget: Option<usize>,
        mmap_reads: Option<bool>,
        row_cache_size: Option<usize>,
    ) -> PyResult<Db> {
        let options = DbOptions {
            block_cache_size,
            max_open_tables,
            refresh_interval,
            memory_budget,
            mmap_reads,
            row_cache_size,
            ..DbOptions::default()
        }
        .build(py)?;
        Db::open(py, path, options, Mode::Follower)
    }

    /// Moves a follower's view to the writer's latest durable state; True if it changed.
    fn refresh(&self, py: Python<'_>) -> PyResult<bool> {
        self.with(py, |db| db.refresh())
    }

    /// The store's directory.
    #[getter]
    fn path(&self) -> PathBuf {
        self.path.clone()
    }

    /// True once `close()` has run.
    #[getter]
    fn closed(&self) -> bool {
        self.shared.is_closed()
    }

    /// True if opened read-only or as a follower.
    #[getter]
    fn read_only(&self, py: Python<'_>) -> PyResult<bool> {
        self.with(py, |db| Ok(db.is_read_only()))
    }

    /// True if opened as a follower.
    #[getter]
    fn follower(&self, py: Python<'_>) -> PyResult<bool> {
        self.with(py, |db| Ok(db.is_follower()))
    }

    fn __repr__(&self) -> String {
        let state = if self.shared.is_closed() {
            " closed"
        } else {
            ""
        };
        format!("<cairn.Db {:?}{state}>", self.path.display().to_string())
    }

    /// The keyspace `name`, created if it does not exist. `blob_threshold` (bytes) keeps
    /// values of at least that size in the value log, recorded for the keyspace.
    /// `merge_operator` registers a built-in merge operator for `Keyspace.merge`:
    /// `"cairn.add_i64"`, `"cairn.append"` or `("cairn.append", separator)`.
    #[pyo3(signature = (name, *, blob_threshold=None, merge_operator=None))]
    fn keyspace(
        &self,
        py: Python<'_>,
        name: &str,
        blob_threshold: Option<usize>,
        merge_operator: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Keyspace> {
        let shared = &self.shared;
        let operator = merge_operator
            .map(crate::args::merge_operator)
            .transpose()?;
        let options = match (blob_threshold, operator) {
            (None, None) => None,
            (threshold, operator) => {
                let o = cairn::KeyspaceOptions::default().blob_threshold(threshold);
                Some(match operator {
                    Some(op) => o.merge_operator(op),
                    None => o,
                })
            }
        };
        let slot = py
            .allow_threads(|| shared.write(|open| open.open_keyspace(name, options)))
            .or_raise(py)?;
        Ok(Keyspace::new(Arc::clone(shared), slot, name))
    }

    /// The existing keyspace `name`; `KeyError` if there is none.
    fn __getitem__(&self, py: Python<'_>, name: &str) -> PyResult<Keyspace> {
        let shared = &self.shared;
        let slot = py
            .allow_threads(|| shared.write(|open| Ok(open.existing_keyspace(name))))
            .or_raise(py)?;
        match slot {
            Some(slot) => Ok(Keyspace::new(Arc::clone(shared), slot, name)),
            None => Err(pyo3::exceptions::PyKeyError::new_err(name.to_string())),
        }
    }

    /// True if keyspace `name` exists.
    fn __contains__(&self, py: Python<'_>, name: &str) -> PyResult<bool> {
        self.with(py, |db| Ok(db.get_keyspace(name).is_some()))
    }

    /// The names of every keyspace, sorted.
    fn keyspace_names(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        self.with(py, |db| Ok(db.keyspace_names()))
    }

    /// Drops keyspace `name` and all its data; its `Keyspace` objects fail from then on.
    fn drop_keyspace(&self, py: Python<'_>, name: &str) -> PyResult<()> {
        let shared = &self.shared;
        py.allow_threads(|| {
            shared.write(|open| {
                open.db.drop_keyspace(name)?;
                open.forget(name);
                Ok(())
            })
        })
        .or_raise(py)
    }

    /// A new batch; it commits with `durability` (default: the store's) unless `commit`
    /// says otherwise.
    #[pyo3(signature = (*, durability=None))]
    fn batch(&self, py: Python<'_>, durability: Option<&str>) -> PyResult<Batch> {
        let d = crate::args::opt_durability(py, durability)?;
        let b = self.shared.read(|open| Ok(open.db.batch())).or_raise(py)?;
        Ok(Batch::new(&self.shared, b, d))
    }

    /// Begins a transaction: `isolation` is "snapshot" (a commit fails if another write
    /// changed a key it writes after its snapshot) or "serializable" (also a key or range
    /// it read); it commits with `durability` (default: the store's).
    #[pyo3(signature = (*, isolation="snapshot", durability=None))]
    fn transaction(
        &self,
        py: Python<'_>,
        isolation: &str,
        durability: Option<&str>,
    ) -> PyResult<Transaction> {
        let mut options = cairn::TransactionOptions::new()
            .isolation(transaction::isolation(isolation).or_raise(py)?);
        if let Some(d) = crate::args::opt_durability(py, durability)? {
            options = options.durability(d);
        }
        Transaction::begin(&self.shared, &options).or_raise(py)
    }

    /// Runs `fn(tx)` in a transaction and commits it, running it again (after a short,
    /// growing, randomised pause) while the commit raises `cairn.ConflictError`, at most
    /// `max_attempts` times; returns what `fn` returned. An exception from `fn` rolls the
    /// transaction back and propagates.
    #[pyo3(signature = (func, *, isolation="snapshot", durability=None, max_attempts=32))]
    fn update(
        &self,
        py: Python<'_>,
        func: &Bound<'_, PyAny>,
        isolation: &str,
        durability: Option<&str>,
        max_attempts: u32,
    ) -> PyResult<PyObject> {
        let mut options = cairn::TransactionOptions::new()
            .isolation(transaction::isolation(isolation).or_raise(py)?);
        if let Some(d) = crate::args::opt_durability(py, durability)? {
            options = options.durability(d);
        }
        let mut attempt = 0u32;
        loop {
            attempt += 1;
            let tx = Py::new(py, Transaction::begin(&self.shared, &options).or_raise(py)?)?;
            let out = match func.call1((tx.clone_ref(py),)) {
                Ok(out) => out,
                Err(e) => {
                    tx.get().rollback_now();
                    return Err(e);
                }
            };
            let t = tx.get();
            let d = t.default_durability();
            match py.allow_threads(|| t.commit_now(d)) {
                Ok(_) => return Ok(out.unbind()),
                Err(Fail::Engine(e)) if e.is_conflict() && attempt < max_attempts.max(1) => {
                    py.allow_threads(|| crate::retry::backoff(attempt));
                }
                Err(f) => return Err(crate::errors::raise(py, f)),
            }
        }
    }

    /// A consistent view of every keyspace at this point (O(1)).
    fn snapshot(&self, py: Python<'_>) -> PyResult<Snapshot> {
        let s = self
            .shared
            .read(|open| Ok(open.db.snapshot()))
            .or_raise(py)?;
        Ok(Snapshot::new(&self.shared, s))
    }

    /// The seqno of the last acknowledged write.
    #[getter]
    fn last_seqno(&self, py: Python<'_>) -> PyResult<u64> {
        self.shared
            .read(|open| Ok(open.db.last_seqno()))
            .or_raise(py)
    }

    /// The largest seqno known to survive a power loss.
    #[getter]
    fn durable_seqno(&self, py: Python<'_>) -> PyResult<u64> {
        self.shared
            .read(|open| Ok(open.db.durable_seqno()))
            .or_raise(py)
    }

    /// Flushes the memtables into tables and waits.
    fn flush(&self, py: Python<'_>) -> PyResult<()> {
        self.with(py, |db| db.flush())
    }

    /// Hands logged writes to the OS and, with `sync`, fsyncs the log.
    #[pyo3(signature = (sync=true))]
    fn flush_wal(&self, py: Python<'_>, sync: bool) -> PyResult<()> {
        self.with(py, |db| db.flush_wal(sync))
    }

    /// Compacts the whole store now; returns the number of compactions run.
    fn compact(&self, py: Python<'_>) -> PyResult<usize> {
        self.with(py, |db| db.compact())
    }

    /// Rewrites the tables holding expired entries; returns the number of compactions.
    fn compact_expired(&self, py: Python<'_>) -> PyResult<usize> {
        self.with(py, |db| db.compact_expired())
    }

    /// Runs value-log garbage collection; returns the number of blob files removed.
    fn collect_garbage(&self, py: Python<'_>) -> PyResult<usize> {
        self.with(py, |db| db.collect_garbage())
    }

    /// Waits until no flush or compaction is pending.
    fn wait_for_compactions(&self, py: Python<'_>) -> PyResult<()> {
        self.with(py, |db| db.wait_for_compactions())
    }

    /// Bytes the store takes on disk (every file of its directory).
    fn disk_size(&self, py: Python<'_>) -> PyResult<u64> {
        self.with(py, |db| db.disk_size())
    }

    /// Writes a consistent copy of the store into the new directory `dest` (hard links
    /// where possible); returns what it did as a dict. Open the copy with `cairn.Db(dest)`.
    fn backup<'py>(&self, py: Python<'py>, dest: PathBuf) -> PyResult<Bound<'py, PyDict>> {
        let info = self.with(py, |db| db.backup(&dest))?;
        reports::backup(py, &info)
    }

    /// Reads and checks every file of the store's current state; returns the report as a
    /// dict, or raises `CorruptionError` (naming the file and offset) for the first problem.
    fn verify<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let report = self.with(py, |db| db.verify())?;
        reports::verify(py, &report)
    }

    /// The store's counters as a dict (seqnos, bytes written, tables per level, cache).
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self.with(py, |db| Ok(db.stats()))?;
        reports::stats(py, &s)
    }

    /// Where the store's bytes are: tables, log files, and per blob file of the value log
    /// its live and garbage bytes (a dict; `blob_files` is a list of dicts).
    fn space_stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self.with(py, |db| db.space_stats())?;
        reports::space(py, &s)
    }

    /// What opening the store recovered from its log and what it left out (a torn tail
    /// after a crash is normal): a dict with `log_files`, `replayed_records`, `last_seqno`,
    /// `clean` and `losses` (a list of dicts naming cause, file, path, offset, reason).
    fn recovery_report<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let r = self
            .shared
            .read(|open| Ok(open.db.recovery_report().clone()))
            .or_raise(py)?;
        reports::recovery(py, &r)
    }

    /// Closes the store (see the class documentation). A second call does nothing.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let shared = &self.shared;
        py.allow_threads(|| shared.close()).or_raise(py)
    }

    fn __enter__(slf: PyRef<'_, Self>) -> PyResult<PyRef<'_, Self>> {
        if slf.shared.is_closed() {
            return Err(crate::errors::raise(slf.py(), Fail::Closed("the store")));
        }
        Ok(slf)
    }

    #[pyo3(signature = (_exc_type=None, _exc=None, _tb=None))]
    fn __exit__(
        &self,
        py: Python<'_>,
        _exc_type: Option<&Bound<'_, PyAny>>,
        _exc: Option<&Bound<'_, PyAny>>,
        _tb: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        self.close(py)?;
        Ok(false)
    }
}

/// Checks every file of the closed store (or backup) in `path` without opening it; returns
/// the report, or raises `CorruptionError` for the first problem.
#[pyfunction]
pub(crate) fn verify<'py>(py: Python<'py>, path: PathBuf) -> PyResult<Bound<'py, PyDict>> {
    let report = py.allow_threads(|| cairn::verify(&path)).or_raise(py)?;
    reports::verify(py, &report)
}
