//! `cairn.Snapshot`: a consistent read-only view of every keyspace of a store at one point.
//!
//! Reads through a snapshot (`get`, `head`, `contains`, `len`, scans) see exactly the
//! writes acknowledged before it was taken, whatever is written later. Scans started from
//! it keep it registered while they live. `close()` (or leaving its `with` block) releases
//! it early; closing the store releases it too. A released snapshot raises
//! `cairn.ClosedError`.

use std::ops::Bound as KeyBound;
use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList};

use crate::args::Bytes;
use crate::errors::{Fail, OrRaise};
use crate::head::Head;
use crate::iter::{prefix_range, Range, Scan, Yield};
use crate::keyspace::{bounds, same_store, Keyspace};
use crate::shared::{Release, Shared, Slot};
use cairn::Readable;

/// A consistent view of a store at one seqno.
#[pyclass(frozen, module = "cairn", name = "Snapshot")]
pub(crate) struct Snapshot {
    shared: Arc<Shared>,
    snap: Arc<Slot<cairn::Snapshot>>,
    seqno: u64,
}

impl Snapshot {
    pub(crate) fn new(shared: &Arc<Shared>, snap: cairn::Snapshot) -> Snapshot {
        let seqno = snap.seqno();
        let slot = Arc::new(Slot::new(Some(snap)));
        let weak: std::sync::Weak<dyn Release> = Arc::downgrade(&slot) as _;
        shared.register(weak);
        Snapshot {
            shared: Arc::clone(shared),
            snap: slot,
            seqno,
        }
    }

    /// Runs `f` on the snapshot and the engine keyspace, with the GIL released.
    fn with<T: Send>(
        &self,
        py: Python<'_>,
        ks: &Keyspace,
        f: impl FnOnce(&cairn::Snapshot, &cairn::Keyspace) -> cairn::Result<T> + Send,
    ) -> PyResult<T> {
        let shared = &self.shared;
        let snap = &self.snap;
        py.allow_threads(|| {
            shared.read(|open| {
                let engine_ks = same_store(ks, shared, open)?;
                let guard = snap.lock();
                let s = guard.as_ref().ok_or(Fail::Closed("the snapshot"))?;
                Ok(f(s, engine_ks)?)
            })
        })
        .or_raise(py)
    }

    fn scan(
        &self,
        py: Python<'_>,
        ks: &Keyspace,
        yields: Yield,
        reverse: bool,
        range: Range,
    ) -> PyResult<Scan> {
        let pin = self.with(py, ks, |s, _| Ok(s.clone()))?;
        Scan::open(py, &self.shared, ks.slot, Some(pin), range, reverse, yields)
    }
}

#[pymethods]
impl Snapshot {
    /// The seqno the snapshot reads at.
    #[getter]
    fn seqno(&self) -> u64 {
        self.seqno
    }

    fn __repr__(&self) -> String {
        format!("<cairn.Snapshot seqno={}>", self.seqno)
    }

    /// The value of `key` in `keyspace` as of the snapshot, or `default`.
    #[pyo3(signature = (keyspace, key, default=None))]
    fn get(
        &self,
        py: Python<'_>,
        keyspace: PyRef<'_, Keyspace>,
        key: Bytes,
        default: Option<PyObject>,
    ) -> PyResult<PyObject> {
        match self.with(py, &keyspace, |s, k| s.get(k, &*key))? {
            Some(v) => Ok(PyBytes::new(py, &v).into_any().unbind()),
            None => Ok(default.unwrap_or_else(|| py.None())),
        }
    }

    /// The values of `keys` in `keyspace` as of the snapshot, in order (`None` for an
    /// absent key), read together with the GIL released once.
    fn get_many<'py>(
        &self,
        py: Python<'py>,
        keyspace: PyRef<'_, Keyspace>,
        keys: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyList>> {
        let owned = crate::args::bytes_list(keys)?;
        let values = self.with(py, &keyspace, |s, k| s.get_many(k, &owned))?;
        crate::point::values_list(py, values)
    }

    /// The entry's attributes as of the snapshot, or `None`.
    fn head(
        &self,
        py: Python<'_>,
        keyspace: PyRef<'_, Keyspace>,
        key: Bytes,
    ) -> PyResult<Option<Head>> {
        Ok(self
            .with(py, &keyspace, |s, k| s.head(k, &*key))?
            .map(Head::from))
    }

    /// True if `key` is in `keyspace` as of the snapshot.
    fn contains(
        &self,
        py: Python<'_>,
        keyspace: PyRef<'_, Keyspace>,
        key: Bytes,
    ) -> PyResult<bool> {
        self.with(py, &keyspace, |s, k| s.contains_key(k, &*key))
    }

    /// The number of keys of `keyspace` as of the snapshot (O(keys)).
    fn len(&self, py: Python<'_>, keyspace: PyRef<'_, Keyspace>) -> PyResult<u64> {
        self.with(py, &keyspace, |s, k| s.len(k))
    }

    /// The `(key, value)` pairs of `keyspace` with `start <= key < end`, as of the snapshot.
    #[pyo3(signature = (keyspace, start=None, end=None, *, reverse=false))]
    fn range(
        &self,
        py: Python<'_>,
        keyspace: PyRef<'_, Keyspace>,
        start: Option<Bytes>,
        end: Option<Bytes>,
        reverse: bool,
    ) -> PyResult<Scan> {
        self.scan(py, &keyspace, Yield::Items, reverse, bounds(start, end))
    }

    /// The `(key, value)` pairs of `keyspace` whose key starts with `prefix`.
    #[pyo3(signature = (keyspace, prefix, *, reverse=false))]
    fn prefix(
        &self,
        py: Python<'_>,
        keyspace: PyRef<'_, Keyspace>,
        prefix: Bytes,
        reverse: bool,
    ) -> PyResult<Scan> {
        self.scan(py, &keyspace, Yield::Items, reverse, prefix_range(&prefix))
    }

    /// Every `(key, value)` pair of `keyspace`, in key order.
    #[pyo3(signature = (keyspace, *, reverse=false))]
    fn items(
        &self,
        py: Python<'_>,
        keyspace: PyRef<'_, Keyspace>,
        reverse: bool,
    ) -> PyResult<Scan> {
        let all = (KeyBound::Unbounded, KeyBound::Unbounded);
        self.scan(py, &keyspace, Yield::Items, reverse, all)
    }

    /// Every key of `keyspace`, in order (values are not read).
    #[pyo3(signature = (keyspace, *, reverse=false))]
    fn keys(&self, py: Python<'_>, keyspace: PyRef<'_, Keyspace>, reverse: bool) -> PyResult<Scan> {
        let all = (KeyBound::Unbounded, KeyBound::Unbounded);
        self.scan(py, &keyspace, Yield::Keys, reverse, all)
    }

    /// Releases the snapshot now (compaction may then drop the versions it kept).
    fn close(&self) {
        self.snap.release();
    }

    fn __enter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    #[pyo3(signature = (_exc_type=None, _exc=None, _tb=None))]
    fn __exit__(
        &self,
        _exc_type: Option<&Bound<'_, PyAny>>,
        _exc: Option<&Bound<'_, PyAny>>,
        _tb: Option<&Bound<'_, PyAny>>,
    ) -> bool {
        self.close();
        false
    }
}
