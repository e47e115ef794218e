//! String commands: GET, SET (EX, PX, EXAT, PXAT, NX, XX, KEEPTTL, GET), SETNX, SETEX,
//! PSETEX, GETSET, GETDEL, MGET, MSET, APPEND, STRLEN, INCR, DECR, INCRBY, DECRBY.
//!
//! Every value is a Redis string, so WRONGTYPE never arises. A write that depends on
//! what it reads runs as one engine transaction ([`Ctx::write`]). INCR and friends keep
//! Redis semantics: the value must be the decimal text of an `i64` (Redis's rules, see
//! `args::int`), a missing key counts as 0, the result is stored as decimal text, and
//! the key's expiry is kept. Outside MULTI a counter command normally goes through
//! `coalesce` (an engine `Batch::incr`, whose rules are the same); the handlers here
//! compute the sum in the command's transaction (inside EXEC, or when `coalesce` does not
//! take the request).

use super::args::{self, is};
use super::store::{arg, int_arg, now_ms};
use super::{errors, Ctx, Outcome};
use crate::resp::Reply;

pub(crate) fn get(ctx: &mut Ctx<'_>, a: &[Vec<u8>]) -> Outcome {
    let value = ctx.view()?.get(arg(a, 1)?)?;
    ctx.shared.stats.lookup(value.is_some());
    Ok(Reply::bulk_or_nil(value))
}

/// When a SET writes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Condition {
    Always,
    IfAbsent,
    IfPresent,
}

/// The expiry a SET gives.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Expiry {
    None,
    At(u64),
    Keep,
}

pub(crate) fn set(ctx: &mut Ctx<'_>, a: &[Vec<u8>]) -> Outcome {
    let mut condition = Condition::Always;
    let mut expiry = Expiry::None;
    let mut get_old = false;
    let mut i = 3;
    while let Some(opt) = a.get(i) {
        let has_expiry = expiry != Expiry::None;
        if is(opt, "nx") && condition == Condition::Always {
            condition = Condition::IfAbsent;
        } else if is(opt, "xx") && condition == Condition::Always {
            condition = Condition::IfPresent;
        } else if is(opt, "get") {
            get_old = true;
        } else if is(opt, "keepttl") && !has_expiry {
            expiry = Expiry::Keep;
        } else if !has_expiry && ["ex", "px", "exat", "pxat"].iter().any(|w| is(opt, w)) {
            i += 1;
            let n = int_arg(a, i).map_err(|e| {
                if a.get(i).is_none() {
                    errors::syntax()
                } else {
                    e
                }
            })?;
            expiry = Expiry::At(expire_at(&args::lower(opt), n, "set")?);
        } else {
            return Err(errors::syntax());
        }
        i += 1;
    }
    set_with(ctx, arg(a, 1)?, arg(a, 2)?, condition, expiry, get_old)
}

/// The absolute expiry (Unix ms) of `EX n`, `PX n`, `EXAT n` or `PXAT n`; Redis refuses
/// a non-positive time and one that overflows.
fn expire_at(unit: &str, n: i64, command: &str) -> Result<u64, Reply> {
    let invalid = || errors::invalid_expire(command);
    if n <= 0 {
        return Err(invalid());
    }
    let n = u64::try_from(n).map_err(|_| invalid())?;
    let ms = match unit {
        "ex" => n.checked_mul(1000).and_then(|d| d.checked_add(now_ms())),
        "px" => n.checked_add(now_ms()),
        "exat" => n.checked_mul(1000),
        _ => Some(n),
    };
    ms.filter(|&ms| ms <= i64::MAX as u64).ok_or_else(invalid)
}

fn set_with(
    ctx: &mut Ctx<'_>,
    key: &[u8],
    value: &[u8],
    condition: Condition,
    expiry: Expiry,
    get_old: bool,
) -> Outcome {
    let reads = condition != Condition::Always || expiry == Expiry::Keep || get_old;
    if !reads && ctx.tx.is_none() {
        // A blind write needs no transaction: a command's transaction that reads and
        // writes the key fails its commit if this write lands after its snapshot.
        let expires_at = match expiry {
            Expiry::At(ms) => Some(ms),
            Expiry::None | Expiry::Keep => None,
        };
        put_blind(ctx, key, value, expires_at)?;
        return Ok(Reply::Ok);
    }
    let (old, write) = ctx.write(|w| {
        let old = if reads { w.view().entry(key)? } else { None };
        let exists = old.is_some();
        let write = match condition {
            Condition::Always => true,
            Condition::IfAbsent => !exists,
            Condition::IfPresent => exists,
        };
        if write {
            let expires_at = match expiry {
                Expiry::None => None,
                Expiry::At(ms) => Some(ms),
                Expiry::Keep => old.as_ref().and_then(|e| e.expires_at),
            };
            w.put(key, value, expires_at);
        }
        Ok((old, write))
    })?;
    Ok(match (get_old, write) {
        (true, _) => Reply::bulk_or_nil(old.map(|e| e.value)),
        (false, true) => Reply::Ok,
        (false, false) => Reply::Nil,
    })
}

/// Writes `key` = `value` straight to the keyspace with the server's durability.
fn put_blind(
    ctx: &Ctx<'_>,
    key: &[u8],
    value: &[u8],
    expires_at: Option<u64>,
) -> Result<(), Reply> {
    let ks = super::keyspace(ctx)?;
    let mut options = cairn::EntryOptions::new().durability(ctx.shared.config.durability);
    if let Some(ms) = expires_at {
        options = options.expires_at(std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms));
    }
    ks.insert_entry(key, value, &options).map_err(Reply::from)
}

pub(crate) fn setnx(ctx: &mut Ctx<'_>, a: &[Vec<u8>]) -> Outcome {
    let reply = set_with(
        ctx,
        arg(a, 1)?,
        arg(a, 2)?,
        Condition::IfAbsent,
        Expiry::None,
        false,
    )?;
    Ok(Reply::Int(i64::from(reply == Reply::Ok)))
}

pub(crate) fn setex(ctx: &mut Ctx<'_>, a: &[Vec<u8>]) -> Outcome {
    let at = expire_at("ex", int_arg(a, 2)?, "setex")?;
    set_with(
        ctx,
        arg(a, 1)?,
        arg(a, 3)?,
        Condition::Always,
        Expiry::At(at),
        false,
    )
}

pub(crate) fn psetex(ctx: &mut Ctx<'_>, a: &[Vec<u8>]) -> Outcome {
    let at = expire_at("px", int_arg(a, 2)?, "psetex")?;
    set_with(
        ctx,
        arg(a, 1)?,
        arg(a, 3)?,
        Condition::Always,
        Expiry::At(at),
        false,
    )
}

pub(crate) fn getset(ctx: &mut Ctx<'_>, a: &[Vec<u8>]) -> Outcome {
    set_with(
        ctx,
        arg(a, 1)?,
        arg(a, 2)?,
        Condition::Always,
        Expiry::None,
        true,
    )
}

pub(crate) fn getdel(ctx: &mut Ctx<'_>, a: &[Vec<u8>]) -> Outcome {
    let key = arg(a, 1)?;
    let value = ctx.write(|w| {
        let value = w.view().get(key)?;
        if value.is_some() {
            w.remove(key);
        }
        Ok(value)
    })?;
    ctx.shared.stats.lookup(value.is_some());
    Ok(Reply::bulk_or_nil(value))
}

pub(crate) fn mget(ctx: &mut Ctx<'_>, a: &[Vec<u8>]) -> Outcome {
    // One batched read: the keys' memory misses overlap, and all are read at one point.
    let values = ctx.view()?.get_many(a.get(1..).unwrap_or_default())?;
    let out = values
        .into_iter()
        .map(|value| {
            ctx.shared.stats.lookup(value.is_some());
            Reply::bulk_or_nil(value)
        })
        .collect();
    Ok(Reply::Array(out))
}

/// MSET writes all pairs in one batch: atomic, and one log record (one fsync in `sync`).
/// The writes are blind (they read nothing), so they need no transaction outside EXEC.
pub(crate) fn mset(ctx: &mut Ctx<'_>, a: &[Vec<u8>]) -> Outcome {
    let pairs = a.get(1..).unwrap_or_default();
    if pairs.len() % 2 != 0 {
        return Err(errors::wrong_args("mset"));
    }
    if ctx.tx.is_some() {
        return ctx.write(|w| {
            for pair in pairs.chunks_exact(2) {
                if let [key, value] = pair {
                    w.put(key, value, None);
                }
            }
            Ok(Reply::Ok)
        });
    }
    let ks = super::keyspace(ctx)?;
    let mut batch = ctx.shared.db.batch();
    for pair in pairs.chunks_exact(2) {
        if let [key, value] = pair {
            batch.insert(ks, key, value);
        }
    }
    batch.commit_with(Some(ctx.shared.config.durability))?;
    Ok(Reply::Ok)
}

pub(crate) fn append(ctx: &mut Ctx<'_>, a: &[Vec<u8>]) -> Outcome {
    let key = arg(a, 1)?;
    let tail = arg(a, 2)?;
    let max = ctx.shared.config.limits.max_bulk_len;
    let len = ctx.write(|w| {
        let (mut value, expires_at) = match w.view().entry(key)? {
            Some(e) => (e.value, e.expires_at),
            None => (Vec::new(), None),
        };
        value.extend_from_slice(tail);
        if value.len() > max {
            return Err(Reply::error(
                "ERR string exceeds maximum allowed size (proto-max-bulk-len)",
            ));
        }
        w.put(key, &value, expires_at);
        Ok(value.len())
    })?;
    Ok(Reply::Int(i64::try_from(len).unwrap_or(i64::MAX)))
}

pub(crate) fn strlen(ctx: &mut Ctx<'_>, a: &[Vec<u8>]) -> Outcome {
    let len = ctx.view()?.head(arg(a, 1)?)?.map_or(0, |h| h.value_len);
    Ok(Reply::Int(i64::try_from(len).unwrap_or(i64::MAX)))
}

pub(crate) fn incr(ctx: &mut Ctx<'_>, a: &[Vec<u8>]) -> Outcome {
    add(ctx, arg(a, 1)?, 1)
}

pub(crate) fn decr(ctx: &mut Ctx<'_>, a: &[Vec<u8>]) -> Outcome {
    add(ctx, arg(a, 1)?, -1)
}

pub(crate) fn incrby(ctx: &mut Ctx<'_>, a: &[Vec<u8>]) -> Outcome {
    add(ctx, arg(a, 1)?, int_arg(a, 2)?)
}

pub(crate) fn decrby(ctx: &mut Ctx<'_>, a: &[Vec<u8>]) -> Outcome {
    let delta = int_arg(a, 2)?;
    let negated = delta
        .checked_neg()
        .ok_or_else(|| Reply::error("ERR decrement would overflow"))?;
    add(ctx, arg(a, 1)?, negated)
}

fn add(ctx: &mut Ctx<'_>, key: &[u8], delta: i64) -> Outcome {
    let new = ctx.write(|w| {
        let current = w.view().entry(key)?;
        let (old, expires_at) = match &current {
            Some(e) => (
                args::int(&e.value).ok_or_else(errors::not_integer)?,
                e.expires_at,
            ),
            None => (0, None),
        };
        let new = old.checked_add(delta).ok_or_else(errors::overflow)?;
        w.put(key, new.to_string().as_bytes(), expires_at);
        Ok(new)
    })?;
    Ok(Reply::Int(new))
}
