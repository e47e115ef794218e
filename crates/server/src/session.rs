//! The state of one connection that commands read and change: its id, name, protocol
//! version, selected database, its user and whether it has authenticated, the
//! transaction it is queuing (MULTI) and the keys it watches (WATCH), and whether it
//! must close.

use std::sync::Arc;

use cairn::Transaction;

use crate::resp::{Protocol, Request};
use crate::users::User;

/// One client's connection state. Owned by its connection's event loop, or by the worker
/// running one of its requests meanwhile (`worker.rs`); never shared.
pub(crate) struct Session {
    pub(crate) id: u64,
    pub(crate) name: Option<Vec<u8>>,
    pub(crate) lib_name: Option<Vec<u8>>,
    pub(crate) lib_ver: Option<Vec<u8>>,
    pub(crate) protocol: Protocol,
    pub(crate) db: usize,
    /// The user the connection acts as (before AUTH: `default`).
    pub(crate) user: Arc<User>,
    pub(crate) authenticated: bool,
    /// Commands queued since MULTI (`None`: not in a transaction).
    pub(crate) multi: Option<Multi>,
    /// What WATCH recorded (`None`: nothing watched).
    pub(crate) watch: Option<Watch>,
    /// Close the connection once the current reply is written (QUIT).
    pub(crate) close: bool,
    /// Close without sending the current reply (SHUTDOWN, as Redis).
    pub(crate) silent: bool,
}

/// A transaction being queued (between MULTI and EXEC or DISCARD).
#[derive(Default)]
pub(crate) struct Multi {
    pub(crate) queued: Vec<Request>,
    /// Bytes of the queued commands' arguments.
    pub(crate) queued_len: usize,
    /// A command was refused while queuing (unknown, wrong arity, not permitted): EXEC
    /// then fails with EXECABORT and runs nothing.
    pub(crate) failed: bool,
}

/// The keys a connection watches, and the engine transactions that prove them unchanged
/// (`command::multi` explains how).
pub(crate) struct Watch {
    /// Database and key of each watched key.
    pub(crate) keys: Vec<(usize, Vec<u8>)>,
    /// Serializable transactions that read the watched keys: one per WATCH call, begun
    /// when it ran. A commit of one fails if a key it read changed since.
    pub(crate) proofs: Vec<Transaction>,
}

impl Session {
    pub(crate) fn new(id: u64, user: Arc<User>, authenticated: bool) -> Session {
        Session {
            id,
            name: None,
            lib_name: None,
            lib_ver: None,
            protocol: Protocol::Resp2,
            db: 0,
            user,
            authenticated,
            multi: None,
            watch: None,
            close: false,
            silent: false,
        }
    }

    /// True if the connection's user may run commands that write.
    pub(crate) fn can_write(&self) -> bool {
        !self.user.readonly
    }
}
