//! Pipelined plain SETs committed together: consecutive `SET key value` requests (no
//! options) of one connection's burst are gathered and written as one batch, so a
//! pipeline of N SETs costs one commit (one fsync under `sync`) instead of N.
//!
//! Invariants:
//! 1. Order: the batch is committed before the connection runs any other request and
//!    before any reply is written, so every request sees the SETs before it, and replies
//!    leave in request order.
//! 2. Durability: the `+OK` of each SET is encoded only after the batch's commit
//!    returned, i.e. once the writes are as durable as the mode promises. Other clients
//!    see none of them before the commit, then all of them (a batch is atomic: a
//!    strengthening of Redis, where a pipeline is not).
//! 3. Atomicity with read-modify-write commands: the commit holds the stripes of all its
//!    keys (`crate::locks`), like any write.
//! 4. Errors: a SET the engine would refuse by itself (an empty or over-long key) is not
//!    batched, so a batch fails only as a whole store fails (I/O, poisoned log), and then
//!    every SET in it gets that error and none is written.
//! 5. Bounds: a batch holds at most [`MAX_BATCH_LEN`] bytes of keys and values and at most
//!    the connection's pending-reply limit of SETs; the connection commits it when full.

use super::{keyspace, Ctx, COMMANDS};
use crate::resp::{Reply, Request};

/// Bytes of keys and values after which a batch is committed.
pub(crate) const MAX_BATCH_LEN: usize = 4 << 20;

/// Longest key a batched SET may have: the engine's key limit. A SET whose key the engine
/// would refuse (empty, too long) runs alone, so its error never fails the SETs beside it.
const MAX_BATCHED_KEY_LEN: usize = u16::MAX as usize;

/// The SETs gathered so far.
#[derive(Default)]
pub(crate) struct SetBatch {
    pairs: Vec<(Vec<u8>, Vec<u8>)>,
    bytes: usize,
}

impl SetBatch {
    /// Takes `request` if it is a plain SET the session may run; gives it back otherwise.
    pub(crate) fn offer(&mut self, ctx: &Ctx<'_>, request: Request) -> Option<Request> {
        if !ctx.session.authenticated {
            return Some(request);
        }
        match <[Vec<u8>; 3]>::try_from(request) {
            Ok([name, key, value])
                if name.eq_ignore_ascii_case(b"set")
                    && (1..=MAX_BATCHED_KEY_LEN).contains(&key.len()) =>
            {
                self.bytes = self.bytes.saturating_add(key.len() + value.len());
                self.pairs.push((key, value));
                None
            }
            Ok(three) => Some(three.into()),
            Err(other) => Some(other),
        }
    }

    /// True if the batch should be committed before taking more.
    pub(crate) fn full(&self, max_count: usize) -> bool {
        self.bytes >= MAX_BATCH_LEN || self.pairs.len() >= max_count
    }

    /// Commits the batch (if any) and returns how many replies it owes and the reply each
    /// gets: `+OK`, or the commit's error for every one of them.
    pub(crate) fn commit(&mut self, ctx: &mut Ctx<'_>) -> (usize, Reply) {
        let count = self.pairs.len();
        if count == 0 {
            return (0, Reply::Ok);
        }
        let started = std::time::Instant::now();
        let reply = self.write(ctx).err().unwrap_or(Reply::Ok);
        self.pairs.clear();
        self.bytes = 0;
        let stats = &ctx.shared.stats;
        crate::stats::Stats::add(&stats.commands_processed, count as u64);
        if let Some(c) = COMMANDS
            .iter()
            .position(|c| c.name == "set")
            .and_then(|i| stats.commands.get(i))
        {
            let usec =
                u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX) / count as u64;
            for _ in 0..count {
                c.record(usec, reply.is_error());
            }
        }
        (count, reply)
    }

    fn write(&self, ctx: &Ctx<'_>) -> Result<(), Reply> {
        let ks = keyspace(ctx)?;
        let _held = ctx
            .shared
            .locks
            .lock_all(ctx.session.db, self.pairs.iter().map(|(k, _)| k.as_slice()));
        let mut batch = ctx.shared.db.batch();
        for (key, value) in &self.pairs {
            batch.insert(ks, key, value);
        }
        batch.commit_with(Some(ctx.shared.config.durability))?;
        Ok(())
    }
}
