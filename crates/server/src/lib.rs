//! # cairn-server
//!
//! Cairn's ordered store over the Redis protocol: `cairn serve DIR` runs [`Server`], and
//! any Redis client (redis-cli, redis-py, Jedis, go-redis, ...) reads and writes the store.
//!
//! The walk along a request: [`resp`] parses the bytes into a request (strict limits from
//! [`Limits`], never a panic), `conn` is one connection's state machine (reads, runs each
//! request, writes the replies), `event_loop` drives many connections on one thread and
//! commits their plain writes together, `worker` runs the requests a loop must not wait
//! for, `command` maps a request onto the store (one module per command group),
//! `accept` admits clients and hands them to the loops (`refusal` tells a refused TLS
//! client why, after its handshake), and `server` starts all of them
//! and shuts down in order, and `metrics` serves the counters to Prometheus (`--metrics-addr`).
//! [`Config`] holds what an operator chooses, with [`Users`] (who may connect, and
//! what they may run; ACL SETUSER changes them at runtime) and [`Tls`] (a TLS listener's certificate and key).
//!
//! ## Contract
//!
//! * A reply to a write is sent only after the engine call returned, and the engine
//!   returns only once the write is as durable as the store's [`cairn::Durability`]
//!   promises (`sync`: fsynced). So an acknowledged write survives what its mode promises.
//! * A malformed or oversized request gets a Redis-style `ERR Protocol error: ...` reply and
//!   closes that connection only.
//! * Read-modify-write commands (INCR, APPEND, SET with NX/XX/GET/KEEPTTL, GETDEL, EXPIRE,
//!   ...) each run as one engine transaction, run again if another write changed their
//!   key meanwhile, so they are atomic with respect to every write to the store, this
//!   server's or not. MULTI/EXEC runs its commands as one serializable transaction, and
//!   WATCH is checked against the store's own record of writes (`command::multi`).
//!
//! ```no_run
//! use cairn::{Db, Options};
//! use cairn_server::{Config, Server};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let db = Db::open("/tmp/store", Options::default())?;
//! let server = Server::start(db, Config::default())?;
//! println!("listening on {:?}", server.local_addr());
//! server.wait()?; // until SHUTDOWN or `server.shutdown_handle().shutdown()`
//! # Ok(())
//! # }
//! ```

mod accept;
mod command;
mod config;
mod conn;
mod cursor;
mod error;
mod event_loop;
mod glob;
mod limits;
mod metrics;
mod refusal;
pub mod resp;
mod server;
mod session;
mod shared;
mod stats;
mod stream;
mod tls;
mod users;
mod worker;

pub use config::Config;
pub use error::{Error, Result};
pub use limits::Limits;
pub use server::{Server, ShutdownHandle, WORKERS_PER_LOOP};
pub use tls::{ClientCerts, Tls};
pub use users::{User, Users};
