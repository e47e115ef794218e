//! Connection commands: PING, ECHO, HELLO, AUTH, SELECT, CLIENT (ID, SETNAME, GETNAME,
//! SETINFO, INFO, LIST), QUIT, RESET.
//!
//! Authentication: a connection starts as the `default` user, authenticated if that user
//! is on and needs no password (no `requirepass`, no users file, or ACL SETUSER default
//! on nopass); otherwise only AUTH, HELLO (with its AUTH option), QUIT and RESET run
//! until it authenticates. `AUTH password` is `AUTH default password`, refused as in
//! Redis when `default` needs no password. Passwords are checked against their hashes
//! (`crate::users`).

use super::args::{self, is};
use super::store::{arg, int_arg};
use super::{errors, Ctx, Outcome};
use crate::resp::{Protocol, Reply};
use crate::users::Reason;

pub(crate) fn ping(_: &mut Ctx<'_>, a: &[Vec<u8>]) -> Outcome {
    match a.get(1..).unwrap_or_default() {
        [] => Ok(Reply::simple("PONG")),
        [msg] => Ok(Reply::Bulk(msg.clone())),
        _ => Err(errors::wrong_args("ping")),
    }
}

pub(crate) fn echo(_: &mut Ctx<'_>, a: &[Vec<u8>]) -> Outcome {
    Ok(Reply::Bulk(arg(a, 1)?.to_vec()))
}

pub(crate) fn quit(ctx: &mut Ctx<'_>, _: &[Vec<u8>]) -> Outcome {
    ctx.session.close = true;
    Ok(Reply::Ok)
}

pub(crate) fn reset(ctx: &mut Ctx<'_>, _: &[Vec<u8>]) -> Outcome {
    let s = &mut *ctx.session;
    s.protocol = Protocol::Resp2;
    s.db = 0;
    s.name = None;
    s.act_as(ctx.shared.default_user());
    s.authenticated = s.user.open();
    s.multi = None;
    s.watch = None;
    Ok(Reply::simple("RESET"))
}

pub(crate) fn select(ctx: &mut Ctx<'_>, a: &[Vec<u8>]) -> Outcome {
    let index = int_arg(a, 1)?;
    match usize::try_from(index) {
        Ok(i) if i < ctx.shared.keyspaces.len() => {
            ctx.session.db = i;
            Ok(Reply::Ok)
        }
        _ => Err(Reply::error("ERR DB index is out of range")),
    }
}

/// Checks `user`/`password` against the users, and makes the connection act as that
/// user.
fn check(ctx: &mut Ctx<'_>, user: &[u8], password: &[u8]) -> Result<(), Reply> {
    // Hashed before the lock: a password may be as long as a bulk string.
    let given = crate::users::hash(password);
    let found = ctx
        .shared
        .users
        .read()
        .check_hash(user, &given)
        .map(|u| (u, ctx.shared.users.version()));
    let Some(found) = found else {
        let info = client_info(ctx, "auth");
        ctx.shared.acl_log.record(
            Reason::Auth,
            "toplevel",
            "AUTH",
            &String::from_utf8_lossy(user),
            info,
        );
        return Err(errors::wrong_pass());
    };
    ctx.session.act_as(found);
    ctx.session.authenticated = true;
    Ok(())
}

pub(crate) fn auth(ctx: &mut Ctx<'_>, a: &[Vec<u8>]) -> Outcome {
    let (user, password) = match a.get(1..).unwrap_or_default() {
        [password] => {
            if ctx.shared.default_user().0.open() {
                return Err(Reply::error(
                    "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?",
                ));
            }
            (&b"default"[..], password.as_slice())
        }
        [user, password] => (user.as_slice(), password.as_slice()),
        _ => return Err(errors::syntax()),
    };
    check(ctx, user, password)?;
    Ok(Reply::Ok)
}

/// `HELLO [protover [AUTH user pass] [SETNAME name]]`: switches protocol, authenticates,
/// names the client, and returns the server's description as a map.
pub(crate) fn hello(ctx: &mut Ctx<'_>, a: &[Vec<u8>]) -> Outcome {
    let mut protocol = ctx.session.protocol;
    if let Some(ver) = a.get(1) {
        protocol = match args::int(ver) {
            Some(2) => Protocol::Resp2,
            Some(3) => Protocol::Resp3,
            Some(_) => return Err(Reply::error("NOPROTO unsupported protocol version")),
            None => {
                return Err(Reply::error(
                    "ERR Protocol version is not an integer or out of range",
                ))
            }
        };
    }
    let mut name = None;
    let mut i = 2;
    while let Some(opt) = a.get(i) {
        if is(opt, "auth") {
            let (user, password) = (arg(a, i + 1)?, arg(a, i + 2)?);
            check(ctx, user, password)?;
            i += 3;
        } else if is(opt, "setname") {
            let value = arg(a, i + 1)?;
            valid_name(value)?;
            name = Some(value.to_vec());
            i += 2;
        } else {
            return Err(Reply::error(format!(
                "ERR Syntax error in HELLO option '{}'",
                String::from_utf8_lossy(opt)
            )));
        }
    }
    if !ctx.session.authenticated {
        return Err(Reply::error(
            "NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time",
        ));
    }
    if name.is_some() {
        ctx.session.name = name;
    }
    ctx.session.protocol = protocol;
    let proto = if protocol == Protocol::Resp3 { 3 } else { 2 };
    Ok(Reply::Map(vec![
        (Reply::text("server"), Reply::text("redis")),
        (
            Reply::text("version"),
            Reply::text(super::admin::REDIS_VERSION),
        ),
        (Reply::text("proto"), Reply::Int(proto)),
        (
            Reply::text("id"),
            Reply::Int(i64::try_from(ctx.session.id).unwrap_or(i64::MAX)),
        ),
        (Reply::text("mode"), Reply::text("standalone")),
        (Reply::text("role"), Reply::text("master")),
        (Reply::text("modules"), Reply::Array(Vec::new())),
    ]))
}

fn valid_name(name: &[u8]) -> Result<(), Reply> {
    if name.iter().all(|&b| (b'!'..=b'~').contains(&b)) {
        Ok(())
    } else {
        Err(Reply::error(
            "ERR Client names cannot contain spaces, newlines or special characters.",
        ))
    }
}

pub(crate) fn client(ctx: &mut Ctx<'_>, a: &[Vec<u8>]) -> Outcome {
    let sub = arg(a, 1)?;
    let rest = a.get(2..).unwrap_or_default();
    let wrong = || {
        Reply::error(format!(
            "ERR wrong number of arguments for 'client|{}' command",
            args::lower(sub)
        ))
    };
    match (args::lower(sub).as_str(), rest) {
        ("id", []) => Ok(Reply::Int(
            i64::try_from(ctx.session.id).unwrap_or(i64::MAX),
        )),
        ("getname", []) => Ok(Reply::bulk_or_nil(ctx.session.name.clone())),
        ("setname", [name]) => {
            valid_name(name)?;
            ctx.session.name = if name.is_empty() {
                None
            } else {
                Some(name.clone())
            };
            Ok(Reply::Ok)
        }
        ("setinfo", [attr, value]) => {
            if is(attr, "lib-name") {
                valid_name(value)?;
                ctx.session.lib_name = Some(value.clone());
            } else if is(attr, "lib-ver") {
                valid_name(value)?;
                ctx.session.lib_ver = Some(value.clone());
            } else {
                return Err(Reply::error(format!(
                    "ERR Unrecognized option '{}'",
                    String::from_utf8_lossy(attr)
                )));
            }
            Ok(Reply::Ok)
        }
        ("info", []) => Ok(Reply::Bulk(describe(ctx, "client|info").into_bytes())),
        ("list", _) => {
            // `@admin` in Redis: it shows every client's address and name.
            if errors::admin_subcommand("client", "list") {
                errors::require_admin(ctx, "client|list")?;
            }
            Ok(Reply::Bulk(
                ctx.shared.client_list(ctx.session).into_bytes(),
            ))
        }
        ("no-evict" | "no-touch", [_]) => Ok(Reply::Ok),
        ("id" | "getname" | "setname" | "setinfo" | "info", _) => Err(wrong()),
        _ => Err(errors::unknown_subcommand(sub, "client")),
    }
}

/// This connection as ACL LOG's `client-info` shows it: its CLIENT INFO line, without
/// the newline, naming `cmd` as the command running.
pub(crate) fn client_info(ctx: &Ctx<'_>, cmd: &str) -> String {
    describe(ctx, cmd).trim_end().to_string()
}

/// This connection as a line of CLIENT INFO, with every field of Redis's, in its order, so
/// clients that parse the line (redis-py's `client_info`, ACL LOG's `client-info`) find
/// each one. Fields Cairn does not track (the file descriptor, buffer sizes and memory)
/// read 0; `sub`, `psub` and `ssub` are 0 as Cairn serves no channels; `idle` is 0 as the
/// connection is running `cmd`.
fn describe(ctx: &Ctx<'_>, cmd: &str) -> String {
    let s = &*ctx.session;
    let text = |v: &Option<Vec<u8>>| {
        v.as_deref()
            .map(String::from_utf8_lossy)
            .unwrap_or_default()
            .into_owned()
    };
    let (addr, age) = ctx
        .shared
        .clients
        .lock()
        .get(&s.id)
        .map(|c| (c.addr.clone(), c.since.elapsed().as_secs()))
        .unwrap_or_default();
    let (flags, multi) = match &s.multi {
        Some(m) => ("x", i64::try_from(m.queued.len()).unwrap_or(i64::MAX)),
        None => ("N", -1),
    };
    format!(
        "id={} addr={addr} laddr= fd=0 name={} age={age} idle=0 flags={flags} db={} sub=0 \
         psub=0 ssub=0 multi={multi} qbuf=0 qbuf-free=0 argv-mem=0 multi-mem=0 rbs=0 rbp=0 \
         obl=0 oll=0 omem=0 tot-mem=0 events=r cmd={cmd} user={} redir=-1 resp={} \
         lib-name={} lib-ver={}\n",
        s.id,
        text(&s.name),
        s.db,
        s.user.name,
        if s.protocol == Protocol::Resp3 { 3 } else { 2 },
        text(&s.lib_name),
        text(&s.lib_ver)
    )
}
