//! Writes committed together: the plain `SET key value` and INCR/INCRBY/DECR/DECRBY
//! requests that every ready connection of one event loop sent in one iteration are
//! gathered into one engine batch, so an iteration costs one commit (one fsync under
//! `sync`) however many connections and pipelined requests it served, as Redis's
//! `beforeSleep` costs one AOF fsync.
//!
//! Invariants:
//! 1. Order: each operation carries its connection (the owner) and that session's
//!    selected database. A connection adds operations only while it has nothing else
//!    waiting: its next request that is not batchable waits until the batch is
//!    committed (`conn.rs`), so every request sees the connection's writes before it,
//!    and replies leave in request order. Within the batch, each counter reads the value
//!    the earlier operations of the batch left (the engine resolves increments in order).
//! 2. Durability: the replies are made only after the batch's commit returned, i.e. once
//!    the writes are as durable as the mode promises. Other clients see none of them
//!    before the commit, then all of them (a batch is atomic: a strengthening of Redis).
//! 3. Atomicity with other writers: the batch is one engine write batch whose counters
//!    are `Batch::incr` increments, which the engine's write leader resolves (reads the
//!    current value, adds, writes a Put) with no other write in between, so each counter
//!    is atomic as INCR is alone. The engine's counter rules are Redis's (`args::int`:
//!    the canonical decimal text of an `i64`, a missing key is 0), and its increment
//!    keeps the entry's expiry, as Redis's INCR keeps the TTL.
//! 4. Errors: a request the engine or Redis's rules would refuse by itself (an empty or
//!    over-long key, a non-integer increment) is not batched and runs alone. The engine
//!    refuses a batch whose increment fails (not an integer, overflow) whole, writing
//!    nothing; then each owner's operations run again as one engine transaction
//!    (snapshot isolation, run again on a conflict) in which the server checks each
//!    counter, so only the offending command gets Redis's error and writes nothing while
//!    the rest go on. A failing read or commit (I/O, poisoned log) gives every operation
//!    of the batch that error, and nothing of the batch is written.
//! 5. Bounds: a batch holds at most [`MAX_BATCH_LEN`] bytes of keys and values and at
//!    most [`MAX_BATCH_OPS`] operations; a connection that finds it full waits for the
//!    commit.

use std::time::Instant;

use super::{args, errors, store, COMMANDS};
use crate::resp::{Reply, Request};
use crate::session::Session;
use crate::shared::Shared;
use crate::stats::Stats;

/// Bytes of keys and values after which a batch takes no more.
pub(crate) const MAX_BATCH_LEN: usize = 4 << 20;

/// Operations after which a batch takes no more.
pub(crate) const MAX_BATCH_OPS: usize = 16 << 10;

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

/// An operation with the connection it came from and the database it writes.
struct Gathered {
    owner: usize,
    db: usize,
    op: Op,
}

/// The operations gathered so far.
#[derive(Default)]
pub(crate) struct SetBatch {
    ops: Vec<Gathered>,
    bytes: usize,
}

/// What a batchable request does, told from its arguments without copying them.
enum Shape {
    Set,
    /// A counter update: the delta and the command's name.
    Add(i64, &'static str),
}

/// The shape of `request` if it can be batched.
fn shape_of(request: &[Vec<u8>]) -> Option<Shape> {
    let (name, rest) = match request {
        [name, key, rest @ ..] if (1..=MAX_BATCHED_KEY_LEN).contains(&key.len()) => (name, rest),
        _ => return None,
    };
    let is = |w: &str| args::is(name, w);
    match rest {
        [_value] if is("set") => Some(Shape::Set),
        [] if is("incr") => Some(Shape::Add(1, "incr")),
        [] if is("decr") => Some(Shape::Add(-1, "decr")),
        [delta] if is("incrby") => args::int(delta).map(|d| Shape::Add(d, "incrby")),
        [delta] if is("decrby") => args::int(delta)
            .and_then(i64::checked_neg)
            .map(|d| Shape::Add(d, "decrby")),
        _ => None,
    }
}

/// The operation of a batchable `request` of `shape`, taking its key (and a SET's value)
/// out of it, and what is left of the request (its argument list and command name, for
/// the parser to reuse); the request back if its arguments do not fit the shape.
fn op_of(shape: Shape, mut request: Request) -> Result<(Op, Request), Request> {
    match shape {
        Shape::Set => {
            if request.len() != 3 {
                return Err(request);
            }
            match (request.pop(), request.pop()) {
                (Some(value), Some(key)) => Ok((Op::Set(key, value), request)),
                _ => Err(request),
            }
        }
        Shape::Add(delta, name) => {
            if request.len() < 2 {
                return Err(request);
            }
            let key = request.swap_remove(1);
            Ok((Op::Add(key, delta, name), request))
        }
    }
}

/// What [`SetBatch::offer`] did with a request.
pub(crate) enum Offered {
    /// Taken into the batch; what is left of the request (no key, no value) comes back
    /// so its buffers can be reused.
    Taken(Request),
    /// Not batchable here: the request, untouched, to run on its own.
    Declined(Request),
}

impl SetBatch {
    /// Takes `request` of connection `owner` if it can be batched for `session`; gives
    /// it back otherwise.
    pub(crate) fn offer(&mut self, owner: usize, session: &Session, request: Request) -> Offered {
        if !session.authenticated || session.multi.is_some() || !session.user.may_write_keys() {
            return Offered::Declined(request);
        }
        let Some(shape) = shape_of(&request) else {
            return Offered::Declined(request);
        };
        let (op, rest) = match op_of(shape, request) {
            Ok(taken) => taken,
            Err(request) => return Offered::Declined(request),
        };
        let len = match &op {
            Op::Set(k, v) => k.len() + v.len(),
            Op::Add(k, ..) => k.len() + 20,
        };
        self.bytes = self.bytes.saturating_add(len);
        self.ops.push(Gathered {
            owner,
            db: session.db,
            op,
        });
        Offered::Taken(rest)
    }

    /// True if the batch takes no more operations before it is committed.
    pub(crate) fn full(&self) -> bool {
        self.bytes >= MAX_BATCH_LEN || self.ops.len() >= MAX_BATCH_OPS
    }

    /// Commits the batch (if any) and returns each operation's owner and reply, in the
    /// order the operations were offered.
    pub(crate) fn commit(&mut self, shared: &Shared) -> Vec<(usize, Reply)> {
        if self.ops.is_empty() {
            return Vec::new();
        }
        let started = Instant::now();
        let count = self.ops.len();
        let replies = self.write(shared).unwrap_or_else(|e| vec![e; count]);
        let stats = &shared.stats;
        Stats::add(&stats.commands_processed, count as u64);
        let usec = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX) / count as u64;
        // One record per run of a command (a pipeline's batch is mostly one command).
        let mut run: Option<(&str, u64, u64)> = None;
        let record = |(name, calls, failed): (&str, u64, u64)| {
            if let Some(c) = COMMANDS
                .iter()
                .position(|c| c.name == name)
                .and_then(|i| stats.commands.get(i))
            {
                c.record_many(calls, usec, failed);
            }
        };
        for (g, reply) in self.ops.iter().zip(&replies) {
            let name = g.op.command();
            let failed = u64::from(reply.is_error());
            match &mut run {
                Some((current, calls, fails)) if *current == name => {
                    *calls += 1;
                    *fails += failed;
                }
                _ => {
                    if let Some(done) = run.replace((name, 1, failed)) {
                        record(done);
                    }
                }
            }
        }
        if let Some(done) = run {
            record(done);
        }
        let owners = self.ops.drain(..).map(|g| g.owner);
        self.bytes = 0;
        owners.zip(replies).collect()
    }

    fn write(&self, shared: &Shared) -> Result<Vec<Reply>, Reply> {
        let durability = Some(shared.config.durability);
        let mut batch = shared.db.batch();
        let mut counters = false;
        for g in &self.ops {
            let ks = keyspace_of(shared, g.db)?;
            match &g.op {
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
                return Ok(self.write_each(shared));
            }
            Err(e) => return Err(e.into()),
        };
        let mut values = committed.counters().iter();
        self.ops
            .iter()
            .map(|g| match g.op {
                Op::Set(..) => Ok(Reply::Ok),
                Op::Add(..) => values
                    .next()
                    .map(|&n| Reply::Int(n))
                    .ok_or_else(|| Reply::error("ERR counter missing from the commit")),
            })
            .collect()
    }

    /// The batch the engine refused, one transaction per owner, each counter checked by
    /// the server, so that only the offending commands fail.
    fn write_each(&self, shared: &Shared) -> Vec<Reply> {
        let mut replies: Vec<Option<Reply>> = vec![None; self.ops.len()];
        let mut owners: Vec<usize> = self.ops.iter().map(|g| g.owner).collect();
        owners.sort_unstable();
        owners.dedup();
        for owner in owners {
            let mine: Vec<usize> = (0..self.ops.len())
                .filter(|&i| self.ops.get(i).is_some_and(|g| g.owner == owner))
                .collect();
            let result = self.write_owner(shared, &mine);
            for (n, &i) in mine.iter().enumerate() {
                if let Some(slot) = replies.get_mut(i) {
                    *slot = Some(match &result {
                        Ok(r) => r.get(n).cloned().unwrap_or(Reply::Ok),
                        Err(e) => e.clone(),
                    });
                }
            }
        }
        replies
            .into_iter()
            .map(|r| r.unwrap_or_else(|| Reply::error("ERR operation lost from the batch")))
            .collect()
    }

    /// Operations `indices` (one owner's) as one transaction, run again on a conflict.
    fn write_owner(&self, shared: &Shared, indices: &[usize]) -> Result<Vec<Reply>, Reply> {
        let durability = shared.config.durability;
        let mut attempt = 0;
        loop {
            attempt += 1;
            let mut tx = shared.db.transaction();
            let mut replies = Vec::with_capacity(indices.len());
            for g in indices.iter().filter_map(|&i| self.ops.get(i)) {
                let ks = keyspace_of(shared, g.db)?;
                // The transaction lays the owner's own writes over the store: each counter
                // reads the value the operations before it left.
                let mut w = store::Txn { tx: &mut tx, ks };
                match &g.op {
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
            if tx.is_empty() {
                return Ok(replies);
            }
            match tx.commit_with(Some(durability)) {
                Ok(_) => return Ok(replies),
                Err(e) if e.is_conflict() && attempt < store::MAX_ATTEMPTS => {
                    store::backoff(attempt);
                }
                Err(e) => return Err(e.into()),
            }
        }
    }
}

fn keyspace_of(shared: &Shared, db: usize) -> Result<&cairn::Keyspace, Reply> {
    shared
        .keyspaces
        .get(db)
        .ok_or_else(|| Reply::error("ERR DB index is out of range"))
}

#[cfg(test)]
#[allow(clippy::panic)]
mod tests {
    use super::*;

    fn request(args: &[&str]) -> Request {
        args.iter().map(|a| a.as_bytes().to_vec()).collect()
    }

    #[test]
    fn a_taken_request_leaves_only_its_command_name_behind() {
        match op_of(Shape::Set, request(&["SET", "k", "v"])) {
            Ok((Op::Set(key, value), rest)) => {
                assert_eq!((key, value), (b"k".to_vec(), b"v".to_vec()));
                assert_eq!(rest, request(&["SET"]));
            }
            _ => panic!("SET k v not taken"),
        }
        match op_of(Shape::Add(5, "incrby"), request(&["INCRBY", "k", "5"])) {
            Ok((Op::Add(key, 5, "incrby"), rest)) => {
                assert_eq!(key, b"k".to_vec());
                assert_eq!(rest.len(), 2);
                assert_eq!(rest.first(), Some(&b"INCRBY".to_vec()));
            }
            _ => panic!("INCRBY k 5 not taken"),
        }
        // Arguments that do not fit the shape come back whole.
        for (shape, args) in [
            (Shape::Set, &["SET", "k"][..]),
            (Shape::Set, &["SET", "k", "v", "EX"][..]),
            (Shape::Add(1, "incr"), &["INCR"][..]),
        ] {
            match op_of(shape, request(args)) {
                Err(back) => assert_eq!(back, request(args)),
                Ok(_) => panic!("{args:?} taken"),
            }
        }
    }
}
