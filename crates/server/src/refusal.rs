//! Refusals: TLS clients the acceptor turns away (too many clients, or the server
//! stopping), kept just long enough to be told why over TLS, as a plain TCP or Unix
//! client is told on its socket.
//!
//! A plain client's message is one write on its fresh socket (`accept.rs`). A TLS client
//! can be told only after its handshake, which takes round trips, so the acceptor keeps
//! the refused session here and drives it with its own `mio::Poll`:
//! 1. the handshake (rustls's records in and out);
//! 2. the message (the same bytes a plain client gets), then TLS's `close_notify`;
//! 3. the socket's write side is shut, and input is read and dropped until the client
//!    closes: closing with input unread would reset the connection, and the client could
//!    lose the message before reading it.
//!
//! Invariants:
//! 1. A refusal is not a client: it is not in the registry (so it counts in neither
//!    `max_clients`, INFO's `connected_clients` nor CLIENT LIST) and runs no command.
//! 2. At most [`MAX_REFUSALS`] are in flight; one more is closed at once, with no
//!    message. Each holds one socket and one rustls session, so their memory is bounded.
//! 3. Each is closed [`REFUSAL_DEADLINE`] after it was refused at the latest, whatever
//!    its step, so a client that never handshakes or never reads holds a place only that
//!    long.
//! 4. Nothing waits: every socket operation is non-blocking, a refusal moves on only when
//!    the acceptor's poll reports its socket, and one report reads at most
//!    [`READS_PER_EVENT`] times. When the server stops, the acceptor goes on driving the
//!    refusals it holds for the shutdown's grace at most, then closes every one where it
//!    stands (`accept.rs`).

use std::io::{ErrorKind, Read, Write};
use std::net::Shutdown;
use std::time::{Duration, Instant};

use mio::{Interest, Registry, Token};

use crate::stream::TlsStream;

/// Most refused TLS clients being told at once.
pub(crate) const MAX_REFUSALS: usize = 64;
/// Longest a refused TLS client is kept (handshake, message and close together).
pub(crate) const REFUSAL_DEADLINE: Duration = Duration::from_secs(5);
/// Reads of one refusal's socket per poll report, so a client that keeps sending cannot
/// keep the acceptor to itself.
const READS_PER_EVENT: usize = 8;
/// Bytes asked of the socket per read.
const READ_LEN: usize = 4 << 10;

/// Where a refusal stands (module docs, 1-3).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Step {
    Handshake,
    Tell,
    Drain,
}

/// One refused TLS client.
struct Refusal {
    stream: Box<TlsStream>,
    message: &'static str,
    step: Step,
    deadline: Instant,
}

impl Refusal {
    /// Goes as far as the socket allows; `false` once the refusal is over (told, or the
    /// client left or failed).
    fn advance(&mut self, scratch: &mut [u8]) -> bool {
        let mut reads = 0usize;
        loop {
            match self.step {
                Step::Handshake => {
                    match self.stream.push() {
                        Ok(true) => {}
                        Ok(false) => return true, // the writable event brings it back
                        Err(_) => return false,
                    }
                    if !self.stream.tls.is_handshaking() {
                        let told = self.stream.tls.writer().write_all(self.message.as_bytes());
                        if told.is_err() {
                            return false;
                        }
                        self.stream.tls.send_close_notify();
                        self.step = Step::Tell;
                        continue;
                    }
                    if reads >= READS_PER_EVENT {
                        return true;
                    }
                    reads += 1;
                    match self.stream.tls.read_tls(&mut self.stream.sock) {
                        Ok(0) => return false,
                        Ok(_) => {
                            if self.stream.tls.process_new_packets().is_err() {
                                let _ = self.stream.push(); // the alert, if the socket takes it
                                return false;
                            }
                        }
                        Err(e) if e.kind() == ErrorKind::WouldBlock => return true,
                        Err(e) if e.kind() == ErrorKind::Interrupted => {}
                        Err(_) => return false,
                    }
                }
                Step::Tell => match self.stream.push() {
                    Ok(true) => {
                        let _ = self.stream.sock.shutdown(Shutdown::Write);
                        self.step = Step::Drain;
                    }
                    Ok(false) => return true,
                    Err(_) => return false,
                },
                Step::Drain => {
                    if reads >= READS_PER_EVENT {
                        return true;
                    }
                    reads += 1;
                    match self.stream.sock.read(scratch) {
                        Ok(0) => return false,
                        Ok(_) => {}
                        Err(e) if e.kind() == ErrorKind::WouldBlock => return true,
                        Err(e) if e.kind() == ErrorKind::Interrupted => {}
                        Err(_) => return false,
                    }
                }
            }
        }
    }
}

/// The refusals in flight, each registered with the acceptor's poll under the token of
/// its slot.
pub(crate) struct Refusals {
    /// The token of slot 0; slot `i` has token `first + i`.
    first: usize,
    slots: Vec<Option<Refusal>>,
    scratch: Vec<u8>,
}

impl Refusals {
    /// No refusal yet; they will use the tokens from `first` to `first + MAX_REFUSALS - 1`.
    pub(crate) fn new(first: Token) -> Refusals {
        Refusals {
            first: first.0,
            slots: Vec::new(),
            scratch: vec![0u8; READ_LEN],
        }
    }

    /// Takes in a refused TLS client, to tell it `message`; closes it at once instead if
    /// [`MAX_REFUSALS`] are in flight or its socket cannot be registered.
    pub(crate) fn offer(
        &mut self,
        registry: &Registry,
        mut stream: Box<TlsStream>,
        message: &'static str,
    ) {
        let i = match self.slots.iter().position(Option::is_none) {
            Some(i) => i,
            None if self.slots.len() < MAX_REFUSALS => {
                self.slots.push(None);
                self.slots.len() - 1
            }
            None => return, // dropped: closed
        };
        let token = Token(self.first + i);
        let interest = Interest::READABLE | Interest::WRITABLE;
        if registry
            .register(&mut stream.sock, token, interest)
            .is_err()
        {
            return;
        }
        if let Some(slot) = self.slots.get_mut(i) {
            *slot = Some(Refusal {
                stream,
                message,
                step: Step::Handshake,
                deadline: Instant::now() + REFUSAL_DEADLINE,
            });
        }
        self.ready(registry, token);
    }

    /// Drives the refusal `token` belongs to, if it is one's.
    pub(crate) fn ready(&mut self, registry: &Registry, token: Token) {
        let Some(i) = token.0.checked_sub(self.first) else {
            return;
        };
        let Some(slot) = self.slots.get_mut(i) else {
            return;
        };
        if slot.as_mut().is_some_and(|r| !r.advance(&mut self.scratch)) {
            close(registry, slot);
        }
    }

    /// Closes the refusals whose deadline has passed.
    pub(crate) fn expire(&mut self, registry: &Registry, now: Instant) {
        for slot in &mut self.slots {
            if slot.as_ref().is_some_and(|r| r.deadline <= now) {
                close(registry, slot);
            }
        }
    }

    /// The earliest deadline of the refusals in flight.
    pub(crate) fn next_deadline(&self) -> Option<Instant> {
        self.slots.iter().flatten().map(|r| r.deadline).min()
    }
}

/// Deregisters and closes the refusal in `slot`.
fn close(registry: &Registry, slot: &mut Option<Refusal>) {
    if let Some(mut r) = slot.take() {
        let _ = registry.deregister(&mut r.stream.sock);
    }
}
