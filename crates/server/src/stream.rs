//! A client's socket, TCP, TLS over TCP or Unix, behind one type: reads, writes,
//! timeouts, and the half-close that wakes a blocked reader at shutdown.
//!
//! TLS (rustls) runs on the connection's own thread: the handshake happens on the first
//! read, timeouts are the TCP socket's, and [`Write::flush`] must follow a write, since
//! rustls may keep encrypted bytes buffered until then. A half-close of the TCP socket
//! ends a TLS reader as it ends a plain one (an end of input without `close_notify` is an
//! error, which closes the connection just the same).

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::os::unix::net::UnixStream;
use std::time::Duration;

/// A connected client socket.
#[derive(Debug)]
pub(crate) enum Stream {
    Tcp(TcpStream),
    Tls(Box<rustls::StreamOwned<rustls::ServerConnection, TcpStream>>),
    Unix(UnixStream),
}

impl Stream {
    pub(crate) fn try_clone(&self) -> io::Result<Stream> {
        Ok(match self {
            Stream::Tcp(s) => Stream::Tcp(s.try_clone()?),
            // A handle on the socket below, for shutdown: it never carries TLS records.
            Stream::Tls(s) => Stream::Tcp(s.sock.try_clone()?),
            Stream::Unix(s) => Stream::Unix(s.try_clone()?),
        })
    }

    pub(crate) fn set_read_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.set_read_timeout(t),
            Stream::Tls(s) => s.sock.set_read_timeout(t),
            Stream::Unix(s) => s.set_read_timeout(t),
        }
    }

    pub(crate) fn set_write_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.set_write_timeout(t),
            Stream::Tls(s) => s.sock.set_write_timeout(t),
            Stream::Unix(s) => s.set_write_timeout(t),
        }
    }

    pub(crate) fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.shutdown(how),
            Stream::Tls(s) => s.sock.shutdown(how),
            Stream::Unix(s) => s.shutdown(how),
        }
    }

    /// The peer's address as INFO and CLIENT LIST show it.
    pub(crate) fn peer(&self) -> String {
        match self {
            Stream::Tcp(s) => s.peer_addr().map(|a| a.to_string()).unwrap_or_default(),
            Stream::Tls(s) => s
                .sock
                .peer_addr()
                .map(|a| a.to_string())
                .unwrap_or_default(),
            Stream::Unix(_) => "unix".to_string(),
        }
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read(buf),
            Stream::Tls(s) => s.read(buf),
            Stream::Unix(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.write(buf),
            Stream::Tls(s) => s.write(buf),
            Stream::Unix(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.flush(),
            Stream::Tls(s) => s.flush(),
            Stream::Unix(s) => s.flush(),
        }
    }
}
