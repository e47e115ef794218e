//! The state of one connection that commands read and change: its id, name, protocol
//! version, selected database, its user (kept up to date with ACL changes) and whether
//! it has authenticated, the transaction it is queuing (MULTI) and the keys it watches
//! (WATCH), and whether it must close.

use std::sync::Arc;

use cairn::Transaction;

use crate::resp::{Protocol, Request};
use crate::users::{Registry, User};

/// One client's connection state. Owned by its connection's event loop, or by the worker
/// running one of its requests meanwhile (`worker.rs`); never shared.
pub(crate) struct Session {
    pub(crate) id: u64,
    pub(crate) name: Option<Vec<u8>>,
    pub(crate) lib_name: Option<Vec<u8>>,
    pub(crate) lib_ver: Option<Vec<u8>>,
    pub(crate) protocol: Protocol,
    pub(crate) db: usize,
    /// The user the connection acts as (before AUTH: `default`), as it was at
    /// `users_version` ([`Session::refresh_user`]).
    pub(crate) user: Arc<User>,
    /// The version of the server's users `user` was read at.
    pub(crate) users_version: u64,
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
    /// A new connection's session: the `default` user, read at `users_version`;
    /// authenticated if that user needs no AUTH.
    pub(crate) fn new(id: u64, (user, users_version): (Arc<User>, u64)) -> Session {
        let authenticated = user.open();
        Session {
            id,
            name: None,
            lib_name: None,
            lib_ver: None,
            protocol: Protocol::Resp2,
            db: 0,
            user,
            users_version,
            authenticated,
            multi: None,
            watch: None,
            close: false,
            silent: false,
        }
    }

    /// Acts as `user`, read at `users_version` (AUTH, RESET).
    pub(crate) fn act_as(&mut self, (user, users_version): (Arc<User>, u64)) {
        self.user = user;
        self.users_version = users_version;
    }

    /// Takes the connection's user again if the users changed since it was read, so a
    /// change of its permissions applies from the next command on (`users/registry.rs`).
    /// `false` if the user was deleted: the connection must close.
    pub(crate) fn refresh_user(&mut self, users: &Registry) -> bool {
        if users.version() == self.users_version {
            return true;
        }
        match users.current(self.user.id) {
            (Some(user), version) => {
                self.act_as((user, version));
                true
            }
            (None, _) => false,
        }
    }
}
