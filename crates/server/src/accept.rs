//! The acceptor: one thread with its own `mio::Poll` over every client listener (TCP,
//! TLS, Unix socket). It admits each new client into the registry (or tells it why not
//! and closes) and hands the socket to the event loops in turn, through each loop's
//! channel and `mio::Waker`.
//!
//! Invariant: a client is admitted only while the server is not stopping (the flag is
//! read under the registry's lock, `Shared::admit`), and the acceptor stops when woken
//! at shutdown; a loop exits only once the acceptor has stopped, so no admitted client is
//! lost on its way to a loop.

use std::io::{ErrorKind, Write};
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::time::Duration;

use mio::net::{TcpListener, UnixListener};
use mio::{Events, Interest, Poll, Token, Waker};

use crate::error::{Error, Result};
use crate::event_loop::Incoming;
use crate::shared::Shared;
use crate::stream::{Stream, TlsStream};

const TCP: Token = Token(0);
const TLS: Token = Token(1);
const UNIX: Token = Token(2);
/// The token of the acceptor's waker.
pub(crate) const WAKER: Token = Token(3);

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

/// Accepts clients until the server stops.
pub(crate) fn run(shared: &Shared, mut poll: Poll, listeners: &Listeners, loops: &[LoopDoor]) {
    let mut events = Events::with_capacity(64);
    let mut next = 0usize;
    // After an accept error (too many open files, ...) every listener is tried again soon:
    // its readiness was not drained.
    let mut retry = false;
    loop {
        let timeout = retry.then_some(Duration::from_millis(10));
        if let Err(e) = poll.poll(&mut events, timeout) {
            if e.kind() != ErrorKind::Interrupted {
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        if shared.stopping() {
            return;
        }
        retry = false;
        if let Some(l) = &listeners.tcp {
            retry |= drain(
                || l.accept(),
                |sock| Some(Stream::Tcp(sock)),
                shared,
                loops,
                &mut next,
            );
        }
        if let Some((l, config)) = &listeners.tls {
            let tls = |sock| {
                rustls::ServerConnection::new(Arc::clone(config))
                    .ok()
                    .map(|tls| Stream::Tls(Box::new(TlsStream { tls, sock })))
            };
            retry |= drain(|| l.accept(), tls, shared, loops, &mut next);
        }
        if let Some(l) = &listeners.unix {
            retry |= drain(
                || l.accept(),
                |sock| Some(Stream::Unix(sock)),
                shared,
                loops,
                &mut next,
            );
        }
    }
}

/// Accepts what one listener has; `true` if it must be tried again after an error.
fn drain<S, A>(
    mut accept: impl FnMut() -> std::io::Result<(S, A)>,
    wrap: impl Fn(S) -> Option<Stream>,
    shared: &Shared,
    loops: &[LoopDoor],
    next: &mut usize,
) -> bool {
    loop {
        match accept() {
            Ok((sock, _)) => {
                if let Some(stream) = wrap(sock) {
                    hand(shared, stream, loops, next);
                }
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => return false,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => return true,
        }
    }
}

/// Admits a client and gives it to the next loop, or tells it why not and closes.
fn hand(shared: &Shared, mut stream: Stream, loops: &[LoopDoor], next: &mut usize) {
    if let Stream::Tcp(s) = &stream {
        let _ = s.set_nodelay(true);
    }
    if let Stream::Tls(s) = &stream {
        let _ = s.sock.set_nodelay(true);
    }
    let id = match shared.admit(stream.peer()) {
        Ok(id) => id,
        Err(msg) => {
            // A fresh socket's buffer takes these few bytes; the TLS handshake has not
            // run, so a TLS client gets no message, only the close.
            let _ = match &mut stream {
                Stream::Tcp(s) => s.write(msg.as_bytes()),
                Stream::Unix(s) => s.write(msg.as_bytes()),
                Stream::Tls(_) => Ok(0),
            };
            return;
        }
    };
    let Some((door, waker)) = loops.get(*next % loops.len().max(1)) else {
        shared.leave(id);
        return;
    };
    *next = next.wrapping_add(1);
    if door.send(Incoming { id, stream }).is_err() {
        shared.leave(id);
        return;
    }
    let _ = waker.wake();
}
