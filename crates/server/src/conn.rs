//! One connection as a non-blocking state machine: its socket, input buffer, parser,
//! output buffer and session. Its event loop (`event_loop.rs`) calls [`Conn::advance`]
//! when it may have work, commits the loop's batch, then [`Conn::flush`]es it.
//!
//! Invariants:
//! 1. Requests run in the order received, one at a time. A plain SET or counter update
//!    goes into the loop's batch (`command::SetBatch`); its reply is encoded after the
//!    batch's commit returned, so a write's reply leaves only once the write is as
//!    durable as the server's mode promises. A request that is not batchable waits
//!    ([`Held`]) while the connection has operations in the uncommitted batch, so it sees
//!    them; it then runs inline, or on a worker (`worker.rs`) with the connection parked
//!    (no session, nothing read or run) until the answer comes back.
//! 2. Pipelining is bounded: one turn runs at most `max_pending_replies` requests, and no
//!    request runs nor input is read while `max_pending_reply_len` bytes of replies wait
//!    to be written (back-pressure on a client that does not read). Input is read only
//!    once every complete request in the buffer has run, so the buffer holds at most one
//!    incomplete request (bounded by `Limits`) plus [`READS_PER_TURN`] reads.
//! 3. A protocol error gets an `ERR Protocol error: ...` reply after the replies before
//!    it, then the connection closes; nothing else is affected.
//! 4. A client idle longer than the idle timeout, or taking longer than
//!    `request_timeout` to send one request, is disconnected; so is one that lets its
//!    replies wait unread for the write timeout ([`Conn::tick`]).
//! 5. A connection closes only with nothing in flight: not parked, no operation in the
//!    batch; then after its last reply is written (QUIT, a protocol error, end of input,
//!    shutdown), or at once if its socket failed or the shutdown's grace is over
//!    ([`Conn::abandon`]).
//! 6. A connection whose user was deleted (ACL DELUSER, ACL LOAD) runs nothing more: it
//!    closes before its next request, or within a tick if idle, after writing the
//!    replies it already has (`users/registry.rs`).

use std::io::ErrorKind;
use std::sync::mpsc::{SendError, Sender};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mio::Waker;

use crate::command::{self, Ctx, Offered, SetBatch};
use crate::resp::{Parser, Reply, Request};
use crate::session::Session;
use crate::shared::Shared;
use crate::stats::Stats;
use crate::stream::Stream;
use crate::worker::{Done, Job};

/// Bytes asked of the socket per read.
pub(crate) const READ_LEN: usize = 16 << 10;
/// Reads one connection may make per turn of its loop, so a busy client does not keep
/// the others waiting.
const READS_PER_TURN: usize = 4;
/// Longest replies may wait unread by the client (without an idle timeout).
const WRITE_TIMEOUT: Duration = Duration::from_secs(60);

/// A request that waits for the connection's batched writes to be committed.
enum Held {
    Request(Request),
    /// A protocol error: sent after the replies before it, then the connection closes.
    ProtocolError(Reply),
}

/// What the loop lends a connection for one turn.
pub(crate) struct Turn<'a> {
    pub(crate) shared: &'a Arc<Shared>,
    pub(crate) batch: &'a mut SetBatch,
    pub(crate) scratch: &'a mut [u8],
    pub(crate) jobs: &'a Sender<Job>,
    pub(crate) done: &'a Sender<Done>,
    pub(crate) waker: &'a Arc<Waker>,
}

/// One client connection.
pub(crate) struct Conn {
    pub(crate) id: u64,
    pub(crate) stream: Stream,
    /// `None` while a worker runs one of its requests (parked).
    session: Option<Box<Session>>,
    parser: Parser,
    input: Vec<u8>,
    /// Where the unparsed part of `input` starts.
    start: usize,
    out: Vec<u8>,
    /// Bytes of `out` already written.
    out_pos: usize,
    held: Option<Held>,
    /// Operations of this connection in the loop's uncommitted batch.
    uncommitted: usize,
    /// The socket may have input (edge-triggered readiness: set by an event, cleared by
    /// a read that would block).
    pub(crate) readable: bool,
    /// `input` may hold complete requests not yet run.
    more_input: bool,
    /// No more input will be read: end of input, or the server is stopping.
    pub(crate) input_closed: bool,
    /// Close once the replies are written.
    closing: bool,
    /// The socket failed: close as soon as nothing is in flight.
    broken: bool,
    last_input: Instant,
    request_began: Option<Instant>,
    /// Since when replies wait for the client to read.
    blocked_since: Option<Instant>,
    /// The loop iteration that last took this connection in (see `event_loop.rs`).
    pub(crate) mark: u64,
}

impl Conn {
    pub(crate) fn new(shared: &Shared, id: u64, stream: Stream) -> Conn {
        let session = Session::new(id, shared.default_user());
        Conn {
            id,
            stream,
            session: Some(Box::new(session)),
            parser: Parser::new(shared.config.limits),
            input: Vec::new(),
            start: 0,
            out: Vec::new(),
            out_pos: 0,
            held: None,
            uncommitted: 0,
            readable: true,
            more_input: false,
            input_closed: false,
            closing: false,
            broken: false,
            last_input: Instant::now(),
            request_began: None,
            blocked_since: None,
            mark: 0,
        }
    }

    fn out_pending(&self) -> usize {
        self.out.len().saturating_sub(self.out_pos)
    }

    /// Runs what the connection has: held and buffered requests, then reads and runs
    /// more, within the turn's bounds (module docs, 2).
    pub(crate) fn advance(&mut self, token: usize, turn: &mut Turn<'_>) {
        if self.session.is_none() || self.broken || self.closing {
            return;
        }
        let limits = turn.shared.config.limits;
        let mut ran = 0usize;
        let mut reads = 0usize;
        loop {
            if !self.run_buffered(token, turn, &mut ran) {
                return;
            }
            self.more_input = false;
            self.settle_input();
            if self.input_closed
                || !self.readable
                || reads >= READS_PER_TURN
                || self.out_pending() >= limits.max_pending_reply_len
            {
                return;
            }
            reads += 1;
            if !self.read(turn.shared, turn.scratch) {
                return;
            }
        }
    }

    /// Runs requests until the buffer has no complete one (`true`) or the connection
    /// must stop for this turn (`false`).
    fn run_buffered(&mut self, token: usize, turn: &mut Turn<'_>, ran: &mut usize) -> bool {
        let limits = turn.shared.config.limits;
        loop {
            if self.closing || self.session.is_none() {
                return false;
            }
            if *ran >= limits.max_pending_replies
                || self.out_pending() >= limits.max_pending_reply_len
            {
                self.more_input = true;
                return false;
            }
            let request = match self.held.take() {
                Some(Held::Request(r)) => r,
                Some(Held::ProtocolError(reply)) => {
                    if self.uncommitted > 0 {
                        self.held = Some(Held::ProtocolError(reply));
                    } else {
                        self.answer(reply);
                        self.closing = true;
                    }
                    return false;
                }
                None => {
                    let rest = self.input.get(self.start..).unwrap_or_default();
                    match self.parser.parse(rest) {
                        Ok((used, parsed)) => {
                            self.start += used;
                            match parsed {
                                Some(r) => r,
                                None => return true,
                            }
                        }
                        Err(e) => {
                            Stats::add(&turn.shared.stats.protocol_errors, 1);
                            self.held = Some(Held::ProtocolError(Reply::error(format!("ERR {e}"))));
                            continue;
                        }
                    }
                }
            };
            if turn.batch.full() {
                self.held = Some(Held::Request(request));
                return false;
            }
            let Some(session) = self.session.as_deref_mut() else {
                self.held = Some(Held::Request(request));
                return false;
            };
            if !session.refresh_user(&turn.shared.users) {
                self.closing = true; // its user was deleted (module docs, 6)
                return false;
            }
            let session = &*session;
            let request = match turn.batch.offer(token, session, request) {
                Offered::Taken(rest) => {
                    self.parser.recycle(rest);
                    self.uncommitted += 1;
                    *ran += 1;
                    continue;
                }
                Offered::Declined(request) => request,
            };
            if self.uncommitted > 0 {
                // It must see this connection's batched writes: after the commit.
                self.held = Some(Held::Request(request));
                return false;
            }
            *ran += 1;
            if command::may_block(session, &request) {
                self.hand_off(token, turn, request);
                continue; // parked: the loop above stops
            }
            let Some(session) = self.session.as_deref_mut() else {
                return false;
            };
            let reply = command::run(&mut Ctx::new(turn.shared, session), &request);
            self.answer(reply);
            self.parser.recycle(request);
        }
    }

    /// Parks the connection and gives `request` to a worker (runs it here if the pool is
    /// gone).
    fn hand_off(&mut self, token: usize, turn: &mut Turn<'_>, request: Request) {
        let Some(session) = self.session.take() else {
            return;
        };
        let job = Job {
            token,
            session,
            request,
            reply_to: turn.done.clone(),
            waker: Arc::clone(turn.waker),
        };
        if let Err(SendError(job)) = turn.jobs.send(job) {
            let Job {
                mut session,
                request,
                ..
            } = job;
            let reply = command::run(&mut Ctx::new(turn.shared, &mut session), &request);
            self.session = Some(session);
            self.answer(reply);
        }
    }

    /// A worker's answer: the session comes back with the reply.
    pub(crate) fn resume(&mut self, session: Box<Session>, reply: Reply) {
        self.session = Some(session);
        self.answer(reply);
    }

    /// The reply of one of this connection's batched operations.
    pub(crate) fn committed(&mut self, reply: Reply) {
        self.uncommitted = self.uncommitted.saturating_sub(1);
        self.answer(reply);
    }

    /// Encodes a reply, or closes after a SHUTDOWN (no reply) or QUIT (after the reply).
    fn answer(&mut self, reply: Reply) {
        let Some(session) = self.session.as_deref() else {
            return;
        };
        if session.silent {
            self.closing = true;
            return;
        }
        reply.encode(session.protocol, &mut self.out);
        if session.close {
            self.closing = true;
        }
    }

    /// Keeps the unparsed tail at the front and notes whether a request is under way.
    fn settle_input(&mut self) {
        if self.start >= self.input.len() {
            self.input.clear();
            self.start = 0;
        } else if self.start > 0 {
            self.input.drain(..self.start);
            self.start = 0;
        }
        if !self.parser.in_request() && self.input.is_empty() {
            self.request_began = None;
        } else if self.request_began.is_none() {
            self.request_began = Some(Instant::now());
        }
    }

    /// One read into the buffer; `true` if bytes came.
    fn read(&mut self, shared: &Shared, scratch: &mut [u8]) -> bool {
        match self.stream.read(scratch) {
            Ok(0) => {
                self.input_closed = true;
                false
            }
            Ok(n) => {
                self.input
                    .extend_from_slice(scratch.get(..n).unwrap_or_default());
                Stats::add(&shared.stats.net_input_bytes, n as u64);
                self.last_input = Instant::now();
                true
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                self.readable = false;
                false
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => false,
            Err(_) => {
                self.input_closed = true;
                self.broken = true;
                false
            }
        }
    }

    /// Writes what the socket takes of the pending replies (and of TLS's records).
    pub(crate) fn flush(&mut self, shared: &Shared) {
        if self.broken {
            return;
        }
        while self.out_pos < self.out.len() {
            match self
                .stream
                .write(self.out.get(self.out_pos..).unwrap_or_default())
            {
                Ok(0) => {
                    self.broken = true;
                    return;
                }
                Ok(n) => {
                    self.out_pos += n;
                    Stats::add(&shared.stats.net_output_bytes, n as u64);
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => {
                    self.broken = true;
                    return;
                }
            }
        }
        let tls_done = match self.stream.flush() {
            Ok(done) => done,
            Err(_) => {
                self.broken = true;
                return;
            }
        };
        if self.out_pos >= self.out.len() {
            self.out.clear();
            self.out_pos = 0;
            if self.out.capacity() > 4 * READ_LEN {
                self.out.shrink_to(READ_LEN);
            }
        }
        if self.out_pos < self.out.len() || !tls_done {
            self.blocked_since.get_or_insert_with(Instant::now);
        } else {
            self.blocked_since = None;
        }
    }

    /// The shutdown's grace is over: the connection runs, reads and writes nothing more,
    /// and closes as soon as nothing of it is in flight, with its replies unwritten.
    pub(crate) fn abandon(&mut self) {
        self.broken = true;
    }

    /// True if the connection has work that needs no new event: a held request, buffered
    /// requests, or input left to read. Not while its replies wait for the client to read
    /// (back-pressure): then the socket's writable event brings it back.
    pub(crate) fn wants_run(&self, shared: &Shared) -> bool {
        !self.broken
            && !self.closing
            && self.session.is_some()
            && self.out_pending() < shared.config.limits.max_pending_reply_len
            && (self.held.is_some() || self.more_input || (self.readable && !self.input_closed))
    }

    /// True if the connection may close now (module docs, 5).
    pub(crate) fn finished(&self) -> bool {
        if self.session.is_none() || self.uncommitted > 0 {
            return false;
        }
        if self.broken {
            return true;
        }
        let drained = self.out_pos >= self.out.len() && !self.stream.wants_write();
        drained && (self.closing || (self.input_closed && !self.more_input && self.held.is_none()))
    }

    /// Checks the timeouts (module docs, 4) and that its user still exists (6); `true` if
    /// the connection changed.
    pub(crate) fn tick(&mut self, shared: &Shared, now: Instant) -> bool {
        if self.broken || self.closing {
            return false;
        }
        let Some(session) = self.session.as_deref_mut() else {
            return false;
        };
        if !session.refresh_user(&shared.users) {
            self.closing = true; // its user was deleted (module docs, 6)
            return true;
        }
        let idle = shared.config.idle_timeout;
        let write_timeout = idle.unwrap_or(WRITE_TIMEOUT).max(Duration::from_secs(1));
        if self
            .blocked_since
            .is_some_and(|t| now.saturating_duration_since(t) >= write_timeout)
        {
            self.broken = true;
            return true;
        }
        if self.request_began.is_some_and(|t| {
            now.saturating_duration_since(t) >= shared.config.limits.request_timeout
        }) {
            self.answer(Reply::error(
                "ERR Protocol error: request took too long to arrive",
            ));
            self.closing = true;
            return true;
        }
        let quiet = self.held.is_none() && !self.more_input && self.out_pending() == 0;
        if quiet && idle.is_some_and(|t| now.saturating_duration_since(self.last_input) >= t) {
            self.broken = true; // nothing to write: close at once
            return true;
        }
        false
    }
}
