//! Key commands: DEL, UNLINK, EXISTS, EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT, TTL, PTTL,
//! PERSIST, TYPE, SCAN, DBSIZE, FLUSHDB, FLUSHALL.
//!
//! SCAN walks the keyspace in key order; its cursor names the key to resume after
//! (`crate::cursor`). A key written or removed during a scan is returned or not, as in
//! Redis; a key present from start to end is returned exactly once (Redis promises at
//! least once). DBSIZE counts exactly, which costs a pass over the keyspace (an LSM tree
//! keeps no count). FLUSHDB is one range tombstone, whatever the number of keys.

use std::collections::HashSet;
use std::ops::Bound;

use super::args::{self, is};
use super::store::{arg, int_arg, keyspace, now_ms, View};
use super::{errors, Ctx, Outcome};
use crate::glob;
use crate::resp::Reply;

/// The most keys one SCAN call examines, whatever COUNT asks.
const MAX_SCAN_COUNT: usize = 100_000;

pub(crate) fn del(ctx: &mut Ctx<'_>, a: &[Vec<u8>]) -> Outcome {
    let keys = a.get(1..).unwrap_or_default();
    let count = ctx.write(|w| {
        let mut gone: HashSet<&[u8]> = HashSet::new();
        for key in keys {
            if !gone.contains(key.as_slice()) && w.view().contains(key)? {
                gone.insert(key);
                w.remove(key);
            }
        }
        Ok(gone.len())
    })?;
    Ok(Reply::Int(i64::try_from(count).unwrap_or(i64::MAX)))
}

pub(crate) fn exists(ctx: &mut Ctx<'_>, a: &[Vec<u8>]) -> Outcome {
    let view = ctx.view()?;
    let mut n = 0i64;
    for key in a.iter().skip(1) {
        if view.contains(key)? {
            n += 1;
        }
    }
    Ok(Reply::Int(n))
}

pub(crate) fn expire(ctx: &mut Ctx<'_>, a: &[Vec<u8>]) -> Outcome {
    set_expiry(ctx, a, "expire", |n| {
        n.checked_mul(1000)
            .and_then(|ms| ms.checked_add(now_ms() as i64))
    })
}

pub(crate) fn pexpire(ctx: &mut Ctx<'_>, a: &[Vec<u8>]) -> Outcome {
    set_expiry(ctx, a, "pexpire", |n| n.checked_add(now_ms() as i64))
}

pub(crate) fn expireat(ctx: &mut Ctx<'_>, a: &[Vec<u8>]) -> Outcome {
    set_expiry(ctx, a, "expireat", |n| n.checked_mul(1000))
}

pub(crate) fn pexpireat(ctx: &mut Ctx<'_>, a: &[Vec<u8>]) -> Outcome {
    set_expiry(ctx, a, "pexpireat", Some)
}

/// EXPIRE and friends: `to_ms` turns the argument into Unix ms. Options NX, XX, GT, LT
/// as in Redis 7 (a key without expiry counts as an infinite one for GT and LT). An
/// expiry in the past removes the key.
fn set_expiry(
    ctx: &mut Ctx<'_>,
    a: &[Vec<u8>],
    name: &str,
    to_ms: fn(i64) -> Option<i64>,
) -> Outcome {
    let (mut nx, mut xx, mut gt, mut lt) = (false, false, false, false);
    for opt in a.iter().skip(3) {
        match args::lower(opt).as_str() {
            "nx" => nx = true,
            "xx" => xx = true,
            "gt" => gt = true,
            "lt" => lt = true,
            _ => {
                return Err(Reply::error(format!(
                    "ERR Unsupported option {}",
                    String::from_utf8_lossy(opt)
                )))
            }
        }
    }
    if nx && (xx || gt || lt) {
        return Err(Reply::error(
            "ERR NX and XX, GT or LT options at the same time are not compatible",
        ));
    }
    if gt && lt {
        return Err(Reply::error(
            "ERR GT and LT options at the same time are not compatible",
        ));
    }
    let at = to_ms(int_arg(a, 2)?).ok_or_else(|| errors::invalid_expire(name))?;
    let key = arg(a, 1)?;
    ctx.write(|w| {
        let Some(e) = w.view().entry(key)? else {
            return Ok(Reply::Int(0));
        };
        let current = e.expires_at.map(|c| i64::try_from(c).unwrap_or(i64::MAX));
        let allowed = match current {
            None => !xx && !gt,
            Some(c) => !nx && (!gt || at > c) && (!lt || at < c),
        };
        if !allowed {
            return Ok(Reply::Int(0));
        }
        match u64::try_from(at) {
            Ok(at) if at > now_ms() => w.put(key, &e.value, Some(at)),
            _ => w.remove(key),
        }
        Ok(Reply::Int(1))
    })
}

pub(crate) fn ttl(ctx: &mut Ctx<'_>, a: &[Vec<u8>]) -> Outcome {
    remaining(ctx, a, 1000)
}

pub(crate) fn pttl(ctx: &mut Ctx<'_>, a: &[Vec<u8>]) -> Outcome {
    remaining(ctx, a, 1)
}

/// -2 if the key is missing, -1 without expiry, else the time left in `unit_ms` units
/// (rounded to nearest, as Redis's TTL).
fn remaining(ctx: &mut Ctx<'_>, a: &[Vec<u8>], unit_ms: u64) -> Outcome {
    Ok(Reply::Int(match ctx.view()?.head(arg(a, 1)?)? {
        None => -2,
        Some(h) => match h.expires_at {
            None => -1,
            Some(at) => {
                let left = at.saturating_sub(now_ms());
                i64::try_from((left + unit_ms / 2) / unit_ms).unwrap_or(i64::MAX)
            }
        },
    }))
}

pub(crate) fn persist(ctx: &mut Ctx<'_>, a: &[Vec<u8>]) -> Outcome {
    let key = arg(a, 1)?;
    ctx.write(|w| match w.view().entry(key)? {
        Some(e) if e.expires_at.is_some() => {
            w.put(key, &e.value, None);
            Ok(Reply::Int(1))
        }
        _ => Ok(Reply::Int(0)),
    })
}

pub(crate) fn kind(ctx: &mut Ctx<'_>, a: &[Vec<u8>]) -> Outcome {
    Ok(Reply::simple(if ctx.view()?.contains(arg(a, 1)?)? {
        "string"
    } else {
        "none"
    }))
}

pub(crate) fn scan(ctx: &mut Ctx<'_>, a: &[Vec<u8>]) -> Outcome {
    let invalid = || Reply::error("ERR invalid cursor");
    let cursor: u64 = std::str::from_utf8(arg(a, 1)?)
        .ok()
        .and_then(|t| t.parse().ok())
        .ok_or_else(invalid)?;
    let (mut pattern, mut count, mut type_ok) = (None, 10usize, true);
    let mut i = 2;
    while let Some(opt) = a.get(i) {
        let value = a.get(i + 1).ok_or_else(errors::syntax)?;
        if is(opt, "match") {
            pattern = Some(value.as_slice());
        } else if is(opt, "count") {
            count = args::int(value)
                .ok_or_else(errors::not_integer)
                .and_then(|n| {
                    usize::try_from(n)
                        .ok()
                        .filter(|&n| n >= 1)
                        .ok_or_else(errors::syntax)
                })?;
        } else if is(opt, "type") {
            type_ok = is(value, "string");
        } else {
            return Err(errors::syntax());
        }
        i += 2;
    }
    let db = ctx.session.db;
    let start = if cursor == 0 {
        Bound::Unbounded
    } else {
        Bound::Excluded(ctx.shared.cursors.resume(db, cursor).ok_or_else(invalid)?)
    };
    let view = ctx.view()?;
    let mut heads = view.keys_after(start);
    let mut keys = Vec::new();
    let mut last = None;
    for _ in 0..count.min(MAX_SCAN_COUNT) {
        let Some(item) = heads.next() else {
            last = None;
            break;
        };
        let key = item?;
        if type_ok && pattern.is_none_or(|p| glob::matches(p, &key)) {
            keys.push(Reply::Bulk(key.clone()));
        }
        last = Some(key);
    }
    let next = match last {
        Some(key) if heads.next().is_some() => ctx.shared.cursors.save(db, key),
        _ => 0,
    };
    Ok(Reply::Array(vec![
        Reply::text(next.to_string()),
        Reply::Array(keys),
    ]))
}

pub(crate) fn dbsize(ctx: &mut Ctx<'_>, _: &[Vec<u8>]) -> Outcome {
    let n = match ctx.view()? {
        View::Keyspace(ks) => ks.len()?,
        view => {
            let mut n = 0u64;
            for item in view.keys_after(Bound::Unbounded) {
                item?;
                n += 1;
            }
            n
        }
    };
    Ok(Reply::Int(i64::try_from(n).unwrap_or(i64::MAX)))
}

fn flush_mode(a: &[Vec<u8>]) -> Result<(), Reply> {
    match a.get(1..).unwrap_or_default() {
        [] => Ok(()),
        [mode] if is(mode, "sync") || is(mode, "async") => Ok(()),
        _ => Err(errors::syntax()),
    }
}

pub(crate) fn flushdb(ctx: &mut Ctx<'_>, a: &[Vec<u8>]) -> Outcome {
    flush_mode(a)?;
    let ks = keyspace(ctx)?;
    match ctx.tx.as_deref_mut() {
        Some(tx) => tx.remove_range::<&[u8], _>(ks, ..),
        None => ks.remove_range_with::<&[u8], _>(.., Some(ctx.shared.config.durability))?,
    }
    Ok(Reply::Ok)
}

pub(crate) fn flushall(ctx: &mut Ctx<'_>, a: &[Vec<u8>]) -> Outcome {
    flush_mode(a)?;
    if let Some(tx) = ctx.tx.as_deref_mut() {
        for ks in &ctx.shared.keyspaces {
            tx.remove_range::<&[u8], _>(ks, ..);
        }
        return Ok(Reply::Ok);
    }
    let mut batch = ctx.shared.db.batch();
    for ks in &ctx.shared.keyspaces {
        batch.remove_range::<&[u8], _>(ks, ..);
    }
    batch.commit_with(Some(ctx.shared.config.durability))?;
    Ok(Reply::Ok)
}
