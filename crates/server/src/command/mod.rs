//! Commands: the table of every command the server knows ([`COMMANDS`]: name, arity, key
//! positions, flags, handler) and [`run`], which checks a request against it and calls the
//! handler. One module per command group, as Redis's documentation groups them:
//! `connection` (PING, HELLO, AUTH, SELECT, CLIENT, ...), `strings` (GET, SET, INCR, ...),
//! `keys` (DEL, EXPIRE, TTL, SCAN, ...), `admin` (INFO, CONFIG, COMMAND, SHUTDOWN, ...).
//!
//! Checks run in Redis's order: unknown command, then arity, then authentication.
//! Handlers never panic; engine errors become `ERR <sentence>` replies.

mod admin;
mod args;
mod connection;
mod errors;
mod keys;
mod store;
mod strings;

use std::collections::HashMap;
use std::sync::OnceLock;
use std::time::Instant;

use crate::resp::Reply;
use crate::server::Shared;
use crate::session::Session;
use crate::stats::Stats;

/// What a handler works with: the server's shared state and the client's session.
pub(crate) struct Ctx<'a> {
    pub(crate) shared: &'a Shared,
    pub(crate) session: &'a mut Session,
}

/// A handler's result: `Err` holds an error reply (so handlers can use `?`).
pub(crate) type Outcome = Result<Reply, Reply>;

type Handler = fn(&mut Ctx<'_>, &[Vec<u8>]) -> Outcome;

/// One command: what `COMMAND INFO` reports, and its handler.
pub(crate) struct Spec {
    /// Lower-case name.
    pub(crate) name: &'static str,
    /// Redis's arity: `n` exactly n arguments with the name, `-n` at least n.
    pub(crate) arity: i64,
    /// Space-separated flags (`write`, `readonly`, `fast`, `noauth`, ...).
    pub(crate) flags: &'static str,
    pub(crate) first_key: i64,
    pub(crate) last_key: i64,
    pub(crate) step: i64,
    /// The documentation group (`string`, `generic`, `connection`, `server`).
    pub(crate) group: &'static str,
    pub(crate) summary: &'static str,
    handler: Handler,
}

macro_rules! spec {
    ($name:literal, $arity:expr, $flags:literal, $keys:expr, $group:literal, $summary:literal, $handler:path) => {
        Spec {
            name: $name,
            arity: $arity,
            flags: $flags,
            first_key: $keys.0,
            last_key: $keys.1,
            step: $keys.2,
            group: $group,
            summary: $summary,
            handler: $handler,
        }
    };
}

const NONE: (i64, i64, i64) = (0, 0, 0);
const ONE: (i64, i64, i64) = (1, 1, 1);
const ALL: (i64, i64, i64) = (1, -1, 1);

/// Every command the server knows.
pub(crate) static COMMANDS: &[Spec] = &[
    spec!(
        "ping",
        -1,
        "fast",
        NONE,
        "connection",
        "Returns the server's liveliness response.",
        connection::ping
    ),
    spec!(
        "echo",
        2,
        "fast",
        NONE,
        "connection",
        "Returns the given string.",
        connection::echo
    ),
    spec!(
        "hello",
        -1,
        "noauth fast",
        NONE,
        "connection",
        "Handshakes with the server.",
        connection::hello
    ),
    spec!(
        "auth",
        -2,
        "noauth fast",
        NONE,
        "connection",
        "Authenticates the connection.",
        connection::auth
    ),
    spec!(
        "select",
        2,
        "fast",
        NONE,
        "connection",
        "Changes the selected database.",
        connection::select
    ),
    spec!(
        "client",
        -2,
        "",
        NONE,
        "connection",
        "A container for client connection commands.",
        connection::client
    ),
    spec!(
        "quit",
        -1,
        "noauth fast",
        NONE,
        "connection",
        "Closes the connection.",
        connection::quit
    ),
    spec!(
        "reset",
        1,
        "noauth fast",
        NONE,
        "connection",
        "Resets the connection.",
        connection::reset
    ),
    spec!(
        "get",
        2,
        "readonly fast",
        ONE,
        "string",
        "Returns the string value of a key.",
        strings::get
    ),
    spec!(
        "set",
        -3,
        "write denyoom",
        ONE,
        "string",
        "Sets the string value of a key, ignoring its type.",
        strings::set
    ),
    spec!(
        "setnx",
        3,
        "write denyoom fast",
        ONE,
        "string",
        "Set the string value of a key only when the key doesn't exist.",
        strings::setnx
    ),
    spec!(
        "setex",
        4,
        "write denyoom",
        ONE,
        "string",
        "Sets the string value and expiration time of a key.",
        strings::setex
    ),
    spec!(
        "psetex",
        4,
        "write denyoom",
        ONE,
        "string",
        "Sets both string value and expiration time in milliseconds of a key.",
        strings::psetex
    ),
    spec!(
        "getset",
        3,
        "write denyoom fast",
        ONE,
        "string",
        "Returns the previous string value of a key after setting it to a new value.",
        strings::getset
    ),
    spec!(
        "getdel",
        2,
        "write fast",
        ONE,
        "string",
        "Returns the string value of a key after deleting the key.",
        strings::getdel
    ),
    spec!(
        "mget",
        -2,
        "readonly fast",
        ALL,
        "string",
        "Atomically returns the string values of one or more keys.",
        strings::mget
    ),
    spec!(
        "mset",
        -3,
        "write denyoom",
        (1, -1, 2),
        "string",
        "Atomically creates or modifies the string values of one or more keys.",
        strings::mset
    ),
    spec!(
        "append",
        3,
        "write denyoom fast",
        ONE,
        "string",
        "Appends a string to the value of a key.",
        strings::append
    ),
    spec!(
        "strlen",
        2,
        "readonly fast",
        ONE,
        "string",
        "Returns the length of a string value.",
        strings::strlen
    ),
    spec!(
        "incr",
        2,
        "write denyoom fast",
        ONE,
        "string",
        "Increments the integer value of a key by one.",
        strings::incr
    ),
    spec!(
        "decr",
        2,
        "write denyoom fast",
        ONE,
        "string",
        "Decrements the integer value of a key by one.",
        strings::decr
    ),
    spec!(
        "incrby",
        3,
        "write denyoom fast",
        ONE,
        "string",
        "Increments the integer value of a key by a number.",
        strings::incrby
    ),
    spec!(
        "decrby",
        3,
        "write denyoom fast",
        ONE,
        "string",
        "Decrements a number from the integer value of a key.",
        strings::decrby
    ),
    spec!(
        "del",
        -2,
        "write",
        ALL,
        "generic",
        "Deletes one or more keys.",
        keys::del
    ),
    spec!(
        "unlink",
        -2,
        "write fast",
        ALL,
        "generic",
        "Deletes one or more keys.",
        keys::del
    ),
    spec!(
        "exists",
        -2,
        "readonly fast",
        ALL,
        "generic",
        "Determines whether one or more keys exist.",
        keys::exists
    ),
    spec!(
        "expire",
        -3,
        "write fast",
        ONE,
        "generic",
        "Sets the expiration time of a key in seconds.",
        keys::expire
    ),
    spec!(
        "pexpire",
        -3,
        "write fast",
        ONE,
        "generic",
        "Sets the expiration time of a key in milliseconds.",
        keys::pexpire
    ),
    spec!(
        "expireat",
        -3,
        "write fast",
        ONE,
        "generic",
        "Sets the expiration time of a key to a Unix timestamp.",
        keys::expireat
    ),
    spec!(
        "pexpireat",
        -3,
        "write fast",
        ONE,
        "generic",
        "Sets the expiration time of a key to a Unix milliseconds timestamp.",
        keys::pexpireat
    ),
    spec!(
        "ttl",
        2,
        "readonly fast",
        ONE,
        "generic",
        "Returns the expiration time in seconds of a key.",
        keys::ttl
    ),
    spec!(
        "pttl",
        2,
        "readonly fast",
        ONE,
        "generic",
        "Returns the expiration time in milliseconds of a key.",
        keys::pttl
    ),
    spec!(
        "persist",
        2,
        "write fast",
        ONE,
        "generic",
        "Removes the expiration time of a key.",
        keys::persist
    ),
    spec!(
        "type",
        2,
        "readonly fast",
        ONE,
        "generic",
        "Determines the type of value stored at a key.",
        keys::kind
    ),
    spec!(
        "scan",
        -2,
        "readonly",
        NONE,
        "generic",
        "Iterates over the key names in the database, in key order.",
        keys::scan
    ),
    spec!(
        "dbsize",
        1,
        "readonly",
        NONE,
        "server",
        "Returns the number of keys in the database.",
        keys::dbsize
    ),
    spec!(
        "flushdb",
        -1,
        "write",
        NONE,
        "server",
        "Removes all keys from the current database.",
        keys::flushdb
    ),
    spec!(
        "flushall",
        -1,
        "write",
        NONE,
        "server",
        "Removes all keys from all databases.",
        keys::flushall
    ),
    spec!(
        "info",
        -1,
        "",
        NONE,
        "server",
        "Returns information and statistics about the server.",
        admin::info
    ),
    spec!(
        "config",
        -2,
        "",
        NONE,
        "server",
        "A container for server configuration commands.",
        admin::config
    ),
    spec!(
        "command",
        -1,
        "",
        NONE,
        "server",
        "Returns detailed information about all commands.",
        admin::command
    ),
    spec!(
        "time",
        1,
        "fast",
        NONE,
        "server",
        "Returns the server time.",
        admin::time
    ),
    spec!(
        "shutdown",
        -1,
        "",
        NONE,
        "server",
        "Stops accepting clients, finishes running commands, syncs the store and exits.",
        admin::shutdown
    ),
];

/// The index of each command in [`COMMANDS`], by lower-case name.
fn by_name() -> &'static HashMap<&'static str, usize> {
    static TABLE: OnceLock<HashMap<&'static str, usize>> = OnceLock::new();
    TABLE.get_or_init(|| {
        COMMANDS
            .iter()
            .enumerate()
            .map(|(i, c)| (c.name, i))
            .collect()
    })
}

/// Runs one request and returns its reply.
pub(crate) fn run(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Reply {
    let Some(name) = args.first() else {
        return Reply::Ok; // the parser never yields an empty request
    };
    let lower = args::lower(name);
    let Some((index, spec)) = by_name()
        .get(lower.as_str())
        .and_then(|&i| COMMANDS.get(i).map(|s| (i, s)))
    else {
        return errors::unknown_command(args);
    };
    let count = i64::try_from(args.len()).unwrap_or(i64::MAX);
    if (spec.arity > 0 && count != spec.arity) || (spec.arity < 0 && count < -spec.arity) {
        return errors::wrong_args(spec.name);
    }
    if !ctx.session.authenticated && !spec.flags.contains("noauth") {
        return errors::no_auth();
    }
    let started = Instant::now();
    let reply = (spec.handler)(ctx, args).unwrap_or_else(|e| e);
    let stats = &ctx.shared.stats;
    Stats::add(&stats.commands_processed, 1);
    if let Some(c) = stats.commands.get(index) {
        Stats::add(&c.calls, 1);
        Stats::add(
            &c.usec,
            u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX),
        );
        if reply.is_error() {
            Stats::add(&c.failed, 1);
        }
    }
    reply
}
