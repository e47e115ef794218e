//! The server: listeners, connection threads and shutdown (the registry of connected
//! clients and what connections share are in `shared.rs`).
//!
//! Threading model: one acceptor thread per listener (TCP, TLS, Unix socket) and one thread
//! per connection, at most `max_clients` of them. Engine calls block (a `sync` write
//! waits for its fsync), and a thread per connection lets concurrent writers share one
//! fsync through the engine's group commit with no extra machinery; an event loop would
//! have to hand every engine call to a thread pool anyway. Threads have small stacks, and
//! idle connections cost a thread blocked in `read`.
//!
//! Shutdown (SIGTERM/SIGINT through [`ShutdownHandle`], or the SHUTDOWN command):
//! 1. the flag is set under the registry lock, so no connection is admitted afterwards;
//! 2. acceptors are woken (a connection to themselves) and stop;
//! 3. every client socket's read half is shut: a connection finishes the requests it has
//!    read (their replies are written), sees end of input and exits;
//! 4. [`Server::wait`] waits for the last connection, syncs the log and closes the store.
//!
//! So every reply a client received stands for a write as durable as the mode promises,
//! and a write that was running when shutdown began completes before the store closes.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use cairn::Db;
use parking_lot::{Condvar, Mutex};

use crate::command::COMMANDS;
use crate::config::{keyspace_name, Config};
use crate::cursor::Cursors;
use crate::error::{Error, Result};
use crate::shared::{Shared, Wake};
use crate::stats::Stats;
use crate::stream::Stream;
use crate::users::User;

/// Stack of a connection thread: requests are flat and parsing is iterative, so this is
/// ample for the engine's read path.
const CONNECTION_STACK: usize = 512 << 10;

/// Stops a running server from another thread (a signal handler's thread, a test).
/// It holds no reference to the store: once the server is gone, it does nothing.
#[derive(Clone)]
pub struct ShutdownHandle {
    shared: Weak<Shared>,
}

impl ShutdownHandle {
    /// Starts a graceful shutdown; [`Server::wait`] returns once it is complete.
    pub fn shutdown(&self) {
        if let Some(shared) = self.shared.upgrade() {
            shared.shutdown();
        }
    }
}

/// A running server.
pub struct Server {
    shared: Arc<Shared>,
    acceptors: Vec<JoinHandle<()>>,
    tcp_addr: Option<SocketAddr>,
    tls_addr: Option<SocketAddr>,
    metrics_addr: Option<SocketAddr>,
    unix_socket: Option<PathBuf>,
}

impl Server {
    /// Opens the databases' keyspaces (`db0`, `db1`, ...), binds the listeners and starts
    /// accepting clients.
    ///
    /// # Errors
    /// `Config` for a configuration with no listener or no database; `Io` if a listener
    /// cannot be bound; `Engine` if a keyspace cannot be opened.
    pub fn start(db: Db, config: Config) -> Result<Server> {
        if config.port.is_none() && config.unix_socket.is_none() && config.tls.is_none() {
            return Err(Error::Config(
                "nothing to listen on: give a TCP port, a TLS port or a Unix socket".into(),
            ));
        }
        if config.databases == 0 || config.databases > 1024 {
            return Err(Error::Config(
                "the number of databases must be between 1 and 1024".into(),
            ));
        }
        let keyspaces = (0..config.databases)
            .map(|i| db.keyspace(&keyspace_name(i)))
            .collect::<cairn::Result<Vec<_>>>()?;
        let mut wake = Vec::new();
        let tcp = match config.port {
            Some(port) => {
                let addr = SocketAddr::new(config.bind, port);
                let listener =
                    TcpListener::bind(addr).map_err(|e| Error::io(format!("bind {addr}"), e))?;
                let local = listener
                    .local_addr()
                    .map_err(|e| Error::io("local address", e))?;
                wake.push(Wake::Tcp(wake_addr(local)));
                Some((listener, local))
            }
            None => None,
        };
        let tls = match &config.tls {
            Some(t) => {
                let server_config = t.server_config()?;
                let addr = SocketAddr::new(config.bind, t.port);
                let listener = TcpListener::bind(addr)
                    .map_err(|e| Error::io(format!("bind TLS {addr}"), e))?;
                let local = listener
                    .local_addr()
                    .map_err(|e| Error::io("local address", e))?;
                wake.push(Wake::Tcp(wake_addr(local)));
                Some((listener, local, server_config))
            }
            None => None,
        };
        let unix = match &config.unix_socket {
            Some(path) => {
                if path.exists() && UnixStream::connect(path).is_err() {
                    let _ = std::fs::remove_file(path); // a stale socket of an earlier run
                }
                let listener = UnixListener::bind(path)
                    .map_err(|e| Error::io(format!("bind {}", path.display()), e))?;
                wake.push(Wake::Unix(path.clone()));
                Some(listener)
            }
            None => None,
        };
        let metrics = match config.metrics_addr {
            Some(addr) => {
                let listener = TcpListener::bind(addr)
                    .map_err(|e| Error::io(format!("bind metrics {addr}"), e))?;
                let local = listener
                    .local_addr()
                    .map_err(|e| Error::io("local address", e))?;
                wake.push(Wake::Tcp(wake_addr(local)));
                Some((listener, local))
            }
            None => None,
        };
        let metrics_addr = metrics.as_ref().map(|(_, a)| *a);
        let tcp_addr = tcp.as_ref().map(|(_, a)| *a);
        let tls_addr = tls.as_ref().map(|(_, a, _)| *a);
        let mut users = config.users.clone().unwrap_or_default();
        if let Some(password) = &config.requirepass {
            if users.find("default").is_none() {
                users.insert(User::new("default", password, false));
            }
        }
        let shared = Arc::new(Shared {
            db,
            keyspaces,
            users,
            cursors: Cursors::default(),
            stats: Stats::new(COMMANDS.len()),
            started: Instant::now(),
            tcp_port: tcp_addr.map_or(0, |a| a.port()),
            clients: Mutex::new(HashMap::new()),
            clients_gone: Condvar::new(),
            next_id: AtomicU64::new(0),
            stopping: AtomicBool::new(false),
            wake,
            disk: Mutex::new(None),
            config,
        });
        let mut acceptors = Vec::new();
        if let Some((listener, _)) = tcp {
            let s = Arc::clone(&shared);
            acceptors.push(spawn("cairn-accept-tcp", move || {
                for conn in listener.incoming() {
                    if s.stopping() {
                        break;
                    }
                    match conn {
                        Ok(sock) => {
                            let _ = sock.set_nodelay(true);
                            start_connection(&s, Stream::Tcp(sock));
                        }
                        Err(_) => std::thread::sleep(Duration::from_millis(10)), // EMFILE and the like
                    }
                }
            })?);
        }
        if let Some((listener, _, server_config)) = tls {
            let s = Arc::clone(&shared);
            acceptors.push(spawn("cairn-accept-tls", move || {
                for conn in listener.incoming() {
                    if s.stopping() {
                        break;
                    }
                    match conn {
                        Ok(sock) => {
                            let _ = sock.set_nodelay(true);
                            // The handshake runs on the connection's thread (first read).
                            if let Ok(tls) =
                                rustls::ServerConnection::new(Arc::clone(&server_config))
                            {
                                let stream = rustls::StreamOwned::new(tls, sock);
                                start_connection(&s, Stream::Tls(Box::new(stream)));
                            }
                        }
                        Err(_) => std::thread::sleep(Duration::from_millis(10)),
                    }
                }
            })?);
        }
        if let Some(listener) = unix {
            let s = Arc::clone(&shared);
            acceptors.push(spawn("cairn-accept-unix", move || {
                for conn in listener.incoming() {
                    if s.stopping() {
                        break;
                    }
                    match conn {
                        Ok(sock) => start_connection(&s, Stream::Unix(sock)),
                        Err(_) => std::thread::sleep(Duration::from_millis(10)),
                    }
                }
            })?);
        }
        if let Some((listener, _)) = metrics {
            let s = Arc::clone(&shared);
            acceptors.push(spawn("cairn-metrics", move || {
                crate::metrics::serve(&s, &listener)
            })?);
        }
        let unix_socket = shared.config.unix_socket.clone();
        Ok(Server {
            shared,
            acceptors,
            tcp_addr,
            tls_addr,
            metrics_addr,
            unix_socket,
        })
    }

    /// The TCP address listened on (with the port chosen when the configuration said 0).
    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.tcp_addr
    }

    /// The address of the TLS listener, if one was configured.
    pub fn tls_addr(&self) -> Option<SocketAddr> {
        self.tls_addr
    }

    /// The address of the metrics endpoint, if one was configured.
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics_addr
    }

    /// A handle that stops the server.
    pub fn shutdown_handle(&self) -> ShutdownHandle {
        ShutdownHandle {
            shared: Arc::downgrade(&self.shared),
        }
    }

    /// Blocks until the server has shut down (see the module docs), then syncs the log
    /// and closes the store.
    ///
    /// # Errors
    /// `Engine` if the final log sync or the close fails.
    pub fn wait(self) -> Result<()> {
        for a in self.acceptors {
            let _ = a.join();
        }
        {
            let mut clients = self.shared.clients.lock();
            while !clients.is_empty() {
                self.shared.clients_gone.wait(&mut clients);
            }
        }
        if let Some(path) = &self.unix_socket {
            let _ = std::fs::remove_file(path);
        }
        // Connection threads drop their reference just after leaving the registry; the
        // store's directory lock is released only when the last handle is gone.
        let mut shared = self.shared;
        let deadline = Instant::now() + Duration::from_secs(10);
        let shared = loop {
            match Arc::try_unwrap(shared) {
                Ok(s) => break Some(s),
                Err(s) if Instant::now() < deadline => {
                    shared = s;
                    std::thread::sleep(Duration::from_millis(1));
                }
                Err(_) => break None,
            }
        };
        let Some(Shared { db, keyspaces, .. }) = shared else {
            return Err(Error::Config(
                "a connection thread did not stop within 10 s".into(),
            ));
        };
        drop(keyspaces);
        db.flush_wal(true)?;
        db.close()?;
        Ok(())
    }
}

/// Where a wake-up connection goes: the listener's address, with loopback for "any".
fn wake_addr(local: SocketAddr) -> SocketAddr {
    match local.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => {
            SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), local.port())
        }
        IpAddr::V6(ip) if ip.is_unspecified() => {
            SocketAddr::new(IpAddr::V6(Ipv6Addr::LOCALHOST), local.port())
        }
        _ => local,
    }
}

fn spawn(name: &str, f: impl FnOnce() + Send + 'static) -> Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name(name.into())
        .spawn(f)
        .map_err(|e| Error::io(format!("start thread {name}"), e))
}

/// Admits a connection and starts its thread, or tells the client why not and closes.
fn start_connection(shared: &Arc<Shared>, mut socket: Stream) {
    use std::io::Write;
    let id = match shared.admit(&socket) {
        Ok(id) => id,
        Err(msg) => {
            let _ = socket.set_write_timeout(Some(Duration::from_secs(1)));
            let _ = socket.write_all(msg.as_bytes());
            return;
        }
    };
    let s = Arc::clone(shared);
    let started = std::thread::Builder::new()
        .name(format!("cairn-conn-{id}"))
        .stack_size(CONNECTION_STACK)
        .spawn(move || {
            crate::conn::serve(&s, socket, id);
            s.leave(id);
        });
    if started.is_err() {
        shared.leave(id);
    }
}
