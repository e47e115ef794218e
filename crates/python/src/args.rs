//! Arguments from Python: byte strings, durability and compression names, entry options.
//!
//! Keys and values may be `bytes` (borrowed, never copied), `bytearray` or `memoryview`
//! (and any other object exporting a contiguous buffer through `memoryview`), copied once;
//! `str` and everything else is refused with `TypeError`, as Python's own byte APIs do.
//! A [`Bytes`] is `Send`, so it can be read while the GIL is released.

use std::time::Duration;

use pyo3::prelude::*;
use pyo3::pybacked::PyBackedBytes;
use pyo3::types::{PyByteArray, PyBytes, PyMemoryView};

use crate::errors::{invalid, type_error, OrRaise};

/// A key or value passed from Python: a `bytes` object (kept alive, read in place), or a
/// copy of a `bytearray` or `memoryview`.
pub(crate) struct Bytes(PyBackedBytes);

impl AsRef<[u8]> for Bytes {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

impl std::ops::Deref for Bytes {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        self.as_ref()
    }
}

impl<'py> FromPyObject<'py> for Bytes {
    fn extract_bound(ob: &Bound<'py, PyAny>) -> PyResult<Self> {
        // `bytes` first and without a second type check: it is the common case, and the
        // backed bytes then borrow the object instead of copying it.
        if let Ok(bytes) = ob.downcast::<PyBytes>() {
            return Ok(Bytes(PyBackedBytes::from(bytes.clone())));
        }
        if ob.is_instance_of::<PyByteArray>() {
            return Ok(Bytes(ob.extract::<PyBackedBytes>()?));
        }
        if ob.is_instance_of::<PyMemoryView>() {
            let copy = ob.call_method0("tobytes")?;
            return Ok(Bytes(copy.extract::<PyBackedBytes>()?));
        }
        Err(type_error(format!(
            "expected bytes, bytearray or memoryview, not {}",
            ob.get_type().name()?
        )))
    }
}

/// The bytes of an optional argument (`None` for Python's `None`).
pub(crate) fn opt_bytes(ob: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Bytes>> {
    match ob {
        Some(o) if !o.is_none() => Ok(Some(o.extract()?)),
        _ => Ok(None),
    }
}

/// Parses a durability name: `"sync"`, `"buffered"`, `"none"`, `"periodic"` (100 ms),
/// `"periodic:<ms>"`, `"async"` (queue depth 1024) or `"async:<queue depth>"`.
pub(crate) fn durability(py: Python<'_>, name: &str) -> PyResult<cairn::Durability> {
    let (kind, param) = match name.split_once(':') {
        Some((k, p)) => (k, Some(p)),
        None => (name, None),
    };
    let number = |default: u64| -> PyResult<u64> {
        match param {
            None => Ok(default),
            Some(p) => p.trim().parse::<u64>().map_err(|_| {
                invalid(
                    py,
                    format!("durability {name:?}: {p:?} is not a whole number"),
                )
            }),
        }
    };
    match kind {
        "sync" if param.is_none() => Ok(cairn::Durability::Sync),
        "buffered" if param.is_none() => Ok(cairn::Durability::Buffered),
        "none" if param.is_none() => Ok(cairn::Durability::None),
        "periodic" => Ok(cairn::Durability::Periodic(Duration::from_millis(number(
            100,
        )?))),
        "async" => Ok(cairn::Durability::Async {
            queue_depth: usize::try_from(number(1024)?)
                .map_err(|_| invalid(py, "async queue depth out of range"))?,
        }),
        _ => Err(invalid(
            py,
            format!(
                "unknown durability {name:?}: expected \"sync\", \"buffered\", \"none\", \
                 \"periodic[:<ms>]\" or \"async[:<queue depth>]\""
            ),
        )),
    }
}

/// The durability of an optional per-call argument.
pub(crate) fn opt_durability(
    py: Python<'_>,
    name: Option<&str>,
) -> PyResult<Option<cairn::Durability>> {
    name.map(|n| durability(py, n)).transpose()
}

/// Parses an ordered-store table compression: `"none"`, `"lz4"`, `"snappy"`, `"zstd"`
/// (level 3) or `"zstd:<level>"`.
pub(crate) fn compression(py: Python<'_>, name: &str) -> PyResult<cairn::Compression> {
    match name {
        "none" => Ok(cairn::Compression::None),
        "lz4" => Ok(cairn::Compression::Lz4),
        "snappy" => Ok(cairn::Compression::Snappy),
        "zstd" => Ok(cairn::Compression::Zstd(3)),
        other => match other.strip_prefix("zstd:").map(|l| l.trim().parse::<i32>()) {
            Some(Ok(level)) => Ok(cairn::Compression::Zstd(level)),
            _ => Err(invalid(
                py,
                format!(
                    "unknown compression {name:?}: expected \"none\", \"lz4\", \"snappy\", \
                     \"zstd\" or \"zstd:<level>\""
                ),
            )),
        },
    }
}

/// A duration in seconds (a non-negative, finite number).
pub(crate) fn seconds(py: Python<'_>, what: &str, secs: f64) -> PyResult<Duration> {
    Duration::try_from_secs_f64(secs).map_err(|_| {
        invalid(
            py,
            format!("{what} must be a finite, non-negative number of seconds, not {secs}"),
        )
    })
}

/// Entry options from the keyword arguments `ttl` (seconds), `expires_at` (Unix seconds),
/// `meta` (bytes), `tag` (u32) and `durability`.
pub(crate) fn entry_options(
    py: Python<'_>,
    ttl: Option<f64>,
    expires_at: Option<f64>,
    meta: Option<Bytes>,
    tag: u32,
    durability: Option<&str>,
) -> PyResult<cairn::EntryOptions> {
    let mut opts = cairn::EntryOptions::new();
    if meta.is_some() || tag != 0 {
        let bytes = meta.map(|m| m.to_vec()).unwrap_or_default();
        opts = opts.meta(cairn::Meta::new(tag, bytes));
    }
    if let Some(t) = ttl {
        opts = opts.ttl(seconds(py, "ttl", t)?);
    }
    if let Some(at) = expires_at {
        let since_epoch = seconds(py, "expires_at", at)?;
        opts = opts.expires_at(std::time::UNIX_EPOCH + since_epoch);
    }
    if let Some(d) = opt_durability(py, durability)? {
        opts = opts.durability(d);
    }
    Ok(opts)
}

/// A built-in merge operator: `"cairn.add_i64"`, `"cairn.append"` or
/// `("cairn.append", separator)`.
pub(crate) fn merge_operator(
    ob: &Bound<'_, PyAny>,
) -> PyResult<std::sync::Arc<dyn cairn::MergeOperator>> {
    let (name, separator): (String, Option<Bytes>) = match ob.extract::<String>() {
        Ok(name) => (name, None),
        Err(_) => ob.extract().map_err(|_| {
            type_error(
                "merge_operator must be a str or a (str, bytes) tuple such as \
                 (\"cairn.append\", b\",\")"
                    .to_string(),
            )
        })?,
    };
    let separator = separator.as_deref().unwrap_or_default();
    cairn::builtin_merge_operator(&name, separator).or_raise(ob.py())
}

/// Every item of the iterable `keys` as [`Bytes`], in order (`TypeError` for an item that
/// is not bytes-like).
pub(crate) fn bytes_list(keys: &Bound<'_, PyAny>) -> PyResult<Vec<Bytes>> {
    let mut owned = Vec::new();
    for k in keys.try_iter()? {
        owned.push(k?.extract()?);
    }
    Ok(owned)
}
