//! Commands: the table of every command the server knows ([`COMMANDS`]: name, arity, key
//! positions, flags, handler) and [`run`], which checks a request against it and calls the
//! handler. One module per command group, as Redis's documentation groups them:
//! `connection` (PING, HELLO, AUTH, SELECT, CLIENT, ...), `strings` (GET, SET, INCR, ...),
//! `keys` (DEL, EXPIRE, TTL, SCAN, ...), `multi` (MULTI, EXEC, WATCH, ...), `admin`
//! (INFO, CONFIG, COMMAND, ACL, SHUTDOWN, ...). Handlers read through `store::View` and
//! write through `Ctx::write`, so the same handler runs alone or inside EXEC.
//!
//! Checks run in Redis's order: unknown command, then arity, then authentication, then
//! the user's permission (`crate::users`: a command flagged `write` or `admin` needs the
//! user's `write` or `admin` permission, one naming keys needs `~*`; `noauth` commands
//! are always allowed). The user is taken again before each command if ACL changed the
//! users, so a change applies at once; a connection whose user was deleted closes. While a
//! transaction is being queued (MULTI), a command that passes them is queued, and one
//! that fails them marks the transaction failed. Handlers never panic; engine errors
//! become `ERR <sentence>` replies.

mod acl;
mod admin;
mod args;
mod categories;
mod coalesce;
mod connection;
mod errors;
mod keys;
mod multi;
mod store;
mod strings;
mod table;

pub(crate) use coalesce::{Offered, SetBatch};
pub(crate) use table::COMMANDS;

use store::keyspace;

use std::collections::HashMap;
use std::sync::OnceLock;
use std::time::Instant;

use crate::resp::Reply;
use crate::session::Session;
use crate::shared::Shared;
use crate::stats::Stats;
use crate::users::Reason;

/// What a handler works with: the server's shared state, the client's session, and
/// inside EXEC the transaction the commands read and write.
pub(crate) struct Ctx<'a> {
    pub(crate) shared: &'a Shared,
    pub(crate) session: &'a mut Session,
    pub(crate) tx: Option<&'a mut cairn::Transaction>,
}

impl<'a> Ctx<'a> {
    /// A context outside any transaction.
    pub(crate) fn new(shared: &'a Shared, session: &'a mut Session) -> Ctx<'a> {
        Ctx {
            shared,
            session,
            tx: None,
        }
    }
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

/// The flags the dispatcher checks on every request, parsed once from a [`Spec`]'s text.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Flags {
    noauth: bool,
    write: bool,
    admin: bool,
    fast: bool,
    no_multi: bool,
}

impl Flags {
    fn of(spec: &Spec) -> Flags {
        Flags {
            noauth: has_flag(spec, "noauth"),
            write: has_flag(spec, "write"),
            admin: has_flag(spec, "admin"),
            fast: has_flag(spec, "fast"),
            no_multi: has_flag(spec, "no_multi"),
        }
    }
}

/// The index and dispatcher flags of each command in [`COMMANDS`], by lower-case name.
fn by_name() -> &'static HashMap<&'static str, (usize, Flags)> {
    static TABLE: OnceLock<HashMap<&'static str, (usize, Flags)>> = OnceLock::new();
    TABLE.get_or_init(|| {
        COMMANDS
            .iter()
            .enumerate()
            .map(|(i, c)| (c.name, (i, Flags::of(c))))
            .collect()
    })
}

/// Longest command name the table holds; a longer name is unknown without a lookup.
const MAX_NAME_LEN: usize = 32;

/// The command named `name` (any case): its index in [`COMMANDS`], its spec and its
/// flags. Lower-cases into a buffer on the stack: this runs for every request.
fn find(name: &[u8]) -> Option<(usize, &'static Spec, Flags)> {
    let mut buf = [0u8; MAX_NAME_LEN];
    let lower = buf.get_mut(..name.len())?;
    lower.copy_from_slice(name);
    lower.make_ascii_lowercase();
    let &(index, flags) = by_name().get(std::str::from_utf8(lower).ok()?)?;
    COMMANDS.get(index).map(|spec| (index, spec, flags))
}

/// True if `spec` carries `flag`.
fn has_flag(spec: &Spec, flag: &str) -> bool {
    spec.flags.split(' ').any(|f| f == flag)
}

/// The command `args` names and whether this session may run it now; `Err` holds the
/// refusal (Redis's order of checks).
fn admit(ctx: &Ctx<'_>, args: &[Vec<u8>]) -> Result<(usize, &'static Spec, Flags), Reply> {
    let Some((index, spec, flags)) = args.first().and_then(|n| find(n)) else {
        return Err(errors::unknown_command(args));
    };
    if !arity_ok(spec, args) {
        return Err(errors::wrong_args(spec.name));
    }
    if !ctx.session.authenticated && !flags.noauth {
        return Err(errors::no_auth());
    }
    match refusal(&ctx.session.user, spec, flags, args) {
        None => Ok((index, spec, flags)),
        Some(Refusal::Command(shown)) => {
            log_refusal(ctx, Reason::Command, &shown, &shown);
            Err(errors::no_permission(&ctx.session.user.name, &shown))
        }
        Some(Refusal::Key(key)) => {
            log_refusal(ctx, Reason::Key, &shown_name(spec, args), &key);
            Err(errors::no_key_permission())
        }
    }
}

/// True if `args` has as many arguments as `spec`'s arity allows.
fn arity_ok(spec: &Spec, args: &[Vec<u8>]) -> bool {
    let count = i64::try_from(args.len()).unwrap_or(i64::MAX);
    (spec.arity <= 0 || count == spec.arity) && (spec.arity >= 0 || count >= -spec.arity)
}

/// Why a user may not run a command: the command (as a refusal names it), or its key.
enum Refusal {
    Command(String),
    Key(String),
}

/// Whether `user` may run `args` (a command of `spec`, arity checked) as the dispatcher
/// decides: commands flagged `noauth` always; else the user's command permissions, then
/// its key permissions.
fn refusal(
    user: &crate::users::User,
    spec: &Spec,
    flags: Flags,
    args: &[Vec<u8>],
) -> Option<Refusal> {
    if flags.noauth {
        None
    } else if !user.may_run(flags.write, flags.admin) {
        Some(Refusal::Command(shown_name(spec, args)))
    } else if spec.first_key != 0 && !user.all_keys {
        Some(Refusal::Key(first_key(spec, args)))
    } else {
        None
    }
}

/// Records a refused command or key of this connection's user in the ACL log; a
/// command queued by MULTI and refused as EXEC runs it is in context `multi`. `command`
/// is the refused command as a refusal names it (`set`, `config|get`).
pub(crate) fn log_refusal(ctx: &Ctx<'_>, reason: Reason, command: &str, object: &str) {
    let context = if ctx.tx.is_some() {
        "multi"
    } else {
        "toplevel"
    };
    ctx.shared.acl_log.record(
        reason,
        context,
        object,
        &ctx.session.user.name,
        connection::client_info(ctx, command),
    );
}

/// The first key `args` names (empty if it names none).
fn first_key(spec: &Spec, args: &[Vec<u8>]) -> String {
    usize::try_from(spec.first_key)
        .ok()
        .and_then(|i| args.get(i))
        .map(|k| String::from_utf8_lossy(k).into_owned())
        .unwrap_or_default()
}

/// The commands whose first argument names a subcommand.
const CONTAINERS: &[&str] = &["acl", "client", "config", "command"];

/// How a refusal names the command `args` runs: `name|subcommand` for a command with
/// subcommands (Redis's `acl|whoami`), else its name.
fn shown_name(spec: &Spec, args: &[Vec<u8>]) -> String {
    match args.get(1) {
        Some(sub) if CONTAINERS.contains(&spec.name) => {
            format!("{}|{}", spec.name, args::lower(sub))
        }
        _ => spec.name.to_string(),
    }
}

/// ACL DRYRUN's verdict on `user` running `args` (as [`admit`] would decide, and for the
/// admin-only subcommands, as their handlers would): `Ok(None)` if permitted,
/// `Ok(Some(why))` if refused, `Err` for an unknown command or a wrong number of
/// arguments (Redis's texts).
pub(crate) fn dry_run(
    user: &crate::users::User,
    args: &[Vec<u8>],
) -> Result<Option<String>, Reply> {
    let Some(given) = args.first() else {
        return Err(errors::wrong_args("acl|dryrun"));
    };
    let Some((_, spec, flags)) = find(given) else {
        return Err(Reply::error(format!(
            "ERR Command '{}' not found",
            String::from_utf8_lossy(given)
        )));
    };
    if !arity_ok(spec, args) {
        return Err(errors::wrong_args(spec.name));
    }
    let refused = |what: &str| format!("This user has no permissions to run the '{what}' command");
    Ok(match refusal(user, spec, flags, args) {
        Some(Refusal::Command(shown)) => Some(refused(&shown)),
        Some(Refusal::Key(key)) => Some(format!(
            "This user has no permissions to access the '{key}' key"
        )),
        None => {
            // What the admin-only subcommands' handlers refuse.
            let sub = args.get(1).map(|s| args::lower(s));
            sub.filter(|sub| errors::admin_subcommand(spec.name, sub) && !user.may_run(false, true))
                .map(|_| refused(&shown_name(spec, args)))
        }
    })
}

/// True if `args` may keep the thread that runs it waiting: a write that is not batched
/// (its own engine commit, an fsync under `sync`), or a command not marked `fast` (EXEC,
/// SCAN, DBSIZE, FLUSHDB, INFO, SHUTDOWN, ...). An event loop hands such a request to a
/// worker (`worker.rs`) and runs the others itself. Between MULTI and EXEC a command is
/// only queued, which is cheap; an unknown command is only refused.
pub(crate) fn may_block(session: &Session, args: &[Vec<u8>]) -> bool {
    let Some((_, spec, flags)) = args.first().and_then(|n| find(n)) else {
        return false;
    };
    if session.multi.is_some() && !multi::NOT_QUEUED.contains(&spec.name) {
        return false;
    }
    flags.write || !flags.fast
}

/// Runs one request (or queues it, between MULTI and EXEC) and returns its reply.
pub(crate) fn run(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Reply {
    if args.is_empty() {
        return Reply::Ok; // the parser never yields an empty request
    }
    // Inside EXEC the queued commands run as the user EXEC was checked for.
    if ctx.tx.is_none() && !ctx.session.refresh_user(&ctx.shared.users) {
        // The user was deleted: the connection closes without a reply, as Redis
        // disconnects its clients.
        ctx.session.close = true;
        ctx.session.silent = true;
        return Reply::Ok;
    }
    let (index, spec, flags) = match admit(ctx, args) {
        Ok(found) => found,
        Err(refusal) => {
            if let Some(m) = &mut ctx.session.multi {
                m.failed = true;
            }
            return refusal;
        }
    };
    if let Some(m) = &mut ctx.session.multi {
        if !multi::NOT_QUEUED.contains(&spec.name) {
            if flags.no_multi {
                m.failed = true;
                return Reply::error("ERR Command not allowed inside a transaction");
            }
            let len: usize = args.iter().map(Vec::len).sum();
            if m.queued.len() >= multi::MAX_QUEUED
                || m.queued_len.saturating_add(len) > multi::MAX_QUEUED_LEN
            {
                m.failed = true;
                return Reply::error("ERR too many commands queued in the transaction");
            }
            m.queued_len += len;
            m.queued.push(args.to_vec());
            return Reply::simple("QUEUED");
        }
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

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn find_knows_every_command_in_any_case_with_the_flags_of_its_text() {
        for (i, spec) in COMMANDS.iter().enumerate() {
            assert!(spec.name.len() <= MAX_NAME_LEN, "{}", spec.name);
            for name in [spec.name.to_string(), spec.name.to_ascii_uppercase()] {
                let (index, found, flags) = find(name.as_bytes()).unwrap();
                assert_eq!(index, i);
                assert!(std::ptr::eq(found, spec));
                assert_eq!(flags.noauth, has_flag(spec, "noauth"));
                assert_eq!(flags.write, has_flag(spec, "write"));
                assert_eq!(flags.admin, has_flag(spec, "admin"));
                assert_eq!(flags.fast, has_flag(spec, "fast"));
                assert_eq!(flags.no_multi, has_flag(spec, "no_multi"));
            }
        }
        let (_, get, flags) = find(b"GeT").unwrap();
        assert_eq!(get.name, "get");
        assert!(flags.fast && !flags.write && !flags.noauth);
        assert!(find(b"set").unwrap().2.write);
        assert!(find(b"auth").unwrap().2.noauth);
        for unknown in [&b""[..], b"nosuch", b"g\xffet", &[b'g'; MAX_NAME_LEN + 1]] {
            assert!(find(unknown).is_none(), "{unknown:?}");
        }
    }
}
