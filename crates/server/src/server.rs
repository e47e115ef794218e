//! The server: listeners, event loops, workers and shutdown (the registry of connected
//! clients and what connections share are in `shared.rs`).
//!
//! Threading model: one acceptor thread (`accept.rs`) over every client listener hands
//! each admitted client to one of N event loops (`event_loop.rs`, N = `Config::threads`,
//! one per CPU but one by default) in turn. A loop serves its clients as non-blocking
//! state machines (`conn.rs`) with one `mio::Poll`, and in each iteration gathers the
//! plain SETs and counter updates of all its ready clients into one engine batch,
//! committed once (one fsync under `sync`, as Redis's `beforeSleep` AOF fsync) before
//! their replies are encoded. Requests that may keep a thread waiting (a write that is not batched, which
//! is its own commit; EXEC, SCAN, FLUSHDB, INFO, SHUTDOWN, ...) run on a small pool of
//! workers (`worker.rs`, [`WORKERS_PER_LOOP`] per loop), with the client parked, so one
//! client's DEL under `sync` costs the others of its loop no fsync wait; the engine's
//! group commit shares fsyncs among loops and workers. Reads and cheap commands run on
//! the loop. Metrics are served by a thread of their own (`metrics.rs`). The pool was
//! chosen over running those writes inline by measurement (docs/BENCHMARKS.md): 50
//! clients of SETNX under `sync` ran at 11-18k ops/s on workers against 0.7-1.0k inline
//! (each an fsync with the loop waiting), and at 32k against 21-24k under `buffered`,
//! so the rule is the same in every durability mode.
//!
//! Why: with a thread per connection, each unpipelined `sync` write cost about four
//! context switches (a blocking `recv`, a wait in the engine's commit queue, the
//! leader's wake-up), 42-49 µs of server CPU against Redis's 19-20 µs. A loop's batch
//! makes the writes of one iteration one commit on the loop's own thread, with no wait
//! in the commit queue behind other writers.
//!
//! Shutdown (SIGTERM/SIGINT through [`ShutdownHandle`], or the SHUTDOWN command):
//! 1. the flag is set under the registry lock, so no client is admitted afterwards;
//! 2. the acceptor and every loop are woken (`mio::Waker`); the acceptor refuses what
//!    the listeners' backlogs hold, closes them, lets the loops go, and tells the TLS
//!    clients it refused why until the grace of 3. ends at the latest (`accept.rs`);
//! 3. each loop reads no more input, runs the complete requests it has read (waiting
//!    for its workers' answers), commits, writes the replies and closes each client,
//!    then stops once it has none left; replies still unwritten after
//!    `Config::shutdown_grace` (1 s by default, in all; a client that does not read) are
//!    dropped with their connection;
//! 4. [`Server::wait`] joins the loops and the workers, syncs the log and closes the
//!    store.
//!
//! So every reply a client received stands for a write as durable as the mode promises,
//! a write that was running when shutdown began completes before the store closes, and
//! no client holds the shutdown up longer than the grace (a request already on a worker
//! still finishes first).

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{mpsc, Arc, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use cairn::Db;
use mio::{Poll, Waker};
use parking_lot::Mutex;

use crate::accept::{self, Listeners, LoopDoor};
use crate::command::COMMANDS;
use crate::config::{keyspace_name, Config};
use crate::cursor::Cursors;
use crate::error::{Error, Result};
use crate::event_loop::{self, Loop};
use crate::shared::Shared;
use crate::stats::Stats;
use crate::users::{AclLog, Registry};

/// Workers started per event loop (`worker.rs`): enough that a few slow requests do not
/// queue behind each other, few enough to stay a small pool.
pub const WORKERS_PER_LOOP: usize = 4;

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
    /// The acceptor, the loops, the workers and the metrics thread, joined in this order.
    threads: Vec<JoinHandle<()>>,
    tcp_addr: Option<SocketAddr>,
    tls_addr: Option<SocketAddr>,
    metrics_addr: Option<SocketAddr>,
    unix_socket: Option<PathBuf>,
}

/// A bound listener in non-blocking mode and its address.
fn bind(addr: SocketAddr, what: &str) -> Result<(mio::net::TcpListener, SocketAddr)> {
    let listener =
        TcpListener::bind(addr).map_err(|e| Error::io(format!("bind {what}{addr}"), e))?;
    let local = listener
        .local_addr()
        .map_err(|e| Error::io("local address", e))?;
    listener
        .set_nonblocking(true)
        .map_err(|e| Error::io("non-blocking listener", e))?;
    Ok((mio::net::TcpListener::from_std(listener), local))
}

impl Server {
    /// Opens the databases' keyspaces (`db0`, `db1`, ...), binds the listeners and starts
    /// accepting clients.
    ///
    /// # Errors
    /// `Config` for a configuration with no listener or no database; `Io` if a listener
    /// cannot be bound or a thread started; `Engine` if a keyspace cannot be opened.
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
        let mut listeners = Listeners::default();
        let mut tcp_addr = None;
        if let Some(port) = config.port {
            let (l, local) = bind(SocketAddr::new(config.bind, port), "")?;
            listeners.tcp = Some(l);
            tcp_addr = Some(local);
        }
        let mut tls_addr = None;
        if let Some(t) = &config.tls {
            let server_config = t.server_config()?;
            let (l, local) = bind(SocketAddr::new(config.bind, t.port), "TLS ")?;
            listeners.tls = Some((l, server_config));
            tls_addr = Some(local);
        }
        if let Some(path) = &config.unix_socket {
            if path.exists() && UnixStream::connect(path).is_err() {
                let _ = std::fs::remove_file(path); // a stale socket of an earlier run
            }
            let listener = UnixListener::bind(path)
                .map_err(|e| Error::io(format!("bind {}", path.display()), e))?;
            listener
                .set_nonblocking(true)
                .map_err(|e| Error::io("non-blocking listener", e))?;
            listeners.unix = Some(mio::net::UnixListener::from_std(listener));
        }
        let metrics = match config.metrics_addr {
            Some(addr) => {
                let listener = TcpListener::bind(addr)
                    .map_err(|e| Error::io(format!("bind metrics {addr}"), e))?;
                let local = listener
                    .local_addr()
                    .map_err(|e| Error::io("local address", e))?;
                Some((listener, local))
            }
            None => None,
        };
        let metrics_addr = metrics.as_ref().map(|(_, a)| *a);

        let threads = match config.threads {
            0 => default_loops(std::thread::available_parallelism().map_or(1, usize::from)),
            n => n,
        };
        let poll_err = |e| Error::io("create an event loop", e);
        let accept_poll = Poll::new().map_err(poll_err)?;
        accept::register(&accept_poll, &mut listeners)?;
        let accept_waker =
            Arc::new(Waker::new(accept_poll.registry(), accept::WAKER).map_err(poll_err)?);
        let (jobs_tx, jobs_rx) = mpsc::channel();
        let mut loops = Vec::with_capacity(threads);
        let mut doors: Vec<LoopDoor> = Vec::with_capacity(threads);
        let mut wakers = vec![Arc::clone(&accept_waker)];
        for _ in 0..threads {
            let poll = Poll::new().map_err(poll_err)?;
            let waker = Arc::new(Waker::new(poll.registry(), event_loop::WAKER).map_err(poll_err)?);
            let (tx, rx) = mpsc::channel();
            doors.push((tx, Arc::clone(&waker)));
            wakers.push(Arc::clone(&waker));
            loops.push(Loop {
                poll,
                waker,
                incoming: rx,
                jobs: jobs_tx.clone(),
            });
        }
        drop(jobs_tx);

        let open = config.users.is_none();
        let users = config.users.clone().unwrap_or_default();
        let users = Registry::new(users.with_default(config.requirepass.as_deref(), open));
        let shared = Arc::new(Shared {
            db,
            keyspaces,
            users,
            acl_log: AclLog::default(),
            cursors: Cursors::default(),
            stats: Stats::new(COMMANDS.len()),
            started: Instant::now(),
            tcp_port: tcp_addr.map_or(0, |a| a.port()),
            clients: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(0),
            stopping: AtomicBool::new(false),
            wakers,
            metrics_wake: metrics_addr.map(wake_addr),
            disk: Mutex::new(None),
            config,
        });
        let started = start_threads(
            &shared,
            accept_poll,
            listeners,
            doors,
            loops,
            jobs_rx,
            metrics,
        );
        let threads = match started {
            Ok(t) => t,
            Err(e) => {
                shared.shutdown();
                return Err(e);
            }
        };
        let unix_socket = shared.config.unix_socket.clone();
        Ok(Server {
            shared,
            threads,
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
        for t in self.threads {
            let _ = t.join();
        }
        if let Some(path) = &self.unix_socket {
            let _ = std::fs::remove_file(path);
        }
        // Every thread holding a reference has been joined; the store's directory lock
        // is released only when the last handle is gone.
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
                "a server thread did not stop within 10 s".into(),
            ));
        };
        drop(keyspaces);
        db.flush_wal(true)?;
        db.close()?;
        Ok(())
    }
}

/// Starts the workers, the loops, the acceptor and the metrics thread.
fn start_threads(
    shared: &Arc<Shared>,
    accept_poll: Poll,
    listeners: Listeners,
    doors: Vec<LoopDoor>,
    loops: Vec<Loop>,
    jobs: mpsc::Receiver<crate::worker::Job>,
    metrics: Option<(TcpListener, SocketAddr)>,
) -> Result<Vec<JoinHandle<()>>> {
    let workers = crate::worker::spawn(shared, WORKERS_PER_LOOP * loops.len().max(1), jobs)?;
    let mut threads = Vec::new();
    let s = Arc::clone(shared);
    threads.push(spawn("cairn-accept", move || {
        accept::run(&s, accept_poll, listeners, doors);
    })?);
    for (i, lp) in loops.into_iter().enumerate() {
        let s = Arc::clone(shared);
        threads.push(spawn(&format!("cairn-loop-{i}"), move || {
            event_loop::run(&s, lp);
        })?);
    }
    threads.extend(workers);
    if let Some((listener, _)) = metrics {
        let s = Arc::clone(shared);
        threads.push(spawn("cairn-metrics", move || {
            crate::metrics::serve(&s, &listener);
        })?);
    }
    Ok(threads)
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

/// Event loops when `Config::threads` is 0: one per CPU but one, at least one. The spare
/// CPU runs the engine's flushes and compactions (and, often, clients on the same host):
/// with a loop on every CPU, a loop preempted while it leads a write group stalls the
/// writes of every other loop until it runs again, a scheduler slice of milliseconds.
pub(crate) fn default_loops(cpus: usize) -> usize {
    cpus.saturating_sub(1).max(1)
}

#[cfg(test)]
mod tests {
    use super::default_loops;

    #[test]
    fn the_default_leaves_one_cpu_to_the_engine_and_keeps_one_loop() {
        assert_eq!(default_loops(0), 1);
        assert_eq!(default_loops(1), 1);
        assert_eq!(default_loops(2), 1);
        assert_eq!(default_loops(8), 7);
    }
}
