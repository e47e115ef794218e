//! The one error type of the crate.
//!
//! Every fallible operation returns [`Result<T>`]. "Not found" is never an error: lookups
//! return `Ok(None)`. Bytes on disk that disagree with a `FORMAT.md` become
//! [`Error::Corruption`], which names the file, the byte offset and what was wrong, so a
//! user can act on it (restore, rebuild the index, report a bug) without a debugger.
//!
//! An error's `Display` text is complete, its cause included, so `source()` returns
//! `None`: printed through any error reporter, each message appears once.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

/// Result alias used throughout Cairn.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Which kind of file an error is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum FileKind {
    /// A constant-store log file (`.spl`, Sparkey format).
    SparkeyLog,
    /// A constant-store index file (`.spi`, Sparkey format).
    SparkeyIndex,
    /// An ordered-store write-ahead log file (including the write batches it carries).
    Wal,
    /// An ordered-store sorted table file (`.sst`).
    Table,
    /// An ordered-store manifest file (the log of version edits) or its `CURRENT` pointer.
    Manifest,
    /// A pack: one file holding a checkpoint of a store (`cairn::pack`).
    Pack,
    /// An ordered-store blob file (`.blob`): values kept apart from the tables.
    Blob,
}

impl fmt::Display for FileKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FileKind::SparkeyLog => "log file",
            FileKind::SparkeyIndex => "index file",
            FileKind::Wal => "write-ahead log file",
            FileKind::Table => "table file",
            FileKind::Manifest => "manifest file",
            FileKind::Pack => "pack file",
            FileKind::Blob => "blob file",
        })
    }
}

/// What exactly was wrong with the bytes of a corrupt file.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Reason {
    /// The magic number at the start of the file is not the expected one.
    BadMagic {
        /// The value found.
        found: u32,
    },
    /// The file or a record ends before a field it must contain.
    Truncated,
    /// The file is smaller than its header says it must be.
    FileTooSmall {
        /// Bytes the header requires.
        expected: u64,
        /// Bytes actually present.
        actual: u64,
    },
    /// A header field holds a value outside its valid range.
    HeaderField {
        /// Name of the field, as in FORMAT.md.
        field: &'static str,
        /// The value found, and why it is invalid.
        detail: String,
    },
    /// A length or offset points outside the data it must stay within.
    LengthOutOfRange,
    /// A variable-length integer is longer than 10 bytes or overflows 64 bits.
    BadVarint,
    /// A compressed block does not decompress, or decompresses to the wrong size.
    Decompress(String),
    /// A record is structurally invalid (e.g. an index slot that points at a DELETE).
    BadEntry(&'static str),
    /// A kind/tag byte holds a value that is not in the format's tag registry.
    BadTag(u8),
    /// A stored checksum does not match the computed one.
    Checksum {
        /// Checksum stored in the file.
        stored: u32,
        /// Checksum computed over the bytes.
        computed: u32,
    },
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reason::BadMagic { found } => write!(f, "wrong magic number {found:#010x}"),
            Reason::Truncated => f.write_str("unexpected end of data"),
            Reason::FileTooSmall { expected, actual } => write!(
                f,
                "file is {actual} bytes but its header requires {expected} bytes"
            ),
            Reason::HeaderField { field, detail } => write!(f, "header field {field}: {detail}"),
            Reason::LengthOutOfRange => f.write_str("a length or offset points out of range"),
            Reason::BadVarint => f.write_str("malformed variable-length integer"),
            Reason::Decompress(msg) => write!(f, "compressed block is invalid: {msg}"),
            Reason::BadEntry(msg) => f.write_str(msg),
            Reason::BadTag(tag) => write!(f, "unknown tag {tag:#04x}"),
            Reason::Checksum { stored, computed } => write!(
                f,
                "checksum mismatch (stored {stored:#010x}, computed {computed:#010x})"
            ),
        }
    }
}

/// Where a corrupt file is damaged and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Corruption {
    /// The kind of file.
    pub file: FileKind,
    /// The file's path as given when it was opened.
    pub path: PathBuf,
    /// Byte offset in the file where the damage was detected.
    pub offset: u64,
    /// What was wrong.
    pub reason: Reason,
}

impl fmt::Display for Corruption {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "corrupt {} {} at byte {}: {}",
            self.file,
            self.path.display(),
            self.offset,
            self.reason
        )
    }
}

/// Every error Cairn returns.
///
/// Match the variants you act on and keep a wildcard arm: the enum is `#[non_exhaustive]`.
/// [`Error::is_corruption`] groups the variants that blame the files.
///
/// ```
/// use cairn::hash::{LogOptions, LogWriter, Reader};
/// use cairn::{Db, Error, FileKind, Options, Reason};
///
/// # fn main() -> cairn::Result<()> {
/// # let dir = tempfile::tempdir().map_err(|e| cairn::Error::InvalidArgument(e.to_string()))?;
/// // A directory that holds no store, opened without permission to create one.
/// let missing = dir.path().join("no-store-here");
/// match Db::open(&missing, Options::default().create_if_missing(false)) {
///     Err(Error::InvalidArgument(msg)) => assert!(msg.contains("no store")),
///     other => panic!("expected InvalidArgument, got {other:?}"),
/// }
///
/// // A file that is not an index: corruption, naming the file, the offset and the reason.
/// let (log, index) = (dir.path().join("x.spl"), dir.path().join("x.spi"));
/// LogWriter::create(&log, &LogOptions::default())?.close()?;
/// std::fs::write(&index, b"this is not a Sparkey index")
///     .map_err(|e| Error::InvalidArgument(e.to_string()))?;
/// let err = Reader::open(&index, &log).unwrap_err();
/// assert!(err.is_corruption());
/// match &err {
///     Error::Corruption(c) => {
///         assert_eq!((c.file, c.offset), (FileKind::SparkeyIndex, 0));
///         assert!(matches!(c.reason, Reason::BadMagic { .. }));
///     }
///     other => panic!("expected Corruption, got {other:?}"),
/// }
/// println!("{err}"); // corrupt index file .../x.spi at byte 0: wrong magic number ...
///
/// // A missing file: the operating system's error, with the path and what Cairn was doing.
/// match Reader::open(dir.path().join("gone.spi"), &log) {
///     Err(Error::Io { op, source, .. }) => {
///         assert_eq!(op, "open");
///         assert_eq!(source.kind(), std::io::ErrorKind::NotFound);
///     }
///     other => panic!("expected Io, got {other:?}"),
/// }
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// An operating-system I/O call failed.
    Io {
        /// The file or directory involved.
        path: PathBuf,
        /// What Cairn was doing ("open", "write", "fsync", ...).
        op: &'static str,
        /// The underlying error.
        source: io::Error,
    },
    /// Bytes on disk disagree with the format.
    Corruption(Box<Corruption>),
    /// The file is of a format version this build cannot read.
    UnsupportedVersion {
        /// The kind of file.
        file: FileKind,
        /// Its path.
        path: PathBuf,
        /// Major version found.
        major: u32,
        /// Minor version found.
        minor: u32,
    },
    /// A log and an index that do not belong together.
    IdentifierMismatch {
        /// The log file.
        log: PathBuf,
        /// The index file.
        index: PathBuf,
        /// The log's file identifier.
        log_id: u32,
        /// The identifier recorded in the index.
        index_id: u32,
    },
    /// A record of a dump or export being read back (`transfer`) is malformed: not the
    /// format, a field of the wrong type or out of range, a checksum or count mismatch.
    /// Nothing on the store's disk is damaged, so this is not corruption.
    BadInput {
        /// The input format (`"jsonl"`, `"cbor"`).
        format: &'static str,
        /// The 1-based line (JSON lines) or record (CBOR, the header is record 1) number.
        record: u64,
        /// Byte offset of the start of that line or record in the input.
        offset: u64,
        /// What was wrong.
        detail: String,
    },
    /// The caller passed an argument Cairn cannot accept (an option out of range, a key
    /// that is too long, ...).
    InvalidArgument(String),
    /// An earlier write or fsync failed, so the state of the file's tail is unknown (or, in
    /// the ordered store, an earlier write's commit panicked, e.g. in a merge operator); the
    /// writer refuses further work. Reopen the file to continue from its last durable state.
    Poisoned,
    /// The ordered store refuses writes because background work failed earlier; it stays
    /// readable. Reopen it to continue.
    Stopped {
        /// What failed: `"flush"`, `"compaction"` or `"manifest write"`.
        during: &'static str,
        /// The original failure (e.g. `Io` with ENOSPC); its text is part of this error's.
        cause: Box<Error>,
    },
    /// The store was opened read-only ([`crate::Db::open_read_only`]): writes, keyspace
    /// changes, flushes, compactions and log syncs are refused. Nothing was written.
    ReadOnly,
    /// A counter operation ([`crate::Keyspace::incr`], [`crate::Keyspace::decr`]) found a
    /// value that is not the canonical decimal text of an `i64` (such as `b"-5"`; no sign
    /// `+`, no leading zeros, no spaces). Nothing was written.
    NotACounter {
        /// The key.
        key: Vec<u8>,
        /// The first bytes of the value found (at most [`Error::VALUE_PREVIEW_LEN`]).
        value_prefix: Vec<u8>,
        /// The full length of the value found.
        value_len: usize,
    },
    /// A counter operation would take the counter outside the range of `i64`. Nothing
    /// was written.
    CounterOverflow {
        /// The key.
        key: Vec<u8>,
        /// The counter's value before the operation.
        current: i64,
        /// The amount the operation adds (negative for a decrement).
        delta: i128,
    },
    /// A transaction's commit found that another write changed what the transaction
    /// depends on after its snapshot: a key it writes (or, under
    /// [`crate::Isolation::Serializable`], a key or range it read). Nothing of the
    /// transaction was written; run it again (see [`crate::Db::update`]).
    Conflict {
        /// The keyspace of the key or range.
        keyspace: String,
        /// The key written by another commit after the transaction's snapshot (for a
        /// range, the first such key found; empty for a range delete).
        key: Vec<u8>,
        /// True if the transaction read the key (or a range holding it) rather than wrote
        /// it.
        read: bool,
    },
    /// A keyspace's merge operator ([`crate::MergeOperator`]) refused to combine the
    /// operands of a key, so the key has no value to return. Nothing was written or lost:
    /// the operands stay stored as they were.
    MergeFailed {
        /// The operator's name.
        operator: String,
        /// The key.
        key: Vec<u8>,
        /// The operator's reason.
        detail: String,
    },
    /// The operation needs a Cargo feature of the `cairn` crate that this build was
    /// compiled without, such as reading a Zstandard-compressed file without `zstd`.
    /// Nothing is damaged: a build with the feature can do it.
    FeatureDisabled {
        /// The Cargo feature (`"zstd"`).
        feature: &'static str,
        /// What needed it, naming the file where there is one.
        what: String,
    },
}

impl Error {
    /// Most bytes of a value that [`Error::NotACounter`] keeps.
    pub const VALUE_PREVIEW_LEN: usize = 32;

    pub(crate) fn io(path: &Path, op: &'static str, source: io::Error) -> Error {
        Error::Io {
            path: path.to_path_buf(),
            op,
            source,
        }
    }

    pub(crate) fn corruption(file: FileKind, path: &Path, offset: u64, reason: Reason) -> Error {
        Error::Corruption(Box::new(Corruption {
            file,
            path: path.to_path_buf(),
            offset,
            reason,
        }))
    }

    pub(crate) fn invalid(msg: impl Into<String>) -> Error {
        Error::InvalidArgument(msg.into())
    }

    /// The error for a Zstandard-compressed file (block, log) this build cannot read or
    /// write; `what` says which, naming the file.
    #[cfg(not(feature = "zstd"))]
    pub(crate) fn zstd_disabled(what: impl Into<String>) -> Error {
        Error::FeatureDisabled {
            feature: "zstd",
            what: what.into(),
        }
    }

    /// A copy of this error (an `io::Error` is copied by kind, OS error number and
    /// message), for reporting one failure to several callers.
    pub(crate) fn duplicate(&self) -> Error {
        match self {
            Error::Io { path, op, source } => Error::Io {
                path: path.clone(),
                op,
                source: match source.raw_os_error() {
                    Some(code) => io::Error::from_raw_os_error(code),
                    None => io::Error::new(source.kind(), source.to_string()),
                },
            },
            Error::Corruption(c) => Error::Corruption(c.clone()),
            Error::UnsupportedVersion {
                file,
                path,
                major,
                minor,
            } => Error::UnsupportedVersion {
                file: *file,
                path: path.clone(),
                major: *major,
                minor: *minor,
            },
            Error::IdentifierMismatch {
                log,
                index,
                log_id,
                index_id,
            } => Error::IdentifierMismatch {
                log: log.clone(),
                index: index.clone(),
                log_id: *log_id,
                index_id: *index_id,
            },
            Error::BadInput {
                format,
                record,
                offset,
                detail,
            } => Error::BadInput {
                format,
                record: *record,
                offset: *offset,
                detail: detail.clone(),
            },
            Error::InvalidArgument(m) => Error::InvalidArgument(m.clone()),
            Error::Poisoned => Error::Poisoned,
            Error::ReadOnly => Error::ReadOnly,
            Error::Stopped { during, cause } => Error::Stopped {
                during,
                cause: Box::new(cause.duplicate()),
            },
            Error::NotACounter {
                key,
                value_prefix,
                value_len,
            } => Error::NotACounter {
                key: key.clone(),
                value_prefix: value_prefix.clone(),
                value_len: *value_len,
            },
            Error::CounterOverflow {
                key,
                current,
                delta,
            } => Error::CounterOverflow {
                key: key.clone(),
                current: *current,
                delta: *delta,
            },
            Error::FeatureDisabled { feature, what } => Error::FeatureDisabled {
                feature,
                what: what.clone(),
            },
            Error::Conflict {
                keyspace,
                key,
                read,
            } => Error::Conflict {
                keyspace: keyspace.clone(),
                key: key.clone(),
                read: *read,
            },
            Error::MergeFailed {
                operator,
                key,
                detail,
            } => Error::MergeFailed {
                operator: operator.clone(),
                key: key.clone(),
                detail: detail.clone(),
            },
        }
    }

    /// The corruption details, if this is a corruption error.
    pub fn as_corruption(&self) -> Option<&Corruption> {
        match self {
            Error::Corruption(c) => Some(c),
            _ => None,
        }
    }

    /// True if this is a transaction [`Error::Conflict`]: running the transaction again may
    /// succeed.
    pub fn is_conflict(&self) -> bool {
        matches!(self, Error::Conflict { .. })
    }

    /// True if this error means the bytes of a file are damaged or of an unknown version.
    pub fn is_corruption(&self) -> bool {
        matches!(
            self,
            Error::Corruption(_)
                | Error::UnsupportedVersion { .. }
                | Error::IdentifierMismatch { .. }
        )
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Io { path, op, source } => {
                write!(f, "{op} {} failed: {source}", path.display())
            }
            Error::Corruption(c) => c.fmt(f),
            Error::UnsupportedVersion {
                file,
                path,
                major,
                minor,
            } => write!(
                f,
                "{file} {} has unsupported version {major}.{minor}",
                path.display()
            ),
            Error::IdentifierMismatch {
                log,
                index,
                log_id,
                index_id,
            } => write!(
                f,
                "index file {} (identifier {index_id:08x}) does not belong to log file {} (identifier {log_id:08x})",
                index.display(),
                log.display()
            ),
            Error::BadInput {
                format,
                record,
                offset,
                detail,
            } => {
                let unit = if *format == "jsonl" { "line" } else { "record" };
                write!(
                    f,
                    "bad {format} input at {unit} {record} (byte {offset}): {detail}"
                )
            }
            Error::InvalidArgument(msg) => write!(f, "invalid argument: {msg}"),
            Error::Poisoned => f.write_str(
                "writer is poisoned by an earlier failed write or fsync (or a panic while committing a write); reopen to recover",
            ),
            Error::Stopped { during, cause } => write!(
                f,
                "writes are stopped: {during} failed earlier ({cause}); reopen the store"
            ),
            Error::ReadOnly => f.write_str(
                "the store is open read-only: writes, keyspace changes, flushes and \
                 compactions are refused",
            ),
            Error::NotACounter {
                key,
                value_prefix,
                value_len,
            } => {
                let more = if *value_len > value_prefix.len() {
                    "..."
                } else {
                    ""
                };
                write!(
                    f,
                    "key \"{}\" holds {value_len} bytes \"{}{more}\", which is not a counter \
                     (the canonical decimal text of an i64, such as \"-5\"); nothing was written",
                    Shown(key),
                    value_prefix.escape_ascii()
                )
            }
            Error::CounterOverflow {
                key,
                current,
                delta,
            } => write!(
                f,
                "counter \"{}\" at {current} plus {delta} is outside the range of i64; \
                 nothing was written",
                Shown(key)
            ),
            Error::Conflict {
                keyspace,
                key,
                read,
            } => write!(
                f,
                "transaction conflict: key \"{}\" in keyspace {keyspace:?}, which the \
                 transaction {}, was written by another commit after its snapshot; nothing \
                 was written",
                Shown(key),
                if *read { "read" } else { "writes" }
            ),
            Error::MergeFailed {
                operator,
                key,
                detail,
            } => write!(
                f,
                "merge operator {operator:?} failed on key \"{}\": {detail}",
                Shown(key)
            ),
            Error::FeatureDisabled { feature, what } => write!(
                f,
                "{what} needs the cairn crate's \"{feature}\" feature, which this build was \
                 compiled without"
            ),
        }
    }
}

/// A key in a message: escaped, and cut after 64 bytes.
struct Shown<'a>(&'a [u8]);

impl fmt::Display for Shown<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const MAX: usize = 64;
        let head = self.0.get(..MAX).unwrap_or(self.0);
        write!(f, "{}", head.escape_ascii())?;
        if self.0.len() > MAX {
            write!(f, "... ({} bytes)", self.0.len())?;
        }
        Ok(())
    }
}

/// `source()` is `None` for every variant: the `Display` text already includes the cause
/// (the OS message of `Io`, the original failure of `Stopped`), and an error reporter that
/// walks the chain (anyhow's `{:#}`, `eyre`) would print it twice. The cause itself is a
/// field of the variant: match `Error::Io { source, .. }` for the `io::Error`.
impl std::error::Error for Error {}

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error as _;

    /// The full report an error reporter prints: the error, then each `source()` in turn
    /// (what anyhow's `{:#}` does).
    fn chain(e: &Error) -> String {
        let mut out = e.to_string();
        let mut next = e.source();
        while let Some(s) = next {
            out.push_str(": ");
            out.push_str(&s.to_string());
            next = s.source();
        }
        out
    }

    #[test]
    fn a_reported_chain_names_the_os_message_once() {
        let io = io::Error::new(io::ErrorKind::NotFound, "No such file or directory");
        let e = Error::io(Path::new("/s/CURRENT"), "open", io);
        let report = chain(&e);
        assert_eq!(
            report.matches("No such file or directory").count(),
            1,
            "{report}"
        );
        assert!(report.contains("/s/CURRENT"), "{report}");

        let stopped = Error::Stopped {
            during: "flush",
            cause: Box::new(e.duplicate()),
        };
        let report = chain(&stopped);
        assert_eq!(
            report.matches("No such file or directory").count(),
            1,
            "{report}"
        );
        assert!(report.contains("flush failed earlier"), "{report}");
    }
}
