//! What the command handlers share to reach the store: the selected keyspace, reads
//! through a [`View`] (the keyspace itself, or the transaction EXEC runs), writes through
//! [`Ctx::write`] (one engine transaction per command, or EXEC's), the clock, and
//! argument access that cannot index out of range.
//!
//! Atomicity: a command that reads a key and writes depending on what it read (INCR,
//! APPEND, SET NX/XX/GET/KEEPTTL, GETDEL, DEL, EXPIRE, ...) runs as one engine
//! transaction ([`cairn::Transaction`], snapshot isolation): its commit fails with a
//! conflict if another write changed a key it writes after its snapshot, and the
//! command then runs again on the new state. So concurrent clients see each command as
//! atomic, as in Redis, with no lock in the server; plain writes (SET, MSET) are blind and
//! need none. Inside EXEC, every command reads and writes EXEC's transaction instead
//! (`command::multi`).
//!
//! Expiry times are Unix milliseconds, as the engine stores them ([`cairn::Head`]); the
//! engine hides an expired entry from every read, so the server never sees one.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use cairn::{EntryOptions, Head, Keyspace, Transaction};

use super::errors;
use super::Ctx;
use crate::resp::Reply;

/// Runs a command's transaction makes at most before reporting the conflict: each retry
/// means another write changed one of its keys in between.
pub(crate) const MAX_ATTEMPTS: u32 = 1000;

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

/// Keys in order, each with the error of its read.
pub(crate) type KeyIter<'a> = Box<dyn Iterator<Item = cairn::Result<Vec<u8>>> + 'a>;

/// Where a command reads: the keyspace (a consistent view per read), or a transaction
/// (its snapshot with its own pending writes laid over it).
#[derive(Clone, Copy)]
pub(crate) enum View<'a> {
    Keyspace(&'a Keyspace),
    Tx(&'a Transaction, &'a Keyspace),
}

impl View<'_> {
    pub(crate) fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, Reply> {
        Ok(match self {
            View::Keyspace(ks) => ks.get(key)?,
            View::Tx(tx, ks) => tx.get(ks, key)?,
        })
    }

    /// The values of `keys`, in order: outside a transaction all read at one point
    /// (`Keyspace::get_many`), inside one as the transaction sees them.
    pub(crate) fn get_many(&self, keys: &[Vec<u8>]) -> Result<Vec<Option<Vec<u8>>>, Reply> {
        Ok(match self {
            View::Keyspace(ks) => ks.get_many(keys)?,
            View::Tx(tx, ks) => tx.get_many(ks, keys)?,
        })
    }

    pub(crate) fn head(&self, key: &[u8]) -> Result<Option<Head>, Reply> {
        Ok(match self {
            View::Keyspace(ks) => ks.head(key)?,
            View::Tx(tx, ks) => tx.head(ks, key)?,
        })
    }

    pub(crate) fn contains(&self, key: &[u8]) -> Result<bool, Reply> {
        Ok(match self {
            View::Keyspace(ks) => ks.contains_key(key)?,
            View::Tx(tx, ks) => tx.contains_key(ks, key)?,
        })
    }

    /// The value and expiry of `key`: two point reads (a range read of one key would walk
    /// every version the memtable holds of it). In a transaction both read its snapshot;
    /// outside one, a write between them is possible and only matters to a caller that
    /// writes, which reads through its transaction instead.
    pub(crate) fn entry(&self, key: &[u8]) -> Result<Option<Entry>, Reply> {
        let Some(head) = self.head(key)? else {
            return Ok(None);
        };
        Ok(self.get(key)?.map(|value| Entry {
            value,
            expires_at: head.expires_at,
        }))
    }

    /// The keys after `start`, ascending (a transaction's scan reads values too: it
    /// has no scan of heads).
    pub(crate) fn keys_after(&self, start: std::ops::Bound<Vec<u8>>) -> KeyIter<'_> {
        let range = (start, std::ops::Bound::<Vec<u8>>::Unbounded);
        match self {
            View::Keyspace(ks) => Box::new(ks.range_heads(range).map(|r| r.map(|(k, _)| k))),
            View::Tx(tx, ks) => Box::new(tx.range(ks, range).map(|r| r.map(|(k, _)| k))),
        }
    }
}

/// A command's writes: the transaction they go into and the selected keyspace.
pub(crate) struct Txn<'t, 'a> {
    pub(crate) tx: &'t mut Transaction,
    pub(crate) ks: &'a Keyspace,
}

impl Txn<'_, '_> {
    /// Reads as the transaction sees the store.
    pub(crate) fn view(&self) -> View<'_> {
        View::Tx(self.tx, self.ks)
    }

    /// Sets `key` = `value` expiring at `expires_at` (Unix ms) when the transaction
    /// commits.
    pub(crate) fn put(&mut self, key: &[u8], value: &[u8], expires_at: Option<u64>) {
        match expires_at {
            None => self.tx.insert(self.ks, key, value),
            Some(ms) => {
                let options =
                    EntryOptions::new().expires_at(UNIX_EPOCH + Duration::from_millis(ms));
                self.tx.insert_entry(self.ks, key, value, &options);
            }
        }
    }

    /// Removes `key` when the transaction commits.
    pub(crate) fn remove(&mut self, key: &[u8]) {
        self.tx.remove(self.ks, key);
    }
}

impl<'a> Ctx<'a> {
    /// Where this command reads: EXEC's transaction, or the selected keyspace.
    pub(crate) fn view(&self) -> Result<View<'_>, Reply> {
        let ks = keyspace(self)?;
        Ok(match self.tx.as_deref() {
            Some(tx) => View::Tx(tx, ks),
            None => View::Keyspace(ks),
        })
    }

    /// Runs `f` on a transaction and commits it with the server's durability, running it
    /// again while the commit conflicts (see the module docs); inside EXEC, runs `f` on
    /// EXEC's transaction, which EXEC commits. An error reply from `f` writes nothing.
    /// A transaction that wrote nothing is not committed: its reads all came from one
    /// snapshot.
    pub(crate) fn write<T>(
        &mut self,
        mut f: impl FnMut(&mut Txn<'_, 'a>) -> Result<T, Reply>,
    ) -> Result<T, Reply> {
        let ks = keyspace(self)?;
        if let Some(tx) = self.tx.as_deref_mut() {
            return f(&mut Txn { tx, ks });
        }
        let db = &self.shared.db;
        let durability = self.shared.config.durability;
        let mut attempt = 0;
        loop {
            attempt += 1;
            let mut tx = db.transaction();
            let out = f(&mut Txn { tx: &mut tx, ks })?;
            if tx.is_empty() {
                return Ok(out);
            }
            match tx.commit_with(Some(durability)) {
                Ok(_) => return Ok(out),
                Err(e) if e.is_conflict() && attempt < MAX_ATTEMPTS => backoff(attempt),
                Err(e) => return Err(e.into()),
            }
        }
    }
}

/// Waits before attempt `attempt + 1` of a conflicting transaction: a pause up to
/// 20 µs × 2^attempt (at most about 5 ms), spread by the clock so that two commands that
/// conflicted do not meet again in lockstep.
pub(crate) fn backoff(attempt: u32) {
    if attempt <= 1 {
        std::thread::yield_now();
        return;
    }
    let cap_us = (20u64 << attempt.min(8)).min(5_000);
    let spread = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::from(d.subsec_nanos()));
    std::thread::sleep(Duration::from_micros(spread % cap_us + 1));
}

/// The current time in Unix milliseconds.
pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}
