//! The state of one connection that commands read and change: its id, name, protocol
//! version, selected database, whether it has authenticated, and whether it must close.

use crate::resp::Protocol;

/// One client's connection state. Owned by its connection thread; never shared.
#[derive(Debug)]
pub(crate) struct Session {
    pub(crate) id: u64,
    pub(crate) name: Option<Vec<u8>>,
    pub(crate) lib_name: Option<Vec<u8>>,
    pub(crate) lib_ver: Option<Vec<u8>>,
    pub(crate) protocol: Protocol,
    pub(crate) db: usize,
    pub(crate) authenticated: bool,
    /// Close the connection once the current reply is written (QUIT).
    pub(crate) close: bool,
    /// Close without sending the current reply (SHUTDOWN, as Redis).
    pub(crate) silent: bool,
}

impl Session {
    pub(crate) fn new(id: u64, authenticated: bool) -> Session {
        Session {
            id,
            name: None,
            lib_name: None,
            lib_ver: None,
            protocol: Protocol::Resp2,
            db: 0,
            authenticated,
            close: false,
            silent: false,
        }
    }
}
