//! Limits on what one client may send and make the server hold, so a hostile or broken
//! client costs a bounded amount of memory and time and never affects the others.
//!
//! Invariants the parser ([`crate::resp`]) keeps: it never allocates by a length a client
//! declared, only by bytes that arrived; a request whose count, length or line breaks a
//! limit is refused with an error (and its connection closed) before its body is read.

use std::time::Duration;

/// The limits of one connection. [`Limits::default`] matches Redis's defaults where
/// Redis has one, and is lower where Redis trusts clients (bulk length: 32 MiB).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Limits {
    /// Largest bulk string (one argument) in bytes. Default 32 MiB.
    pub max_bulk_len: usize,
    /// Most arguments in one request. Default 1,048,576 (Redis's limit).
    pub max_multibulk_count: usize,
    /// Longest inline request (a line of text, as typed into telnet) and longest header
    /// line (`*<count>`, `$<len>`), in bytes. Default 64 KiB (Redis's limit).
    pub max_inline_len: usize,
    /// Largest request in bytes, all arguments together. Default 64 MiB.
    pub max_request_len: usize,
    /// Requests of one connection run per turn of its event loop before its replies
    /// are written out and the other connections have their turn. Default 1024.
    pub max_pending_replies: usize,
    /// Reply bytes waiting for the client to read after which the connection runs and
    /// reads nothing more until they are written (back-pressure). Default 256 KiB.
    pub max_pending_reply_len: usize,
    /// Time a request may take to arrive once its first byte is in (slow senders are
    /// disconnected). Default 30 s.
    pub request_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_bulk_len: 32 << 20,
            max_multibulk_count: 1 << 20,
            max_inline_len: 64 << 10,
            max_request_len: 64 << 20,
            max_pending_replies: 1024,
            max_pending_reply_len: 256 << 10,
            request_timeout: Duration::from_secs(30),
        }
    }
}
