//! `cairn.Batch`: writes to any keyspaces of one store, applied atomically by `commit()`.
//!
//! As a context manager a batch commits on a normal exit and is discarded when the block
//! raises. Nothing is written before `commit`; a committed or discarded batch raises
//! `cairn.ClosedError` on further use, as does a batch of a closed store. The engine batch
//! is registered with the store, so closing the store drops it. `commit` returns the new
//! values of the batch's counter increments, which `counters` keeps afterwards.

use std::sync::Arc;

use parking_lot::Mutex;

use pyo3::prelude::*;

use crate::args::{entry_options, opt_bytes, opt_durability, Bytes};
use crate::errors::{Fail, OrRaise, Res};
use crate::keyspace::{bounds, same_store, Keyspace};
use crate::shared::{Release, Shared, Slot};

/// An atomic group of writes (see the module documentation).
#[pyclass(frozen, module = "cairn", name = "Batch")]
pub(crate) struct Batch {
    shared: Arc<Shared>,
    batch: Arc<Slot<cairn::Batch>>,
    durability: Option<cairn::Durability>,
    /// The new values of the increments, once committed.
    counters: Mutex<Option<Vec<i64>>>,
}

impl Batch {
    pub(crate) fn new(
        shared: &Arc<Shared>,
        batch: cairn::Batch,
        durability: Option<cairn::Durability>,
    ) -> Batch {
        let slot = Arc::new(Slot::new(Some(batch)));
        let weak: std::sync::Weak<dyn Release> = Arc::downgrade(&slot) as _;
        shared.register(weak);
        Batch {
            shared: Arc::clone(shared),
            batch: slot,
            durability,
            counters: Mutex::new(None),
        }
    }

    /// Adds to the batch (no I/O: the GIL is kept).
    fn add(
        &self,
        py: Python<'_>,
        ks: &Keyspace,
        f: impl FnOnce(&mut cairn::Batch, &cairn::Keyspace),
    ) -> PyResult<()> {
        let shared = &self.shared;
        shared
            .read(|open| {
                let engine_ks = same_store(ks, shared, open)?;
                let mut guard = self.batch.lock();
                let batch = guard.as_mut().ok_or(Fail::Closed("the batch"))?;
                f(batch, engine_ks);
                Ok(())
            })
            .or_raise(py)
    }

    fn commit_now(&self, durability: Option<cairn::Durability>) -> Res<Vec<i64>> {
        self.shared.read(|_| {
            let batch = self.batch.lock().take().ok_or(Fail::Closed("the batch"))?;
            let counters = batch.commit_counters_with(durability)?.counters().to_vec();
            *self.counters.lock() = Some(counters.clone());
            Ok(counters)
        })
    }
}

#[pymethods]
impl Batch {
    /// Adds a write of `value` under `key` in `keyspace` (with optional TTL, expiry,
    /// metadata and tag, as `Keyspace.insert`).
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
        if ttl.is_none() && expires_at.is_none() && meta.is_none() && tag == 0 {
            return self.add(py, &keyspace, |b, ks| b.insert(ks, &*key, &*value));
        }
        let opts = entry_options(py, ttl, expires_at, opt_bytes(meta)?, tag, None)?;
        self.add(py, &keyspace, |b, ks| {
            b.insert_entry(ks, &*key, &*value, &opts)
        })
    }

    /// Adds a removal of `key` from `keyspace`.
    fn remove(&self, py: Python<'_>, keyspace: PyRef<'_, Keyspace>, key: Bytes) -> PyResult<()> {
        self.add(py, &keyspace, |b, ks| b.remove(ks, &*key))
    }

    /// Adds a removal of every key with `start <= key < end` (`None`: unbounded).
    #[pyo3(signature = (keyspace, start=None, end=None))]
    fn remove_range(
        &self,
        py: Python<'_>,
        keyspace: PyRef<'_, Keyspace>,
        start: Option<Bytes>,
        end: Option<Bytes>,
    ) -> PyResult<()> {
        let range = bounds(start, end);
        self.add(py, &keyspace, |b, ks| b.remove_range(ks, range))
    }

    /// Adds a removal of every key starting with `prefix`.
    fn remove_prefix(
        &self,
        py: Python<'_>,
        keyspace: PyRef<'_, Keyspace>,
        prefix: Bytes,
    ) -> PyResult<()> {
        self.add(py, &keyspace, |b, ks| b.remove_prefix(ks, &*prefix))
    }

    /// Adds `delta` to the counter at `key` in `keyspace` when the batch commits, reading
    /// the counter as the batch leaves it (after its own put of the key, or its earlier
    /// increments). A failing increment (`NotACounterError`, `CounterOverflowError`)
    /// refuses the whole batch.
    #[pyo3(signature = (keyspace, key, delta=1))]
    fn incr(
        &self,
        py: Python<'_>,
        keyspace: PyRef<'_, Keyspace>,
        key: Bytes,
        delta: i64,
    ) -> PyResult<()> {
        self.add(py, &keyspace, |b, ks| b.incr(ks, &*key, delta))
    }

    /// Merges `operand` into `key` in `keyspace` when the batch commits (see
    /// `Keyspace.merge`). A keyspace without a merge operator, or an operand it refuses,
    /// refuses the whole batch at the commit (`InvalidArgumentError`).
    fn merge(
        &self,
        py: Python<'_>,
        keyspace: PyRef<'_, Keyspace>,
        key: Bytes,
        operand: Bytes,
    ) -> PyResult<()> {
        self.add(py, &keyspace, |b, ks| b.merge(ks, &*key, &*operand))
    }

    /// Subtracts `delta` from the counter at `key` in `keyspace`; as `incr`.
    #[pyo3(signature = (keyspace, key, delta=1))]
    fn decr(
        &self,
        py: Python<'_>,
        keyspace: PyRef<'_, Keyspace>,
        key: Bytes,
        delta: i64,
    ) -> PyResult<()> {
        self.add(py, &keyspace, |b, ks| b.decr(ks, &*key, delta))
    }

    /// The new values of the batch's increments, in the order they were added, once it
    /// has committed (`None` before).
    #[getter]
    fn counters(&self) -> Option<Vec<i64>> {
        self.counters.lock().clone()
    }

    /// The number of writes in the batch.
    fn __len__(&self, py: Python<'_>) -> PyResult<usize> {
        let guard = self.batch.lock();
        match guard.as_ref() {
            Some(b) => Ok(b.len()),
            None => Err(crate::errors::closed(py, "the batch")),
        }
    }

    /// Applies every write atomically (GIL released); the batch is then spent. Returns
    /// the new values of its increments, in the order they were added.
    #[pyo3(signature = (*, durability=None))]
    fn commit(&self, py: Python<'_>, durability: Option<&str>) -> PyResult<Vec<i64>> {
        let d = opt_durability(py, durability)?.or(self.durability);
        py.allow_threads(|| self.commit_now(d)).or_raise(py)
    }

    /// Drops the writes without applying them; the batch is then spent.
    fn discard(&self) {
        self.batch.release();
    }

    fn __enter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    /// Commits if the block ended normally, discards if it raised. Never suppresses.
    #[pyo3(signature = (exc_type=None, _exc=None, _tb=None))]
    fn __exit__(
        &self,
        py: Python<'_>,
        exc_type: Option<&Bound<'_, PyAny>>,
        _exc: Option<&Bound<'_, PyAny>>,
        _tb: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        if exc_type.is_some_and(|t| !t.is_none()) {
            self.discard();
            return Ok(false);
        }
        if self.batch.lock().is_none() {
            // Committed or discarded inside the block: nothing left to do.
            return Ok(false);
        }
        let d = self.durability;
        py.allow_threads(|| self.commit_now(d)).or_raise(py)?;
        Ok(false)
    }
}
