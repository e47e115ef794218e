//! The CLI's error type and exit codes.
//!
//! Every command returns `CliResult<u8>`: `Ok(code)` for the normal outcomes (0 ok, 2 not
//! found) or a [`CliError`], which `main` prints to stderr and turns into exit code 1, or
//! 3 when the engine reports damaged files. Engine errors are printed with their `Display`
//! text, which names the file and the byte offset.

use std::fmt;
use std::io;

/// Success.
pub const EXIT_OK: u8 = 0;
/// Any error that is not corruption: bad arguments, bad input, I/O failures.
pub const EXIT_ERROR: u8 = 1;
/// The key looked up is not in the store.
pub const EXIT_NOT_FOUND: u8 = 2;
/// No command given (a bare `cairn`, `cairn sparkey`, `cairn bench`): the help was printed
/// to standard error. A usage error like any other (not success, so a script that runs it
/// by mistake does not take the help for a result; not 2, which means "not found").
pub const EXIT_NO_COMMAND: u8 = EXIT_ERROR;
/// The engine found damaged (or foreign-version, or mismatched) files.
pub const EXIT_CORRUPTION: u8 = 3;

/// Result of a command: the exit code, or an error to report.
pub type CliResult<T> = Result<T, CliError>;

/// An error that ends a command.
#[derive(Debug)]
pub enum CliError {
    /// An engine error; exit 3 if it is corruption, else 1.
    Engine(cairn::Error),
    /// An engine error and what the user can do about it (printed on a second line).
    Hinted(cairn::Error, String),
    /// A mistake in the arguments or the input, or a failure outside the engine; exit 1.
    Message(String),
    /// Writing to standard output failed.
    Output(io::Error),
}

impl CliError {
    /// A plain error message (exit 1).
    pub fn msg(text: impl Into<String>) -> CliError {
        CliError::Message(text.into())
    }

    /// The process exit code for this error.
    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::Engine(e) | CliError::Hinted(e, _) if e.is_corruption() => EXIT_CORRUPTION,
            _ => EXIT_ERROR,
        }
    }

    /// True if standard output was closed by its reader (e.g. `| head`).
    pub fn is_broken_pipe(&self) -> bool {
        matches!(self, CliError::Output(e) if e.kind() == io::ErrorKind::BrokenPipe)
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CliError::Engine(e) => e.fmt(f),
            CliError::Hinted(e, hint) => write!(f, "{e}\nhint: {hint}"),
            CliError::Message(m) => f.write_str(m),
            CliError::Output(e) => write!(f, "writing to standard output failed: {e}"),
        }
    }
}

impl From<cairn::Error> for CliError {
    fn from(e: cairn::Error) -> Self {
        CliError::Engine(e)
    }
}

impl From<hdrhistogram::CreationError> for CliError {
    fn from(e: hdrhistogram::CreationError) -> Self {
        CliError::msg(format!("creating a latency histogram failed: {e}"))
    }
}

impl From<hdrhistogram::AdditionError> for CliError {
    fn from(e: hdrhistogram::AdditionError) -> Self {
        CliError::msg(format!("merging latency histograms failed: {e}"))
    }
}
