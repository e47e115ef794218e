//! The crate's one error type: what can stop the server from starting or from closing
//! the store cleanly. Errors of a single request are replies, never this type.

use std::fmt;

/// An error starting, running or stopping the server.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// A socket operation failed; `op` names it (`"bind 127.0.0.1:6379"`, ...).
    Io {
        /// What was being done.
        op: String,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// The store refused an operation (opening keyspaces, the final log sync, closing).
    Engine(cairn::Error),
    /// The configuration cannot be served (no listener, zero databases, ...).
    Config(String),
}

/// The crate's result type.
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    pub(crate) fn io(op: impl Into<String>, source: std::io::Error) -> Error {
        Error::Io {
            op: op.into(),
            source,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Io { op, source } => write!(f, "{op}: {source}"),
            Error::Engine(e) => write!(f, "the store: {e}"),
            Error::Config(msg) => write!(f, "{msg}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io { source, .. } => Some(source),
            Error::Engine(e) => Some(e),
            Error::Config(_) => None,
        }
    }
}

impl From<cairn::Error> for Error {
    fn from(e: cairn::Error) -> Error {
        Error::Engine(e)
    }
}
