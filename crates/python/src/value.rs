//! Large values as streams: `Keyspace.open_value(key)` returns a [`ValueReader`] (a
//! read-only, seekable file-like object), and `Keyspace.insert_from(key, file, length)`
//! streams a value from any object with a `read(n)` method.
//!
//! In a keyspace that separates large values (`db.keyspace(name, blob_threshold=...)`), a
//! value is read from its blob file 64 KiB at a time and written through a bounded buffer,
//! so values of hundreds of MiB never sit whole in memory; elsewhere the engine reads the
//! value whole. A `ValueReader` is registered with its store (closing the store closes it);
//! `read` and `seek` release the GIL.
//!
//! `insert_from` reads the Python file with the GIL taken back for each chunk, from inside
//! the engine call. It therefore holds no lock of this crate while it runs (it writes
//! through its own clone of the engine keyspace, not under the store's lock), and the
//! engine holds none of its own while it reads the source (it streams into a blob file of
//! its own, then commits a handle), so a thread waiting for the GIL never blocks it.

use std::io::{Read, Seek, SeekFrom};
use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::errors::{closed, invalid, io_error, Fail, OrRaise};
use crate::shared::{Release, Shared, Slot};

/// A read-only, seekable stream over one value.
#[pyclass(frozen, module = "cairn", name = "ValueReader")]
pub(crate) struct ValueReader {
    reader: Arc<Slot<cairn::ValueReader>>,
    len: u64,
    separated: bool,
}

impl ValueReader {
    pub(crate) fn new(shared: &Shared, reader: cairn::ValueReader) -> ValueReader {
        let (len, separated) = (reader.len(), reader.is_separated());
        let slot = Arc::new(Slot::new(Some(reader)));
        let weak: std::sync::Weak<dyn Release> = Arc::downgrade(&slot) as _;
        shared.register(weak);
        ValueReader {
            reader: slot,
            len,
            separated,
        }
    }

    fn with<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut cairn::ValueReader) -> std::io::Result<T> + Send,
    ) -> PyResult<T> {
        let slot = &self.reader;
        let result = py.allow_threads(|| {
            let mut guard = slot.lock();
            match guard.as_mut() {
                Some(r) => Ok(f(r)),
                None => Err(Fail::Closed("the value reader")),
            }
        });
        match result.or_raise(py)? {
            Ok(v) => Ok(v),
            Err(e) => Err(io_error(py, e)),
        }
    }
}

#[pymethods]
impl ValueReader {
    /// The value's length in bytes.
    fn __len__(&self) -> usize {
        usize::try_from(self.len).unwrap_or(usize::MAX)
    }

    /// True if the value lives in a blob file of the value log.
    #[getter]
    fn separated(&self) -> bool {
        self.separated
    }

    /// True once closed.
    #[getter]
    fn closed(&self) -> bool {
        self.reader.lock().is_none()
    }

    /// Reads up to `size` bytes (all the rest if `size` is negative or omitted); `b""` at
    /// the end.
    #[pyo3(signature = (size=-1))]
    fn read<'py>(&self, py: Python<'py>, size: i64) -> PyResult<Bound<'py, PyBytes>> {
        let len = self.len;
        let data = self.with(py, move |r| {
            let mut out = Vec::new();
            match u64::try_from(size) {
                Ok(n) => {
                    r.take(n).read_to_end(&mut out)?;
                }
                Err(_) => {
                    let pos = r.stream_position()?;
                    out.reserve(usize::try_from(len.saturating_sub(pos)).unwrap_or(0));
                    r.read_to_end(&mut out)?;
                }
            }
            Ok(out)
        })?;
        Ok(PyBytes::new(py, &data))
    }

    /// Moves to `offset` from the start (`whence` 0), the current position (1) or the end
    /// (2); returns the new position.
    #[pyo3(signature = (offset, whence=0))]
    fn seek(&self, py: Python<'_>, offset: i64, whence: i32) -> PyResult<u64> {
        let to = match whence {
            0 => SeekFrom::Start(
                u64::try_from(offset)
                    .map_err(|_| invalid(py, format!("negative seek position {offset}")))?,
            ),
            1 => SeekFrom::Current(offset),
            2 => SeekFrom::End(offset),
            _ => {
                return Err(invalid(
                    py,
                    format!("whence must be 0, 1 or 2, not {whence}"),
                ))
            }
        };
        self.with(py, move |r| r.seek(to))
    }

    /// The current position.
    fn tell(&self, py: Python<'_>) -> PyResult<u64> {
        self.with(py, |r| r.stream_position())
    }

    fn readable(&self) -> bool {
        true
    }

    fn seekable(&self) -> bool {
        true
    }

    /// Closes the stream; later reads raise `ClosedError`.
    fn close(&self) {
        self.reader.release();
    }

    fn __enter__(slf: PyRef<'_, Self>) -> PyResult<PyRef<'_, Self>> {
        if slf.reader.lock().is_none() {
            return Err(closed(slf.py(), "the value reader"));
        }
        Ok(slf)
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

/// A Python file object as a `Read` source: each `read` takes the GIL, calls
/// `file.read(n)` and copies what it returns. A Python exception is kept in `raised` (and
/// reported to the engine as an I/O error) so the caller can raise it as it was.
pub(crate) struct PyReader {
    pub(crate) file: Py<PyAny>,
    pub(crate) raised: Option<PyErr>,
}

impl Read for PyReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let file = &self.file;
        let got = Python::with_gil(|py| -> PyResult<usize> {
            let chunk = file.bind(py).call_method1("read", (buf.len(),))?;
            let chunk: crate::args::Bytes = chunk.extract()?;
            if chunk.len() > buf.len() {
                return Err(invalid(py, "read(n) returned more than n bytes"));
            }
            for (dst, src) in buf.iter_mut().zip(chunk.iter()) {
                *dst = *src;
            }
            Ok(chunk.len())
        });
        got.map_err(|e| {
            self.raised = Some(e);
            std::io::Error::other("the file object's read() raised an exception")
        })
    }
}
