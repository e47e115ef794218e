//! [`Shared`]: what every connection of a server shares (the store, its keyspaces,
//! configuration, users, cursors, statistics) and the registry of connected clients,
//! and the wakers of the threads a shutdown must wake (see `server.rs` for its order).
//!
//! Invariant: the stopping flag is set under the registry lock, so no client is admitted
//! after a shutdown began; every event loop and the acceptor are woken after it is set,
//! and each sees it.

use std::collections::HashMap;
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use cairn::{Db, Durability, Keyspace};
use mio::Waker;
use parking_lot::Mutex;

use crate::config::Config;
use crate::cursor::Cursors;
use crate::session::Session;
use crate::stats::Stats;
use crate::users::{AclLog, Registry, User};

/// A connected client as the registry knows it.
pub(crate) struct Client {
    pub(crate) addr: String,
    pub(crate) since: Instant,
}

/// What all connections share.
pub(crate) struct Shared {
    /// Every user: the users file's, and `default` (`--requirepass`, or no password);
    /// ACL SETUSER, DELUSER and LOAD change them.
    pub(crate) users: Registry,
    /// Refused authentications, commands and keys (ACL LOG).
    pub(crate) acl_log: AclLog,
    pub(crate) db: Db,
    /// Database `i` is `keyspaces[i]`.
    pub(crate) keyspaces: Vec<Keyspace>,
    pub(crate) config: Config,
    pub(crate) cursors: Cursors,
    pub(crate) stats: Stats,
    pub(crate) started: Instant,
    /// The TCP port listened on (0 without TCP).
    pub(crate) tcp_port: u16,
    pub(crate) clients: Mutex<HashMap<u64, Client>>,
    pub(crate) next_id: AtomicU64,
    pub(crate) stopping: AtomicBool,
    /// The acceptor's and every event loop's waker.
    pub(crate) wakers: Vec<Arc<Waker>>,
    /// Where to connect to wake the metrics thread, which blocks in `accept`.
    pub(crate) metrics_wake: Option<SocketAddr>,
    /// The store's size on disk and when it was measured (see [`Shared::disk_bytes`]).
    pub(crate) disk: Mutex<Option<(Instant, u64)>>,
}

/// How long a measured disk size is reported before it is measured again.
const DISK_SIZE_TTL: Duration = Duration::from_secs(10);

impl Shared {
    /// The user a connection acts as before AUTH, and the version of the users read
    /// with it. A connection is authenticated from the start if that user is on and
    /// needs no password (Redis's rule, so it follows ACL SETUSER default ...).
    pub(crate) fn default_user(&self) -> (Arc<User>, u64) {
        self.users.default_user()
    }

    /// Starts a graceful shutdown (idempotent); see the module docs.
    pub(crate) fn shutdown(&self) {
        {
            let _clients = self.clients.lock();
            if self.stopping.swap(true, Ordering::SeqCst) {
                return;
            }
        }
        for w in &self.wakers {
            let _ = w.wake();
        }
        if let Some(addr) = &self.metrics_wake {
            let _ = TcpStream::connect_timeout(addr, Duration::from_secs(1));
        }
    }

    /// Bytes the store takes on disk ([`Db::disk_size`]), measured at most once per
    /// [`DISK_SIZE_TTL`]: a measure lists the store's directory and reads every file's
    /// length, too costly for every scrape or INFO. `None` if it has never been measured
    /// successfully.
    pub(crate) fn disk_bytes(&self) -> Option<u64> {
        let mut cached = self.disk.lock();
        if let Some((at, bytes)) = *cached {
            if at.elapsed() < DISK_SIZE_TTL {
                return Some(bytes);
            }
        }
        match self.db.disk_size() {
            Ok(bytes) => {
                *cached = Some((Instant::now(), bytes));
                Some(bytes)
            }
            Err(_) => cached.map(|(_, bytes)| bytes),
        }
    }

    pub(crate) fn stopping(&self) -> bool {
        self.stopping.load(Ordering::SeqCst)
    }

    pub(crate) fn client_count(&self) -> usize {
        self.clients.lock().len()
    }

    /// CLIENT LIST: one line per connection (id, address, age; the caller's own line
    /// also shows its name and database).
    pub(crate) fn client_list(&self, me: &Session) -> String {
        let clients = self.clients.lock();
        let mut ids: Vec<&u64> = clients.keys().collect();
        ids.sort();
        let mut out = String::new();
        for id in ids {
            if let Some(c) = clients.get(id) {
                let (name, db) = if *id == me.id {
                    let name = me
                        .name
                        .as_deref()
                        .map(String::from_utf8_lossy)
                        .unwrap_or_default();
                    (name.into_owned(), me.db)
                } else {
                    (String::new(), 0)
                };
                out.push_str(&format!(
                    "id={id} addr={} age={} name={name} db={db}\n",
                    c.addr,
                    c.since.elapsed().as_secs()
                ));
            }
        }
        out
    }

    /// Registers a new connection, or refuses it (too many clients, shutting down).
    pub(crate) fn admit(&self, addr: String) -> std::result::Result<u64, &'static str> {
        Stats::add(&self.stats.connections_received, 1);
        let mut clients = self.clients.lock();
        if self.stopping() {
            return Err("-ERR Server is shutting down\r\n");
        }
        if clients.len() >= self.config.max_clients {
            Stats::add(&self.stats.rejected_connections, 1);
            return Err("-ERR max number of clients reached\r\n");
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed) + 1;
        clients.insert(
            id,
            Client {
                addr,
                since: Instant::now(),
            },
        );
        Ok(id)
    }

    pub(crate) fn leave(&self, id: u64) {
        self.clients.lock().remove(&id);
    }
}

/// The spelling of a durability mode on the command line and in INFO.
pub(crate) fn durability_name(d: Durability) -> String {
    match d {
        Durability::Sync => "sync".into(),
        Durability::Periodic(every) => format!("periodic:{}", every.as_micros()),
        Durability::Buffered => "buffered".into(),
        Durability::Async { queue_depth } => format!("async:{queue_depth}"),
        Durability::None => "none".into(),
        other => format!("{other:?}"),
    }
}
