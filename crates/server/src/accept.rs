//! The acceptor: one thread with its own `mio::Poll` over every client listener (TCP,
//! TLS, Unix socket). It admits each new client into the registry and hands the socket
//! to the event loops in turn, through each loop's channel and `mio::Waker`; or it tells
//! the client why not and closes: a plain client at once, a TLS client after its
//! handshake, which the acceptor drives on the same poll (`refusal.rs`).
//!
//! At shutdown, once woken, the acceptor:
//! 1. accepts what the listeners' backlogs hold, at most [`LAST_ACCEPTS`] per listener
//!    (so a flood of connections cannot hold it), and refuses each: the registry admits
//!    no one once the server is stopping, so each is told `-ERR Server is shutting down`,
//!    a TLS client after its handshake, like a client accepted in the same pass as the
//!    flag was set;
//! 2. closes the listeners: a client connecting later is refused by the kernel (the
//!    connection is reset), as is one that reached a backlog after that pass;
//! 3. drops its channels to the loops and wakes them, so they may stop;
//! 4. goes on driving the TLS refusals it holds (refused for `max_clients` before, or at
//!    step 1) until each is told and closed, its own deadline passes, or
//!    `Config::shutdown_grace` has passed since it saw the shutdown; then it closes
//!    the rest and ends. A refusal thus holds a shutdown up no longer than the grace a
//!    connected client's replies get, so the shutdown's bound is unchanged.
//!
//! Invariants: a client is admitted only while the server is not stopping (the flag is
//! read under the registry's lock, `Shared::admit`); a loop exits only once the
//! acceptor's channels are gone, which is after its last hand-off, so no admitted
//! client is lost on its way to a loop. The acceptor never waits on a client's socket:
//! every one is non-blocking, and a refused TLS client has a deadline.

use std::io::{ErrorKind, Write};
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mio::net::{TcpListener, UnixListener};
use mio::{Events, Interest, Poll, Registry, Token, Waker};

use crate::error::{Error, Result};
use crate::event_loop::Incoming;
use crate::refusal::Refusals;
use crate::shared::Shared;
use crate::stream::{Stream, TlsStream};

const TCP: Token = Token(0);
const TLS: Token = Token(1);
const UNIX: Token = Token(2);
/// The token of the acceptor's waker.
pub(crate) const WAKER: Token = Token(3);
/// The token of the first refusal's socket; the others follow (`refusal.rs`).
const FIRST_REFUSAL: Token = Token(4);
/// Most clients accepted from one listener's backlog at shutdown (module docs, 1).
const LAST_ACCEPTS: usize = 256;

/// The client listeners, in non-blocking mode.
#[derive(Default)]
pub(crate) struct Listeners {
    pub(crate) tcp: Option<TcpListener>,
    pub(crate) tls: Option<(TcpListener, Arc<rustls::ServerConfig>)>,
    pub(crate) unix: Option<UnixListener>,
}

/// Where admitted clients go: each loop's channel and waker.
pub(crate) type LoopDoor = (Sender<Incoming>, Arc<Waker>);

/// Registers the listeners with `poll`.
///
/// # Errors
/// `Io` if a listener cannot be registered.
pub(crate) fn register(poll: &Poll, listeners: &mut Listeners) -> Result<()> {
    let reg = poll.registry();
    let fail = |e| Error::io("register a listener", e);
    if let Some(l) = &mut listeners.tcp {
        reg.register(l, TCP, Interest::READABLE).map_err(fail)?;
    }
    if let Some((l, _)) = &mut listeners.tls {
        reg.register(l, TLS, Interest::READABLE).map_err(fail)?;
    }
    if let Some(l) = &mut listeners.unix {
        reg.register(l, UNIX, Interest::READABLE).map_err(fail)?;
    }
    Ok(())
}

/// The acceptor's state between polls.
struct Acceptor<'a> {
    shared: &'a Shared,
    loops: Vec<LoopDoor>,
    /// The loop the next client goes to (in turn).
    next: usize,
    refusals: Refusals,
}

/// Accepts clients until the server stops, then ends as the module docs say.
pub(crate) fn run(shared: &Shared, mut poll: Poll, listeners: Listeners, loops: Vec<LoopDoor>) {
    let mut events = Events::with_capacity(64);
    let mut acceptor = Acceptor {
        shared,
        loops,
        next: 0,
        refusals: Refusals::new(FIRST_REFUSAL),
    };
    // After an accept error (too many open files, ...) every listener is tried again soon:
    // its readiness was not drained.
    let mut retry = false;
    loop {
        let timeout = if retry {
            Some(Duration::from_millis(10))
        } else {
            let next_deadline = acceptor.refusals.next_deadline();
            next_deadline.map(|d| d.saturating_duration_since(Instant::now()))
        };
        if let Err(e) = poll.poll(&mut events, timeout) {
            if e.kind() != ErrorKind::Interrupted {
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        let stopping = shared.stopping();
        let registry = poll.registry();
        for event in events.iter() {
            acceptor.refusals.ready(registry, event.token());
        }
        acceptor.refusals.expire(registry, Instant::now());
        let limit = if stopping { LAST_ACCEPTS } else { usize::MAX };
        retry = acceptor.accept_all(registry, &listeners, limit);
        if stopping {
            break;
        }
    }
    drop(listeners);
    for (door, waker) in std::mem::take(&mut acceptor.loops) {
        drop(door);
        let _ = waker.wake();
    }
    let grace_end = Instant::now() + acceptor.shared.config.shutdown_grace;
    loop {
        let now = Instant::now();
        let registry = poll.registry();
        acceptor.refusals.expire(registry, now);
        let Some(deadline) = acceptor.refusals.next_deadline() else {
            return; // every refusal is over
        };
        if now >= grace_end {
            return; // the refusals left are closed with `acceptor`
        }
        let timeout = deadline.min(grace_end).saturating_duration_since(now);
        if let Err(e) = poll.poll(&mut events, Some(timeout)) {
            if e.kind() != ErrorKind::Interrupted {
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        let registry = poll.registry();
        for event in events.iter() {
            acceptor.refusals.ready(registry, event.token());
        }
    }
}

impl Acceptor<'_> {
    /// Accepts what every listener has, at most `limit` clients from each; `true` if one
    /// must be tried again after an error.
    fn accept_all(&mut self, registry: &Registry, listeners: &Listeners, limit: usize) -> bool {
        let mut retry = false;
        if let Some(l) = &listeners.tcp {
            let wrap = |sock| Some(Stream::Tcp(sock));
            retry |= self.drain(registry, || l.accept(), wrap, limit);
        }
        if let Some((l, config)) = &listeners.tls {
            let tls = |sock| {
                rustls::ServerConnection::new(Arc::clone(config))
                    .ok()
                    .map(|tls| Stream::Tls(Box::new(TlsStream { tls, sock })))
            };
            retry |= self.drain(registry, || l.accept(), tls, limit);
        }
        if let Some(l) = &listeners.unix {
            let wrap = |sock| Some(Stream::Unix(sock));
            retry |= self.drain(registry, || l.accept(), wrap, limit);
        }
        retry
    }

    /// Accepts what one listener has, at most `limit` clients; `true` if it must be
    /// tried again after an error.
    fn drain<S, A>(
        &mut self,
        registry: &Registry,
        mut accept: impl FnMut() -> std::io::Result<(S, A)>,
        wrap: impl Fn(S) -> Option<Stream>,
        limit: usize,
    ) -> bool {
        for _ in 0..limit {
            match accept() {
                Ok((sock, _)) => {
                    if let Some(stream) = wrap(sock) {
                        self.hand(registry, stream);
                    }
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => return false,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => return true,
            }
        }
        false
    }

    /// Admits a client and gives it to the next loop, or tells it why not and closes.
    fn hand(&mut self, registry: &Registry, stream: Stream) {
        if let Stream::Tcp(s) = &stream {
            let _ = s.set_nodelay(true);
        }
        if let Stream::Tls(s) = &stream {
            let _ = s.sock.set_nodelay(true);
        }
        let id = match self.shared.admit(stream.peer()) {
            Ok(id) => id,
            Err(msg) => {
                // A fresh socket's buffer takes these few bytes at once; a TLS client is
                // told after its handshake (`refusal.rs`).
                match stream {
                    Stream::Tcp(mut s) => {
                        let _ = s.write(msg.as_bytes());
                    }
                    Stream::Unix(mut s) => {
                        let _ = s.write(msg.as_bytes());
                    }
                    Stream::Tls(s) => self.refusals.offer(registry, s, msg),
                }
                return;
            }
        };
        let Some((door, waker)) = self.loops.get(self.next % self.loops.len().max(1)) else {
            self.shared.leave(id);
            return;
        };
        self.next = self.next.wrapping_add(1);
        if door.send(Incoming { id, stream }).is_err() {
            self.shared.leave(id);
            return;
        }
        let _ = waker.wake();
    }
}
