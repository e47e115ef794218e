//! What the command handlers share to reach the store: the selected keyspace, reading an
//! entry with its expiry, writing with the server's durability, the clock, and argument
//! access that cannot index out of range.
//!
//! Expiry times are Unix milliseconds, as the engine stores them ([`cairn::Head`]); the
//! engine hides an expired entry from every read, so the server never sees one.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use cairn::{EntryOptions, Keyspace};

use super::errors;
use super::Ctx;
use crate::resp::Reply;

/// An entry's value and expiry.
pub(crate) struct Entry {
    pub(crate) value: Vec<u8>,
    pub(crate) expires_at: Option<u64>,
}

impl From<cairn::Error> for Reply {
    fn from(e: cairn::Error) -> Reply {
        errors::engine(&e)
    }
}

/// The keyspace of the selected database.
pub(crate) fn keyspace<'a>(ctx: &Ctx<'a>) -> Result<&'a Keyspace, Reply> {
    ctx.shared
        .keyspaces
        .get(ctx.session.db)
        .ok_or_else(|| Reply::error("ERR DB index is out of range"))
}

/// Argument `i` (the name is 0). Arity is checked before handlers run, so a missing
/// argument is a bug reported as a syntax error rather than a panic.
pub(crate) fn arg(args: &[Vec<u8>], i: usize) -> Result<&[u8], Reply> {
    args.get(i).map(Vec::as_slice).ok_or_else(errors::syntax)
}

/// Argument `i` as an integer (`ERR value is not an integer or out of range`).
pub(crate) fn int_arg(args: &[Vec<u8>], i: usize) -> Result<i64, Reply> {
    super::args::int(arg(args, i)?).ok_or_else(errors::not_integer)
}

/// The value and expiry of `key`: two point reads (a range read of one key would walk
/// every version the memtable holds of it). The caller holds the key's stripe, so no
/// write of this server comes between them.
pub(crate) fn entry(ks: &Keyspace, key: &[u8]) -> Result<Option<Entry>, Reply> {
    let Some(head) = ks.head(key)? else {
        return Ok(None);
    };
    Ok(ks.get(key)?.map(|value| Entry {
        value,
        expires_at: head.expires_at,
    }))
}

/// Writes `key` = `value` expiring at `expires_at` (Unix ms) with the server's
/// durability; returns once the write is as durable as that promises.
pub(crate) fn put(
    ctx: &Ctx<'_>,
    ks: &Keyspace,
    key: &[u8],
    value: &[u8],
    expires_at: Option<u64>,
) -> Result<(), Reply> {
    let mut options = EntryOptions::new().durability(ctx.shared.config.durability);
    if let Some(ms) = expires_at {
        options = options.expires_at(UNIX_EPOCH + Duration::from_millis(ms));
    }
    ks.insert_entry(key, value, &options).map_err(Reply::from)
}

/// Removes `key` with the server's durability.
pub(crate) fn remove(ctx: &Ctx<'_>, ks: &Keyspace, key: &[u8]) -> Result<(), Reply> {
    ks.remove_with(key, Some(ctx.shared.config.durability))
        .map_err(Reply::from)
}

/// The current time in Unix milliseconds.
pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}
