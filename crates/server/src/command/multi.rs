//! Transactions: MULTI, EXEC, DISCARD, WATCH, UNWATCH, on the engine's transactions.
//!
//! MULTI starts queuing: every later command except EXEC, DISCARD, MULTI, WATCH, QUIT
//! and RESET is checked (known, arity, authentication, permission) and queued with the
//! reply `QUEUED`; a refused one gets its error and marks the transaction failed, and EXEC
//! then replies `EXECABORT` and runs nothing (`command::run` does the queuing; at most
//! [`MAX_QUEUED`] commands of [`MAX_QUEUED_LEN`] bytes in all are queued). EXEC runs
//! the queued commands in one serializable engine transaction (`Isolation::Serializable`)
//! and commits it with the server's durability: other clients see all of its writes or
//! none, and its reads and writes behave as if no other command ran in between. Runtime
//! errors of single commands (a non-integer INCR) are replies inside EXEC's array, and
//! the rest still runs, as in Redis. If the commit conflicts with a concurrent write,
//! EXEC runs the commands again on the new state: Redis's MULTI never fails for that.
//!
//! WATCH: EXEC replies null (and writes nothing) if a watched key was written, removed
//! or covered by a FLUSHDB/FLUSHALL after its WATCH, by any client including this one.
//! Each WATCH begins a serializable engine transaction (a *proof*) and reads its keys in
//! it: committing a proof (it writes nothing) fails exactly when one of them was written
//! after the WATCH. EXEC, on each run:
//! 1. begins its transaction `T` and a fresh proof `P'` of all watched keys;
//! 2. commits the current proofs: a conflict means a watched key changed since WATCH,
//!    and EXEC replies null; otherwise they were unchanged up to a point after `T` and
//!    `P'` began;
//! 3. reads the watched keys in `T` and runs the commands; `T`'s commit fails if a
//!    watched key changed after `T` began. A conflict on a watched key replies null; one
//!    on another key runs again with `P'` as the proof, which covers the time from before
//!    step 2.
//!
//! So the watched keys are proven unchanged from WATCH to EXEC's commit without a gap.
//! Keys that expire while watched do not abort EXEC (an expiry is not a write).
//! A proof holds a snapshot until EXEC, DISCARD, UNWATCH or the end of the connection,
//! which keeps the versions it can see from compaction until then.

use cairn::{Isolation, TransactionOptions};

use super::{Ctx, Outcome};
use crate::config::keyspace_name;
use crate::resp::{Reply, Request};
use crate::session::{Multi, Watch};

/// Runs of EXEC's transaction before a conflict is reported.
const MAX_ATTEMPTS: u32 = 1000;

/// Most commands one transaction may queue, and most bytes of their arguments: a client
/// queuing more gets an error and EXEC fails (the queue is held in memory until EXEC).
pub(crate) const MAX_QUEUED: usize = 1 << 20;
pub(crate) const MAX_QUEUED_LEN: usize = 256 << 20;

/// Commands that run at once while a transaction is being queued.
pub(crate) const NOT_QUEUED: &[&str] = &["exec", "discard", "multi", "watch", "quit", "reset"];

pub(crate) fn multi(ctx: &mut Ctx<'_>, _: &[Vec<u8>]) -> Outcome {
    if ctx.session.multi.is_some() {
        return Err(Reply::error("ERR MULTI calls can not be nested"));
    }
    ctx.session.multi = Some(Multi::default());
    Ok(Reply::Ok)
}

pub(crate) fn discard(ctx: &mut Ctx<'_>, _: &[Vec<u8>]) -> Outcome {
    if ctx.session.multi.take().is_none() {
        return Err(Reply::error("ERR DISCARD without MULTI"));
    }
    ctx.session.watch = None;
    Ok(Reply::Ok)
}

pub(crate) fn unwatch(ctx: &mut Ctx<'_>, _: &[Vec<u8>]) -> Outcome {
    if ctx.tx.is_none() {
        ctx.session.watch = None;
    }
    Ok(Reply::Ok)
}

fn serializable(ctx: &Ctx<'_>) -> TransactionOptions {
    TransactionOptions::new()
        .isolation(Isolation::Serializable)
        .durability(ctx.shared.config.durability)
}

pub(crate) fn watch(ctx: &mut Ctx<'_>, a: &[Vec<u8>]) -> Outcome {
    if ctx.session.multi.is_some() {
        return Err(Reply::error("ERR WATCH inside MULTI is not allowed"));
    }
    let ks = super::keyspace(ctx)?;
    let proof = ctx.shared.db.transaction_with(&serializable(ctx));
    let db = ctx.session.db;
    let watch = ctx.session.watch.get_or_insert_with(|| Watch {
        keys: Vec::new(),
        proofs: Vec::new(),
    });
    for key in a.iter().skip(1) {
        proof.head(ks, key)?;
        watch.keys.push((db, key.clone()));
    }
    watch.proofs.push(proof);
    Ok(Reply::Ok)
}

/// True if `e` is a conflict on a watched key.
fn on_watched(e: &cairn::Error, keys: &[(usize, Vec<u8>)]) -> bool {
    match e {
        cairn::Error::Conflict { keyspace, key, .. } => keys
            .iter()
            .any(|(db, k)| k == key && keyspace_name(*db) == *keyspace),
        _ => false,
    }
}

pub(crate) fn exec(ctx: &mut Ctx<'_>, _: &[Vec<u8>]) -> Outcome {
    let Some(multi) = ctx.session.multi.take() else {
        return Err(Reply::error("ERR EXEC without MULTI"));
    };
    let watch = ctx.session.watch.take();
    if multi.failed {
        return Err(Reply::error(
            "EXECABORT Transaction discarded because of previous errors.",
        ));
    }
    let (keys, mut proofs) = match watch {
        Some(w) => (w.keys, w.proofs),
        None => (Vec::new(), Vec::new()),
    };
    let options = serializable(ctx);
    let db = &ctx.shared.db;
    let selected = ctx.session.db;
    let mut attempt = 0;
    loop {
        attempt += 1;
        let mut tx = db.transaction_with(&options);
        let next = (!keys.is_empty()).then(|| db.transaction_with(&options));
        for proof in proofs.drain(..) {
            match proof.commit() {
                Ok(_) => {}
                Err(e) if e.is_conflict() => return Ok(Reply::NilArray),
                Err(e) => return Err(e.into()),
            }
        }
        for (i, key) in &keys {
            let ks = ctx
                .shared
                .keyspaces
                .get(*i)
                .ok_or_else(|| Reply::error("ERR DB index is out of range"))?;
            tx.head(ks, key)?;
            if let Some(next) = &next {
                next.head(ks, key)?;
            }
        }
        // Every run starts from the database selected at EXEC (a queued SELECT changes it).
        ctx.session.db = selected;
        let replies = run_all(ctx, &mut tx, &multi.queued);
        if tx.is_empty() {
            // Its reads all came from one snapshot, taken before the proofs were checked.
            return Ok(Reply::Array(replies));
        }
        match tx.commit() {
            Ok(_) => return Ok(Reply::Array(replies)),
            Err(e) if on_watched(&e, &keys) => return Ok(Reply::NilArray),
            Err(e) if e.is_conflict() && attempt < MAX_ATTEMPTS => {
                proofs.extend(next);
                super::store::backoff(attempt);
            }
            Err(e) => return Err(e.into()),
        }
    }
}

/// Runs the queued commands in `tx`, each as `command::run` runs it.
fn run_all(ctx: &mut Ctx<'_>, tx: &mut cairn::Transaction, queued: &[Request]) -> Vec<Reply> {
    let mut inner = Ctx {
        shared: ctx.shared,
        session: &mut *ctx.session,
        tx: Some(tx),
    };
    queued
        .iter()
        .map(|request| super::run(&mut inner, request))
        .collect()
}
