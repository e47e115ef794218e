//! What an operator chooses for a server ([`Config`]); `cairn serve`'s flags fill it.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use cairn::Durability;

use crate::limits::Limits;
use crate::tls::Tls;
use crate::users::Users;

/// A server's configuration. [`Config::default`] listens on 127.0.0.1:6379 only, with no
/// password, 16 databases, 10,000 clients at most and no idle timeout (as Redis), and `sync`
/// durability. Its `Debug` output never shows the password.
#[derive(Clone)]
#[non_exhaustive]
pub struct Config {
    /// Address to listen on (loopback unless told otherwise).
    pub bind: IpAddr,
    /// TCP port; 0 picks a free one (see [`crate::Server::local_addr`]). `None`: no TCP.
    pub port: Option<u16>,
    /// A Unix socket to listen on as well (or instead, with `port: None`).
    pub unix_socket: Option<PathBuf>,
    /// The password of the `default` user (`AUTH password`, `HELLO ... AUTH default
    /// password`), if any.
    pub requirepass: Option<String>,
    /// Named users (`AUTH user password`), from a users file ([`Users`]); with users,
    /// every connection must authenticate (unless the file makes `default` on and
    /// `nopass`).
    pub users: Option<Users>,
    /// The file `users` was read from: ACL SAVE writes the users to it and ACL LOAD
    /// reads it again (`None`: both are refused).
    pub users_file: Option<PathBuf>,
    /// Most clients connected at once; one more is told so (`-ERR max number of clients
    /// reached`; over TLS after its handshake) and disconnected.
    pub max_clients: usize,
    /// A client idle this long is disconnected (`None`: never).
    pub idle_timeout: Option<Duration>,
    /// Number of databases (`SELECT 0` .. `SELECT n-1`); database `i` is keyspace `db<i>`.
    pub databases: usize,
    /// Durability of every write the server makes; a reply is sent once it is reached.
    pub durability: Durability,
    /// A TLS listener besides the plain one (give `port: None` to serve TLS only).
    pub tls: Option<Tls>,
    /// Where to serve Prometheus metrics over HTTP, if anywhere.
    pub metrics_addr: Option<SocketAddr>,
    /// Per-connection limits.
    pub limits: Limits,
    /// Event-loop threads (0: one per CPU but one, at least one; see
    /// `server::default_loops`). Each serves its share of the clients and
    /// commits their plain writes together, once per turn.
    pub threads: usize,
    /// How long a shutdown waits for replies still queued to clients, and tells clients
    /// it refuses why, before it closes them (default 1 s).
    pub shutdown_grace: Duration,
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config")
            .field("bind", &self.bind)
            .field("port", &self.port)
            .field("unix_socket", &self.unix_socket)
            .field(
                "requirepass",
                &self.requirepass.as_ref().map(|_| "<set, not shown>"),
            )
            .field("users", &self.users)
            .field("users_file", &self.users_file)
            .field("max_clients", &self.max_clients)
            .field("idle_timeout", &self.idle_timeout)
            .field("databases", &self.databases)
            .field("durability", &self.durability)
            .field("tls", &self.tls)
            .field("metrics_addr", &self.metrics_addr)
            .field("limits", &self.limits)
            .field("threads", &self.threads)
            .field("shutdown_grace", &self.shutdown_grace)
            .finish()
    }
}

impl Default for Config {
    fn default() -> Config {
        Config {
            bind: IpAddr::V4(Ipv4Addr::LOCALHOST),
            port: Some(6379),
            unix_socket: None,
            requirepass: None,
            users: None,
            users_file: None,
            max_clients: 10_000,
            idle_timeout: None,
            databases: 16,
            durability: Durability::Sync,
            tls: None,
            metrics_addr: None,
            limits: Limits::default(),
            threads: 0,
            shutdown_grace: Duration::from_secs(1),
        }
    }
}

/// The keyspace holding database `index`.
pub(crate) fn keyspace_name(index: usize) -> String {
    format!("db{index}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_output_never_shows_the_password() {
        let config = Config {
            requirepass: Some("hunter2-secret".into()),
            ..Config::default()
        };
        let shown = format!("{config:?}");
        assert!(!shown.contains("hunter2-secret"), "{shown}");
        assert!(
            shown.contains("requirepass: Some(\"<set, not shown>\")"),
            "{shown}"
        );
    }
}
