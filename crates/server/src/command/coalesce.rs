//! Pipelined writes committed together: consecutive plain `SET key value` and
//! INCR/INCRBY/DECR/DECRBY requests of one connection's burst are gathered and written as
//! one batch, so a pipeline of N of them costs one commit (one fsync under `sync`)
//! instead of N.
//!
//! Invariants:
//! 1. Order: the batch is committed before the connection runs any other request and
//!    before any reply is written, so every request sees the writes before it, and
//!    replies leave in request order. Within the batch, each counter reads the value the
//!    earlier operations of the batch left (an overlay over the store).
//! 2. Durability: the replies are encoded only after the batch's commit returned, i.e.
//!    once the writes are as durable as the mode promises. Other clients see none of
//!    them before the commit, then all of them (a batch is atomic: a strengthening of
//!    Redis, where a pipeline is not).
//! 3. Atomicity with other connections: the batch is one engine write batch whose
//!    counters are `Batch::incr` increments, which the engine's write leader resolves
//!    (reads the current value, adds, writes a Put) with no other write in between, so
//!    each counter is atomic as INCR is alone. The engine's counter rules are Redis's
//!    (`args::int`: the canonical decimal text of an `i64`, a missing key is 0), and its
//!    increment keeps the entry's expiry, as Redis's INCR keeps the TTL.
//! 4. Errors: a request the engine or Redis's rules would refuse by itself (an empty or
//!    over-long key, a non-integer increment) is not batched and runs alone. The engine
//!    refuses a batch whose increment fails (not an integer, overflow) whole, writing
//!    nothing; the batch then runs again as one engine transaction (snapshot isolation,
//!    run again on a conflict) in which the server checks each counter, so a counter whose
//!    value is not an integer, or would overflow, gets Redis's error and writes nothing
//!    while the rest of the batch goes on. A failing read or commit (I/O, poisoned log)
//!    gives every operation of the batch that error, and nothing of the batch is written.
//! 5. Bounds: a batch holds at most [`MAX_BATCH_LEN`] bytes of keys and values and at most
//!    the connection's pending-reply limit of operations; the connection commits it when
//!    full.

use super::{args, errors, keyspace, Ctx, COMMANDS};
use crate::resp::{Reply, Request};

/// Bytes of keys and values after which a batch is committed.
pub(crate) const MAX_BATCH_LEN: usize = 4 << 20;

/// Longest key a batched operation may have: the engine's key limit.
const MAX_BATCHED_KEY_LEN: usize = u16::MAX as usize;

/// One gathered operation.
enum Op {
    Set(Vec<u8>, Vec<u8>),
    /// A counter update: the key, the delta, and the command's name (for statistics).
    Add(Vec<u8>, i64, &'static str),
}

impl Op {
    fn command(&self) -> &'static str {
        match self {
            Op::Set(..) => "set",
            Op::Add(_, _, name) => name,
        }
    }
}

/// The operations gathered so far.
#[derive(Default)]
pub(crate) struct SetBatch {
    ops: Vec<Op>,
    bytes: usize,
}

/// Parses a batchable request.
fn op_of(request: &[Vec<u8>]) -> Option<Op> {
    let (name, key, rest) = match request {
        [name, key, rest @ ..] if (1..=MAX_BATCHED_KEY_LEN).contains(&key.len()) => {
            (name, key, rest)
        }
        _ => return None,
    };
    let is = |w: &str| args::is(name, w);
    match rest {
        [value] if is("set") => Some(Op::Set(key.clone(), value.clone())),
        [] if is("incr") => Some(Op::Add(key.clone(), 1, "incr")),
        [] if is("decr") => Some(Op::Add(key.clone(), -1, "decr")),
        [delta] if is("incrby") => args::int(delta).map(|d| Op::Add(key.clone(), d, "incrby")),
        [delta] if is("decrby") => args::int(delta)
            .and_then(i64::checked_neg)
            .map(|d| Op::Add(key.clone(), d, "decrby")),
        _ => None,
    }
}

impl SetBatch {
    /// Takes `request` if it can be batched for this session; gives it back otherwise.
    pub(crate) fn offer(&mut self, ctx: &Ctx<'_>, request: Request) -> Option<Request> {
        if !ctx.session.authenticated || ctx.session.multi.is_some() || !ctx.session.can_write() {
            return Some(request);
        }
        let Some(op) = op_of(&request) else {
            return Some(request);
        };
        let len = match &op {
            Op::Set(k, v) => k.len() + v.len(),
            Op::Add(k, ..) => k.len() + 20,
        };
        self.bytes = self.bytes.saturating_add(len);
        self.ops.push(op);
        None
    }

    /// True if the batch should be committed before taking more.
    pub(crate) fn full(&self, max_count: usize) -> bool {
        self.bytes >= MAX_BATCH_LEN || self.ops.len() >= max_count
    }

    /// Commits the batch (if any) and returns the reply of each operation, in order.
    pub(crate) fn commit(&mut self, ctx: &mut Ctx<'_>) -> Vec<Reply> {
        if self.ops.is_empty() {
            return Vec::new();
        }
        let started = std::time::Instant::now();
        let count = self.ops.len();
        let replies = self.write(ctx).unwrap_or_else(|e| vec![e; count]);
        let stats = &ctx.shared.stats;
        crate::stats::Stats::add(&stats.commands_processed, count as u64);
        let usec = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX) / count as u64;
        for (op, reply) in self.ops.iter().zip(&replies) {
            let name = op.command();
            if let Some(c) = COMMANDS
                .iter()
                .position(|c| c.name == name)
                .and_then(|i| stats.commands.get(i))
            {
                c.record(usec, reply.is_error());
            }
        }
        self.ops.clear();
        self.bytes = 0;
        replies
    }

    fn write(&self, ctx: &mut Ctx<'_>) -> Result<Vec<Reply>, Reply> {
        let ks = keyspace(ctx)?;
        let durability = Some(ctx.shared.config.durability);
        let mut batch = ctx.shared.db.batch();
        let mut counters = false;
        for op in &self.ops {
            match op {
                Op::Set(key, value) => batch.insert(ks, key, value),
                Op::Add(key, delta, _) => {
                    batch.incr(ks, key, *delta);
                    counters = true;
                }
            }
        }
        if !counters {
            batch.commit_with(durability)?;
            return Ok(vec![Reply::Ok; self.ops.len()]);
        }
        let committed = match batch.commit_counters_with(durability) {
            Ok(committed) => committed,
            // Refused whole, nothing written: Redis fails only the offending command.
            Err(cairn::Error::NotACounter { .. } | cairn::Error::CounterOverflow { .. }) => {
                return self.write_each(ctx);
            }
            Err(e) => return Err(e.into()),
        };
        let mut values = committed.counters().iter();
        self.ops
            .iter()
            .map(|op| match op {
                Op::Set(..) => Ok(Reply::Ok),
                Op::Add(..) => values
                    .next()
                    .map(|&n| Reply::Int(n))
                    .ok_or_else(|| Reply::error("ERR counter missing from the commit")),
            })
            .collect()
    }

    /// The batch as one transaction, each counter checked by the server: the way a batch
    /// the engine refused runs, so that only the offending commands fail.
    fn write_each(&self, ctx: &mut Ctx<'_>) -> Result<Vec<Reply>, Reply> {
        // The transaction lays the batch's own writes over the store: each counter reads
        // the value the operations before it left.
        ctx.write(|w| {
            let mut replies = Vec::with_capacity(self.ops.len());
            for op in &self.ops {
                match op {
                    Op::Set(key, value) => {
                        w.put(key, value, None);
                        replies.push(Reply::Ok);
                    }
                    Op::Add(key, delta, _) => {
                        let (old, expires_at) = match w.view().entry(key)? {
                            Some(e) => match args::int(&e.value) {
                                Some(n) => (n, e.expires_at),
                                None => {
                                    replies.push(errors::not_integer());
                                    continue;
                                }
                            },
                            None => (0, None),
                        };
                        let Some(new) = old.checked_add(*delta) else {
                            replies.push(errors::overflow());
                            continue;
                        };
                        w.put(key, new.to_string().as_bytes(), expires_at);
                        replies.push(Reply::Int(new));
                    }
                }
            }
            Ok(replies)
        })
    }
}
