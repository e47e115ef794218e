//! One connection: read bytes, parse requests, run them in order, write the replies.
//!
//! Invariants:
//! 1. Requests run in the order received, one at a time; each reply is encoded after its
//!    command returned, so a write's reply leaves only once the write is as durable as
//!    the server's mode promises. Consecutive plain SETs and counter updates of a burst are committed as one
//!    batch (`command::SetBatch`) before the next other request runs and before any
//!    reply is written.
//! 2. Pipelining is bounded: replies are written out at the latest after
//!    `max_pending_replies` commands or `max_pending_reply_len` bytes, and no more input
//!    is read until every complete request in the buffer has run and its reply has been
//!    written. The input buffer holds at most one incomplete request (bounded by
//!    `Limits`) plus one read.
//! 3. A protocol error gets an `ERR Protocol error: ...` reply, then the connection
//!    closes; nothing else is affected.
//! 4. A client idle longer than the idle timeout, or taking longer than
//!    `request_timeout` to send one request, is disconnected; so is one that does not
//!    read its replies for that long (the write timeout).

use std::io::{ErrorKind, Read, Write};
use std::time::{Duration, Instant};

use crate::command::{self, Ctx, SetBatch};
use crate::resp::{Parser, Reply};
use crate::session::Session;
use crate::shared::Shared;
use crate::stats::Stats;
use crate::stream::Stream;

/// Bytes asked of the socket per read.
const READ_LEN: usize = 16 << 10;
/// How often a blocked read wakes to check the timeouts.
const POLL: Duration = Duration::from_millis(500);
/// Longest a write may block on a client that does not read (without an idle timeout).
const WRITE_TIMEOUT: Duration = Duration::from_secs(60);

/// Runs the connection until the client leaves, breaks a rule, or the server stops.
pub(crate) fn serve(shared: &Shared, mut socket: Stream, id: u64) {
    let limits = shared.config.limits;
    let idle = shared.config.idle_timeout;
    let _ = socket.set_read_timeout(Some(POLL));
    let _ = socket.set_write_timeout(Some(
        idle.unwrap_or(WRITE_TIMEOUT).max(Duration::from_secs(1)),
    ));
    let mut session = Session::new(id, shared.default_user(), !shared.auth_required());
    let mut parser = Parser::new(limits);
    let mut input: Vec<u8> = Vec::with_capacity(READ_LEN);
    // Reads land here and are copied to `input`: growing `input` by a zero-filled
    // `READ_LEN` for every read cost a 16 KiB memset per request (3 % of the CPU of
    // unpipelined SETs), where the copy costs the request's own bytes.
    let mut scratch = vec![0u8; READ_LEN];
    let mut start = 0usize;
    let mut out: Vec<u8> = Vec::with_capacity(READ_LEN);
    let mut pending = 0usize;
    let mut sets = SetBatch::default();
    let mut last_input = Instant::now();
    let mut request_began: Option<Instant> = None;
    loop {
        // Run every complete request in the buffer.
        loop {
            let rest = input.get(start..).unwrap_or_default();
            let (used, request) = match parser.parse(rest) {
                Ok(parsed) => parsed,
                Err(e) => {
                    settle(shared, &mut session, &mut sets, &mut out);
                    Stats::add(&shared.stats.protocol_errors, 1);
                    Reply::error(format!("ERR {e}")).encode(session.protocol, &mut out);
                    let _ = send(shared, &mut socket, &mut out);
                    return;
                }
            };
            start += used;
            let Some(args) = request else { break };
            let ctx = Ctx::new(shared, &mut session);
            let Some(args) = sets.offer(&ctx, args) else {
                if sets.full(limits.max_pending_replies) {
                    pending += settle(shared, &mut session, &mut sets, &mut out);
                }
                continue;
            };
            pending += settle(shared, &mut session, &mut sets, &mut out);
            let reply = command::run(&mut Ctx::new(shared, &mut session), &args);
            if session.silent {
                // SHUTDOWN: the replies before it still go out; it has none of its own.
                let _ = send(shared, &mut socket, &mut out);
                return;
            }
            reply.encode(session.protocol, &mut out);
            pending += 1;
            if session.close {
                let _ = send(shared, &mut socket, &mut out);
                return;
            }
            if pending >= limits.max_pending_replies || out.len() >= limits.max_pending_reply_len {
                if send(shared, &mut socket, &mut out).is_err() {
                    return;
                }
                pending = 0;
            }
        }
        settle(shared, &mut session, &mut sets, &mut out);
        if send(shared, &mut socket, &mut out).is_err() {
            return;
        }
        pending = 0;
        // Keep the unconsumed tail at the front.
        if start == input.len() {
            input.clear();
            start = 0;
        } else if start > 0 {
            input.drain(..start);
            start = 0;
        }
        let partial = parser.in_request() || !input.is_empty();
        if !partial {
            request_began = None;
        } else if request_began.is_none() {
            request_began = Some(Instant::now());
        }
        // Checked after every read and every poll, so a client trickling bytes in (each
        // read succeeding) is cut off as surely as one that stopped.
        if request_began.is_some_and(|t| t.elapsed() >= limits.request_timeout) {
            let msg = Reply::error("ERR Protocol error: request took too long to arrive");
            msg.encode(session.protocol, &mut out);
            let _ = send(shared, &mut socket, &mut out);
            return;
        }
        // Read more.
        let got = socket.read(&mut scratch);
        match got {
            Ok(0) => return, // the client left, or shutdown closed our read half
            Ok(n) => {
                input.extend_from_slice(scratch.get(..n).unwrap_or_default());
                Stats::add(&shared.stats.net_input_bytes, n as u64);
                last_input = Instant::now();
            }
            Err(e) => match e.kind() {
                ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted => {
                    if shared.stopping() {
                        return;
                    }
                    if idle.is_some_and(|t| last_input.elapsed() >= t) {
                        return;
                    }
                }
                _ => return,
            },
        }
    }
}

/// Commits the gathered writes (`command::SetBatch`) and encodes their replies; returns
/// how many.
fn settle(shared: &Shared, session: &mut Session, sets: &mut SetBatch, out: &mut Vec<u8>) -> usize {
    let protocol = session.protocol;
    let replies = sets.commit(&mut Ctx::new(shared, session));
    for reply in &replies {
        reply.encode(protocol, out);
    }
    replies.len()
}

/// Writes out the pending replies.
fn send(shared: &Shared, socket: &mut Stream, out: &mut Vec<u8>) -> std::io::Result<()> {
    if out.is_empty() {
        return Ok(());
    }
    let result = socket.write_all(out).and_then(|()| socket.flush());
    Stats::add(&shared.stats.net_output_bytes, out.len() as u64);
    out.clear();
    if out.capacity() > 4 * READ_LEN {
        out.shrink_to(READ_LEN);
    }
    result
}
