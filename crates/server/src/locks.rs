//! The striped key lock: serialises the server's writes to one key, so that its
//! read-modify-write commands (INCR, APPEND, SET NX/XX/GET/KEEPTTL, GETDEL, EXPIRE, ...)
//! are atomic across connections, as they are in Redis.
//!
//! Every command that writes a key takes the stripe of each key it writes (a plain SET
//! too: otherwise an INCR could read a value, a SET replace it, and the INCR's write undo
//! the SET). Reads take no lock: the engine gives each read a consistent view.
//! Multi-key commands lock their stripes in ascending order, so no two commands wait on
//! each other in a cycle. The lock is held through the engine write, fsync included, so a
//! later command on the key never sees a state older than an acknowledged one.
//!
//! This is the server's stand-in for transactions: once the engine has them, a command
//! becomes one transaction and the stripes go.

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;

use parking_lot::{Mutex, MutexGuard};

/// Number of stripes: enough that 50..1000 clients on distinct keys rarely share one.
const STRIPES: usize = 4096;

/// A fixed array of mutexes, chosen by a keyed hash of (database, key).
#[derive(Debug)]
pub(crate) struct KeyLocks {
    stripes: Vec<Mutex<()>>,
    hasher: RandomState,
}

/// Held stripes; dropping it releases them.
pub(crate) struct Held<'a> {
    _guards: Vec<MutexGuard<'a, ()>>,
}

impl KeyLocks {
    pub(crate) fn new() -> KeyLocks {
        KeyLocks {
            stripes: (0..STRIPES).map(|_| Mutex::new(())).collect(),
            hasher: RandomState::new(),
        }
    }

    fn stripe(&self, db: usize, key: &[u8]) -> usize {
        let h = self.hasher.hash_one((db, key));
        usize::try_from(h % STRIPES as u64).unwrap_or(0)
    }

    /// Locks the stripe of one key.
    pub(crate) fn lock(&self, db: usize, key: &[u8]) -> Held<'_> {
        self.lock_all(db, std::iter::once(key))
    }

    /// Locks the stripes of several keys, in ascending stripe order.
    pub(crate) fn lock_all<'k>(&self, db: usize, keys: impl Iterator<Item = &'k [u8]>) -> Held<'_> {
        let mut ids: Vec<usize> = keys.map(|k| self.stripe(db, k)).collect();
        ids.sort_unstable();
        ids.dedup();
        Held {
            _guards: ids
                .into_iter()
                .filter_map(|i| self.stripes.get(i).map(Mutex::lock))
                .collect(),
        }
    }
}
