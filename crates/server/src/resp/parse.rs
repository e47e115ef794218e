//! The request parser: an incremental state machine over a connection's input bytes.
//!
//! A request is either a multibulk array (`*<n>\r\n` then `n` times `$<len>\r\n<bytes>\r\n`)
//! or an inline line (words separated by blanks, `"..."`/`'...'` quoting as in
//! redis-cli, ended by `\n` or `\r\n`).
//!
//! Invariants:
//! 1. [`Parser::parse`] never panics and never indexes out of range, whatever the bytes.
//! 2. It consumes only whole elements (a header line, a whole bulk with its CRLF, a whole
//!    inline line) and keeps the arguments parsed so far, so input arriving in pieces is
//!    read once: the cost is linear in the bytes received, never quadratic.
//! 3. Memory grows only with bytes received: a declared count or length is checked
//!    against [`Limits`] and then used only to bound, never to pre-allocate beyond a small
//!    cap.
//! 4. After an error the parser's state is unspecified; the connection must be closed.

use std::fmt;

use crate::limits::Limits;

/// One request: the command name and its arguments, as bytes.
pub type Request = Vec<Vec<u8>>;

/// Arguments pre-allocated for a declared count; more grow as they arrive.
const PREALLOC_ARGS: usize = 64;

/// Argument buffers of finished requests a parser keeps for the next ones
/// ([`Parser::recycle`]), and the largest capacity it keeps: at most 16 KiB per
/// connection, while the keys and small values of the usual request take no allocation.
const SPARE_ARGS: usize = 32;
const SPARE_ARG_MAX: usize = 512;

/// Why a request cannot be read. Its `Display` is the text of Redis's error reply (after
/// the `ERR ` prefix), so clients and people see the messages they know.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ProtocolError {
    /// `*<n>` with `n` not a number or above the limit.
    InvalidMultibulkLength,
    /// `$<len>` with `len` not a number, negative or above the limit.
    InvalidBulkLength,
    /// An element of a multibulk request did not start with `$`.
    ExpectedDollar(u8),
    /// A bulk string was not followed by `\r\n`.
    ExpectedCrlf,
    /// An inline request longer than the limit.
    TooBigInline,
    /// A `*` header line longer than the limit.
    TooBigMultibulkCount,
    /// A `$` header line longer than the limit.
    TooBigBulkCount,
    /// The arguments together exceed the request limit.
    TooBigRequest,
    /// An inline request with an unclosed quote.
    UnbalancedQuotes,
}

impl fmt::Display for ProtocolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Protocol error: ")?;
        match self {
            ProtocolError::InvalidMultibulkLength => f.write_str("invalid multibulk length"),
            ProtocolError::InvalidBulkLength => f.write_str("invalid bulk length"),
            ProtocolError::ExpectedDollar(got) => {
                write!(
                    f,
                    "expected '$', got '{}'",
                    char::from(*got).escape_default()
                )
            }
            ProtocolError::ExpectedCrlf => f.write_str("expected CRLF after bulk string"),
            ProtocolError::TooBigInline => f.write_str("too big inline request"),
            ProtocolError::TooBigMultibulkCount => f.write_str("too big mbulk count string"),
            ProtocolError::TooBigBulkCount => f.write_str("too big bulk count string"),
            ProtocolError::TooBigRequest => f.write_str("too big request"),
            ProtocolError::UnbalancedQuotes => f.write_str("unbalanced quotes in request"),
        }
    }
}

impl std::error::Error for ProtocolError {}

/// A multibulk request in progress: arguments still expected, those read, their bytes.
#[derive(Debug)]
struct Pending {
    remaining: usize,
    args: Request,
    bytes: usize,
}

/// Reads requests from a connection's input, one at a time; see the module docs.
#[derive(Debug)]
pub struct Parser {
    limits: Limits,
    pending: Option<Pending>,
    /// Argument buffers and an argument list of finished requests, reused by the next.
    spare_args: Vec<Vec<u8>>,
    spare_request: Option<Request>,
}

impl Parser {
    /// A parser enforcing `limits`.
    pub fn new(limits: Limits) -> Parser {
        Parser {
            limits,
            pending: None,
            spare_args: Vec::new(),
            spare_request: None,
        }
    }

    /// Takes back a request that has been run, so the next requests reuse its buffers
    /// instead of allocating: the argument list, and up to [`SPARE_ARGS`] arguments of
    /// at most [`SPARE_ARG_MAX`] bytes of capacity (larger ones are freed).
    pub fn recycle(&mut self, mut request: Request) {
        for arg in request.drain(..) {
            if self.spare_args.len() < SPARE_ARGS && arg.capacity() <= SPARE_ARG_MAX {
                self.spare_args.push(arg);
            }
        }
        if self.spare_request.is_none() && request.capacity() <= PREALLOC_ARGS {
            self.spare_request = Some(request);
        }
    }

    /// True while part of a request has been consumed but the request is not complete.
    pub fn in_request(&self) -> bool {
        self.pending.is_some()
    }

    /// Reads from the front of `input`: returns how many bytes were consumed (the caller
    /// drops them) and the request, once one is complete. `(n, None)` means more bytes
    /// are needed (`n` may be non-zero: whole elements were taken). An empty request
    /// (`*0`, a blank line) is consumed and skipped.
    ///
    /// # Errors
    /// A [`ProtocolError`]; the connection must then be closed.
    pub fn parse(&mut self, input: &[u8]) -> Result<(usize, Option<Request>), ProtocolError> {
        let mut pos = 0usize;
        loop {
            let rest = input.get(pos..).unwrap_or_default();
            match self.pending.take() {
                None => {
                    let Some(&first) = rest.first() else {
                        return Ok((pos, None));
                    };
                    if first != b'*' {
                        return match self.inline(rest)? {
                            None => Ok((pos, None)),
                            Some((used, args)) if args.is_empty() => {
                                pos += used;
                                continue;
                            }
                            Some((used, args)) => Ok((pos + used, Some(args))),
                        };
                    }
                    let Some((used, line)) = line(
                        rest,
                        self.limits.max_inline_len,
                        ProtocolError::TooBigMultibulkCount,
                    )?
                    else {
                        return Ok((pos, None));
                    };
                    let count = line
                        .get(1..)
                        .and_then(parse_i64)
                        .ok_or(ProtocolError::InvalidMultibulkLength)?;
                    pos += used;
                    if count <= 0 {
                        continue; // `*0` and `*-1`: nothing to run (as Redis)
                    }
                    let count = usize::try_from(count)
                        .ok()
                        .filter(|&c| c <= self.limits.max_multibulk_count)
                        .ok_or(ProtocolError::InvalidMultibulkLength)?;
                    let mut args = self.spare_request.take().unwrap_or_default();
                    args.reserve(count.min(PREALLOC_ARGS));
                    self.pending = Some(Pending {
                        remaining: count,
                        args,
                        bytes: 0,
                    });
                }
                Some(mut p) => {
                    if p.remaining == 0 {
                        return Ok((pos, Some(p.args)));
                    }
                    match self.bulk(rest, p.bytes)? {
                        None => {
                            self.pending = Some(p);
                            return Ok((pos, None));
                        }
                        Some((used, arg)) => {
                            pos += used;
                            p.bytes = p.bytes.saturating_add(arg.len());
                            p.args.push(arg);
                            p.remaining -= 1;
                            self.pending = Some(p);
                        }
                    }
                }
            }
        }
    }

    /// One `$<len>\r\n<bytes>\r\n` element from the front of `rest`, if whole.
    fn bulk(
        &mut self,
        rest: &[u8],
        bytes_so_far: usize,
    ) -> Result<Option<(usize, Vec<u8>)>, ProtocolError> {
        let Some(&first) = rest.first() else {
            return Ok(None);
        };
        if first != b'$' {
            return Err(ProtocolError::ExpectedDollar(first));
        }
        let Some((header, line)) = line(
            rest,
            self.limits.max_inline_len,
            ProtocolError::TooBigBulkCount,
        )?
        else {
            return Ok(None);
        };
        let len = line
            .get(1..)
            .and_then(parse_i64)
            .and_then(|n| usize::try_from(n).ok())
            .filter(|&n| n <= self.limits.max_bulk_len)
            .ok_or(ProtocolError::InvalidBulkLength)?;
        if bytes_so_far.saturating_add(len) > self.limits.max_request_len {
            return Err(ProtocolError::TooBigRequest);
        }
        let end = header.saturating_add(len);
        let Some(tail) = rest.get(end..end.saturating_add(2)) else {
            return Ok(None);
        };
        if tail != b"\r\n" {
            return Err(ProtocolError::ExpectedCrlf);
        }
        let body = rest
            .get(header..end)
            .ok_or(ProtocolError::InvalidBulkLength)?;
        let mut arg = self.spare_args.pop().unwrap_or_default();
        arg.clear();
        arg.extend_from_slice(body);
        Ok(Some((end + 2, arg)))
    }

    /// One inline request from the front of `rest`, if its line is whole.
    fn inline(&self, rest: &[u8]) -> Result<Option<(usize, Request)>, ProtocolError> {
        let Some(nl) = rest.iter().position(|&b| b == b'\n') else {
            if rest.len() > self.limits.max_inline_len {
                return Err(ProtocolError::TooBigInline);
            }
            return Ok(None);
        };
        if nl > self.limits.max_inline_len {
            return Err(ProtocolError::TooBigInline);
        }
        let text = rest.get(..nl).unwrap_or_default();
        let text = text.strip_suffix(b"\r").unwrap_or(text);
        let args = split_inline(text)?;
        if args.len() > self.limits.max_multibulk_count {
            return Err(ProtocolError::InvalidMultibulkLength);
        }
        Ok(Some((nl + 1, args)))
    }
}

/// The header line at the front of `rest` (without its `\r\n`) and the bytes it takes
/// with the `\r\n`; `None` if incomplete. A line (or an unfinished one) longer than
/// `max_len` is `too_long`.
fn line(
    rest: &[u8],
    max_len: usize,
    too_long: ProtocolError,
) -> Result<Option<(usize, &[u8])>, ProtocolError> {
    let window = rest
        .get(..max_len.saturating_add(2).min(rest.len()))
        .unwrap_or_default();
    match window.windows(2).position(|w| w == b"\r\n") {
        Some(i) => Ok(Some((i + 2, window.get(..i).unwrap_or_default()))),
        None if rest.len() > max_len.saturating_add(1) => Err(too_long),
        None => Ok(None),
    }
}

/// A decimal `i64` as Redis writes lengths: an optional `-`, digits, nothing else.
fn parse_i64(text: &[u8]) -> Option<i64> {
    if text.is_empty() || text.len() > 20 {
        return None;
    }
    std::str::from_utf8(text)
        .ok()?
        .parse()
        .ok()
        .filter(|_| text.first() != Some(&b'+'))
}

/// Splits an inline request into words, with redis-cli's quoting: `"..."` knows the
/// escapes `\n \r \t \b \a \\ \" \xHH`, `'...'` knows `\'`; a closing quote must be
/// followed by a blank or the end.
fn split_inline(text: &[u8]) -> Result<Request, ProtocolError> {
    let mut args = Vec::new();
    let mut i = 0usize;
    let at = |i: usize| text.get(i).copied();
    loop {
        while at(i).is_some_and(|b| b.is_ascii_whitespace()) {
            i += 1;
        }
        let Some(first) = at(i) else {
            return Ok(args);
        };
        let mut word = Vec::new();
        match first {
            b'"' => {
                i += 1;
                loop {
                    match at(i) {
                        None => return Err(ProtocolError::UnbalancedQuotes),
                        Some(b'"') => {
                            i += 1;
                            break;
                        }
                        Some(b'\\') => {
                            let (byte, used) = match (at(i + 1), at(i + 2), at(i + 3)) {
                                (Some(b'x'), Some(h), Some(l)) => match (hex(h), hex(l)) {
                                    (Some(h), Some(l)) => (h * 16 + l, 4),
                                    _ => (b'x', 2),
                                },
                                (Some(b'n'), ..) => (b'\n', 2),
                                (Some(b'r'), ..) => (b'\r', 2),
                                (Some(b't'), ..) => (b'\t', 2),
                                (Some(b'b'), ..) => (8, 2),
                                (Some(b'a'), ..) => (7, 2),
                                (Some(c), ..) => (c, 2),
                                (None, ..) => return Err(ProtocolError::UnbalancedQuotes),
                            };
                            word.push(byte);
                            i += used;
                        }
                        Some(c) => {
                            word.push(c);
                            i += 1;
                        }
                    }
                }
                if at(i).is_some_and(|b| !b.is_ascii_whitespace()) {
                    return Err(ProtocolError::UnbalancedQuotes);
                }
            }
            b'\'' => {
                i += 1;
                loop {
                    match at(i) {
                        None => return Err(ProtocolError::UnbalancedQuotes),
                        Some(b'\'') => {
                            i += 1;
                            break;
                        }
                        Some(b'\\') if at(i + 1) == Some(b'\'') => {
                            word.push(b'\'');
                            i += 2;
                        }
                        Some(c) => {
                            word.push(c);
                            i += 1;
                        }
                    }
                }
                if at(i).is_some_and(|b| !b.is_ascii_whitespace()) {
                    return Err(ProtocolError::UnbalancedQuotes);
                }
            }
            _ => {
                while let Some(c) = at(i).filter(|b| !b.is_ascii_whitespace()) {
                    word.push(c);
                    i += 1;
                }
            }
        }
        args.push(word);
    }
}

fn hex(c: u8) -> Option<u8> {
    char::from(c)
        .to_digit(16)
        .and_then(|d| u8::try_from(d).ok())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    fn all(input: &[u8]) -> Result<Vec<Request>, ProtocolError> {
        let mut p = Parser::new(Limits::default());
        let mut pos = 0;
        let mut out = Vec::new();
        loop {
            let (used, req) = p.parse(&input[pos..])?;
            pos += used;
            match req {
                Some(r) => out.push(r),
                None => return Ok(out),
            }
        }
    }

    fn args(words: &[&str]) -> Request {
        words.iter().map(|w| w.as_bytes().to_vec()).collect()
    }

    #[test]
    fn recycled_buffers_parse_the_next_requests_exactly() {
        let mut p = Parser::new(Limits::default());
        let big = "v".repeat(SPARE_ARG_MAX + 100);
        let first = format!(
            "*3\r\n$3\r\nSET\r\n$10\r\nkey:000001\r\n${}\r\n{big}\r\n",
            big.len()
        );
        let (used, req) = p.parse(first.as_bytes()).unwrap();
        assert_eq!(used, first.len());
        let req = req.unwrap();
        assert_eq!(req, args(&["SET", "key:000001", &big]));
        p.recycle(req);
        // The large argument was freed, the others kept.
        assert_eq!(p.spare_args.len(), 2);
        assert!(p.spare_request.is_some());
        // Shorter and longer arguments than the recycled buffers held: nothing of the old
        // bytes shows through, and more arguments than were recycled still arrive.
        let input = b"*4\r\n$4\r\nMGET\r\n$1\r\na\r\n$12\r\nkey:00000002\r\n$0\r\n\r\n";
        let (used, req) = p.parse(input).unwrap();
        assert_eq!(used, input.len());
        assert_eq!(req.unwrap(), args(&["MGET", "a", "key:00000002", ""]));
        assert!(p.spare_args.is_empty());
        assert!(p.spare_request.is_none());
        // The spares stay bounded however many arguments come back.
        p.recycle((0..SPARE_ARGS * 2).map(|i| vec![b'x'; i]).collect());
        assert_eq!(p.spare_args.len(), SPARE_ARGS);
        p.recycle(vec![Vec::new(); PREALLOC_ARGS * 2]);
        assert_eq!(p.spare_args.len(), SPARE_ARGS);
    }

    #[test]
    fn multibulk_and_inline() {
        let got =
            all(b"*2\r\n$3\r\nGET\r\n$1\r\na\r\nPING\r\nset k \"a b\\x41\" 'c\\'d'\r\n").unwrap();
        assert_eq!(
            got,
            vec![
                args(&["GET", "a"]),
                args(&["PING"]),
                args(&["set", "k", "a bA", "c'd"])
            ]
        );
    }

    #[test]
    fn empty_requests_are_skipped() {
        assert_eq!(
            all(b"*0\r\n\r\n   \n*1\r\n$4\r\nPING\r\n").unwrap(),
            vec![args(&["PING"])]
        );
    }

    #[test]
    fn byte_at_a_time_gives_the_same_requests() {
        let input = b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nhello\r\nECHO hi\r\n";
        let mut p = Parser::new(Limits::default());
        let mut buf = Vec::new();
        let mut out = Vec::new();
        for &b in input.iter() {
            buf.push(b);
            loop {
                let (used, req) = p.parse(&buf).unwrap();
                buf.drain(..used);
                match req {
                    Some(r) => out.push(r),
                    None => break,
                }
            }
        }
        assert_eq!(
            out,
            vec![args(&["SET", "k", "hello"]), args(&["ECHO", "hi"])]
        );
    }

    #[test]
    fn errors_match_redis() {
        let err = |input: &[u8]| all(input).unwrap_err().to_string();
        assert_eq!(err(b"*x\r\n"), "Protocol error: invalid multibulk length");
        assert_eq!(err(b"*1\r\n$-1\r\n"), "Protocol error: invalid bulk length");
        assert_eq!(
            err(b"*1\r\n$99999999999\r\n"),
            "Protocol error: invalid bulk length"
        );
        assert_eq!(
            err(b"*1\r\n:1\r\n"),
            "Protocol error: expected '$', got ':'"
        );
        assert_eq!(
            err(b"*9999999999\r\n"),
            "Protocol error: invalid multibulk length"
        );
        assert_eq!(
            err(b"set \"a\r\n"),
            "Protocol error: unbalanced quotes in request"
        );
        assert_eq!(
            err(&vec![b'a'; 70_000]),
            "Protocol error: too big inline request"
        );
        assert_eq!(
            err(b"*1\r\n$1\r\nab\r\n"),
            "Protocol error: expected CRLF after bulk string"
        );
    }

    #[test]
    fn truncation_at_every_length_is_incomplete_not_an_error() {
        let input = b"*2\r\n$4\r\nECHO\r\n$11\r\nhello world\r\n";
        for n in 0..input.len() {
            assert_eq!(all(&input[..n]).unwrap(), Vec::<Request>::new(), "len {n}");
        }
    }

    #[test]
    fn declared_lengths_do_not_allocate() {
        let limits = Limits {
            max_bulk_len: usize::MAX / 2,
            max_request_len: usize::MAX,
            ..Limits::default()
        };
        let mut p = Parser::new(limits);
        let (_, req) = p.parse(b"*1048576\r\n$1000000000\r\nab").unwrap();
        assert!(req.is_none());
    }
}
