//! The error replies, worded exactly as Redis words them (clients and tests match on the
//! text).

use crate::resp::Reply;

pub(crate) fn syntax() -> Reply {
    Reply::error("ERR syntax error")
}

pub(crate) fn not_integer() -> Reply {
    Reply::error("ERR value is not an integer or out of range")
}

pub(crate) fn overflow() -> Reply {
    Reply::error("ERR increment or decrement would overflow")
}

pub(crate) fn wrong_args(name: &str) -> Reply {
    Reply::error(format!(
        "ERR wrong number of arguments for '{name}' command"
    ))
}

pub(crate) fn invalid_expire(name: &str) -> Reply {
    Reply::error(format!("ERR invalid expire time in '{name}' command"))
}

pub(crate) fn no_auth() -> Reply {
    Reply::error("NOAUTH Authentication required.")
}

/// True if subcommand `sub` (lower case) of `command` is in Redis's `@admin` category:
/// only users with admin rights may run it. The one table of such subcommands, used by
/// their handlers and by ACL DRYRUN (whole commands carry the `admin` flag instead).
pub(crate) fn admin_subcommand(command: &str, sub: &str) -> bool {
    match command {
        "acl" => !matches!(sub, "whoami" | "cat" | "genpass"),
        "client" => sub == "list",
        "config" => true,
        _ => false,
    }
}

/// Refuses a subcommand in Redis's `@admin` category (`name`: `config|get`, ...) to a user
/// without admin rights, as the dispatcher refuses whole commands flagged `admin`.
pub(crate) fn require_admin(ctx: &super::Ctx<'_>, name: &str) -> Result<(), Reply> {
    if ctx.session.user.may_run(false, true) {
        Ok(())
    } else {
        super::log_refusal(ctx, crate::users::Reason::Command, name, name);
        Err(no_permission(&ctx.session.user.name, name))
    }
}

/// A user refused a command (`name`: its lower-case name, `acl|list` for a subcommand).
pub(crate) fn no_permission(user: &str, name: &str) -> Reply {
    Reply::error(format!(
        "NOPERM User {user} has no permissions to run the '{name}' command"
    ))
}

/// A user without key permissions refused a command naming keys.
pub(crate) fn no_key_permission() -> Reply {
    Reply::error("NOPERM No permissions to access a key")
}

pub(crate) fn wrong_pass() -> Reply {
    Reply::error("WRONGPASS invalid username-password pair or user is disabled.")
}

pub(crate) fn unknown_subcommand(sub: &[u8], command: &str) -> Reply {
    Reply::error(format!(
        "ERR unknown subcommand '{}'. Try {} HELP.",
        String::from_utf8_lossy(truncate(sub, 128)),
        command.to_ascii_uppercase()
    ))
}

/// `ERR unknown command 'foo', with args beginning with: 'a' 'b' ` (Redis quotes at most
/// 128 bytes of the name and 128 bytes of arguments).
pub(crate) fn unknown_command(args: &[Vec<u8>]) -> Reply {
    let name = args.first().map(|n| truncate(n, 128)).unwrap_or_default();
    let mut list = String::new();
    for arg in args.iter().skip(1) {
        if list.len() >= 128 {
            break;
        }
        let room = 128 - list.len();
        list.push('\'');
        list.push_str(&String::from_utf8_lossy(truncate(arg, room)));
        list.push_str("' ");
    }
    Reply::error(format!(
        "ERR unknown command '{}', with args beginning with: {list}",
        String::from_utf8_lossy(name)
    ))
}

/// An engine error as a reply: the engine's sentence after `ERR`.
pub(crate) fn engine(e: &cairn::Error) -> Reply {
    Reply::error(format!("ERR {e}"))
}

fn truncate(bytes: &[u8], max: usize) -> &[u8] {
    bytes.get(..max.min(bytes.len())).unwrap_or_default()
}
