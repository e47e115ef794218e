//! `sparkey_returncode` (spec §8.1), `sparkey_errstring`, and the mapping from
//! `cairn::Error` and `errno` (spec §8.2) to the reference's codes.
//!
//! Invariants: every code the library returns is one of the table's values; every
//! `errstring` is a static NUL-terminated string, byte for byte the reference's text.

use std::ffi::{c_char, c_int, CStr};
use std::io;

use cairn::{Error, FileKind, Reason};

pub const SUCCESS: c_int = 0;
pub const INTERNAL_ERROR: c_int = -1;
pub const FILE_NOT_FOUND: c_int = -100;
pub const PERMISSION_DENIED: c_int = -101;
pub const TOO_MANY_OPEN_FILES: c_int = -102;
pub const FILE_TOO_LARGE: c_int = -103;
pub const FILE_ALREADY_EXISTS: c_int = -104;
pub const FILE_BUSY: c_int = -105;
pub const FILE_IS_DIRECTORY: c_int = -106;
pub const FILE_SIZE_EXCEEDED: c_int = -107;
pub const FILE_CLOSED: c_int = -108;
pub const OUT_OF_DISK: c_int = -109;
pub const UNEXPECTED_EOF: c_int = -110;
pub const MMAP_FAILED: c_int = -111;
pub const WRONG_LOG_MAGIC_NUMBER: c_int = -200;
pub const WRONG_LOG_MAJOR_VERSION: c_int = -201;
pub const UNSUPPORTED_LOG_MINOR_VERSION: c_int = -202;
pub const LOG_TOO_SMALL: c_int = -203;
pub const LOG_CLOSED: c_int = -204;
pub const LOG_ITERATOR_INACTIVE: c_int = -205;
pub const LOG_ITERATOR_MISMATCH: c_int = -206;
pub const LOG_ITERATOR_CLOSED: c_int = -207;
pub const LOG_HEADER_CORRUPT: c_int = -208;
pub const INVALID_COMPRESSION_BLOCK_SIZE: c_int = -209;
pub const INVALID_COMPRESSION_TYPE: c_int = -210;
pub const WRONG_HASH_MAGIC_NUMBER: c_int = -300;
pub const WRONG_HASH_MAJOR_VERSION: c_int = -301;
pub const UNSUPPORTED_HASH_MINOR_VERSION: c_int = -302;
pub const HASH_TOO_SMALL: c_int = -303;
pub const HASH_CLOSED: c_int = -304;
pub const FILE_IDENTIFIER_MISMATCH: c_int = -305;
pub const HASH_HEADER_CORRUPT: c_int = -306;
pub const HASH_SIZE_INVALID: c_int = -307;

/// The reference's message for `code`.
pub fn errstring(code: c_int) -> &'static CStr {
    match code {
        SUCCESS => c"Success",
        INTERNAL_ERROR => c"Internal error",
        FILE_NOT_FOUND => c"File not found",
        PERMISSION_DENIED => c"Permission denied",
        TOO_MANY_OPEN_FILES => c"Too many open files",
        FILE_TOO_LARGE => c"File is too large",
        FILE_ALREADY_EXISTS => c"File already exists",
        FILE_BUSY => c"File is busy",
        FILE_IS_DIRECTORY => c"File is a directory",
        FILE_SIZE_EXCEEDED => c"Maximum file size exceeded",
        FILE_CLOSED => c"File is closed",
        OUT_OF_DISK => c"Out of free disk space",
        UNEXPECTED_EOF => c"Encountered unexpected end of file",
        MMAP_FAILED => c"mmap failed - running on 32 bit system?",
        WRONG_LOG_MAGIC_NUMBER => c"Wrong magic number of log file",
        WRONG_LOG_MAJOR_VERSION => c"Wrong major version of log file",
        UNSUPPORTED_LOG_MINOR_VERSION => c"Unsupported minor version of log file",
        LOG_TOO_SMALL => c"Corrupt log file - smaller than the header indicates",
        LOG_CLOSED => c"Log file is closed",
        LOG_ITERATOR_INACTIVE => c"Log iterator is inactive",
        LOG_ITERATOR_MISMATCH => c"The iterator is not associated with the log",
        LOG_ITERATOR_CLOSED => c"Log iterator is closed",
        LOG_HEADER_CORRUPT => c"Log header is corrupt",
        INVALID_COMPRESSION_BLOCK_SIZE => c"Invalid compression block size",
        INVALID_COMPRESSION_TYPE => c"Invalid compression type",
        WRONG_HASH_MAGIC_NUMBER => c"Wrong magic number of hash file",
        WRONG_HASH_MAJOR_VERSION => c"Wrong major version of hash file",
        UNSUPPORTED_HASH_MINOR_VERSION => c"Unsupported minor version of hash file",
        HASH_TOO_SMALL => c"Corrupt hash file - smaller than the header indicates",
        HASH_CLOSED => c"Hash file is closed",
        FILE_IDENTIFIER_MISMATCH => c"File identifier differs between hash file and log file",
        HASH_HEADER_CORRUPT => c"Hash header is corrupt",
        HASH_SIZE_INVALID => c"Hash size is invalid",
        _ => c"Unknown error",
    }
}

/// `errstring` as the C ABI returns it.
pub fn errstring_ptr(code: c_int) -> *const c_char {
    errstring(code).as_ptr()
}

/// The code the reference returns for a failed system call (the union of the open,
/// create, unlink and write mappings of spec §8.2; they never disagree). `op` is the
/// engine's name of the operation (`"open"`, `"read"`, `"mmap"`, ...).
pub fn of_io(err: &io::Error, op: &str) -> c_int {
    if op == "mmap" {
        return MMAP_FAILED;
    }
    match err.raw_os_error() {
        Some(libc::ENOENT) => FILE_NOT_FOUND,
        Some(libc::EPERM | libc::EACCES | libc::EROFS) => PERMISSION_DENIED,
        Some(libc::ENFILE | libc::EMFILE) => TOO_MANY_OPEN_FILES,
        Some(libc::EOVERFLOW) => FILE_TOO_LARGE,
        Some(libc::EEXIST) => FILE_ALREADY_EXISTS,
        Some(libc::EBUSY) => FILE_BUSY,
        Some(libc::EISDIR) => FILE_IS_DIRECTORY,
        Some(libc::EFBIG) => FILE_SIZE_EXCEEDED,
        Some(libc::EBADF) => FILE_CLOSED,
        Some(libc::ENOSPC) => OUT_OF_DISK,
        Some(_) => INTERNAL_ERROR,
        None => match err.kind() {
            io::ErrorKind::UnexpectedEof => UNEXPECTED_EOF,
            io::ErrorKind::NotFound => FILE_NOT_FOUND,
            io::ErrorKind::PermissionDenied => PERMISSION_DENIED,
            _ => INTERNAL_ERROR,
        },
    }
}

/// The code the reference returns for the failure the engine reports as `err`.
pub fn of_error(err: &Error) -> c_int {
    let is_log = |kind: FileKind| kind == FileKind::SparkeyLog;
    match err {
        Error::Io { op, source, .. } => of_io(source, op),
        Error::Corruption(c) => match &c.reason {
            Reason::BadMagic { .. } if is_log(c.file) => WRONG_LOG_MAGIC_NUMBER,
            Reason::BadMagic { .. } => WRONG_HASH_MAGIC_NUMBER,
            Reason::Truncated => UNEXPECTED_EOF,
            Reason::FileTooSmall { .. } if is_log(c.file) => LOG_TOO_SMALL,
            Reason::FileTooSmall { .. } => HASH_TOO_SMALL,
            Reason::HeaderField { .. } if is_log(c.file) => LOG_HEADER_CORRUPT,
            Reason::HeaderField { .. } => HASH_HEADER_CORRUPT,
            // Undecodable entries and blocks, slots pointing at DELETEs: the reference
            // reports these as SPARKEY_INTERNAL_ERROR.
            _ => INTERNAL_ERROR,
        },
        Error::UnsupportedVersion { file, major, .. } => match (is_log(*file), *major == 1) {
            (true, false) => WRONG_LOG_MAJOR_VERSION,
            (true, true) => UNSUPPORTED_LOG_MINOR_VERSION,
            (false, false) => WRONG_HASH_MAJOR_VERSION,
            (false, true) => UNSUPPORTED_HASH_MINOR_VERSION,
        },
        Error::IdentifierMismatch { .. } => FILE_IDENTIFIER_MISMATCH,
        _ => INTERNAL_ERROR,
    }
}

/// `Ok` → `SUCCESS`, `Err(e)` → `of_error(e)`.
pub fn of_result<T>(r: cairn::Result<T>) -> c_int {
    match r {
        Ok(_) => SUCCESS,
        Err(e) => of_error(&e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn every_code_has_the_reference_text() {
        assert_eq!(errstring(FILE_NOT_FOUND), c"File not found");
        assert_eq!(errstring(HASH_SIZE_INVALID), c"Hash size is invalid");
        assert_eq!(errstring(-2), c"Unknown error");
        assert_eq!(errstring(1), c"Unknown error");
    }

    #[test]
    fn engine_errors_map_to_reference_codes() {
        let p = Path::new("x");
        let bad = cairn::hash::raw::LogHeader::decode(p, &[0u8; 84], 84);
        assert_eq!(
            bad.map_err(|e| of_error(&e)).err(),
            Some(WRONG_LOG_MAGIC_NUMBER)
        );
        let bad = cairn::hash::raw::IndexHeader::decode(p, &[0u8; 112], 112);
        assert_eq!(
            bad.map_err(|e| of_error(&e)).err(),
            Some(WRONG_HASH_MAGIC_NUMBER)
        );
        let truncated = cairn::hash::raw::LogHeader::decode(p, &[0x49, 0x50, 0xed], 3);
        assert_eq!(
            truncated.map_err(|e| of_error(&e)).err(),
            Some(UNEXPECTED_EOF)
        );
        let missing = io::Error::from_raw_os_error(libc::ENOENT);
        assert_eq!(of_io(&missing, "open"), FILE_NOT_FOUND);
        assert_eq!(of_io(&missing, "mmap"), MMAP_FAILED);
    }
}
