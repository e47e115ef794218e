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
mod coalesce;
mod connection;
mod errors;
mod keys;
mod store;
mod strings;
mod table;

pub(crate) use coalesce::SetBatch;
pub(crate) use table::COMMANDS;

use store::keyspace;

use std::collections::HashMap;
use std::sync::OnceLock;
use std::time::Instant;

use crate::resp::Reply;
use crate::session::Session;
use crate::shared::Shared;
use crate::stats::Stats;

/// What a handler works with: the server's shared state and the client's session.
pub(crate) struct Ctx<'a> {
    pub(crate) shared: &'a Shared,
    pub(crate) session: &'a mut Session,
}

/// A handler's result: `Err` holds an error reply (so handlers can use `?`).
pub(crate) type Outcome = Result<Reply, Reply>;

pub(crate) type Handler = fn(&mut Ctx<'_>, &[Vec<u8>]) -> Outcome;

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
    pub(crate) handler: Handler,
}

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
        let usec = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
        c.record(usec, reply.is_error());
    }
    reply
}
