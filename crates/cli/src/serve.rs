//! `cairn serve DIR`: the ordered store over the Redis protocol (crate `cairn-server`).
//!
//! This module only turns flags into a [`cairn_server::Config`], opens the store, and
//! turns SIGTERM and SIGINT into a graceful shutdown; the server is the library's. Once
//! listening it prints one line per listener to standard output, `ready: tcp <addr>`
//! (and `ready: tls <addr>`, `ready: metrics <url>`, `ready: unix <path>`), so scripts
//! started with `--port 0` learn the port. It installs the `tracing` subscriber that
//! writes the store's events to standard error (`--log-level`).

use std::io::Write;
use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use cairn::Durability;
use cairn_server::{ClientCerts, Config, Limits, Server};
use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

use crate::errors::{CliError, CliResult};
use crate::store;

/// Serve the ordered store over the Redis protocol (RESP2 and RESP3): redis-cli and any
/// Redis client library can then read and write it. Database N (SELECT N) is keyspace
/// "dbN". A reply to a write is sent once the write is as durable as --durability
/// promises. MULTI/EXEC runs as one serializable transaction of the store; WATCH is
/// honoured. Users: --requirepass and --users; TLS: --tls-port with --tls-cert and
/// --tls-key (and --tls-ca-cert to ask clients for certificates). The store's events
/// (flushes, compactions, stalls, errors) are logged to standard error. SIGTERM, SIGINT
/// and the SHUTDOWN command stop it gracefully.
#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// The store's directory (created if missing).
    pub dir: PathBuf,
    /// Address to listen on. Loopback by default: give 0.0.0.0 (with --requirepass) to
    /// serve other machines.
    #[arg(long, default_value = "127.0.0.1")]
    pub bind: IpAddr,
    /// TCP port (0: any free port, printed on the ready line).
    #[arg(long, default_value_t = 6379)]
    pub port: u16,
    /// Listen on no plain TCP port (use with --unixsocket or --tls-port).
    #[arg(long)]
    pub no_tcp: bool,
    /// Also listen on this Unix socket.
    #[arg(long, value_name = "PATH")]
    pub unixsocket: Option<PathBuf>,
    /// Durability of every write: sync, periodic:<µs>, buffered, async:<depth> or none.
    #[arg(long, default_value = "sync", value_parser = cairn_harness::parse_durability)]
    pub durability: Durability,
    /// Password of the "default" user (AUTH <password>, or HELLO ... AUTH default
    /// <password>).
    #[arg(long, value_name = "PASSWORD")]
    pub requirepass: Option<String>,
    /// Users file: one "name password [readonly|readwrite]" per line, or a line of
    /// Redis's ACL rules ("user NAME on #<sha256> ~* &* +@all"); '#' starts a comment
    /// line and a password "#<64 hex digits>" is its SHA-256. Clients then AUTH <name>
    /// <password>; a readonly user is refused every write (NOPERM). ACL SAVE writes the
    /// users back to it, ACL LOAD reads it again.
    #[arg(long, value_name = "FILE")]
    pub users: Option<PathBuf>,
    /// Also serve TLS on this port (0: any free port, printed as "ready: tls <addr>");
    /// needs --tls-cert and --tls-key. With --no-tcp, TLS is the only TCP listener.
    #[arg(long, value_name = "PORT", requires_all = ["tls_cert", "tls_key"])]
    pub tls_port: Option<u16>,
    /// The TLS certificate chain (PEM, leaf first).
    #[arg(long, value_name = "FILE", requires = "tls_port")]
    pub tls_cert: Option<PathBuf>,
    /// The TLS private key (PEM: PKCS#8, PKCS#1 or SEC1).
    #[arg(long, value_name = "FILE", requires = "tls_port")]
    pub tls_key: Option<PathBuf>,
    /// CA certificates (PEM) that TLS clients' certificates must chain to: clients are
    /// then asked for a certificate (see --tls-auth-clients).
    #[arg(long, value_name = "FILE", requires = "tls_port")]
    pub tls_ca_cert: Option<PathBuf>,
    /// With --tls-ca-cert: "yes" refuses a TLS client without a valid certificate,
    /// "optional" admits one that presents none (one it presents must be valid).
    #[arg(
        long,
        value_name = "yes|optional",
        default_value = "yes",
        value_parser = ["yes", "optional"],
        requires = "tls_ca_cert"
    )]
    pub tls_auth_clients: String,
    /// Log level of the store's events (flushes, compactions, write stalls, background
    /// errors, recovery losses), written to standard error: error, warn, info, debug,
    /// trace or off.
    #[arg(long, value_name = "LEVEL", default_value = "info")]
    pub log_level: tracing_subscriber::filter::LevelFilter,
    /// Most clients connected at once.
    #[arg(long, default_value_t = 10_000)]
    pub maxclients: usize,
    /// Disconnect clients idle for this many seconds (0: never).
    #[arg(long, value_name = "SECONDS", default_value_t = 0)]
    pub timeout: u64,
    /// Number of databases (SELECT 0 .. N-1).
    #[arg(long, default_value_t = 16)]
    pub databases: usize,
    /// Largest argument, in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = Limits::default().max_bulk_len)]
    pub max_bulk_len: usize,
    /// Most arguments in one request.
    #[arg(long, value_name = "COUNT", default_value_t = Limits::default().max_multibulk_count)]
    pub max_multibulk_count: usize,
    /// Longest inline request or header line, in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = Limits::default().max_inline_len)]
    pub max_inline_len: usize,
    /// Serve Prometheus metrics over HTTP at this address (e.g. 127.0.0.1:9121).
    #[arg(long, value_name = "ADDR")]
    pub metrics_addr: Option<std::net::SocketAddr>,
    /// Event-loop threads serving the clients (0: one per CPU but one, at least one, so a
    /// CPU is left to flushes and compactions). Each commits the plain writes of all its
    /// ready clients together, once per turn.
    #[arg(long, value_name = "COUNT", default_value_t = 0)]
    pub threads: usize,
    /// Ask for transparent huge pages for the memtables' memory (the store option
    /// `memtable_huge_pages`): fewer TLB misses on each read and write of a key held in
    /// memory, at the cost of at least 2 MiB per memtable and, where the kernel's THP
    /// defrag setting makes a fault compact memory, an occasional slow write.
    #[arg(long)]
    pub memtable_huge_pages: bool,
    /// Read table blocks through memory maps of the table files (the store option
    /// `mmap_reads`): blocks in the OS page cache but not in the block cache cost no
    /// system call, but a device error on a mapped page stops the server (`SIGBUS`)
    /// instead of failing the command.
    #[arg(long)]
    pub mmap_reads: bool,
    /// Bytes of the row cache (the store option `row_cache_size`; 0: none): keys read
    /// again from tables cost one hash probe instead of an index and block search, so
    /// hot keys no longer in memory read about as fast as recent writes.
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_ROW_CACHE)]
    pub row_cache_size: usize,
    /// Replies a pipelining client may have pending before they are written out.
    #[arg(long, value_name = "COUNT", default_value_t = Limits::default().max_pending_replies)]
    pub max_pending: usize,
    /// Bytes of entries a memtable takes before it is sealed and flushed (the store option
    /// `memtable_size`; default: the store's, 16 MiB). Larger memtables hold more keys'
    /// newest versions in memory, so a key written again soon (a counter) is read and
    /// written there instead of in a table, and fewer flushes and compactions run.
    #[arg(long, value_name = "BYTES")]
    pub memtable_size: Option<usize>,
    /// One bound, in bytes, on the block cache (with the row cache in its share), the
    /// memtables and the tables' index and filter blocks together (the store option
    /// `memory_budget`, at least 16 MiB); INFO's memory section reports it as
    /// `cairn_memory_budget`.
    #[arg(long, value_name = "BYTES")]
    pub memory_budget: Option<usize>,
}

/// The server's row cache unless `--row-cache-size` says otherwise: as large as the
/// block cache's default, since a server's clients read single keys far more than they
/// scan.
const DEFAULT_ROW_CACHE: usize = 64 << 20;

/// Runs the server until it is shut down.
pub fn run(args: &ServeArgs, out: &mut dyn Write) -> CliResult<u8> {
    // Events go to standard error; standard output carries only the ready lines. A
    // second `run` in one process (tests) keeps the first subscriber.
    let _ = tracing_subscriber::fmt()
        .with_max_level(args.log_level)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .try_init();
    let mut limits = Limits::default();
    limits.max_bulk_len = args.max_bulk_len;
    limits.max_multibulk_count = args.max_multibulk_count;
    limits.max_inline_len = args.max_inline_len;
    limits.max_pending_replies = args.max_pending.max(1);
    let mut config = Config::default();
    config.bind = args.bind;
    config.port = (!args.no_tcp).then_some(args.port);
    config.unix_socket = args.unixsocket.clone();
    config.requirepass = args.requirepass.clone();
    if let Some(path) = &args.users {
        let users = cairn_server::Users::load(path)
            .map_err(|e| CliError::msg(format!("cairn serve: users file: {e}")))?;
        config.users = Some(users);
        config.users_file = Some(path.clone());
    }
    if let (Some(port), Some(cert), Some(key)) = (args.tls_port, &args.tls_cert, &args.tls_key) {
        let client_certs = match (&args.tls_ca_cert, args.tls_auth_clients.as_str()) {
            (None, _) => ClientCerts::NotAsked,
            (Some(ca), "optional") => ClientCerts::Optional(ca.clone()),
            (Some(ca), _) => ClientCerts::Required(ca.clone()),
        };
        config.tls = Some(cairn_server::Tls::new(port, cert, key).with_client_certs(client_certs));
    }
    config.max_clients = args.maxclients.max(1);
    config.idle_timeout = (args.timeout > 0).then(|| Duration::from_secs(args.timeout));
    config.databases = args.databases;
    config.durability = args.durability;
    config.limits = limits;
    config.metrics_addr = args.metrics_addr;
    config.threads = args.threads;

    let db = store::open_tuned(&args.dir, true, |o| {
        o.memtable_huge_pages = args.memtable_huge_pages;
        o.mmap_reads = args.mmap_reads;
        o.row_cache_size = args.row_cache_size;
        if let Some(size) = args.memtable_size {
            o.memtable_size = size;
        }
        o.memory_budget = args.memory_budget;
    })?;
    let server =
        Server::start(db, config).map_err(|e| CliError::msg(format!("cairn serve: {e}")))?;
    let mut signals = Signals::new([SIGTERM, SIGINT])
        .map_err(|e| CliError::msg(format!("cairn serve: signals: {e}")))?;
    let stop = server.shutdown_handle();
    let signal_handle = signals.handle();
    let watcher = std::thread::spawn(move || {
        if signals.forever().next().is_some() {
            stop.shutdown();
        }
    });
    if let Some(addr) = server.local_addr() {
        writeln!(out, "ready: tcp {addr}").map_err(CliError::Output)?;
    }
    if let Some(addr) = server.tls_addr() {
        writeln!(out, "ready: tls {addr}").map_err(CliError::Output)?;
    }
    if let Some(addr) = server.metrics_addr() {
        writeln!(out, "ready: metrics http://{addr}/metrics").map_err(CliError::Output)?;
    }
    if let Some(path) = &args.unixsocket {
        writeln!(out, "ready: unix {}", path.display()).map_err(CliError::Output)?;
    }
    out.flush().map_err(CliError::Output)?;
    let result = server.wait();
    signal_handle.close();
    let _ = watcher.join();
    result.map_err(|e| CliError::msg(format!("cairn serve: {e}")))?;
    Ok(crate::errors::EXIT_OK)
}
