//! A client's socket, TCP, TLS over TCP or Unix, behind one non-blocking type: reads and
//! writes of plaintext that return `WouldBlock` instead of waiting, and the
//! `mio::event::Source` an event loop registers.
//!
//! TLS (rustls) is driven by hand: a read pulls records from the socket
//! (`read_tls`), decrypts them (`process_new_packets`) and returns plaintext; a write
//! hands plaintext to rustls and pushes the records it makes to the socket
//! (`write_tls`). Records rustls still holds when the socket is full (a handshake
//! message, the tail of a reply) are pushed by [`Stream::flush`], which the loop calls
//! whenever [`Stream::wants_write`] says so. An end of input without `close_notify` is
//! an error, which closes the connection just the same.

use std::io::{self, ErrorKind, Read, Write};

use mio::net::{TcpStream, UnixStream};

/// A connected client socket, in non-blocking mode.
pub(crate) enum Stream {
    Tcp(TcpStream),
    Tls(Box<TlsStream>),
    Unix(UnixStream),
}

/// A TLS session over a TCP socket.
pub(crate) struct TlsStream {
    pub(crate) tls: rustls::ServerConnection,
    pub(crate) sock: TcpStream,
}

impl TlsStream {
    /// Pushes the records rustls holds to the socket; `Ok(false)` if the socket is full.
    pub(crate) fn push(&mut self) -> io::Result<bool> {
        while self.tls.wants_write() {
            match self.tls.write_tls(&mut self.sock) {
                Ok(0) => return Err(ErrorKind::WriteZero.into()),
                Ok(_) => {}
                Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(false),
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(true)
    }
}

impl Stream {
    /// What the event loop registers.
    pub(crate) fn source(&mut self) -> &mut dyn mio::event::Source {
        match self {
            Stream::Tcp(s) => s,
            Stream::Tls(s) => &mut s.sock,
            Stream::Unix(s) => s,
        }
    }

    /// The peer's address as INFO and CLIENT LIST show it.
    pub(crate) fn peer(&self) -> String {
        let tcp = |s: &TcpStream| s.peer_addr().map(|a| a.to_string()).unwrap_or_default();
        match self {
            Stream::Tcp(s) => tcp(s),
            Stream::Tls(s) => tcp(&s.sock),
            Stream::Unix(_) => "unix".to_string(),
        }
    }

    /// Reads plaintext: `Ok(0)` at end of input, `WouldBlock` when nothing more is there
    /// now (the socket was drained, so the loop hears of the next bytes).
    pub(crate) fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read(buf),
            Stream::Unix(s) => s.read(buf),
            Stream::Tls(s) => loop {
                match s.tls.reader().read(buf) {
                    Ok(n) => return Ok(n),
                    Err(e) if e.kind() == ErrorKind::WouldBlock => {}
                    Err(e) => return Err(e),
                }
                match s.tls.read_tls(&mut s.sock) {
                    Ok(0) => return Ok(0),
                    Ok(_) => {
                        if let Err(e) = s.tls.process_new_packets() {
                            let _ = s.push(); // the alert, if the socket takes it
                            return Err(io::Error::new(ErrorKind::InvalidData, e));
                        }
                        // Handshake messages; what the socket does not take now is
                        // pushed by `flush`.
                        s.push()?;
                    }
                    Err(e) => return Err(e),
                }
            },
        }
    }

    /// Writes plaintext; may take only part of `buf`, and returns `WouldBlock` when it
    /// can take nothing now.
    pub(crate) fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.write(buf),
            Stream::Unix(s) => s.write(buf),
            Stream::Tls(s) => loop {
                let n = s.tls.writer().write(buf)?;
                if n > 0 || buf.is_empty() {
                    s.push()?;
                    return Ok(n);
                }
                // rustls's buffer is full: make room, or wait for the socket.
                if !s.push()? {
                    return Err(ErrorKind::WouldBlock.into());
                }
            },
        }
    }

    /// True if TLS records wait to be pushed to the socket.
    pub(crate) fn wants_write(&self) -> bool {
        match self {
            Stream::Tls(s) => s.tls.wants_write(),
            _ => false,
        }
    }

    /// Pushes what TLS holds; `Ok(false)` if the socket is full.
    pub(crate) fn flush(&mut self) -> io::Result<bool> {
        match self {
            Stream::Tls(s) => s.push(),
            _ => Ok(true),
        }
    }
}
