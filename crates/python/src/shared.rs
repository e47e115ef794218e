//! The state one `cairn.Db` shares with every object made from it.
//!
//! Invariants:
//! 1. Only [`Shared`] holds engine handles that keep the store open (the `cairn::Db` and
//!    its `cairn::Keyspace`s); Python `Keyspace` objects hold an index into it. Iterators,
//!    snapshots and batches hold engine objects too, but each registers itself here
//!    ([`Shared::register`]) so that `close()` can drop them.
//! 2. `close()` takes the write lock, so it waits for every call in flight (each holds the
//!    read lock for its whole engine call), then drops every registered handle and closes
//!    the store. Afterwards every method of every object raises `cairn.ClosedError`, and no
//!    engine handle is left, so the directory lock is released and the store can be
//!    reopened in the same process at once.
//! 3. The locks are taken inside `Python::allow_threads` closures, for a few instructions
//!    with the GIL held, or (the store's read lock only) for a point read or a put made
//!    under the GIL (`point.rs`); the GIL is never acquired while one is held: no
//!    lock-order cycle with the GIL. (`Keyspace.insert_from`, which takes the GIL back to
//!    read a Python file during the engine call, holds none of them: it writes through its
//!    own clone of the engine keyspace.)
//! 4. Lock order: the store's lock (`state`) before a handle's slot, never the reverse;
//!    `close()` takes them in that order, and so does every call that needs both.

use std::collections::HashMap;
use std::sync::{Arc, Weak};

use parking_lot::{Mutex, RwLock};

use crate::errors::{Fail, Res};

/// An engine object owned by a Python object and dropped when the store closes.
pub(crate) trait Release: Send + Sync {
    /// Drops the engine object; later use raises `ClosedError`.
    fn release(&self);
}

/// A slot holding an engine object until it is released.
pub(crate) type Slot<T> = Mutex<Option<T>>;

impl<T: Send> Release for Slot<T> {
    fn release(&self) {
        drop(self.lock().take());
    }
}

/// The open store: the engine handle and the keyspaces opened through it.
pub(crate) struct Open {
    pub(crate) db: cairn::Db,
    /// Keyspace handles, addressed by the index a Python `Keyspace` keeps.
    keyspaces: Vec<cairn::Keyspace>,
    /// Live keyspaces by name (a dropped keyspace is removed; its slot stays).
    by_name: HashMap<String, usize>,
}

impl Open {
    /// The keyspace handle at `slot`.
    pub(crate) fn keyspace(&self, slot: usize) -> Res<&cairn::Keyspace> {
        self.keyspaces
            .get(slot)
            .ok_or_else(|| Fail::Invalid(format!("no keyspace at slot {slot}")))
    }

    /// The slot of keyspace `name`, opening (creating) it with `options` if needed.
    pub(crate) fn open_keyspace(
        &mut self,
        name: &str,
        options: Option<cairn::KeyspaceOptions>,
    ) -> Res<usize> {
        if options.is_none() {
            if let Some(&slot) = self.by_name.get(name) {
                return Ok(slot);
            }
        }
        let ks = match options {
            Some(o) => self.db.keyspace_with(name, o)?,
            None => self.db.keyspace(name)?,
        };
        Ok(self.remember(name, ks))
    }

    /// The slot of an existing keyspace `name`, if it exists.
    pub(crate) fn existing_keyspace(&mut self, name: &str) -> Option<usize> {
        if let Some(&slot) = self.by_name.get(name) {
            return Some(slot);
        }
        let ks = self.db.get_keyspace(name)?;
        Some(self.remember(name, ks))
    }

    fn remember(&mut self, name: &str, ks: cairn::Keyspace) -> usize {
        let slot = self.keyspaces.len();
        self.keyspaces.push(ks);
        self.by_name.insert(name.to_string(), slot);
        slot
    }

    /// Forgets keyspace `name` after it was dropped.
    pub(crate) fn forget(&mut self, name: &str) {
        self.by_name.remove(name);
    }
}

/// Shared by a `cairn.Db` and every keyspace, snapshot, batch and iterator made from it.
pub(crate) struct Shared {
    state: RwLock<Option<Open>>,
    handles: Mutex<Vec<Weak<dyn Release>>>,
}

impl Shared {
    /// The shared state of a freshly opened store.
    pub(crate) fn new(db: cairn::Db) -> Arc<Shared> {
        Arc::new(Shared {
            state: RwLock::new(Some(Open {
                db,
                keyspaces: Vec::new(),
                by_name: HashMap::new(),
            })),
            handles: Mutex::new(Vec::new()),
        })
    }

    /// Runs `f` on the open store (read lock held throughout).
    ///
    /// # Errors
    /// `Fail::Closed` if the store was closed; whatever `f` returns.
    pub(crate) fn read<T>(&self, f: impl FnOnce(&Open) -> Res<T>) -> Res<T> {
        let guard = self.state.read();
        match guard.as_ref() {
            Some(open) => f(open),
            None => Err(Fail::Closed("the store")),
        }
    }

    /// Runs `f` on the open store with the write lock (keyspace registry changes).
    ///
    /// # Errors
    /// As [`Shared::read`].
    pub(crate) fn write<T>(&self, f: impl FnOnce(&mut Open) -> Res<T>) -> Res<T> {
        let mut guard = self.state.write();
        match guard.as_mut() {
            Some(open) => f(open),
            None => Err(Fail::Closed("the store")),
        }
    }

    /// True once the store is closed.
    pub(crate) fn is_closed(&self) -> bool {
        self.state.read().is_none()
    }

    /// Registers an engine object to drop when the store closes. Prunes dead entries
    /// when the list has doubled since the last prune, so registration is amortised O(1).
    pub(crate) fn register(&self, handle: Weak<dyn Release>) {
        let mut handles = self.handles.lock();
        if handles.len() >= 64 && handles.len().is_power_of_two() {
            handles.retain(|h| h.strong_count() > 0);
        }
        handles.push(handle);
    }

    /// Closes the store: waits for calls in flight, drops every registered engine object
    /// and every keyspace handle, then closes the engine's store (final log sync, background
    /// threads stopped). A second call does nothing.
    ///
    /// # Errors
    /// The error of the engine's close (the final log sync or a background job).
    pub(crate) fn close(&self) -> Res<()> {
        let Some(open) = self.state.write().take() else {
            return Ok(());
        };
        let handles: Vec<_> = self.handles.lock().drain(..).collect();
        for h in handles {
            if let Some(h) = h.upgrade() {
                h.release();
            }
        }
        let Open { db, keyspaces, .. } = open;
        drop(keyspaces);
        db.close()?;
        Ok(())
    }
}
