//! ACL WHOAMI, ACL LIST and ACL USERS: the users a server knows (`crate::users`).
//! Users come from the users file and `--requirepass`; ACL SETUSER and the other
//! changing subcommands are not served. ACL LIST shows each user's rules, never a
//! password or its hash, and like every `admin` command is refused to read-only users.

use super::args;
use super::store::arg;
use super::{errors, Ctx, Outcome};
use crate::resp::Reply;

pub(crate) fn acl(ctx: &mut Ctx<'_>, a: &[Vec<u8>]) -> Outcome {
    let sub = arg(a, 1)?;
    let name = args::lower(sub);
    let rest = a.get(2..).unwrap_or_default();
    if !rest.is_empty() && ["whoami", "list", "users"].contains(&name.as_str()) {
        return Err(Reply::error(format!(
            "ERR wrong number of arguments for 'acl|{name}' command"
        )));
    }
    let listing = name == "list" || name == "users";
    if listing && !ctx.session.can_write() {
        return Err(errors::no_permission(
            &ctx.session.user.name,
            &format!("acl|{name}"),
        ));
    }
    let mut users: Vec<_> = ctx
        .shared
        .users
        .iter()
        .map(|u| (u.name.clone(), u.acl_line()))
        .collect();
    if ctx.shared.users.find("default").is_none() {
        // The implicit default user: open without passwords, else unusable (the users
        // file names no `default` and there is no --requirepass).
        let line = if ctx.shared.auth_required() {
            "user default off nopass ~* &* +@all"
        } else {
            "user default on nopass ~* &* +@all"
        };
        users.push(("default".into(), line.into()));
    }
    users.sort();
    match name.as_str() {
        "whoami" => Ok(Reply::Bulk(ctx.session.user.name.clone().into_bytes())),
        "list" => Ok(Reply::Array(
            users.iter().map(|(_, line)| Reply::text(line)).collect(),
        )),
        "users" => Ok(Reply::Array(
            users.iter().map(|(name, _)| Reply::text(name)).collect(),
        )),
        _ => Err(errors::unknown_subcommand(sub, "acl")),
    }
}
