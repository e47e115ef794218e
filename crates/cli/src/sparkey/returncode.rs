//! The reference library's return codes and `sparkey_errstring` texts (spec §8.1), and the
//! mapping from `cairn::Error` (and `errno`, spec §8.2) to them.
//!
//! `cairn sparkey info` prints `<file>: <errstring>` exactly as the reference tool does, so
//! it needs the reference's classification of a failure; everything else in the CLI prints
//! the engine's own, more precise message.

use std::io;

use cairn::{Error, FileKind, Reason};

/// `sparkey_returncode` (spec §8.1).
#[allow(
    dead_code,
    reason = "the full table of the reference; info produces only some of the codes"
)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(i32)]
pub enum ReturnCode {
    Success = 0,
    InternalError = -1,
    FileNotFound = -100,
    PermissionDenied = -101,
    TooManyOpenFiles = -102,
    FileTooLarge = -103,
    FileAlreadyExists = -104,
    FileBusy = -105,
    FileIsDirectory = -106,
    FileSizeExceeded = -107,
    FileClosed = -108,
    OutOfDisk = -109,
    UnexpectedEof = -110,
    MmapFailed = -111,
    WrongLogMagicNumber = -200,
    WrongLogMajorVersion = -201,
    UnsupportedLogMinorVersion = -202,
    LogTooSmall = -203,
    LogClosed = -204,
    LogIteratorInactive = -205,
    LogIteratorMismatch = -206,
    LogIteratorClosed = -207,
    LogHeaderCorrupt = -208,
    InvalidCompressionBlockSize = -209,
    InvalidCompressionType = -210,
    WrongHashMagicNumber = -300,
    WrongHashMajorVersion = -301,
    UnsupportedHashMinorVersion = -302,
    HashTooSmall = -303,
    HashClosed = -304,
    FileIdentifierMismatch = -305,
    HashHeaderCorrupt = -306,
    HashSizeInvalid = -307,
}

impl ReturnCode {
    /// `sparkey_errstring(code)`, byte for byte.
    pub fn errstring(self) -> &'static str {
        use ReturnCode::*;
        match self {
            Success => "Success",
            InternalError => "Internal error",
            FileNotFound => "File not found",
            PermissionDenied => "Permission denied",
            TooManyOpenFiles => "Too many open files",
            FileTooLarge => "File is too large",
            FileAlreadyExists => "File already exists",
            FileBusy => "File is busy",
            FileIsDirectory => "File is a directory",
            FileSizeExceeded => "Maximum file size exceeded",
            FileClosed => "File is closed",
            OutOfDisk => "Out of free disk space",
            UnexpectedEof => "Encountered unexpected end of file",
            MmapFailed => "mmap failed - running on 32 bit system?",
            WrongLogMagicNumber => "Wrong magic number of log file",
            WrongLogMajorVersion => "Wrong major version of log file",
            UnsupportedLogMinorVersion => "Unsupported minor version of log file",
            LogTooSmall => "Corrupt log file - smaller than the header indicates",
            LogClosed => "Log file is closed",
            LogIteratorInactive => "Log iterator is inactive",
            LogIteratorMismatch => "The iterator is not associated with the log",
            LogIteratorClosed => "Log iterator is closed",
            LogHeaderCorrupt => "Log header is corrupt",
            InvalidCompressionBlockSize => "Invalid compression block size",
            InvalidCompressionType => "Invalid compression type",
            WrongHashMagicNumber => "Wrong magic number of hash file",
            WrongHashMajorVersion => "Wrong major version of hash file",
            UnsupportedHashMinorVersion => "Unsupported minor version of hash file",
            HashTooSmall => "Corrupt hash file - smaller than the header indicates",
            HashClosed => "Hash file is closed",
            FileIdentifierMismatch => "File identifier differs between hash file and log file",
            HashHeaderCorrupt => "Hash header is corrupt",
            HashSizeInvalid => "Hash size is invalid",
        }
    }
}

/// The code the reference returns for a failed system call (the union of the open, create,
/// unlink and write mappings of spec §8.2; they never disagree). `op` is the engine's name
/// of the operation (`"open"`, `"read"`, `"mmap"`, ...).
pub fn of_io(err: &io::Error, op: &str) -> ReturnCode {
    use ReturnCode::*;
    if op == "mmap" {
        return MmapFailed;
    }
    match err.raw_os_error() {
        Some(libc::ENOENT) => FileNotFound,
        Some(libc::EPERM | libc::EACCES | libc::EROFS) => PermissionDenied,
        Some(libc::ENFILE | libc::EMFILE) => TooManyOpenFiles,
        Some(libc::EOVERFLOW) => FileTooLarge,
        Some(libc::EEXIST) => FileAlreadyExists,
        Some(libc::EBUSY) => FileBusy,
        Some(libc::EISDIR) => FileIsDirectory,
        Some(libc::EFBIG) => FileSizeExceeded,
        Some(libc::EBADF) => FileClosed,
        Some(libc::ENOSPC) => OutOfDisk,
        Some(_) => InternalError,
        None => match err.kind() {
            io::ErrorKind::UnexpectedEof => UnexpectedEof,
            io::ErrorKind::NotFound => FileNotFound,
            io::ErrorKind::PermissionDenied => PermissionDenied,
            _ => InternalError,
        },
    }
}

/// The code the reference returns for the failure the engine reports as `err`.
pub fn of_error(err: &Error) -> ReturnCode {
    use ReturnCode::*;
    let is_log = |kind: FileKind| kind == FileKind::SparkeyLog;
    match err {
        Error::Io { op, source, .. } => of_io(source, op),
        Error::Corruption(c) => match &c.reason {
            Reason::BadMagic { .. } if is_log(c.file) => WrongLogMagicNumber,
            Reason::BadMagic { .. } => WrongHashMagicNumber,
            Reason::Truncated => UnexpectedEof,
            Reason::FileTooSmall { .. } if is_log(c.file) => LogTooSmall,
            Reason::FileTooSmall { .. } => HashTooSmall,
            Reason::HeaderField { .. } if is_log(c.file) => LogHeaderCorrupt,
            Reason::HeaderField { .. } => HashHeaderCorrupt,
            // Undecodable entries and blocks, slots pointing at DELETEs: the reference
            // reports these as SPARKEY_INTERNAL_ERROR.
            _ => InternalError,
        },
        Error::UnsupportedVersion { file, major, .. } => match (is_log(*file), *major == 1) {
            (true, false) => WrongLogMajorVersion,
            (true, true) => UnsupportedLogMinorVersion,
            (false, false) => WrongHashMajorVersion,
            (false, true) => UnsupportedHashMinorVersion,
        },
        Error::IdentifierMismatch { .. } => FileIdentifierMismatch,
        _ => InternalError,
    }
}

/// True if `err` says the file starts with the wrong magic number (the signal for `info`
/// to try the other kind of header).
pub fn is_bad_magic(err: &Error) -> bool {
    matches!(
        err.as_corruption(),
        Some(c) if matches!(c.reason, Reason::BadMagic { .. })
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn errstrings_match_the_reference_table() {
        assert_eq!(ReturnCode::FileNotFound as i32, -100);
        assert_eq!(ReturnCode::FileNotFound.errstring(), "File not found");
        assert_eq!(ReturnCode::UnexpectedEof as i32, -110);
        assert_eq!(
            ReturnCode::UnexpectedEof.errstring(),
            "Encountered unexpected end of file"
        );
        assert_eq!(ReturnCode::HashSizeInvalid as i32, -307);
    }

    #[test]
    fn engine_errors_map_to_reference_codes() {
        let p = Path::new("x");
        let truncated = cairn::hash::raw::LogHeader::decode(p, &[0x95, 0x9c], 2);
        assert_eq!(
            truncated.map_err(|e| of_error(&e)).err(),
            Some(ReturnCode::UnexpectedEof)
        );
        let bad = cairn::hash::raw::LogHeader::decode(p, &[0u8; 84], 84);
        assert_eq!(
            bad.map_err(|e| of_error(&e)).err(),
            Some(ReturnCode::WrongLogMagicNumber)
        );
        let bad = cairn::hash::raw::IndexHeader::decode(p, &[0u8; 112], 112);
        assert_eq!(
            bad.map_err(|e| of_error(&e)).err(),
            Some(ReturnCode::WrongHashMagicNumber)
        );
        let missing = io::Error::from_raw_os_error(libc::ENOENT);
        assert_eq!(of_io(&missing, "open"), ReturnCode::FileNotFound);
        assert_eq!(of_io(&missing, "mmap"), ReturnCode::MmapFailed);
    }
}
