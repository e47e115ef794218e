//! The constant store (`cairn.sparkey`): Sparkey log writer, index writer and reader.
//!
//! Files written here are byte-compatible with every Sparkey implementation (the engine's
//! `hash` module guarantees the format). Every call that reads or writes files releases
//! the GIL, except the point lookups of a `Reader` whose index and log were loaded into
//! memory at open (`pin_index=True, load_log=True`: `hash::Reader::reads_memory_only`),
//! which keep it; `LogWriter.put_many` and `Reader.get_many` take whole lists, so loading and
//! batched lookups cross into Rust once per chunk instead of once per key.
//!
//! Thread-safety: a `Reader` serves any number of threads at once (lookups share it
//! read-only). A `LogWriter` is behind a mutex: threads may share it, one put at a time.
//! `close()` on either makes later calls raise `cairn.ClosedError`. An iterator holds its
//! own reference to the files, so it runs to its end even if its reader is closed.

use std::path::PathBuf;

use parking_lot::{Mutex, RwLock};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyTuple, PyType};

use crate::args::Bytes;
use crate::errors::{closed, invalid, key_error, Fail, OrRaise, Res};
use cairn::hash;

/// Pairs handed to the engine per GIL release in `put_many`.
const PUT_CHUNK: usize = 4096;

fn log_compression(py: Python<'_>, name: &str) -> PyResult<hash::Compression> {
    match name {
        "none" => Ok(hash::Compression::None),
        "snappy" => Ok(hash::Compression::Snappy),
        "zstd" => Ok(hash::Compression::Zstd),
        _ => Err(invalid(
            py,
            format!("unknown compression {name:?}: expected \"none\", \"snappy\" or \"zstd\""),
        )),
    }
}

/// Writes a Sparkey log (`.spl`): puts and deletes, appended in order.
#[pyclass(frozen, module = "cairn.sparkey", name = "LogWriter")]
pub(crate) struct LogWriter {
    writer: Mutex<Option<hash::LogWriter>>,
    path: PathBuf,
}

impl LogWriter {
    fn with<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut hash::LogWriter) -> cairn::Result<T> + Send,
    ) -> PyResult<T> {
        let writer = &self.writer;
        py.allow_threads(|| -> Res<T> {
            let mut guard = writer.lock();
            let w = guard.as_mut().ok_or(Fail::Closed("the log writer"))?;
            Ok(f(w)?)
        })
        .or_raise(py)
    }
}

#[pymethods]
impl LogWriter {
    /// Creates (truncating) the log at `path`. `compression` is `"none"`, `"snappy"` or
    /// `"zstd"`; `block_size` is the uncompressed bytes per compressed block.
    #[new]
    #[pyo3(signature = (path, *, compression="none", block_size=4096))]
    fn py_new(py: Python<'_>, path: PathBuf, compression: &str, block_size: u32) -> PyResult<Self> {
        let opts =
            hash::LogOptions::default().compression(log_compression(py, compression)?, block_size);
        let w = py
            .allow_threads(|| hash::LogWriter::create(&path, &opts))
            .or_raise(py)?;
        Ok(LogWriter {
            writer: Mutex::new(Some(w)),
            path,
        })
    }

    /// Opens the existing log at `path` to append to it (its compression is kept).
    #[classmethod]
    fn append(_cls: &Bound<'_, PyType>, py: Python<'_>, path: PathBuf) -> PyResult<Self> {
        let w = py
            .allow_threads(|| hash::LogWriter::append(&path))
            .or_raise(py)?;
        Ok(LogWriter {
            writer: Mutex::new(Some(w)),
            path,
        })
    }

    /// The log's path.
    #[getter]
    fn path(&self) -> PathBuf {
        self.path.clone()
    }

    /// Appends a PUT of `value` under `key`.
    fn put(&self, py: Python<'_>, key: Bytes, value: Bytes) -> PyResult<()> {
        self.with(py, |w| w.put(&key, &value))
    }

    /// Appends a DELETE of `key`.
    fn delete(&self, py: Python<'_>, key: Bytes) -> PyResult<()> {
        self.with(py, |w| w.delete(&key))
    }

    /// Appends a PUT for every `(key, value)` of an iterable (or a mapping's items), in
    /// chunks with the GIL released; returns the number of pairs written.
    fn put_many(&self, py: Python<'_>, pairs: &Bound<'_, PyAny>) -> PyResult<u64> {
        let items = if pairs.is_instance_of::<PyDict>() {
            pairs.call_method0("items")?
        } else {
            pairs.clone()
        };
        let mut count = 0u64;
        let mut chunk: Vec<(Bytes, Bytes)> = Vec::with_capacity(PUT_CHUNK);
        // The chunk is borrowed by the engine call and dropped after it, with the GIL held
        // (its bytes objects are released then, not from a thread without the GIL).
        let mut flush = |chunk: &mut Vec<(Bytes, Bytes)>| -> PyResult<()> {
            count += chunk.len() as u64;
            let pending = &*chunk;
            let written = self.with(py, |w| {
                for (k, v) in pending {
                    w.put(k, v)?;
                }
                Ok(())
            });
            chunk.clear();
            written
        };
        for item in items.try_iter()? {
            chunk.push(item?.extract()?);
            if chunk.len() == PUT_CHUNK {
                flush(&mut chunk)?;
            }
        }
        flush(&mut chunk)?;
        Ok(count)
    }

    /// Hands buffered entries to the OS.
    fn flush(&self, py: Python<'_>) -> PyResult<()> {
        self.with(py, |w| w.flush())
    }

    /// Flushes and fsyncs the log, then closes it. A second call does nothing.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let writer = &self.writer;
        py.allow_threads(|| -> Res<()> {
            if let Some(w) = writer.lock().take() {
                w.close()?;
            }
            Ok(())
        })
        .or_raise(py)
    }

    fn __enter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    /// Closes the log (also when the block raised: what was appended stays appended).
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

/// Builds (or extends) the index `index_path` for the log `log_path`. `hash_size` is 32,
/// 64 or None (automatic); `seed` fixes the hash seed of a fresh build; `fresh` ignores an
/// existing index. Returns `"fresh"`, `"incremental"` or `"unchanged"`.
#[pyfunction]
#[pyo3(signature = (index_path, log_path, *, hash_size=None, seed=None, fresh=false))]
pub(crate) fn write_index(
    py: Python<'_>,
    index_path: PathBuf,
    log_path: PathBuf,
    hash_size: Option<u32>,
    seed: Option<u32>,
    fresh: bool,
) -> PyResult<&'static str> {
    let size = match hash_size {
        None => hash::HashSize::Auto,
        Some(32) => hash::HashSize::Bits32,
        Some(64) => hash::HashSize::Bits64,
        Some(other) => {
            return Err(invalid(
                py,
                format!("hash_size must be 32, 64 or None, not {other}"),
            ))
        }
    };
    let mut opts = hash::IndexOptions::default().hash_size(size).fresh(fresh);
    if let Some(s) = seed {
        opts = opts.seed(s);
    }
    let (kind, _) = py
        .allow_threads(|| hash::write_index(&index_path, &log_path, &opts))
        .or_raise(py)?;
    Ok(match kind {
        hash::BuildKind::Fresh => "fresh",
        hash::BuildKind::Incremental => "incremental",
        hash::BuildKind::Unchanged => "unchanged",
        _ => "unknown",
    })
}

/// Checks a log and its index (every entry, every slot); returns counts as a dict or
/// raises `CorruptionError` naming the file and offset.
#[pyfunction]
#[pyo3(name = "sparkey_verify")]
pub(crate) fn verify<'py>(
    py: Python<'py>,
    index_path: PathBuf,
    log_path: PathBuf,
) -> PyResult<Bound<'py, PyDict>> {
    let r = py
        .allow_threads(|| hash::verify(&index_path, &log_path))
        .or_raise(py)?;
    let d = PyDict::new(py);
    d.set_item("puts", r.puts)?;
    d.set_item("deletes", r.deletes)?;
    d.set_item("slots_checked", r.slots_checked)?;
    d.set_item("live_entries", r.live_entries)?;
    Ok(d)
}

/// Reads a Sparkey index and log pair: lookups from any number of threads.
#[pyclass(frozen, mapping, module = "cairn.sparkey", name = "Reader")]
pub(crate) struct Reader {
    reader: RwLock<Option<hash::Reader>>,
}

impl Reader {
    /// A handle to the open files (an `Arc` clone): lookups run on it without any lock
    /// of this object, so `close` never waits for them, and the files stay mapped until
    /// the lookups in flight finish.
    fn handle(&self, py: Python<'_>) -> PyResult<hash::Reader> {
        self.reader
            .read()
            .clone()
            .ok_or_else(|| closed(py, "the reader"))
    }

    fn with<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&hash::Reader) -> cairn::Result<T> + Send,
    ) -> PyResult<T> {
        let r = self.handle(py)?;
        py.allow_threads(|| f(&r)).or_raise(py)
    }

    /// Runs the point lookup `f` with the GIL held if the reader reads memory only
    /// (opened with `pin_index=True, load_log=True`: handing the GIL over would cost more
    /// than the lookup), else with the GIL released (a lookup may fault in pages of the
    /// mapped files).
    fn point<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&hash::Reader) -> cairn::Result<T> + Send,
    ) -> PyResult<T> {
        let r = self.handle(py)?;
        if r.reads_memory_only() {
            return f(&r).or_raise(py);
        }
        py.allow_threads(|| f(&r)).or_raise(py)
    }

    fn lookup<'py>(&self, py: Python<'py>, key: &[u8]) -> PyResult<Option<Bound<'py, PyBytes>>> {
        let r = self.handle(py)?;
        let mut scratch = Vec::new();
        if r.reads_memory_only() {
            let found = r.get_ref(key, &mut scratch).or_raise(py)?;
            return Ok(found.map(|v| PyBytes::new(py, v)));
        }
        let scratch_ref = &mut scratch;
        // The value is copied once, from the mapped log (or the scratch buffer of a
        // compressed log) into the new bytes object, after the GIL is taken back.
        let found = py
            .allow_threads(|| r.get_ref(key, scratch_ref))
            .or_raise(py)?;
        Ok(found.map(|v| PyBytes::new(py, v)))
    }

    fn iter(&self, py: Python<'_>, yields: HashYield) -> PyResult<HashIterator> {
        let it = self.with(py, |r| Ok(r.iter()))?;
        Ok(HashIterator {
            iter: Mutex::new(it),
            yields,
        })
    }
}

#[pymethods]
impl Reader {
    /// Opens the index `index_path` and its log (`log_path`, default: the index's path
    /// with `.spl`). `pin_index` loads and locks the index in memory; `load_log` copies
    /// the log into memory.
    #[new]
    #[pyo3(signature = (index_path, log_path=None, *, pin_index=false, load_log=false, block_cache_bytes=None))]
    fn py_new(
        py: Python<'_>,
        index_path: PathBuf,
        log_path: Option<PathBuf>,
        pin_index: bool,
        load_log: bool,
        block_cache_bytes: Option<usize>,
    ) -> PyResult<Self> {
        let log_path = match log_path {
            Some(p) => p,
            None => hash::log_path_for(&index_path).ok_or_else(|| {
                invalid(
                    py,
                    format!("cannot derive a log path from {}", index_path.display()),
                )
            })?,
        };
        let mut opts = hash::ReadOptions::default()
            .pin_index(pin_index)
            .load_log(load_log);
        if let Some(b) = block_cache_bytes {
            opts = opts.block_cache_bytes(b);
        }
        let r = py
            .allow_threads(|| hash::Reader::open_with(&index_path, &log_path, &opts))
            .or_raise(py)?;
        Ok(Reader {
            reader: RwLock::new(Some(r)),
        })
    }

    /// The value of `key`, or `default` if absent.
    #[pyo3(signature = (key, default=None))]
    fn get(&self, py: Python<'_>, key: Bytes, default: Option<PyObject>) -> PyResult<PyObject> {
        match self.lookup(py, &key)? {
            Some(v) => Ok(v.into_any().unbind()),
            None => Ok(default.unwrap_or_else(|| py.None())),
        }
    }

    fn __getitem__<'py>(&self, py: Python<'py>, key: Bytes) -> PyResult<Bound<'py, PyBytes>> {
        self.lookup(py, &key)?.ok_or_else(|| key_error(py, &key))
    }

    fn __contains__(&self, py: Python<'_>, key: Bytes) -> PyResult<bool> {
        self.point(py, |r| r.contains(&key))
    }

    /// The number of live keys.
    fn __len__(&self, py: Python<'_>) -> PyResult<usize> {
        let n = self.with(py, |r| Ok(r.len()))?;
        usize::try_from(n).map_err(|_| invalid(py, "too many keys for len()"))
    }

    /// The values of `keys` (None for an absent key), in order: one call for the whole
    /// list, with memory misses overlapped.
    fn get_many<'py>(
        &self,
        py: Python<'py>,
        keys: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyList>> {
        let mut owned: Vec<Bytes> = Vec::new();
        for k in keys.try_iter()? {
            owned.push(k?.extract()?);
        }
        // The values found are appended to one buffer (one allocation per batch, not per
        // value), with each key's (start, length) in `spans`; the bytes objects are cut
        // from it once the GIL is back.
        let (buf, spans) = self.point(py, |r| {
            let mut buf: Vec<u8> = Vec::new();
            let mut spans: Vec<Option<(usize, usize)>> = vec![None; owned.len()];
            r.get_many(&owned, |i, v| {
                if let (Some(span), Some(v)) = (spans.get_mut(i), v) {
                    *span = Some((buf.len(), v.len()));
                    buf.extend_from_slice(v);
                }
            })?;
            Ok((buf, spans))
        })?;
        let list = PyList::empty(py);
        for span in spans {
            match span.and_then(|(start, len)| buf.get(start..start + len)) {
                Some(v) => list.append(PyBytes::new(py, v))?,
                None => list.append(py.None())?,
            }
        }
        Ok(list)
    }

    /// Iterates the live keys, in log order.
    fn __iter__(&self, py: Python<'_>) -> PyResult<HashIterator> {
        self.iter(py, HashYield::Keys)
    }

    /// The live keys, in log order.
    fn keys(&self, py: Python<'_>) -> PyResult<HashIterator> {
        self.iter(py, HashYield::Keys)
    }

    /// The live values, in log order.
    fn values(&self, py: Python<'_>) -> PyResult<HashIterator> {
        self.iter(py, HashYield::Values)
    }

    /// The live `(key, value)` pairs, in log order.
    fn items(&self, py: Python<'_>) -> PyResult<HashIterator> {
        self.iter(py, HashYield::Items)
    }

    /// The index header as a dict (entries, capacity, hash size, seed, ...).
    fn info<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let h = self.with(py, |r| Ok(r.header().clone()))?;
        let d = PyDict::new(py);
        d.set_item("num_entries", h.num_entries)?;
        d.set_item("num_puts", h.num_puts)?;
        d.set_item("hash_capacity", h.hash_capacity)?;
        d.set_item("hash_size", h.hash_size)?;
        d.set_item("hash_seed", h.hash_seed)?;
        d.set_item("max_key_len", h.max_key_len)?;
        d.set_item("max_value_len", h.max_value_len)?;
        d.set_item("data_end", h.data_end)?;
        d.set_item("garbage_size", h.garbage_size)?;
        Ok(d)
    }

    /// Closes the reader: later calls raise `ClosedError`. The files are unmapped once
    /// lookups in flight and live iterators finish.
    fn close(&self) {
        let taken = self.reader.write().take();
        drop(taken);
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

/// What a [`HashIterator`] yields.
#[derive(Clone, Copy)]
enum HashYield {
    Keys,
    Values,
    Items,
}

/// Iterates the live entries of a constant store, in log order.
#[pyclass(frozen, module = "cairn.sparkey", name = "HashIterator")]
pub(crate) struct HashIterator {
    iter: Mutex<hash::HashIter>,
    yields: HashYield,
}

#[pymethods]
impl HashIterator {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Option<PyObject>> {
        // One entry per call: decoding an entry is a copy from the mapped log, too short to
        // be worth releasing the GIL for.
        let next = self.iter.lock().next();
        let Some(item) = next else { return Ok(None) };
        let (k, v) = item.map_err(|e| crate::errors::engine_error(py, e))?;
        Ok(Some(match self.yields {
            HashYield::Keys => PyBytes::new(py, &k).into_any().unbind(),
            HashYield::Values => PyBytes::new(py, &v).into_any().unbind(),
            HashYield::Items => PyTuple::new(py, [PyBytes::new(py, &k), PyBytes::new(py, &v)])?
                .into_any()
                .unbind(),
        }))
    }
}

/// Iterates every entry of the log at `log_path` as `(kind, key, value)`, `kind` being
/// `"put"` or `"delete"` (value `b""`), in log order.
#[pyfunction]
pub(crate) fn iter_log(py: Python<'_>, log_path: PathBuf) -> PyResult<LogIterator> {
    let log = py
        .allow_threads(|| hash::LogReader::open(&log_path))
        .or_raise(py)?;
    Ok(LogIterator {
        iter: Mutex::new(log.iter()),
    })
}

/// Iterates every entry of a log (see `iter_log`).
#[pyclass(frozen, module = "cairn.sparkey", name = "LogIterator")]
pub(crate) struct LogIterator {
    iter: Mutex<hash::LogIter>,
}

#[pymethods]
impl LogIterator {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyTuple>>> {
        let next = self.iter.lock().next();
        let Some(item) = next else { return Ok(None) };
        let e = item.map_err(|e| crate::errors::engine_error(py, e))?;
        let kind = match e.kind {
            hash::EntryKind::Put => "put",
            hash::EntryKind::Delete => "delete",
        };
        let t = PyTuple::new(
            py,
            [
                kind.into_pyobject(py)?.into_any(),
                PyBytes::new(py, &e.key).into_any(),
                PyBytes::new(py, &e.value).into_any(),
            ],
        )?;
        Ok(Some(t))
    }
}
