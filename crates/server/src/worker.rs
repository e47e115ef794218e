//! The worker pool: threads that run the requests an event loop must not wait for
//! (`command::may_block`: writes that are not batched, each its own engine commit and so
//! an fsync under `sync`; EXEC, SCAN, FLUSHDB, INFO, SHUTDOWN and the like).
//!
//! Invariants:
//! 1. A job carries the connection's [`Session`] and one request; the connection is
//!    parked meanwhile (it reads, parses and runs nothing, and holds no operation in its
//!    loop's batch), so the session has one owner at a time and the connection's
//!    requests still run one after another, in order.
//! 2. The worker sends the session back with the reply through its loop's channel and
//!    wakes the loop (`mio::Waker`); the loop encodes the reply and resumes the
//!    connection. A parked connection is never closed before its job returns.
//! 3. Workers stop when every loop has stopped (the job channel closes), so every job
//!    handed out is run and answered before the store closes.

use std::sync::mpsc::{Receiver, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;

use mio::Waker;
use parking_lot::Mutex;

use crate::command::{self, Ctx};
use crate::error::{Error, Result};
use crate::resp::{Reply, Request};
use crate::session::Session;
use crate::shared::Shared;

/// Stack of a worker thread: requests are flat and parsing is iterative, so this is ample
/// for the engine's paths.
const WORKER_STACK: usize = 512 << 10;

/// A request handed to a worker.
pub(crate) struct Job {
    /// The connection's slot in its loop.
    pub(crate) token: usize,
    pub(crate) session: Box<Session>,
    pub(crate) request: Request,
    /// Where the answer goes: the connection's loop.
    pub(crate) reply_to: Sender<Done>,
    pub(crate) waker: Arc<Waker>,
}

/// A job's answer.
pub(crate) struct Done {
    pub(crate) token: usize,
    pub(crate) session: Box<Session>,
    pub(crate) reply: Reply,
}

/// Starts `count` workers taking jobs from `jobs`.
///
/// # Errors
/// `Io` if a thread cannot be started.
pub(crate) fn spawn(
    shared: &Arc<Shared>,
    count: usize,
    jobs: Receiver<Job>,
) -> Result<Vec<JoinHandle<()>>> {
    let jobs = Arc::new(Mutex::new(jobs));
    (0..count.max(1))
        .map(|i| {
            let shared = Arc::clone(shared);
            let jobs = Arc::clone(&jobs);
            std::thread::Builder::new()
                .name(format!("cairn-worker-{i}"))
                .stack_size(WORKER_STACK)
                .spawn(move || work(&shared, &jobs))
                .map_err(|e| Error::io("start a worker thread", e))
        })
        .collect()
}

fn work(shared: &Shared, jobs: &Mutex<Receiver<Job>>) {
    loop {
        // One worker waits on the channel at a time; the others wait for the lock.
        let job = jobs.lock().recv();
        let Ok(job) = job else { return };
        let Job {
            token,
            mut session,
            request,
            reply_to,
            waker,
        } = job;
        let reply = command::run(&mut Ctx::new(shared, &mut session), &request);
        if reply_to
            .send(Done {
                token,
                session,
                reply,
            })
            .is_ok()
        {
            let _ = waker.wake();
        }
    }
}
