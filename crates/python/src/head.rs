//! `cairn.Head`: an entry's attributes without its value (the answer to `head(key)`).

use pyo3::prelude::*;
use pyo3::types::PyBytes;

/// An entry's attributes, read without reading its value.
#[pyclass(frozen, module = "cairn", name = "Head")]
pub(crate) struct Head {
    /// Length of the value in bytes.
    #[pyo3(get)]
    value_len: u64,
    /// The type tag (0 if none was set).
    #[pyo3(get)]
    tag: u32,
    meta: Vec<u8>,
    /// Seqno of the write that produced the entry.
    #[pyo3(get)]
    seqno: u64,
    /// Expiry in Unix milliseconds, or None.
    #[pyo3(get)]
    expires_at_ms: Option<u64>,
    /// True if the value lives in a blob file of the value log.
    #[pyo3(get)]
    separated: bool,
}

impl From<cairn::Head> for Head {
    fn from(h: cairn::Head) -> Head {
        Head {
            value_len: h.value_len,
            tag: h.tag,
            meta: h.meta,
            seqno: h.seqno,
            expires_at_ms: h.expires_at,
            separated: h.separated,
        }
    }
}

#[pymethods]
impl Head {
    /// The metadata bytes (empty if none were set).
    #[getter]
    fn meta<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.meta)
    }

    /// Expiry as Unix seconds (float), or None.
    #[getter]
    fn expires_at(&self) -> Option<f64> {
        self.expires_at_ms.map(|ms| ms as f64 / 1000.0)
    }

    fn __repr__(&self) -> String {
        format!(
            "Head(value_len={}, tag={}, meta={} bytes, seqno={}, expires_at_ms={}, separated={})",
            self.value_len,
            self.tag,
            self.meta.len(),
            self.seqno,
            self.expires_at_ms
                .map_or_else(|| "None".to_string(), |ms| ms.to_string()),
            if self.separated { "True" } else { "False" }
        )
    }
}
