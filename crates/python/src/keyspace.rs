//! `cairn.Keyspace`: one named keyspace of an ordered store, as a
//! `collections.abc.MutableMapping` over `bytes`, plus scans, counters, attributes and
//! range deletes.
//!
//! A `Keyspace` holds its store's [`Shared`] state and the index of its engine handle there
//! (never the handle itself), so closing the store leaves nothing open, and every method
//! raises `cairn.ClosedError` afterwards. Every method that reads or writes releases the
//! GIL for the engine call, except point reads the engine answers from memory and plain
//! puts it makes without waiting (`point.rs`). Reads through the keyspace see the latest
//! state; `len()` and iteration each read at one point in time (a scan), so they are
//! consistent, and `len()` costs a walk over the keys.

use std::ops::Bound as KeyBound;
use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::sync::GILOnceCell;
use pyo3::types::{PyBytes, PyDict, PyList, PyTuple};

use crate::args::{entry_options, opt_bytes, opt_durability, Bytes};
use crate::errors::{key_error, Fail, OrRaise, Res};
use crate::head::Head;
use crate::iter::{prefix_range, Scan, Yield};
use crate::point;
use crate::shared::Shared;
use crate::value::{PyReader, ValueReader};

/// The engine bounds of `[start, end)`, `None` meaning unbounded.
pub(crate) fn bounds(
    start: Option<Bytes>,
    end: Option<Bytes>,
) -> (KeyBound<Vec<u8>>, KeyBound<Vec<u8>>) {
    (
        start.map_or(KeyBound::Unbounded, |s| KeyBound::Included(s.to_vec())),
        end.map_or(KeyBound::Unbounded, |e| KeyBound::Excluded(e.to_vec())),
    )
}

/// A named keyspace of an ordered store.
#[pyclass(frozen, mapping, module = "cairn", name = "Keyspace")]
pub(crate) struct Keyspace {
    pub(crate) shared: Arc<Shared>,
    pub(crate) slot: usize,
    name: String,
}

impl Keyspace {
    pub(crate) fn new(shared: Arc<Shared>, slot: usize, name: &str) -> Keyspace {
        Keyspace {
            shared,
            slot,
            name: name.to_string(),
        }
    }

    /// Runs `f` on the engine keyspace with the GIL released.
    fn with<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&cairn::Keyspace) -> cairn::Result<T> + Send,
    ) -> PyResult<T> {
        let (shared, slot) = (&self.shared, self.slot);
        py.allow_threads(|| shared.read(|open| Ok(f(open.keyspace(slot)?)?)))
            .or_raise(py)
    }

    /// A registered scan of this keyspace.
    fn scan(
        &self,
        py: Python<'_>,
        range: (KeyBound<Vec<u8>>, KeyBound<Vec<u8>>),
        reverse: bool,
        yields: Yield,
    ) -> PyResult<Scan> {
        Scan::open(py, &self.shared, self.slot, None, range, reverse, yields)
    }

    fn prefix_scan(
        &self,
        py: Python<'_>,
        prefix: Bytes,
        reverse: bool,
        yields: Yield,
    ) -> PyResult<Scan> {
        self.scan(py, prefix_range(&prefix), reverse, yields)
    }
}

/// Converts an optional pair into a Python tuple of bytes.
pub(crate) fn pair_to_py<'py>(
    py: Python<'py>,
    pair: Option<(Vec<u8>, Vec<u8>)>,
) -> PyResult<Option<Bound<'py, PyTuple>>> {
    pair.map(|(k, v)| PyTuple::new(py, [PyBytes::new(py, &k), PyBytes::new(py, &v)]))
        .transpose()
}

static VIEWS: [GILOnceCell<Py<PyAny>>; 3] =
    [GILOnceCell::new(), GILOnceCell::new(), GILOnceCell::new()];

fn view<'py>(slf: &Bound<'py, Keyspace>, which: usize, class: &str) -> PyResult<Bound<'py, PyAny>> {
    let py = slf.py();
    let cell = VIEWS
        .get(which)
        .ok_or_else(|| crate::errors::invalid(py, "no such view"))?;
    cell.import(py, "cairn._views", class)?.call1((slf,))
}

#[pymethods]
impl Keyspace {
    /// The keyspace's name.
    #[getter]
    fn name(&self) -> &str {
        &self.name
    }

    fn __repr__(&self) -> String {
        format!("<cairn.Keyspace {:?}>", self.name)
    }

    fn __getitem__<'py>(&self, py: Python<'py>, key: Bytes) -> PyResult<Bound<'py, PyBytes>> {
        match point::get(py, &self.shared, self.slot, &key)? {
            Some(v) => Ok(v),
            None => Err(key_error(py, &key)),
        }
    }

    fn __setitem__(&self, py: Python<'_>, key: Bytes, value: Bytes) -> PyResult<()> {
        point::insert(py, &self.shared, self.slot, &key, &value, None)
    }

    /// Removes `key`; `KeyError` if it is absent (checked, then removed: not atomic
    /// against a concurrent writer of the same key; `remove` does not check).
    fn __delitem__(&self, py: Python<'_>, key: Bytes) -> PyResult<()> {
        if !point::contains(py, &self.shared, self.slot, &key)? {
            return Err(key_error(py, &key));
        }
        point::remove(py, &self.shared, self.slot, &key, None)
    }

    fn __contains__(&self, py: Python<'_>, key: Bytes) -> PyResult<bool> {
        point::contains(py, &self.shared, self.slot, &key)
    }

    /// The number of keys: a scan over the keys at one point (O(keys)).
    fn __len__(&self, py: Python<'_>) -> PyResult<usize> {
        let n = self.with(py, |ks| ks.len())?;
        usize::try_from(n).map_err(|_| crate::errors::invalid(py, "too many keys for len()"))
    }

    fn __bool__(&self, py: Python<'_>) -> PyResult<bool> {
        Ok(!self.with(py, |ks| ks.is_empty())?)
    }

    fn __iter__(&self, py: Python<'_>) -> PyResult<Scan> {
        self.scan(
            py,
            (KeyBound::Unbounded, KeyBound::Unbounded),
            false,
            Yield::Keys,
        )
    }

    fn __reversed__(&self, py: Python<'_>) -> PyResult<Scan> {
        self.scan(
            py,
            (KeyBound::Unbounded, KeyBound::Unbounded),
            true,
            Yield::Keys,
        )
    }

    /// The value of `key`, or `default` if it is absent.
    #[pyo3(signature = (key, default=None))]
    fn get(&self, py: Python<'_>, key: Bytes, default: Option<PyObject>) -> PyResult<PyObject> {
        match point::get(py, &self.shared, self.slot, &key)? {
            Some(v) => Ok(v.into_any().unbind()),
            None => Ok(default.unwrap_or_else(|| py.None())),
        }
    }

    /// The values of `keys` (None for an absent key), in order: one call for the whole
    /// list; the keys that need I/O are read with the GIL released once.
    fn get_many<'py>(
        &self,
        py: Python<'py>,
        keys: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyList>> {
        point::get_many(py, &self.shared, self.slot, keys)
    }

    /// Stores `value` under `key`, optionally with a TTL (seconds) or an absolute expiry
    /// (Unix seconds), metadata bytes and a type tag, and a durability for this write.
    #[pyo3(signature = (key, value, *, ttl=None, expires_at=None, meta=None, tag=0, durability=None))]
    #[allow(clippy::too_many_arguments)]
    fn insert(
        &self,
        py: Python<'_>,
        key: Bytes,
        value: Bytes,
        ttl: Option<f64>,
        expires_at: Option<f64>,
        meta: Option<&Bound<'_, PyAny>>,
        tag: u32,
        durability: Option<&str>,
    ) -> PyResult<()> {
        let plain = ttl.is_none() && expires_at.is_none() && meta.is_none() && tag == 0;
        if plain {
            let d = opt_durability(py, durability)?;
            return point::insert(py, &self.shared, self.slot, &key, &value, d);
        }
        let opts = entry_options(py, ttl, expires_at, opt_bytes(meta)?, tag, durability)?;
        self.with(py, |ks| ks.insert_entry(&*key, &*value, &opts))
    }

    /// Removes `key` (nothing happens if it is absent).
    #[pyo3(signature = (key, *, durability=None))]
    fn remove(&self, py: Python<'_>, key: Bytes, durability: Option<&str>) -> PyResult<()> {
        let d = opt_durability(py, durability)?;
        point::remove(py, &self.shared, self.slot, &key, d)
    }

    /// Removes `key` and returns its value; `default` if absent, else `KeyError`.
    #[pyo3(signature = (key, *default))]
    fn pop(&self, py: Python<'_>, key: Bytes, default: &Bound<'_, PyTuple>) -> PyResult<PyObject> {
        let old = self.with(py, |ks| {
            let old = ks.get(&*key)?;
            if old.is_some() {
                ks.remove(&*key)?;
            }
            Ok(old)
        })?;
        match (old, default.len()) {
            (Some(v), _) => Ok(PyBytes::new(py, &v).into_any().unbind()),
            (None, 0) => Err(key_error(py, &key)),
            (None, _) => Ok(default.get_item(0)?.unbind()),
        }
    }

    /// Removes and returns the first `(key, value)` pair; `KeyError` if empty.
    fn popitem<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let first = self.with(py, |ks| {
            let first = ks.first_key_value()?;
            if let Some((k, _)) = &first {
                ks.remove(k)?;
            }
            Ok(first)
        })?;
        pair_to_py(py, first)?
            .ok_or_else(|| pyo3::exceptions::PyKeyError::new_err("popitem(): keyspace is empty"))
    }

    /// The value of `key`, storing `default` first if it is absent.
    fn setdefault<'py>(
        &self,
        py: Python<'py>,
        key: Bytes,
        default: Bytes,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let v = self.with(py, |ks| match ks.get(&*key)? {
            Some(v) => Ok(v),
            None => {
                ks.insert(&*key, &*default)?;
                Ok(default.to_vec())
            }
        })?;
        Ok(PyBytes::new(py, &v))
    }

    /// Stores every pair of a mapping (its `items()`) or of an iterable of pairs, in one
    /// atomic batch (which must fit in one 256 MiB log record; split larger loads).
    #[pyo3(signature = (other=None))]
    fn update(&self, py: Python<'_>, other: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        let Some(other) = other else { return Ok(()) };
        let items = if other.is_instance_of::<PyDict>() || other.hasattr("items")? {
            other.call_method0("items")?
        } else {
            other.clone()
        };
        let mut pairs: Vec<(Bytes, Bytes)> = Vec::new();
        for item in items.try_iter()? {
            pairs.push(item?.extract()?);
        }
        let (shared, slot) = (&self.shared, self.slot);
        py.allow_threads(|| {
            shared.read(|open| {
                let ks = open.keyspace(slot)?;
                let mut batch = open.db.batch();
                for (k, v) in &pairs {
                    batch.insert(ks, &**k, &**v);
                }
                batch.commit()?;
                Ok(())
            })
        })
        .or_raise(py)
    }

    /// Removes every key (one range tombstone: O(1)).
    fn clear(&self, py: Python<'_>) -> PyResult<()> {
        self.with(py, |ks| ks.remove_range::<&[u8], _>(..))
    }

    /// A view of the keys, in order.
    fn keys<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        view(slf, 0, "KeysView")
    }

    /// A view of the values, in key order.
    fn values<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        view(slf, 1, "ValuesView")
    }

    /// A view of the `(key, value)` pairs, in key order.
    fn items<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        view(slf, 2, "ItemsView")
    }

    /// Scans everything, yielding `"items"`, `"keys"` or `"values"` (used by the views).
    #[pyo3(signature = (what, reverse=false))]
    fn _scan(&self, py: Python<'_>, what: &str, reverse: bool) -> PyResult<Scan> {
        let yields = match what {
            "keys" => Yield::Keys,
            "values" => Yield::Values,
            _ => Yield::Items,
        };
        self.scan(
            py,
            (KeyBound::Unbounded, KeyBound::Unbounded),
            reverse,
            yields,
        )
    }

    /// The `(key, value)` pairs with `start <= key < end` (`None`: unbounded), ascending or,
    /// with `reverse`, descending.
    #[pyo3(signature = (start=None, end=None, *, reverse=false))]
    fn range(
        &self,
        py: Python<'_>,
        start: Option<Bytes>,
        end: Option<Bytes>,
        reverse: bool,
    ) -> PyResult<Scan> {
        self.scan(py, bounds(start, end), reverse, Yield::Items)
    }

    /// The `(key, value)` pairs whose key starts with `prefix`.
    #[pyo3(signature = (prefix, *, reverse=false))]
    fn prefix(&self, py: Python<'_>, prefix: Bytes, reverse: bool) -> PyResult<Scan> {
        self.prefix_scan(py, prefix, reverse, Yield::Items)
    }

    /// The `(key, Head)` pairs with `start <= key < end`; values are never read.
    #[pyo3(signature = (start=None, end=None, *, reverse=false))]
    fn range_heads(
        &self,
        py: Python<'_>,
        start: Option<Bytes>,
        end: Option<Bytes>,
        reverse: bool,
    ) -> PyResult<Scan> {
        self.scan(py, bounds(start, end), reverse, Yield::Heads)
    }

    /// The `(key, Head)` pairs whose key starts with `prefix`.
    #[pyo3(signature = (prefix, *, reverse=false))]
    fn prefix_heads(&self, py: Python<'_>, prefix: Bytes, reverse: bool) -> PyResult<Scan> {
        self.prefix_scan(py, prefix, reverse, Yield::Heads)
    }

    /// A read-only, seekable stream over the value of `key` (`read`, `seek`, `tell`), or
    /// `None` if absent: a value kept in a blob file is read 64 KiB at a time, never whole.
    fn open_value(&self, py: Python<'_>, key: Bytes) -> PyResult<Option<ValueReader>> {
        let reader = self.with(py, |ks| ks.get_reader(&*key))?;
        Ok(reader.map(|r| ValueReader::new(&self.shared, r)))
    }

    /// Stores the next `length` bytes of `file` (any object with `read(n)`) under `key`,
    /// with the attributes of `insert`. In a keyspace that separates values of this size
    /// the value streams into a blob file through a bounded buffer (up to 4 GiB - 1);
    /// elsewhere it is read whole (at most 32 MiB). Nothing is written if `file` ends
    /// early (`IOError`) or its `read` raises (that exception).
    #[pyo3(signature = (key, file, length, *, ttl=None, expires_at=None, meta=None, tag=0, durability=None))]
    #[allow(clippy::too_many_arguments)]
    fn insert_from(
        &self,
        py: Python<'_>,
        key: Bytes,
        file: PyObject,
        length: u64,
        ttl: Option<f64>,
        expires_at: Option<f64>,
        meta: Option<&Bound<'_, PyAny>>,
        tag: u32,
        durability: Option<&str>,
    ) -> PyResult<()> {
        let opts = entry_options(py, ttl, expires_at, opt_bytes(meta)?, tag, durability)?;
        // A clone of the engine keyspace, so no lock of this crate is held while the GIL
        // is taken back to read `file` (see value.rs).
        let slot = self.slot;
        let ks = self
            .shared
            .read(|open| Ok(open.keyspace(slot)?.clone()))
            .or_raise(py)?;
        let mut source = PyReader { file, raised: None };
        let source_ref = &mut source;
        let result = py.allow_threads(|| ks.insert_from(&*key, source_ref, length, &opts));
        if let Some(raised) = source.raised.take() {
            return Err(raised);
        }
        result.or_raise(py)
    }

    /// The entry's attributes without reading its value, or `None` if absent.
    fn head(&self, py: Python<'_>, key: Bytes) -> PyResult<Option<Head>> {
        Ok(self.with(py, |ks| ks.head(&*key))?.map(Head::from))
    }

    /// Adds `delta` to the counter at `key` (absent: 0) atomically; returns the new value.
    #[pyo3(signature = (key, delta=1, *, durability=None))]
    fn incr(
        &self,
        py: Python<'_>,
        key: Bytes,
        delta: i64,
        durability: Option<&str>,
    ) -> PyResult<i64> {
        let d = opt_durability(py, durability)?;
        self.with(py, |ks| ks.incr_with(&*key, delta, d))
    }

    /// Merges `operand` into the value of `key` with the keyspace's merge operator (see
    /// `Db.keyspace(merge_operator=...)`), without reading it. `InvalidArgumentError` if
    /// the keyspace has none or the operator refuses the operand; a read of a key whose
    /// operands cannot be combined raises `MergeError`.
    #[pyo3(signature = (key, operand, *, durability=None))]
    fn merge(
        &self,
        py: Python<'_>,
        key: Bytes,
        operand: Bytes,
        durability: Option<&str>,
    ) -> PyResult<()> {
        let d = opt_durability(py, durability)?;
        self.with(py, |ks| ks.merge_with(&*key, &*operand, d))
    }

    /// Sets `key` to `new` (`None`: removes it) if its value is `expected` (`None`:
    /// absent), atomically with respect to every other write. True if it did; False (and
    /// nothing written) if the value differed.
    fn compare_and_swap(
        &self,
        py: Python<'_>,
        key: Bytes,
        expected: Option<Bytes>,
        new: Option<Bytes>,
    ) -> PyResult<bool> {
        self.with(py, |ks| {
            let done = ks.compare_and_swap(&*key, expected.as_deref(), new.as_deref())?;
            Ok(done.is_ok())
        })
    }

    /// Replaces the value of `key` (`None`: absent) with `func(value)` (`None`: remove),
    /// atomically with respect to every other write; returns the value `func` was given.
    /// `func` may run more than once (once per attempt, seeing the value of that attempt).
    fn fetch_update(
        &self,
        py: Python<'_>,
        key: Bytes,
        func: &Bound<'_, PyAny>,
    ) -> PyResult<Option<Py<PyBytes>>> {
        const ATTEMPTS: u32 = 1000;
        let (shared, slot) = (&self.shared, self.slot);
        let mut attempt = 0u32;
        loop {
            attempt += 1;
            let mut tx = shared.read(|open| Ok(open.db.transaction())).or_raise(py)?;
            let current = py
                .allow_threads(|| shared.read(|open| Ok(tx.get(open.keyspace(slot)?, &*key)?)))
                .or_raise(py)?;
            let arg = current.as_ref().map(|v| PyBytes::new(py, v));
            let next = func.call1((arg,))?;
            let next: Option<Bytes> = if next.is_none() {
                None
            } else {
                Some(next.extract()?)
            };
            let committed = py.allow_threads(|| {
                shared.read(|open| {
                    let ks = open.keyspace(slot)?;
                    match &next {
                        Some(v) => tx.insert(ks, &*key, &**v),
                        None => tx.remove(ks, &*key),
                    }
                    Ok(tx.commit()?)
                })
            });
            match committed {
                Ok(_) => return Ok(current.map(|v| PyBytes::new(py, &v).unbind())),
                Err(Fail::Engine(e)) if e.is_conflict() && attempt < ATTEMPTS => {
                    py.allow_threads(|| crate::retry::backoff(attempt));
                }
                Err(f) => return Err(crate::errors::raise(py, f)),
            }
        }
    }

    /// Subtracts `delta` from the counter at `key`; returns the new value.
    #[pyo3(signature = (key, delta=1, *, durability=None))]
    fn decr(
        &self,
        py: Python<'_>,
        key: Bytes,
        delta: i64,
        durability: Option<&str>,
    ) -> PyResult<i64> {
        let d = opt_durability(py, durability)?;
        self.with(py, |ks| ks.decr_with(&*key, delta, d))
    }

    /// Removes every key with `start <= key < end` (one range tombstone: O(1)).
    #[pyo3(signature = (start=None, end=None, *, durability=None))]
    fn remove_range(
        &self,
        py: Python<'_>,
        start: Option<Bytes>,
        end: Option<Bytes>,
        durability: Option<&str>,
    ) -> PyResult<()> {
        let d = opt_durability(py, durability)?;
        let range = bounds(start, end);
        self.with(py, |ks| ks.remove_range_with(range, d))
    }

    /// Removes every key starting with `prefix` (one range tombstone: O(1)).
    fn remove_prefix(&self, py: Python<'_>, prefix: Bytes) -> PyResult<()> {
        self.with(py, |ks| ks.remove_prefix(&*prefix))
    }

    /// The first `(key, value)` pair, or `None`.
    fn first<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyTuple>>> {
        pair_to_py(py, self.with(py, |ks| ks.first_key_value())?)
    }

    /// The last `(key, value)` pair, or `None`.
    fn last<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyTuple>>> {
        pair_to_py(py, self.with(py, |ks| ks.last_key_value())?)
    }

    /// True if the keyspace holds no key (cheap, unlike `len`).
    fn is_empty(&self, py: Python<'_>) -> PyResult<bool> {
        self.with(py, |ks| ks.is_empty())
    }

    /// An estimate of the bytes this keyspace takes on disk.
    fn disk_size(&self, py: Python<'_>) -> PyResult<u64> {
        self.with(py, |ks| Ok(ks.disk_size()))
    }
}

/// The engine keyspace of a Python keyspace that must belong to `shared`.
pub(crate) fn same_store<'a>(
    ks: &Keyspace,
    shared: &Arc<Shared>,
    open: &'a crate::shared::Open,
) -> Res<&'a cairn::Keyspace> {
    if !Arc::ptr_eq(&ks.shared, shared) {
        return Err(Fail::Invalid(format!(
            "keyspace {:?} belongs to another store",
            ks.name
        )));
    }
    open.keyspace(ks.slot)
}
