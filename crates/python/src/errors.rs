//! Engine errors as Python exceptions.
//!
//! The exception classes live in `python/cairn/errors.py` (Python, because several of them
//! have two bases, such as `InvalidArgumentError(Error, ValueError)`, which PyO3 cannot
//! declare); this module maps each [`cairn::Error`] variant onto one of them and sets the
//! attributes the variant carries (file, path, offset, reason of a corruption; errno and
//! filename of an I/O error; ...). The classes are imported once per interpreter and cached.
//!
//! [`Fail`] is what code running without the GIL returns: an engine error, a closed handle
//! or an argument error, turned into an exception only once the GIL is held again.

use pyo3::exceptions::{PyKeyError, PyTypeError};
use pyo3::prelude::*;
use pyo3::sync::GILOnceCell;
use pyo3::types::{PyBytes, PyTuple, PyType};

/// A failure found without the GIL, raised with [`raise`] once it is held again.
#[derive(Debug)]
pub(crate) enum Fail {
    /// An error of the engine.
    Engine(cairn::Error),
    /// The handle (or the store it belongs to) was closed; says which.
    Closed(&'static str),
    /// A caller's mistake found by the binding itself.
    Invalid(String),
}

impl From<cairn::Error> for Fail {
    fn from(e: cairn::Error) -> Fail {
        Fail::Engine(e)
    }
}

/// The result of work done without the GIL.
pub(crate) type Res<T> = Result<T, Fail>;

/// Turns a [`Res`] into a `PyResult`, building the exception with the GIL held.
pub(crate) trait OrRaise<T> {
    /// The value, or the failure as a Python exception.
    fn or_raise(self, py: Python<'_>) -> PyResult<T>;
}

impl<T> OrRaise<T> for Res<T> {
    fn or_raise(self, py: Python<'_>) -> PyResult<T> {
        self.map_err(|f| raise(py, f))
    }
}

impl<T> OrRaise<T> for cairn::Result<T> {
    fn or_raise(self, py: Python<'_>) -> PyResult<T> {
        self.map_err(|e| engine_error(py, e))
    }
}

/// The Python exception for a failure.
pub(crate) fn raise(py: Python<'_>, fail: Fail) -> PyErr {
    match fail {
        Fail::Engine(e) => engine_error(py, e),
        Fail::Closed(what) => closed(py, what),
        Fail::Invalid(msg) => make(py, &INVALID, "InvalidArgumentError", msg, &[]),
    }
}

/// `cairn.ClosedError` naming what was closed.
pub(crate) fn closed(py: Python<'_>, what: &str) -> PyErr {
    make(py, &CLOSED, "ClosedError", format!("{what} is closed"), &[])
}

/// `cairn.InvalidArgumentError` with `msg`.
pub(crate) fn invalid(py: Python<'_>, msg: impl Into<String>) -> PyErr {
    make(py, &INVALID, "InvalidArgumentError", msg.into(), &[])
}

/// The built-in `KeyError` for a missing key (the key as `bytes`).
pub(crate) fn key_error(py: Python<'_>, key: &[u8]) -> PyErr {
    PyKeyError::new_err(PyBytes::new(py, key).unbind())
}

/// The exception for an error of a value stream: damage found while reading
/// (`InvalidData`) is a `CorruptionError`, anything else an `IOError`.
pub(crate) fn io_error(py: Python<'_>, e: std::io::Error) -> PyErr {
    if e.kind() == std::io::ErrorKind::InvalidData {
        return make(py, &CORRUPTION, "CorruptionError", e.to_string(), &[]);
    }
    engine_error(
        py,
        cairn::Error::Io {
            path: std::path::PathBuf::from("<value stream>"),
            op: "read value",
            source: e,
        },
    )
}

/// `TypeError` with `msg`.
pub(crate) fn type_error(msg: String) -> PyErr {
    PyTypeError::new_err(msg)
}

static BASE: GILOnceCell<Py<PyType>> = GILOnceCell::new();
static IO: GILOnceCell<Py<PyType>> = GILOnceCell::new();
static CORRUPTION: GILOnceCell<Py<PyType>> = GILOnceCell::new();
static VERSION: GILOnceCell<Py<PyType>> = GILOnceCell::new();
static MISMATCH: GILOnceCell<Py<PyType>> = GILOnceCell::new();
static BAD_INPUT: GILOnceCell<Py<PyType>> = GILOnceCell::new();
static INVALID: GILOnceCell<Py<PyType>> = GILOnceCell::new();
static POISONED: GILOnceCell<Py<PyType>> = GILOnceCell::new();
static STOPPED: GILOnceCell<Py<PyType>> = GILOnceCell::new();
static READ_ONLY: GILOnceCell<Py<PyType>> = GILOnceCell::new();
static NOT_A_COUNTER: GILOnceCell<Py<PyType>> = GILOnceCell::new();
static OVERFLOW: GILOnceCell<Py<PyType>> = GILOnceCell::new();
static FEATURE: GILOnceCell<Py<PyType>> = GILOnceCell::new();
static CLOSED: GILOnceCell<Py<PyType>> = GILOnceCell::new();
static CONFLICT: GILOnceCell<Py<PyType>> = GILOnceCell::new();
static MERGE: GILOnceCell<Py<PyType>> = GILOnceCell::new();

/// An attribute value to set on a new exception.
enum Attr<'a> {
    Str(String),
    Bytes(&'a [u8]),
    Int(i128),
    Bool(bool),
}

/// Builds `cairn.errors.<name>(msg)` and sets `attrs` on it. Falls back to the failure of
/// importing the class itself if the package is broken (never panics).
fn make(
    py: Python<'_>,
    cell: &'static GILOnceCell<Py<PyType>>,
    name: &str,
    msg: String,
    attrs: &[(&str, Attr<'_>)],
) -> PyErr {
    match PyTuple::new(py, [msg]) {
        Ok(args) => make_with_args(py, cell, name, args, attrs),
        Err(e) => e,
    }
}

fn make_with_args<'py>(
    py: Python<'py>,
    cell: &'static GILOnceCell<Py<PyType>>,
    name: &str,
    args: Bound<'py, PyTuple>,
    attrs: &[(&str, Attr<'_>)],
) -> PyErr {
    let build = || -> PyResult<PyErr> {
        let class = cell.import(py, "cairn.errors", name)?;
        let exc = class.call1(args)?;
        for (attr, value) in attrs {
            match value {
                Attr::Str(s) => exc.setattr(*attr, s)?,
                Attr::Bytes(b) => exc.setattr(*attr, PyBytes::new(py, b))?,
                Attr::Int(i) => exc.setattr(*attr, *i)?,
                Attr::Bool(b) => exc.setattr(*attr, *b)?,
            }
        }
        Ok(PyErr::from_value(exc))
    };
    build().unwrap_or_else(|e| e)
}

/// The errno of an I/O error that carries only a kind (such as the "already locked" of a
/// store open elsewhere, `WouldBlock`), looked up by name in Python's `errno` module so the
/// number is the platform's.
fn errno_of_kind(py: Python<'_>, kind: std::io::ErrorKind) -> Option<i32> {
    use std::io::ErrorKind as K;
    let name = match kind {
        K::NotFound => "ENOENT",
        K::PermissionDenied => "EACCES",
        K::AlreadyExists => "EEXIST",
        K::WouldBlock => "EAGAIN",
        K::InvalidInput => "EINVAL",
        K::TimedOut => "ETIMEDOUT",
        K::Interrupted => "EINTR",
        _ => return None,
    };
    py.import("errno")
        .and_then(|m| m.getattr(name))
        .and_then(|v| v.extract::<i32>())
        .ok()
}

fn path_str(p: &std::path::Path) -> Attr<'static> {
    Attr::Str(p.display().to_string())
}

/// The Python exception for an engine error, carrying the variant's fields as attributes.
pub(crate) fn engine_error(py: Python<'_>, e: cairn::Error) -> PyErr {
    let msg = e.to_string();
    match &e {
        cairn::Error::Io { path, op, source } => {
            let attrs = [("op", Attr::Str((*op).to_string()))];
            match source
                .raw_os_error()
                .or_else(|| errno_of_kind(py, source.kind()))
            {
                // OSError(errno, strerror, filename) sets errno, strerror and filename.
                Some(code) => {
                    let args = (code, msg, path.display().to_string()).into_pyobject(py);
                    match args {
                        Ok(args) => make_with_args(py, &IO, "IOError", args, &attrs),
                        Err(e) => e,
                    }
                }
                // No errno: the message alone (it names the path); setting `filename`
                // without `errno` would make OSError print "[Errno None] None".
                None => make(py, &IO, "IOError", msg, &attrs),
            }
        }
        cairn::Error::Corruption(c) => make(
            py,
            &CORRUPTION,
            "CorruptionError",
            msg,
            &[
                ("file", Attr::Str(c.file.to_string())),
                ("path", path_str(&c.path)),
                ("offset", Attr::Int(i128::from(c.offset))),
                ("reason", Attr::Str(c.reason.to_string())),
            ],
        ),
        cairn::Error::UnsupportedVersion {
            file,
            path,
            major,
            minor,
        } => make(
            py,
            &VERSION,
            "UnsupportedVersionError",
            msg,
            &[
                ("file", Attr::Str(file.to_string())),
                ("path", path_str(path)),
                ("major", Attr::Int(i128::from(*major))),
                ("minor", Attr::Int(i128::from(*minor))),
            ],
        ),
        cairn::Error::IdentifierMismatch { log, index, .. } => make(
            py,
            &MISMATCH,
            "IdentifierMismatchError",
            msg,
            &[
                ("file", Attr::Str("index file".to_string())),
                ("path", path_str(index)),
                ("log", path_str(log)),
                ("index", path_str(index)),
            ],
        ),
        cairn::Error::BadInput { .. } => make(py, &BAD_INPUT, "BadInputError", msg, &[]),
        cairn::Error::InvalidArgument(_) => make(py, &INVALID, "InvalidArgumentError", msg, &[]),
        cairn::Error::Poisoned => make(py, &POISONED, "PoisonedError", msg, &[]),
        cairn::Error::Stopped { during, .. } => make(
            py,
            &STOPPED,
            "StoppedError",
            msg,
            &[("during", Attr::Str((*during).to_string()))],
        ),
        cairn::Error::ReadOnly => make(py, &READ_ONLY, "ReadOnlyError", msg, &[]),
        cairn::Error::NotACounter {
            key,
            value_prefix,
            value_len,
        } => make(
            py,
            &NOT_A_COUNTER,
            "NotACounterError",
            msg,
            &[
                ("key", Attr::Bytes(key)),
                ("value_prefix", Attr::Bytes(value_prefix)),
                ("value_len", Attr::Int(*value_len as i128)),
            ],
        ),
        cairn::Error::CounterOverflow {
            key,
            current,
            delta,
        } => make(
            py,
            &OVERFLOW,
            "CounterOverflowError",
            msg,
            &[
                ("key", Attr::Bytes(key)),
                ("current", Attr::Int(i128::from(*current))),
                ("delta", Attr::Int(*delta)),
            ],
        ),
        cairn::Error::FeatureDisabled { feature, .. } => make(
            py,
            &FEATURE,
            "FeatureDisabledError",
            msg,
            &[("feature", Attr::Str((*feature).to_string()))],
        ),
        cairn::Error::Conflict {
            keyspace,
            key,
            read,
        } => make(
            py,
            &CONFLICT,
            "ConflictError",
            msg,
            &[
                ("keyspace", Attr::Str(keyspace.clone())),
                ("key", Attr::Bytes(key)),
                ("read", Attr::Bool(*read)),
            ],
        ),
        cairn::Error::MergeFailed {
            operator,
            key,
            detail,
        } => make(
            py,
            &MERGE,
            "MergeError",
            msg,
            &[
                ("operator", Attr::Str(operator.clone())),
                ("key", Attr::Bytes(key)),
                ("detail", Attr::Str(detail.clone())),
            ],
        ),
        // `cairn::Error` is non-exhaustive: a variant added later is still a cairn.Error.
        _ => make(py, &BASE, "Error", msg, &[]),
    }
}
