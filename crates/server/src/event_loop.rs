//! One event loop: a thread with its own `mio::Poll` serving the connections the
//! acceptor hands it, and committing the writes of all of them together.
//!
//! One iteration:
//! 1. wait for events (no wait while a connection still has work), take in new
//!    connections and the answers of workers (both through channels, with a
//!    `mio::Waker`);
//! 2. every connection that may have work runs ([`Conn::advance`]): reads, parses, runs
//!    reads and cheap commands inline, hands slow ones to a worker, and puts plain SETs
//!    and counter updates into the loop's one batch (`command::SetBatch`);
//! 3. the replies made so far are written (none depends on the batch);
//! 4. the batch is committed, once (one fsync under `sync`), and each batched request's
//!    reply is encoded for its connection;
//! 5. the replies are written, finished connections close, and those with work left are
//!    taken into the next iteration.
//!
//! Invariants: a connection lives in one loop, and only that loop's thread touches it
//! (a worker holds only its session, while it is parked); a connection's slot is freed
//! only when it closes, which it does only with nothing in flight (`conn.rs`), so a
//! worker's answer and a batched reply always reach the connection they belong to. At
//! shutdown the loop reads no more input, finishes what it holds and writes the replies
//! for `Config::shutdown_grace` (1 s by default) at most; then it closes every connection as soon as nothing of
//! it is in flight (a parked one once its worker answers), whatever it has left unwritten,
//! so a client that does not read holds the shutdown up that long only. It exits once it
//! has no connection left and the acceptor has stopped.

use std::sync::mpsc::{self, Receiver, Sender, TryRecvError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mio::{Events, Interest, Poll, Token, Waker};

use crate::command::SetBatch;
use crate::conn::{Conn, Turn, READ_LEN};
use crate::shared::Shared;
use crate::stream::Stream;
use crate::worker::{Done, Job};

/// The token of a loop's waker; connections use their slot's index.
pub(crate) const WAKER: Token = Token(usize::MAX);

/// How often timeouts are checked, and the longest a loop sleeps.
const TICK: Duration = Duration::from_millis(100);
/// A connection the acceptor admitted, on its way to a loop.
pub(crate) struct Incoming {
    pub(crate) id: u64,
    pub(crate) stream: Stream,
}

/// What a loop thread starts with.
pub(crate) struct Loop {
    pub(crate) poll: Poll,
    pub(crate) waker: Arc<Waker>,
    pub(crate) incoming: Receiver<Incoming>,
    pub(crate) jobs: Sender<Job>,
}

/// The connections of one loop, by slot.
struct Slots {
    conns: Vec<Option<Conn>>,
    free: Vec<usize>,
    live: usize,
}

impl Slots {
    fn get(&mut self, i: usize) -> Option<&mut Conn> {
        self.conns.get_mut(i).and_then(Option::as_mut)
    }

    /// The slot the next [`Slots::insert`] takes.
    fn vacant(&self) -> usize {
        self.free.last().copied().unwrap_or(self.conns.len())
    }

    fn insert(&mut self, conn: Conn) -> usize {
        self.live += 1;
        match self.free.pop() {
            Some(i) => {
                if let Some(slot) = self.conns.get_mut(i) {
                    *slot = Some(conn);
                }
                i
            }
            None => {
                self.conns.push(Some(conn));
                self.conns.len() - 1
            }
        }
    }

    fn remove(&mut self, i: usize) -> Option<Conn> {
        let conn = self.conns.get_mut(i).and_then(Option::take)?;
        self.free.push(i);
        self.live -= 1;
        Some(conn)
    }
}

/// Takes connection `i` into this iteration's work list once.
fn take_in(slots: &mut Slots, i: usize, iteration: u64, work: &mut Vec<usize>) {
    if let Some(c) = slots.get(i) {
        if c.mark != iteration {
            c.mark = iteration;
            work.push(i);
        }
    }
}

/// Runs the loop until shutdown (module docs).
pub(crate) fn run(shared: &Arc<Shared>, lp: Loop) {
    let Loop {
        mut poll,
        waker,
        incoming,
        jobs,
    } = lp;
    let (done_tx, done_rx) = mpsc::channel::<Done>();
    let mut slots = Slots {
        conns: Vec::new(),
        free: Vec::new(),
        live: 0,
    };
    let mut batch = SetBatch::default();
    let mut scratch = vec![0u8; READ_LEN];
    let mut events = Events::with_capacity(1024);
    let mut ready: Vec<usize> = Vec::new();
    let mut work: Vec<usize> = Vec::new();
    let mut iteration: u64 = 0;
    let mut stopping = false;
    // When the shutdown's grace ends (set when the loop sees the shutdown).
    let mut grace_end: Option<Instant> = None;
    let mut acceptor_gone = false;
    let mut last_tick = Instant::now();
    loop {
        iteration += 1;
        let timeout = if ready.is_empty() {
            TICK
        } else {
            Duration::ZERO
        };
        if let Err(e) = poll.poll(&mut events, Some(timeout)) {
            if e.kind() != std::io::ErrorKind::Interrupted {
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        work.clear();
        for i in std::mem::take(&mut ready) {
            take_in(&mut slots, i, iteration, &mut work);
        }
        for event in events.iter() {
            if event.token() == WAKER {
                continue; // the channels are read below
            }
            let i = event.token().0;
            if let Some(c) = slots.get(i) {
                if event.is_readable() || event.is_read_closed() || event.is_error() {
                    c.readable = true;
                }
            }
            take_in(&mut slots, i, iteration, &mut work);
        }
        loop {
            match incoming.try_recv() {
                Ok(Incoming { id, mut stream }) => {
                    let i = slots.vacant();
                    if poll
                        .registry()
                        .register(
                            stream.source(),
                            Token(i),
                            Interest::READABLE | Interest::WRITABLE,
                        )
                        .is_err()
                    {
                        shared.leave(id);
                        continue;
                    }
                    let mut conn = Conn::new(shared, id, stream);
                    conn.input_closed = stopping;
                    let slot = slots.insert(conn);
                    take_in(&mut slots, slot, iteration, &mut work);
                }
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => {
                    acceptor_gone = true;
                    break;
                }
            }
        }
        while let Ok(Done {
            token,
            session,
            reply,
        }) = done_rx.try_recv()
        {
            if let Some(c) = slots.get(token) {
                c.resume(session, reply);
            }
            take_in(&mut slots, token, iteration, &mut work);
        }
        if !stopping && shared.stopping() {
            stopping = true;
            grace_end = Some(Instant::now() + shared.config.shutdown_grace);
            for i in 0..slots.conns.len() {
                if let Some(c) = slots.get(i) {
                    c.input_closed = true;
                }
                take_in(&mut slots, i, iteration, &mut work);
            }
        }
        let now = Instant::now();
        if now.saturating_duration_since(last_tick) >= TICK {
            last_tick = now;
            for i in 0..slots.conns.len() {
                if slots.get(i).is_some_and(|c| c.tick(shared, now)) {
                    take_in(&mut slots, i, iteration, &mut work);
                }
            }
        }
        if grace_end.is_some_and(|end| now >= end) {
            for i in 0..slots.conns.len() {
                if let Some(c) = slots.get(i) {
                    c.abandon();
                }
                take_in(&mut slots, i, iteration, &mut work);
            }
        }

        let mut turn = Turn {
            shared,
            batch: &mut batch,
            scratch: &mut scratch,
            jobs: &jobs,
            done: &done_tx,
            waker: &waker,
        };
        for &i in &work {
            if let Some(c) = slots.get(i) {
                c.advance(i, &mut turn);
            }
        }
        // Replies that do not wait for the batch go out before its fsync.
        for &i in &work {
            if let Some(c) = slots.get(i) {
                c.flush(shared);
            }
        }
        for (owner, reply) in batch.commit(shared) {
            if let Some(c) = slots.get(owner) {
                c.committed(reply);
            }
        }
        for &i in &work {
            let Some(c) = slots.get(i) else { continue };
            c.flush(shared);
            if c.finished() {
                if let Some(mut conn) = slots.remove(i) {
                    let _ = poll.registry().deregister(conn.stream.source());
                    shared.leave(conn.id);
                }
            } else if c.wants_run(shared) {
                ready.push(i);
            }
        }
        if stopping && acceptor_gone && slots.live == 0 {
            return;
        }
    }
}
