//! `cairn.Transaction`: reads at a snapshot with the transaction's own writes laid over
//! them, writes to any keyspaces of one store, and a commit that applies them atomically
//! unless another write changed what the transaction depends on (`cairn.ConflictError`:
//! nothing written). `Db.update(fn)` runs `fn(tx)` and commits, rerunning it on conflict.
//!
//! As a context manager a transaction commits on a normal exit and rolls back when the
//! block raises. A committed or rolled-back transaction raises `cairn.ClosedError` on
//! further use, as does a transaction of a closed store (closing the store drops it).
//! Reads and the commit release the GIL; writes stay in memory until the commit.

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyTuple};

use crate::args::{entry_options, opt_bytes, opt_durability, Bytes};
use crate::errors::{Fail, OrRaise, Res};
use crate::keyspace::{bounds, same_store, Keyspace};
use crate::shared::{Release, Shared, Slot};

/// The engine's isolation for its Python name.
pub(crate) fn isolation(name: &str) -> Res<cairn::Isolation> {
    match name {
        "snapshot" => Ok(cairn::Isolation::Snapshot),
        "serializable" => Ok(cairn::Isolation::Serializable),
        other => Err(Fail::Invalid(format!(
            "isolation {other:?} is not \"snapshot\" or \"serializable\""
        ))),
    }
}

/// A transaction (see the module documentation).
#[pyclass(frozen, module = "cairn", name = "Transaction")]
pub(crate) struct Transaction {
    shared: Arc<Shared>,
    txn: Arc<Slot<cairn::Transaction>>,
    durability: Option<cairn::Durability>,
}

impl Transaction {
    pub(crate) fn begin(
        shared: &Arc<Shared>,
        options: &cairn::TransactionOptions,
    ) -> Res<Transaction> {
        let txn = shared.read(|open| Ok(open.db.transaction_with(options)))?;
        let slot = Arc::new(Slot::new(Some(txn)));
        let weak: std::sync::Weak<dyn Release> = Arc::downgrade(&slot) as _;
        shared.register(weak);
        Ok(Transaction {
            shared: Arc::clone(shared),
            txn: slot,
            durability: options.durability,
        })
    }

    /// Runs `f` on the live transaction and the engine keyspace of `ks`.
    fn with<T>(
        &self,
        ks: &Keyspace,
        f: impl FnOnce(&mut cairn::Transaction, &cairn::Keyspace) -> Res<T>,
    ) -> Res<T> {
        let shared = &self.shared;
        shared.read(|open| {
            let engine_ks = same_store(ks, shared, open)?;
            let mut guard = self.txn.lock();
            let txn = guard.as_mut().ok_or(Fail::Closed("the transaction"))?;
            f(txn, engine_ks)
        })
    }

    pub(crate) fn commit_now(&self, durability: Option<cairn::Durability>) -> Res<u64> {
        self.shared.read(|_| {
            let txn = self
                .txn
                .lock()
                .take()
                .ok_or(Fail::Closed("the transaction"))?;
            Ok(txn.commit_with(durability)?)
        })
    }

    pub(crate) fn rollback_now(&self) {
        self.txn.release();
    }

    pub(crate) fn default_durability(&self) -> Option<cairn::Durability> {
        self.durability
    }
}

#[pymethods]
impl Transaction {
    /// The value of `key` in `keyspace` as the transaction sees it (its own pending write
    /// if any, else the snapshot's), or `None`.
    fn get(
        &self,
        py: Python<'_>,
        keyspace: PyRef<'_, Keyspace>,
        key: Bytes,
    ) -> PyResult<Option<Py<PyBytes>>> {
        let ks: &Keyspace = &keyspace;
        let found = py
            .allow_threads(|| self.with(ks, |t, ks| Ok(t.get(ks, &*key)?)))
            .or_raise(py)?;
        Ok(found.map(|v| PyBytes::new(py, &v).unbind()))
    }

    /// The values of `keys` in `keyspace` as the transaction sees them, in order (`None`
    /// for an absent key), read together with the GIL released once.
    fn get_many<'py>(
        &self,
        py: Python<'py>,
        keyspace: PyRef<'_, Keyspace>,
        keys: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyList>> {
        let owned = crate::args::bytes_list(keys)?;
        let ks: &Keyspace = &keyspace;
        let values = py
            .allow_threads(|| self.with(ks, |t, ks| Ok(t.get_many(ks, &owned)?)))
            .or_raise(py)?;
        crate::point::values_list(py, values)
    }

    /// True if `key` is present in `keyspace` as the transaction sees it.
    fn contains(
        &self,
        py: Python<'_>,
        keyspace: PyRef<'_, Keyspace>,
        key: Bytes,
    ) -> PyResult<bool> {
        let ks: &Keyspace = &keyspace;
        py.allow_threads(|| self.with(ks, |t, ks| Ok(t.contains_key(ks, &*key)?)))
            .or_raise(py)
    }

    /// The `(key, value)` pairs with `start <= key < end` (`None`: unbounded) as the
    /// transaction sees them, in key order (`reverse=True`: descending), as a list.
    #[pyo3(signature = (keyspace, start=None, end=None, *, reverse=false))]
    fn range<'py>(
        &self,
        py: Python<'py>,
        keyspace: PyRef<'_, Keyspace>,
        start: Option<Bytes>,
        end: Option<Bytes>,
        reverse: bool,
    ) -> PyResult<Bound<'py, PyList>> {
        let range = bounds(start, end);
        let ks: &Keyspace = &keyspace;
        let pairs = py
            .allow_threads(|| {
                self.with(ks, |t, engine_ks| {
                    let it = t.range(engine_ks, range);
                    let pairs: cairn::Result<Vec<_>> = if reverse {
                        it.rev().collect()
                    } else {
                        it.collect()
                    };
                    Ok(pairs?)
                })
            })
            .or_raise(py)?;
        let items = pairs
            .iter()
            .map(|(k, v)| PyTuple::new(py, [PyBytes::new(py, k), PyBytes::new(py, v)]))
            .collect::<PyResult<Vec<_>>>()?;
        PyList::new(py, items)
    }

    /// The pairs whose key starts with `prefix`; as `range`.
    #[pyo3(signature = (keyspace, prefix, *, reverse=false))]
    fn prefix<'py>(
        &self,
        py: Python<'py>,
        keyspace: PyRef<'_, Keyspace>,
        prefix: Bytes,
        reverse: bool,
    ) -> PyResult<Bound<'py, PyList>> {
        let ks: &Keyspace = &keyspace;
        let pairs = py
            .allow_threads(|| {
                self.with(ks, |t, engine_ks| {
                    let it = t.prefix(engine_ks, &*prefix);
                    let pairs: cairn::Result<Vec<_>> = if reverse {
                        it.rev().collect()
                    } else {
                        it.collect()
                    };
                    Ok(pairs?)
                })
            })
            .or_raise(py)?;
        let items = pairs
            .iter()
            .map(|(k, v)| PyTuple::new(py, [PyBytes::new(py, k), PyBytes::new(py, v)]))
            .collect::<PyResult<Vec<_>>>()?;
        PyList::new(py, items)
    }

    /// Sets `key` to `value` in `keyspace` at commit (with optional TTL, expiry, metadata
    /// and tag, as `Keyspace.insert`).
    #[pyo3(signature = (keyspace, key, value, *, ttl=None, expires_at=None, meta=None, tag=0))]
    #[allow(clippy::too_many_arguments)]
    fn insert(
        &self,
        py: Python<'_>,
        keyspace: PyRef<'_, Keyspace>,
        key: Bytes,
        value: Bytes,
        ttl: Option<f64>,
        expires_at: Option<f64>,
        meta: Option<&Bound<'_, PyAny>>,
        tag: u32,
    ) -> PyResult<()> {
        let opts = entry_options(py, ttl, expires_at, opt_bytes(meta)?, tag, None)?;
        let ks: &Keyspace = &keyspace;
        self.with(ks, |t, ks| {
            t.insert_entry(ks, &*key, &*value, &opts);
            Ok(())
        })
        .or_raise(py)
    }

    /// Removes `key` from `keyspace` at commit.
    fn remove(&self, py: Python<'_>, keyspace: PyRef<'_, Keyspace>, key: Bytes) -> PyResult<()> {
        let ks: &Keyspace = &keyspace;
        self.with(ks, |t, ks| {
            t.remove(ks, &*key);
            Ok(())
        })
        .or_raise(py)
    }

    /// Removes every key with `start <= key < end` (`None`: unbounded) at commit; the
    /// transaction's reads see them removed at once.
    #[pyo3(signature = (keyspace, start=None, end=None))]
    fn remove_range(
        &self,
        py: Python<'_>,
        keyspace: PyRef<'_, Keyspace>,
        start: Option<Bytes>,
        end: Option<Bytes>,
    ) -> PyResult<()> {
        let range = bounds(start, end);
        let ks: &Keyspace = &keyspace;
        self.with(ks, |t, ks| {
            t.remove_range(ks, range);
            Ok(())
        })
        .or_raise(py)
    }

    /// Removes every key starting with `prefix` at commit.
    fn remove_prefix(
        &self,
        py: Python<'_>,
        keyspace: PyRef<'_, Keyspace>,
        prefix: Bytes,
    ) -> PyResult<()> {
        let ks: &Keyspace = &keyspace;
        self.with(ks, |t, ks| {
            t.remove_prefix(ks, &*prefix);
            Ok(())
        })
        .or_raise(py)
    }

    /// Adds `delta` to the counter at `key` as the transaction sees it (absent counts as
    /// 0) and returns the new value, written at commit.
    #[pyo3(signature = (keyspace, key, delta=1))]
    fn incr(
        &self,
        py: Python<'_>,
        keyspace: PyRef<'_, Keyspace>,
        key: Bytes,
        delta: i64,
    ) -> PyResult<i64> {
        let ks: &Keyspace = &keyspace;
        py.allow_threads(|| self.with(ks, |t, ks| Ok(t.incr(ks, &*key, delta)?)))
            .or_raise(py)
    }

    /// Merges `operand` into `key` of `keyspace` (see `Keyspace.merge`) at commit; the
    /// transaction's reads see it at once. A keyspace without a merge operator, or an
    /// operand it refuses, makes the commit fail (`InvalidArgumentError`), writing nothing.
    fn merge(
        &self,
        py: Python<'_>,
        keyspace: PyRef<'_, Keyspace>,
        key: Bytes,
        operand: Bytes,
    ) -> PyResult<()> {
        let ks: &Keyspace = &keyspace;
        self.with(ks, |t, ks| {
            t.merge(ks, &*key, &*operand);
            Ok(())
        })
        .or_raise(py)
    }

    /// The seqno the transaction reads at.
    #[getter]
    fn read_seqno(&self, py: Python<'_>) -> PyResult<u64> {
        let guard = self.txn.lock();
        match guard.as_ref() {
            Some(t) => Ok(t.read_seqno()),
            None => Err(crate::errors::closed(py, "the transaction")),
        }
    }

    /// The number of pending writes.
    fn __len__(&self, py: Python<'_>) -> PyResult<usize> {
        let guard = self.txn.lock();
        match guard.as_ref() {
            Some(t) => Ok(t.len()),
            None => Err(crate::errors::closed(py, "the transaction")),
        }
    }

    /// Applies every write atomically (GIL released) and returns the commit's seqno;
    /// raises `cairn.ConflictError` (nothing written) if another write changed what the
    /// transaction depends on. The transaction is then spent.
    #[pyo3(signature = (*, durability=None))]
    fn commit(&self, py: Python<'_>, durability: Option<&str>) -> PyResult<u64> {
        let d = opt_durability(py, durability)?.or(self.durability);
        py.allow_threads(|| self.commit_now(d)).or_raise(py)
    }

    /// Drops the pending writes; the transaction is then spent.
    fn rollback(&self) {
        self.rollback_now();
    }

    fn __enter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    /// Commits if the block ended normally, rolls back if it raised. Never suppresses.
    #[pyo3(signature = (exc_type=None, _exc=None, _tb=None))]
    fn __exit__(
        &self,
        py: Python<'_>,
        exc_type: Option<&Bound<'_, PyAny>>,
        _exc: Option<&Bound<'_, PyAny>>,
        _tb: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        if exc_type.is_some_and(|t| !t.is_none()) {
            self.rollback_now();
            return Ok(false);
        }
        if self.txn.lock().is_none() {
            return Ok(false);
        }
        let d = self.durability;
        py.allow_threads(|| self.commit_now(d)).or_raise(py)?;
        Ok(false)
    }
}
