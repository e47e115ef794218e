//! ACL: the server's users (`crate::users`). WHOAMI, LIST, USERS, GETUSER, SETUSER,
//! DELUSER, SAVE, LOAD, LOG, CAT, GENPASS and DRYRUN, with Redis's replies and error
//! texts.
//!
//! * SETUSER applies Redis's rules that map onto Cairn's user model (`users/rules.rs`
//!   lists them) and refuses every other rule; it is atomic (a refused rule changes
//!   nothing), and a new user starts off, with no password and no permission.
//! * DELUSER deletes users (never `default`); their connections are closed.
//! * A change of a user's permissions applies to its connections from their next
//!   command (`users/registry.rs`).
//! * SAVE writes the users to the users file (`--users`), hashed passwords only, and
//!   LOAD reads it again, atomically; without a users file both are refused as Redis
//!   refuses them without an ACL file.
//!
//! * LOG shows the newest refused authentications, commands and keys (`users/log.rs`),
//!   10 unless a count is given, in Redis 7.2's shape; LOG RESET empties it.
//! * CAT lists Redis's categories and Cairn's commands in each (`categories.rs`);
//!   GENPASS gives a random password from the operating system (256 bits unless told);
//!   DRYRUN tells whether a user may run a command, checking as the dispatcher would.
//!
//! Every subcommand but WHOAMI, CAT and GENPASS needs the `admin` permission (as Redis's
//! `@admin`, `errors::admin_subcommand`): a read-only user is refused with NOPERM. LIST and GETUSER show passwords only as their
//! SHA-256 (`#<hex>`), as Redis does.

use super::args;
use super::categories::{commands_in, CATEGORIES};
use super::store::arg;
use super::{errors, Ctx, Outcome};
use crate::resp::Reply;
use crate::users::{self, SetError};

/// Redis's refusal of ACL SAVE and ACL LOAD on a server without an ACL file.
const NO_FILE: &str = "ERR This Redis instance is not configured to use an ACL file. Give cairn serve a users file (--users FILE) to save users to and load them from.";

pub(crate) fn acl(ctx: &mut Ctx<'_>, a: &[Vec<u8>]) -> Outcome {
    let sub = arg(a, 1)?;
    let name = args::lower(sub);
    let rest = a.get(2..).unwrap_or_default();
    let arity_ok = match name.as_str() {
        "whoami" | "list" | "users" | "save" | "load" => rest.is_empty(),
        "getuser" => rest.len() == 1,
        "setuser" | "deluser" => !rest.is_empty(),
        "cat" | "genpass" | "log" => rest.len() <= 1,
        "dryrun" => rest.len() >= 2,
        _ => return Err(errors::unknown_subcommand(sub, "acl")),
    };
    if !arity_ok {
        return Err(Reply::error(match name.as_str() {
            // Redis words CAT's and GENPASS's arity errors as unknown subcommands.
            "cat" | "genpass" | "log" => format!(
                "ERR unknown subcommand or wrong number of arguments for '{}'. Try ACL HELP.",
                name.to_ascii_uppercase()
            ),
            _ => format!("ERR wrong number of arguments for 'acl|{name}' command"),
        }));
    }
    if errors::admin_subcommand("acl", &name) {
        errors::require_admin(ctx, &format!("acl|{name}"))?;
    }
    let registry = &ctx.shared.users;
    match name.as_str() {
        "whoami" => Ok(Reply::Bulk(ctx.session.user.name.clone().into_bytes())),
        "cat" => cat(rest.first()),
        "log" => log(ctx, rest.first()),
        "genpass" => genpass(rest.first()),
        "dryrun" => {
            let Some((user, command)) = rest.split_first() else {
                return Err(errors::wrong_args("acl|dryrun"));
            };
            let users = registry.read();
            let found = std::str::from_utf8(user).ok().and_then(|n| users.find(n));
            let Some(found) = found else {
                return Err(Reply::error(format!(
                    "ERR User '{}' not found",
                    String::from_utf8_lossy(user)
                )));
            };
            Ok(match super::dry_run(found, command)? {
                None => Reply::Ok,
                Some(why) => Reply::text(why),
            })
        }
        "list" => Ok(Reply::Array(
            registry
                .read()
                .sorted()
                .into_iter()
                .map(|u| Reply::text(users::describe(u)))
                .collect(),
        )),
        "users" => Ok(Reply::Array(
            registry
                .read()
                .sorted()
                .into_iter()
                .map(|u| Reply::text(&u.name))
                .collect(),
        )),
        "getuser" => Ok(getuser(ctx, arg(a, 2)?)),
        "setuser" => {
            let user = arg(a, 2)?;
            match registry.set_user(user, a.get(3..).unwrap_or_default()) {
                Ok(()) => Ok(Reply::Ok),
                Err(SetError::Name(why)) => Err(Reply::error(why)),
                Err(SetError::Rule(e)) => Err(Reply::error(format!("ERR {e}"))),
            }
        }
        "deluser" => {
            let deleted = registry.delete(rest).map_err(Reply::error)?;
            // A client that deleted its own user gets the reply, then is closed.
            if registry.current(ctx.session.user.id).0.is_none() {
                ctx.session.close = true;
            }
            Ok(Reply::Int(i64::try_from(deleted).unwrap_or(i64::MAX)))
        }
        "save" => {
            let path = ctx.shared.config.users_file.as_deref();
            let path = path.ok_or_else(|| Reply::error(NO_FILE))?;
            registry
                .save(path)
                .map_err(|e| Reply::error(format!("ERR There was an error trying to save the ACLs. Please check the server logs for more information: {e}")))?;
            Ok(Reply::Ok)
        }
        _ => {
            let path = ctx.shared.config.users_file.as_deref();
            let path = path.ok_or_else(|| Reply::error(NO_FILE))?;
            let requirepass = ctx.shared.config.requirepass.as_deref();
            registry
                .load(path, requirepass)
                .map_err(|e| Reply::error(format!("ERR Error loading ACLs: {e}")))?;
            Ok(Reply::Ok)
        }
    }
}

/// ACL CAT: every category Redis has, or the commands of one (`super::categories`).
fn cat(category: Option<&Vec<u8>>) -> Outcome {
    let texts = |items: &[&str]| Reply::Array(items.iter().map(Reply::text).collect());
    let Some(category) = category else {
        return Ok(texts(CATEGORIES));
    };
    let name = String::from_utf8_lossy(category);
    match commands_in(&name) {
        Some(commands) => Ok(texts(&commands)),
        None => Err(Reply::error(format!("ERR Unknown category '{name}'"))),
    }
}

/// ACL LOG: the newest `count` entries (10 unless told), or RESET.
fn log(ctx: &Ctx<'_>, arg: Option<&Vec<u8>>) -> Outcome {
    let count = match arg {
        None => 10,
        Some(a) if args::lower(a) == "reset" => {
            ctx.shared.acl_log.reset();
            return Ok(Reply::Ok);
        }
        // A negative count shows nothing, as in Redis.
        Some(a) => usize::try_from(args::int(a).ok_or_else(errors::not_integer)?).unwrap_or(0),
    };
    let now = std::time::Instant::now();
    let text = |s: &str| Reply::text(s);
    let int = |n: u64| Reply::Int(i64::try_from(n).unwrap_or(i64::MAX));
    let entries = ctx.shared.acl_log.newest(count);
    Ok(Reply::Array(
        entries
            .iter()
            .map(|e| {
                let age = now.duration_since(e.updated).as_secs_f64();
                Reply::Map(vec![
                    (text("count"), int(e.count)),
                    (text("reason"), text(e.reason.name())),
                    (text("context"), text(e.context)),
                    (text("object"), text(&e.object)),
                    (text("username"), text(&e.username)),
                    (text("age-seconds"), Reply::Double(age)),
                    (text("client-info"), text(&e.client_info)),
                    (text("entry-id"), int(e.id)),
                    (text("timestamp-created"), int(e.created_ms)),
                    (text("timestamp-last-updated"), int(e.updated_ms)),
                ])
            })
            .collect(),
    ))
}

/// The most bits ACL GENPASS gives (Redis's bound).
const GENPASS_MAX_BITS: i64 = 4096;

/// ACL GENPASS: `bits` (default 256) of the operating system's randomness, as lower-case
/// hex, one character per 4 bits rounded up.
fn genpass(bits: Option<&Vec<u8>>) -> Outcome {
    let bits = match bits {
        None => 256,
        Some(b) => args::int(b).ok_or_else(errors::not_integer)?,
    };
    if !(1..=GENPASS_MAX_BITS).contains(&bits) {
        return Err(Reply::error(
            "ERR ACL GENPASS argument must be the number of bits for the output password, a positive number up to 4096",
        ));
    }
    let chars = usize::try_from(bits).unwrap_or(0).div_ceil(4);
    let mut random = vec![0u8; chars.div_ceil(2)];
    getrandom::fill(&mut random)
        .map_err(|e| Reply::error(format!("ERR no randomness from the operating system: {e}")))?;
    let mut hex: String = random.iter().map(|b| format!("{b:02x}")).collect();
    hex.truncate(chars);
    Ok(Reply::Bulk(hex.into_bytes()))
}

/// ACL GETUSER's reply, as Redis shapes it (a map: flags, passwords, commands, keys,
/// channels, selectors), or nil for an unknown user.
fn getuser(ctx: &Ctx<'_>, name: &[u8]) -> Reply {
    let users = ctx.shared.users.read();
    let Some(user) = std::str::from_utf8(name).ok().and_then(|n| users.find(n)) else {
        return Reply::Nil;
    };
    let texts = |items: Vec<String>| Reply::Array(items.iter().map(Reply::text).collect());
    let flags = users::flags(user).into_iter().map(String::from).collect();
    Reply::Map(vec![
        (Reply::text("flags"), texts(flags)),
        (
            Reply::text("passwords"),
            texts(user.password_hashes().collect()),
        ),
        (
            Reply::text("commands"),
            Reply::text(users::command_rules(user)),
        ),
        (
            Reply::text("keys"),
            Reply::text(if user.all_keys { "~*" } else { "" }),
        ),
        (
            Reply::text("channels"),
            Reply::text(if user.all_channels { "&*" } else { "" }),
        ),
        (Reply::text("selectors"), Reply::Array(Vec::new())),
    ])
}
