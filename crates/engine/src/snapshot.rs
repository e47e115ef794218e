//! The [`Registry`] of live snapshot seqnos: a snapshot (`crate::Snapshot`) holds a [`Pin`]
//! on one seqno, and compaction keeps every old version a pinned seqno can see.
//!
//! Invariants:
//! 1. A snapshot's seqno is registered before the snapshot is handed out and unregistered
//!    when it drops, so compaction never drops a version a live snapshot can see.
//! 2. Taking or dropping a snapshot is O(1) (a counter in a hash map under a mutex) and
//!    touches no file; compaction sorts the live seqnos when it starts.
//!
//! Thread-safety: the registry is `Send + Sync`; snapshots may be sent between threads.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;

use crate::key::SeqNo;

/// The multiset of seqnos held by live snapshots.
#[derive(Debug, Default)]
pub(crate) struct Registry {
    live: Mutex<HashMap<SeqNo, usize>>,
}

impl Registry {
    /// Registers `seqno`; the returned guard unregisters it on drop.
    pub(crate) fn register(self: &Arc<Self>, seqno: SeqNo) -> Pin {
        *self.live.lock().entry(seqno).or_insert(0) += 1;
        Pin {
            registry: Arc::clone(self),
            seqno,
        }
    }

    /// The seqnos of live snapshots, ascending and without repeats.
    pub(crate) fn seqnos(&self) -> Vec<SeqNo> {
        let mut out: Vec<SeqNo> = self.live.lock().keys().copied().collect();
        out.sort_unstable();
        out
    }

    /// The oldest live snapshot's seqno.
    #[cfg(test)]
    pub(crate) fn oldest(&self) -> Option<SeqNo> {
        self.live.lock().keys().min().copied()
    }

    /// Number of live snapshots.
    #[cfg(test)]
    pub(crate) fn count(&self) -> usize {
        self.live.lock().values().sum()
    }
}

/// A registered seqno; unregistered when dropped.
#[derive(Debug)]
pub(crate) struct Pin {
    registry: Arc<Registry>,
    seqno: SeqNo,
}

impl Pin {
    /// The pinned seqno.
    pub(crate) fn seqno(&self) -> SeqNo {
        self.seqno
    }

    /// True if this pin is held in `registry` (the registry of the store it was taken
    /// from).
    pub(crate) fn is_in(&self, registry: &Arc<Registry>) -> bool {
        Arc::ptr_eq(&self.registry, registry)
    }
}

impl Drop for Pin {
    fn drop(&mut self) {
        let mut live = self.registry.live.lock();
        if let Some(n) = live.get_mut(&self.seqno) {
            *n -= 1;
            if *n == 0 {
                live.remove(&self.seqno);
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn pins_register_and_release() {
        let r = Arc::new(Registry::default());
        let a = r.register(SeqNo(5));
        let b = r.register(SeqNo(5));
        let c = r.register(SeqNo(9));
        assert_eq!(r.seqnos(), vec![SeqNo(5), SeqNo(9)]);
        assert_eq!(r.count(), 3);
        drop(a);
        assert_eq!(r.oldest(), Some(SeqNo(5)));
        drop(b);
        assert_eq!(r.oldest(), Some(SeqNo(9)));
        assert_eq!(c.seqno(), SeqNo(9));
        drop(c);
        assert_eq!(r.oldest(), None);
    }
}
