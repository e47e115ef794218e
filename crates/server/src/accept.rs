//! The acceptor: one thread with its own `mio::Poll` over every client listener (TCP,
//! TLS, Unix socket). It admits each new client into the registry and hands the socket
//! to the event loops in turn, through each loop's channel and `mio::Waker`; or it tells
//! the client why not and closes: a plain client at once, a TLS client after its
//! handshake, which the acceptor drives on the same poll (`refusal.rs`).
//!
//! Invariants: a client is admitted only while the server is not stopping (the flag is
//! read under the registry's lock, `Shared::admit`), and the acceptor stops when woken
//! at shutdown; a loop exits only once the acceptor has stopped, so no admitted client is
//! lost on its way to a loop. The acceptor never waits on a client's socket: every one
//! is non-blocking, and a refused TLS client has a deadline. A TLS client refused because
//! the server is stopping gets only the close: the acceptor ends with the refusals it
//! holds.

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
    loops: &'a [LoopDoor],
    /// The loop the next client goes to (in turn).
    next: usize,
    refusals: Refusals,
}

/// Accepts clients until the server stops.
pub(crate) fn run(shared: &Shared, mut poll: Poll, listeners: &Listeners, loops: &[LoopDoor]) {
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
        if shared.stopping() {
            return; // the refusals in flight are closed with `acceptor`
        }
        let registry = poll.registry();
        for event in events.iter() {
            acceptor.refusals.ready(registry, event.token());
        }
        acceptor.refusals.expire(registry, Instant::now());
        retry = false;
        if let Some(l) = &listeners.tcp {
            retry |= acceptor.drain(registry, || l.accept(), |sock| Some(Stream::Tcp(sock)));
        }
        if let Some((l, config)) = &listeners.tls {
            let tls = |sock| {
                rustls::ServerConnection::new(Arc::clone(config))
                    .ok()
                    .map(|tls| Stream::Tls(Box::new(TlsStream { tls, sock })))
            };
            retry |= acceptor.drain(registry, || l.accept(), tls);
        }
        if let Some(l) = &listeners.unix {
            retry |= acceptor.drain(registry, || l.accept(), |sock| Some(Stream::Unix(sock)));
        }
    }
}

impl Acceptor<'_> {
    /// Accepts what one listener has; `true` if it must be tried again after an error.
    fn drain<S, A>(
        &mut self,
        registry: &Registry,
        mut accept: impl FnMut() -> std::io::Result<(S, A)>,
        wrap: impl Fn(S) -> Option<Stream>,
    ) -> bool {
        loop {
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
